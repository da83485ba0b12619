"""A fixture for the tests that make providers over the loopback servers themselves (import it
into a test module): ``providers``, a list the test appends each provider it makes to, every
one closed when the test ends, pass or fail."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def providers() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    for provider in made:
        provider.close()
