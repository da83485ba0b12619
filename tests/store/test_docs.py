"""The examples in the store's docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["wingman_actors.store", "wingman_actors.store._shape", "wingman_actors.store._sqlite"]


@pytest.mark.parametrize("name", MODULES)
def test_the_docstring_examples_of_the_store_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
