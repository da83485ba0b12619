"""The run store's errors survive pickling with their attributes: on the Ray backend an
error a node raises reaches the driver pickled (a node reading a run store that raises
UnknownRunError must fail with it there, not with a TypeError of its unpickling)."""

from __future__ import annotations

import pickle

import pytest

from wingman_actors.store import (
    RunExistsError,
    RunNotResumableError,
    SerializationError,
    StoreError,
    StoreOpenError,
    StoreVersionError,
    StoreWriteError,
    UnknownRunError,
)


@pytest.mark.parametrize("error", [
    UnknownRunError("r1", "/tmp/runs.sqlite"),
    RunExistsError("r1", "/tmp/runs.sqlite"),
    RunNotResumableError("run 'r1' cannot be resumed: it succeeded", run_id="r1", status="succeeded"),
    SerializationError("cannot journal a socket", where="output of node 'a'", type_name="socket"),
    StoreOpenError("not a run store", path="/tmp/x"),
    StoreVersionError("written by a newer version", path="/tmp/x", version=9, supported=7),
    StoreWriteError(["disk full", "disk full"]),
    StoreError("plain"),
], ids=lambda e: type(e).__name__)
def test_a_store_error_survives_pickling_with_its_attributes(error: StoreError) -> None:
    copy = pickle.loads(pickle.dumps(error))

    assert (type(copy), str(copy), copy.args) == (type(error), str(error), error.args)
    assert vars(copy) == vars(error)


def test_an_unknown_run_error_names_its_run_and_store() -> None:
    error = UnknownRunError("r1", "/tmp/runs.sqlite")

    assert (error.run_id, error.store_path) == ("r1", "/tmp/runs.sqlite")
