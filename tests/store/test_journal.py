"""Runs and their journal of deltas: what is recorded comes back in order, in one call."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from wingman_actors.store import (
    FormationShape,
    JournalStore,
    NoPendingInterruptError,
    RunStore,
    StoreClosedError,
    StoreError,
    StoreWriteError,
    UnknownRunError,
)


def test_a_run_is_recorded_with_its_formation_source_and_input(store: RunStore, shape: FormationShape) -> None:
    before = datetime.datetime.now(datetime.UTC)
    run_id = store.begin_run("chain", shape, {"n": 1}, source="/work/chain.py")
    record = store.get(run_id)
    assert (record.id, record.formation, record.status, record.input) == (run_id, "chain", "running", {"n": 1})
    assert record.fingerprint == shape.fingerprint and record.source == "/work/chain.py"
    assert record.error is None and record.interrupt is None
    assert before - datetime.timedelta(seconds=1) <= record.created <= record.updated
    assert len(run_id) == 32


def test_a_given_run_id_is_used_and_a_duplicate_is_refused(store: RunStore, shape: FormationShape) -> None:
    assert store.begin_run("chain", shape, 1, run_id="run-1") == "run-1"
    with pytest.raises(StoreError, match="'run-1' already exists"):
        store.begin_run("chain", shape, 2, run_id="run-1")
    assert store.get("run-1").input == 1


def test_the_journal_holds_visits_items_progress_and_interrupts_in_write_order(
        store: RunStore, shape: FormationShape) -> None:
    run_id = store.begin_run("chain", shape, 0)
    store.record_visit(run_id, "a", 1, "a1")
    store.record_item(run_id, "b", 1, 1, "item 1")
    store.record_progress(run_id, "b", 1, ["msg"], item=0)
    store.record_item(run_id, "b", 1, 0, "item 0")
    store.record_visit(run_id, "b", 1, ["item 0", "item 1"])
    store.record_visit(run_id, "a", 2, "a2")
    store.record_skip(run_id, "d", 1, "node 'd' failed 3 times")
    store.record_interrupt(run_id, "c", 1, {"question": "ok?"})
    journal = store.load(run_id)
    assert [(e.kind, e.node, e.visit, e.item) for e in journal.entries] == [
        ("visit", "a", 1, None), ("item", "b", 1, 1), ("progress", "b", 1, 0), ("item", "b", 1, 0),
        ("visit", "b", 1, None), ("visit", "a", 2, None), ("skip", "d", 1, None), ("interrupt", "c", 1, None)]
    assert journal.skipped == {("d", 1): "node 'd' failed 3 times"}
    assert journal.visits == {"a": {1: "a1", 2: "a2"}, "b": {1: ["item 0", "item 1"]}}
    assert journal.items == {("b", 1): {1: "item 1", 0: "item 0"}}
    assert journal.progress == {("b", 1, 0): [["msg"]]}
    assert journal.pending_interrupt is not None and journal.pending_interrupt.payload == {"question": "ok?"}
    assert journal.shape == shape


def test_an_input_given_to_a_visit_is_journalled_in_order_and_is_no_visit_of_the_history(
        store: RunStore, shape: FormationShape) -> None:
    run_id = store.begin_run("chain", shape, 0)
    store.record_visit(run_id, "a", 1, "a1")
    store.record_input(run_id, "b", 1, {"given": (1, 2)})
    store.record_visit(run_id, "b", 1, "b1")
    journal = store.load(run_id)
    assert [(e.kind, e.node, e.visit, e.value) for e in journal.entries] == [
        ("visit", "a", 1, "a1"), ("input", "b", 1, {"given": (1, 2)}), ("visit", "b", 1, "b1")]
    assert journal.inputs == {("b", 1): {"given": (1, 2)}} and journal.progress == {}
    assert [(v.node, v.output) for v in store.history(run_id)] == [("a", "a1"), ("b", "b1")]


def test_an_answer_is_attached_to_the_pending_interrupt(store: RunStore, shape: FormationShape) -> None:
    run_id = store.begin_run("chain", shape, 0)
    store.record_interrupt(run_id, "b", 1, "first?")
    store.set_status(run_id, "suspended")
    assert store.get(run_id).interrupt is not None
    store.answer(run_id, "yes")
    store.record_interrupt(run_id, "b", 1, "second?")
    journal = store.load(run_id)
    assert [(i.payload, i.answered, i.answer) for i in journal.interrupts] == [
        ("first?", True, "yes"), ("second?", False, None)]
    assert journal.answers("b", 1) == ["yes"] and journal.answers("a", 1) == []
    store.answer(run_id, {"ok": True})
    assert store.load(run_id).answers("b", 1) == ["yes", {"ok": True}]
    assert store.get(run_id).interrupt is None


def test_answering_a_run_without_a_pending_interrupt_is_refused(store: RunStore, shape: FormationShape) -> None:
    run_id = store.begin_run("chain", shape, 0)
    with pytest.raises(StoreError, match="no pending interrupt") as refused:
        store.answer(run_id, "yes")
    assert isinstance(refused.value, NoPendingInterruptError) and isinstance(refused.value, ValueError)
    assert (refused.value.run_id, refused.value.status) == (run_id, "running")
    with pytest.raises(UnknownRunError):
        store.answer("nope", "yes")


def test_runs_lists_every_run_oldest_first_and_filters_by_status(store: RunStore, shape: FormationShape) -> None:
    ids = [store.begin_run(f"f{i}", shape, i) for i in range(3)]
    store.set_status(ids[0], "succeeded")
    store.set_status(ids[2], "failed", error="node 'b' failed")
    assert [(r.id, r.formation, r.status) for r in store.runs()] == [
        (ids[0], "f0", "succeeded"), (ids[1], "f1", "running"), (ids[2], "f2", "failed")]
    assert [r.id for r in store.runs("running")] == [ids[1]]
    assert store.get(ids[2]).error == "node 'b' failed"
    assert store.runs("cancelled") == []


def test_bad_statuses_are_refused_with_the_choices(store: RunStore, shape: FormationShape) -> None:
    run_id = store.begin_run("chain", shape, 0)
    with pytest.raises(ValueError, match="succeeded"):
        store.set_status(run_id, "done")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="claim_run"):
        store.set_status(run_id, "running")
    with pytest.raises(ValueError, match="status must be one of"):
        store.runs("finished")  # type: ignore[arg-type]


def test_an_unknown_run_is_a_key_error_naming_it(store: RunStore) -> None:
    with pytest.raises(KeyError, match="no run 'ghost'") as err:
        store.get("ghost")
    assert isinstance(err.value, UnknownRunError) and err.value.run_id == "ghost"
    with pytest.raises(UnknownRunError):
        store.load("ghost")
    with pytest.raises(UnknownRunError):
        store.set_status("ghost", "failed", wait=True)
    with pytest.raises(UnknownRunError):
        store.claim_run("ghost")


def test_a_write_for_an_unknown_run_is_reported_by_the_next_flush(store: RunStore) -> None:
    store.record_visit("ghost", "a", 1, 1)
    with pytest.raises(StoreWriteError, match=r"node 'a'.*'ghost'") as err:
        store.flush()
    assert len(err.value.errors) == 1
    store.flush()  # reported once


def test_claim_run_makes_a_run_running_again_and_refuses_what_cannot_resume(
        store: RunStore, shape: FormationShape) -> None:
    from wingman_actors.store import RunNotResumableError

    run_id = store.begin_run("chain", shape, 0)
    with pytest.raises(RunNotResumableError, match="is running") as err:
        store.claim_run(run_id)
    assert err.value.status == "running"
    store.record_visit(run_id, "a", 1, 1)
    store.set_status(run_id, "cancelled")
    journal = store.claim_run(run_id, shape)
    assert journal.run.status == "running" and journal.visits == {"a": {1: 1}}
    store.set_status(run_id, "succeeded")
    with pytest.raises(RunNotResumableError, match="already succeeded"):
        store.claim_run(run_id)


def test_a_store_is_a_journal_store() -> None:
    assert issubclass(RunStore, JournalStore)


def test_close_marks_the_runs_it_still_has_running_interrupted(path: Path, shape: FormationShape) -> None:
    with RunStore(path) as store:
        running = store.begin_run("chain", shape, 0)
        done = store.begin_run("chain", shape, 1)
        store.set_status(done, "succeeded")
    with RunStore(path) as store:
        assert store.get(running).status == "interrupted"
        assert store.get(done).status == "succeeded"


def test_a_closed_store_refuses_use_and_close_is_idempotent(path: Path, shape: FormationShape) -> None:
    store = RunStore(path)
    run_id = store.begin_run("chain", shape, 0)
    store.close()
    store.close()
    with pytest.raises(StoreClosedError, match="closed"):
        store.record_visit(run_id, "a", 1, 1)
    with pytest.raises(StoreClosedError):
        store.get(run_id)


def test_close_commits_pending_writes(path: Path, shape: FormationShape) -> None:
    with RunStore(path) as store:
        run_id = store.begin_run("chain", shape, 0)
        for v in range(1, 501):
            store.record_visit(run_id, "a", v, v)
        store.set_status(run_id, "succeeded")
    with RunStore(path) as store:
        assert list(store.load(run_id).visits["a"]) == list(range(1, 501))
        assert store.get(run_id).status == "succeeded"


def test_begin_run_takes_a_graph_too(store: RunStore) -> None:
    import networkx as nx

    g = nx.DiGraph([("a", "b")])
    nx.set_node_attributes(g, "function", "kind")
    run_id = store.begin_run("g", g, 0)
    assert store.get(run_id).fingerprint == FormationShape.of(g).fingerprint
    with pytest.raises(TypeError, match="FormationShape"):
        store.begin_run("g", "a -> b", 0)  # type: ignore[arg-type]


def test_a_store_never_closed_is_closed_at_exit_with_its_writes_committed(path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys; from wingman_actors.store import RunStore; from tests.store.conftest import chain_shape\n"
            "store = RunStore(sys.argv[1]); run_id = store.begin_run('chain', chain_shape(), 0, run_id='r')\n"
            "[store.record_visit(run_id, 'a', v, v) for v in range(1, 201)]\n"
            "store.set_status(run_id, 'succeeded')\n")  # and exits without close()
    subprocess.run([sys.executable, "-c", code, str(path)], cwd=Path(__file__).parents[2], check=True, timeout=60)
    with RunStore(path) as store:
        assert store.get("r").status == "succeeded"
        assert len(store.load("r").visits["a"]) == 200


def test_a_store_dropped_without_close_stops_its_writer_thread(path: Path, shape: FormationShape) -> None:
    import gc
    import threading

    store = RunStore(path)
    store.begin_run("chain", shape, 0)
    del store
    gc.collect()
    assert not [t for t in threading.enumerate() if t.name == "wingman-store-writer"]


def test_generated_run_ids_sort_by_creation(store: RunStore, shape: FormationShape) -> None:
    ids = [store.begin_run("chain", shape, i) for i in range(5)]
    assert ids == sorted(ids) and len(set(ids)) == 5


def test_a_batch_interrupted_by_ctrl_c_leaves_the_store_usable_and_reports_what_was_lost(
        store: RunStore, shape: FormationShape) -> None:
    import sqlite3
    from typing import Any

    from wingman_actors.store._writer import Op

    class CtrlC(Op):
        __slots__ = ()
        wait = True

        def apply(self, conn: sqlite3.Connection) -> Any:
            raise KeyboardInterrupt

    from wingman_actors.store._ops import Append

    run_id = store.begin_run("chain", shape, 0)
    # queued without waking the writer thread, so the interrupted batch below holds it
    store._writer.submit(Append((run_id, 1, "a", 1, None, 0, '"lost"')), wake=False)
    with pytest.raises(KeyboardInterrupt):
        store._writer.call(CtrlC())
    with pytest.raises(StoreWriteError, match="not committed: interrupted by KeyboardInterrupt"):
        store.flush()
    store.record_visit(run_id, "a", 1, "kept")
    assert store.load(run_id).visits == {"a": {1: "kept"}}



def test_one_batch_of_begins_appends_and_statuses_keeps_each_runs_order_and_fails_a_bad_write_alone(
    store: RunStore, shape: FormationShape
) -> None:
    # One transaction for the whole batch (consecutive appends share one statement); a
    # failed batch is replayed op by op: each run's journal order, the statuses, and which
    # write fails are as if every write had been applied alone.
    import time

    from wingman_actors.store._ops import Append, BeginRun, SetStatus

    first = store.begin_run("chain", shape, 0)
    second = "second-run"
    writer = store._writer

    def append(run_id: str, node: str, value: str) -> None:
        writer.submit(Append((run_id, 1, node, 1, None, 0, f'"{value}"')), wake=False)

    def status(run_id: str, value: str) -> None:
        writer.submit(SetStatus(run_id, value, None, None, time.time(), store.path), wake=False)

    now = time.time()
    begin = BeginRun((second, "chain", shape.fingerprint, None, 0, "1", now, now, store._owner),
                     (shape.fingerprint, shape.json), store.path, store._shapes)
    with writer._write:  # nothing is applied until the whole batch is queued
        append(first, "a", "a1")
        status(first, "failed")
        writer.submit(begin, wake=False)
        append(second, "a", "x1")
        append(first, "b", "b1")
        status(first, "succeeded")
        status(second, "suspended")
    store.flush()
    assert begin.result == second and begin.error is None
    assert (store.get(first).status, store.get(second).status) == ("succeeded", "suspended")
    assert [(e.node, e.value) for e in store.load(first).entries] == [("a", "a1"), ("b", "b1")]
    assert store.load(second).visits == {"a": {1: "x1"}}
    with writer._write:
        status(first, "failed")
        status("ghost", "failed")
        append(second, "b", "x2")
    with pytest.raises(StoreWriteError, match="ghost") as err:
        store.flush()
    assert len(err.value.errors) == 1
    assert store.get(first).status == "failed" and store.load(second).visits == {"a": {1: "x1"}, "b": {1: "x2"}}


def test_a_run_begun_without_waiting_is_committed_before_the_writes_that_follow_it(
        store: RunStore, shape: FormationShape, location: str) -> None:
    run_id = store.begin_run("chain", shape, {"n": 1}, run_id="queued", wait=False)
    assert run_id == "queued"
    store.record_visit(run_id, "a", 1, "out")
    store.set_status(run_id, "succeeded", wait=True)  # commits everything queued before it
    with RunStore(location, recover=False) as other:  # another connection: only what is committed
        assert other.get(run_id).status == "succeeded"
        assert other.load(run_id).visits == {"a": {1: "out"}}


def test_a_duplicate_run_begun_without_waiting_is_reported_by_the_next_flush(
        store: RunStore, shape: FormationShape) -> None:
    store.begin_run("chain", shape, 1, run_id="twice")
    store.begin_run("chain", shape, 2, run_id="twice", wait=False)
    with pytest.raises(StoreWriteError, match="twice"):
        store.flush()
    assert store.get("twice").input == 1
