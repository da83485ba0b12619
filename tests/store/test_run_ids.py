"""A run id that is not a string names no run, on both stores alike: ``get``, ``load`` and
``history`` raise ``UnknownRunError`` (as for any unknown id), not a database error."""

from __future__ import annotations

from typing import Any

import pytest

from wingman_actors.store import RunStore, UnknownRunError


@pytest.mark.parametrize("run_id", [5, None, b"r1"])
def test_a_run_id_that_is_not_a_string_is_an_unknown_run_on_either_store(store: RunStore, run_id: Any) -> None:
    for read in (store.get, store.load, store.history):
        with pytest.raises(UnknownRunError, match=rf"no run {run_id!r} in the run store"):
            read(run_id)
