"""Runs that record their parent: the inner runs of nested formations are listed, resumed
and pruned with their outer run, never on their own."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from wingman_actors.store import FormationShape, RunNotResumableError, RunStore, StoreError
from wingman_actors.store._schema import APPLICATION_ID, LATEST_VERSION, MIGRATIONS

from .conftest import chain_shape


def _family(store: RunStore, shape: FormationShape) -> tuple[str, str, str]:
    """An outer run, its inner run, and that one's inner run (two formations deep)."""
    outer = store.begin_run("outer", shape, 1, run_id="r1")
    inner = store.begin_run("inner", shape, 2, run_id="r1/sub/1", parent=outer)
    deeper = store.begin_run("deeper", shape, 3, run_id="r1/sub/1/deep/1", parent=inner)
    return outer, inner, deeper


def test_runs_lists_top_level_runs_only(store: RunStore, shape: FormationShape) -> None:
    _family(store, shape)
    store.begin_run("other", shape, 4, run_id="r2")
    assert [(r.id, r.parent) for r in store.runs()] == [("r1", None), ("r2", None)]


def test_runs_with_nested_lists_inner_runs_with_their_parent(store: RunStore, shape: FormationShape) -> None:
    _family(store, shape)
    assert [(r.id, r.parent) for r in store.runs(nested=True)] == [
        ("r1", None), ("r1/sub/1", "r1"), ("r1/sub/1/deep/1", "r1/sub/1")]


def test_a_status_filter_lists_top_level_runs_only_unless_nested(store: RunStore, shape: FormationShape) -> None:
    _family(store, shape)
    assert [r.id for r in store.runs("running")] == ["r1"]
    assert len(store.runs("running", nested=True)) == 3


def test_get_gives_an_inner_runs_parent(store: RunStore, shape: FormationShape) -> None:
    _family(store, shape)
    assert store.get("r1/sub/1").parent == "r1"
    assert store.get("r1").parent is None
    assert store.load("r1/sub/1/deep/1").run.parent == "r1/sub/1"


def test_begin_run_with_an_unknown_parent_is_refused_naming_it(store: RunStore, shape: FormationShape) -> None:
    with pytest.raises(StoreError, match=r"parent run 'nope' is not in the run store.*begin the outer run first"):
        store.begin_run("inner", shape, 1, run_id="nope/sub/1", parent="nope")
    assert store.runs(nested=True) == []


def test_begin_run_with_an_empty_parent_is_refused(store: RunStore, shape: FormationShape) -> None:
    with pytest.raises(ValueError, match="parent must be a non-empty str"):
        store.begin_run("inner", shape, 1, parent="")


def test_claiming_an_inner_run_is_refused_naming_the_run_to_resume(store: RunStore, shape: FormationShape) -> None:
    _family(store, shape)
    store.set_status("r1/sub/1", "failed", wait=True)
    with pytest.raises(RunNotResumableError, match=r"inner run of run 'r1'.*resume run 'r1' instead") as err:
        store.claim_run("r1/sub/1", chain_shape("x", "y"))  # refused before the shapes are compared
    assert err.value.run_id == "r1/sub/1"


def test_claiming_a_deeper_inner_run_names_the_top_level_run(store: RunStore, shape: FormationShape) -> None:
    _family(store, shape)
    store.set_status("r1/sub/1/deep/1", "failed", wait=True)
    with pytest.raises(RunNotResumableError, match=r"run 'r1/sub/1' \(itself inside run 'r1'\).*resume run 'r1'"):
        store.claim_run("r1/sub/1/deep/1")


def test_an_inner_run_is_claimed_by_its_parent(store: RunStore, shape: FormationShape) -> None:
    _family(store, shape)
    store.set_status("r1/sub/1", "failed", wait=True)
    assert store.claim_run("r1/sub/1", shape, parent="r1").run.status == "running"


def test_prune_deletes_an_outer_runs_inner_runs_with_it(store: RunStore, shape: FormationShape) -> None:
    _family(store, shape)
    store.begin_run("other", shape, 4, run_id="r2")
    store.record_visit("r1/sub/1/deep/1", "a", 1, "x")
    store.set_status("r1", "failed")
    store.set_status("r1/sub/1/deep/1", "suspended", wait=True)  # an inner run's own status does not keep it
    assert store.prune(0) == 1
    assert [r.id for r in store.runs(nested=True)] == ["r2"]


def test_prune_never_deletes_an_inner_run_while_its_parent_is_kept(store: RunStore, shape: FormationShape) -> None:
    _family(store, shape)
    store.set_status("r1/sub/1", "succeeded")
    store.set_status("r1/sub/1/deep/1", "succeeded", wait=True)
    assert store.prune(0) == 0
    assert len(store.runs(nested=True)) == 3


def test_a_batch_beginning_inner_runs_with_their_outer_run_records_each_parent(store: RunStore,
                                                                               shape: FormationShape) -> None:
    from concurrent.futures import ThreadPoolExecutor

    outers = [store.begin_run("outer", shape, i) for i in range(20)]
    with ThreadPoolExecutor(8) as pool:  # concurrent callers: their begins share batches
        list(pool.map(lambda o: store.begin_run("inner", shape, 0, run_id=f"{o}/sub/1", parent=o), outers))
    assert {r.id: r.parent for r in store.runs(nested=True) if r.parent} == {f"{o}/sub/1": o for o in outers}


def _write_v3(path: Path, shape: FormationShape) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    for m in MIGRATIONS[:3]:  # released versions, never edited
        for statement in m.statements:
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 3")
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    now = time.time()
    conn.execute("INSERT INTO shapes VALUES (?, ?)", (shape.fingerprint, shape.to_json()))
    for run_id in ("old", "old/sub/1"):
        conn.execute("INSERT INTO runs (id, formation, fingerprint, source, input_codec, input, status, created, "
                     "updated) VALUES (?, 'chain', ?, NULL, 0, '7', 'failed', ?, ?)",
                     (run_id, shape.fingerprint, now - 60, now - 60))
    conn.close()


def test_a_store_file_of_schema_version_3_is_migrated_with_parents_read_from_inner_run_ids(path: Path) -> None:
    shape = chain_shape()
    _write_v3(path, shape)
    with RunStore(path) as store:
        assert [(r.id, r.parent) for r in store.runs(nested=True)] == [("old", None), ("old/sub/1", "old")]
        assert [r.id for r in store.runs()] == ["old"]
        store.begin_run("inner", shape, 1, run_id="old/sub/2", parent="old")
        assert store.get("old/sub/2").parent == "old"
        assert store.prune(0) == 1
        assert store.runs(nested=True) == []
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION
    conn.close()
