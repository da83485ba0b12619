"""A run id the store has already is refused with :class:`RunExistsError` (a ``StoreError``
and a ``ValueError``) on both stores, by ``begin_run`` and by a formation's ``submit`` and
``run``, saying how to go on: resume that run, or pass a new id. The run that holds the id
is left as it was."""

from __future__ import annotations

import pytest

from tests.store.conftest import chain_shape
from wingman_actors import Formation
from wingman_actors.store import RunExistsError, RunStore, StoreError


def test_begin_run_with_a_taken_id_raises_run_exists_error_naming_the_run_and_the_fix(store: RunStore) -> None:
    store.begin_run("demo", chain_shape(), 1, run_id="r1")

    with pytest.raises(RunExistsError) as caught:
        store.begin_run("demo", chain_shape(), 2, run_id="r1")
    error = caught.value
    assert isinstance(error, StoreError) and isinstance(error, ValueError)
    assert (error.run_id, error.store_path) == ("r1", store.path)
    assert "run id 'r1' already exists" in str(error)
    assert "resume it" in str(error) and "pass a new run_id, or None" in str(error)
    assert store.get("r1").input == 1  # the run that has the id is unchanged


def test_submit_with_the_id_of_a_journalled_run_raises_run_exists_error_and_leaves_that_run_alone(
    store: RunStore
) -> None:
    f = Formation("inc").add_function("a", lambda x: x + 1)
    first = f.run(1, store=store, run_id="same")
    assert first.output == 2

    with f.start(store=store) as running, pytest.raises(RunExistsError, match=r"run id 'same' already exists"):
        running.submit(5, run_id="same")
    with pytest.raises(RunExistsError, match=r"Formation.resume\('same'"):
        f.run(7, store=store, run_id="same")
    assert (store.get("same").status, store.get("same").input, store.load("same").visits) == (
        "succeeded", 1, {"a": {1: 2}})

