"""More behaviours ported from LangGraph's checkpoint savers' tests (langchain-ai/langgraph:
``libs/checkpoint*/tests`` and ``libs/checkpoint-conformance/.../spec``): the saver as a
context manager, closing and reopening, concurrent writers, ``delete_thread`` /
``delete_for_runs`` (our ``prune``), write ownership (our lease) and thread ids (our run
ids). Values, listing and pending writes are in ``test_peer_lgckpt.py``.

Deliberately different (docs/durable-runs.md documents ours):
- ``delete_thread(thread_id)`` deletes one thread at once, whatever its state; ``prune``
  deletes finished runs by age (``older_than=0``: every finished run), with their inner
  runs and journals, and never a running or waiting run.
- ``aclaim_write_ownership`` hands a thread to a new owner at any time; a run's owner is
  the store that began or claimed it, and another store claims it only once its owner is
  gone (its process died or, on PostgreSQL, its lease lapsed).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.support.store_fixtures import until_the_server_has_seen_dead_owners_go
from wingman_actors.store import RunNotResumableError, RunStore, StoreClosedError, StoreWriteError

from .conftest import chain_shape


def test_a_store_used_as_a_context_manager_is_itself_and_is_closed_after(location: str) -> None:
    """From checkpoint tests/test_memory.py::test_memory_saver (``with saver as s: s is saver``)."""
    store = RunStore(location)
    with store as entered:
        assert entered is store
        run_id = entered.begin_run("f", chain_shape(), 1)
    with pytest.raises(StoreClosedError, match=r"closed; open a new RunStore"):
        store.get(run_id)


def test_what_was_written_before_close_is_read_by_the_next_store_opened_on_it(location: str) -> None:
    """From checkpoint-sqlite tests/test_sqlite.py (``SqliteSaver.from_conn_string`` on a file,
    reopened): nothing is lost on close, with writes that returned at once included."""
    with RunStore(location) as store:
        run_id = store.begin_run("f", chain_shape(), {"q": "tea"})
        store.record_visit(run_id, "a", 1, ("x", b"\x01"))
        store.record_item(run_id, "b", 1, 0, {"k": 1})
        store.set_status(run_id, "failed", error="b broke")  # not waited for: close commits it
    with RunStore(location) as reopened:
        journal = reopened.load(run_id)
        assert (journal.run.status, journal.run.error, journal.run.input) == ("failed", "b broke", {"q": "tea"})
        assert journal.visits == {"a": {1: ("x", b"\x01")}} and journal.items == {("b", 1): {0: {"k": 1}}}


def test_closing_a_store_twice_is_harmless_and_every_call_after_it_says_to_open_a_new_one(location: str) -> None:
    """From checkpoint-sqlite tests/test_aiosqlite.py (a saver whose connection is closed)."""
    store = RunStore(location)
    run_id = store.begin_run("f", chain_shape(), 1)
    store.close()
    store.close()
    for call in (lambda: store.runs(), lambda: store.history(run_id), lambda: store.record_visit(run_id, "a", 1, 1),
                 lambda: store.begin_run("f", chain_shape(), 2), store.flush):
        with pytest.raises(StoreClosedError, match="open a new RunStore"):
            call()


def test_items_written_by_many_threads_at_once_are_all_kept(store: RunStore) -> None:
    """From checkpoint-postgres tests/test_async_parallel_checkpoint.py (parallel tasks of one
    step writing at once): sixteen threads, each the worker of forty items of one visit."""
    run_id = store.begin_run("f", chain_shape(), list(range(640)))
    start = threading.Barrier(16)

    def worker(w: int) -> None:
        start.wait()
        for i in range(w * 40, (w + 1) * 40):
            store.record_item(run_id, "b", 1, i, {"item": i, "by": w})

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    store.flush()
    items = store.load(run_id).items[("b", 1)]
    assert items == {i: {"item": i, "by": i // 40} for i in range(640)}


def test_two_stores_on_one_location_see_each_others_runs_at_once(location: str) -> None:
    """From checkpoint-postgres tests (two savers from one connection string share threads)."""
    with RunStore(location) as first, RunStore(location) as second:
        mine = first.begin_run("f", chain_shape(), 1)
        theirs = second.begin_run("g", chain_shape(), 2)
        first.record_visit(mine, "a", 1, "from first")
        first.flush()
        assert second.load(mine).visits == {"a": {1: "from first"}}
        assert {r.id for r in first.runs()} == {r.id for r in second.runs()} == {mine, theirs}


def test_prune_deletes_a_finished_run_with_its_journal_and_leaves_the_others_whole(store: RunStore) -> None:
    """From conformance spec/test_delete_thread.py (deleting a thread removes its checkpoints
    and writes; other threads are untouched)."""
    gone = store.begin_run("f", chain_shape(), 1, run_id="thread-1")
    store.record_visit(gone, "a", 1, "x")
    store.record_item(gone, "b", 1, 0, "y")
    store.set_status(gone, "succeeded")
    kept = store.begin_run("f", chain_shape(), 2, run_id="thread-2")
    store.record_visit(kept, "a", 1, "kept")
    store.flush()
    assert store.prune(older_than=0) == 1
    assert [r.id for r in store.runs()] == [kept]
    assert store.load(kept).visits == {"a": {1: "kept"}}
    assert store.get(kept).status == "running"
    again = store.begin_run("f", chain_shape(), 3, run_id="thread-1")  # the id is free again
    assert store.load(again).visits == {} and store.load(again).items == {}


def test_prune_of_a_store_with_nothing_to_delete_deletes_nothing(store: RunStore) -> None:
    """From conformance spec/test_delete_thread.py::test_delete_nonexistent_thread."""
    assert store.prune(older_than=0) == 0
    running = store.begin_run("f", chain_shape(), 1)
    assert store.prune(older_than=0) == 0
    assert store.get(running).status == "running"


def test_prune_deletes_the_inner_runs_of_a_pruned_run_with_it(store: RunStore) -> None:
    """From conformance spec/test_delete_for_runs.py (deleting a run's checkpoints in every
    namespace): a nested formation's inner run goes with its outer run."""
    outer = store.begin_run("outer", chain_shape(), 0)
    inner = store.begin_run("inner", chain_shape(), 0, parent=outer)
    store.record_visit(inner, "a", 1, "inner output")
    store.set_status(inner, "succeeded")
    store.set_status(outer, "succeeded")
    other = store.begin_run("outer", chain_shape(), 0)
    store.flush()
    assert store.prune(older_than=0) == 1
    assert [r.id for r in store.runs(nested=True)] == [other]


def test_a_run_whose_owner_is_alive_cannot_be_claimed_by_another_store(location: str) -> None:
    """From conformance spec/test_write_ownership.py::test_ownership_is_per_thread and
    ::test_current_owner_can_put_writes: the owner keeps writing; another store may not take
    the run over while the owner lives, and writes into its own runs as before."""
    with RunStore(location) as owner, RunStore(location) as other:
        run_id = owner.begin_run("f", chain_shape(), 0)
        with pytest.raises(RunNotResumableError, match="running"):
            other.claim_run(run_id)
        owner.record_visit(run_id, "a", 1, "owned")
        owner.flush()
        mine = other.begin_run("f", chain_shape(), 1)
        other.record_visit(mine, "a", 1, "its own")  # ownership is per run: its own runs take its writes
        other.flush()
        assert other.load(run_id).visits == {"a": {1: "owned"}}
        assert other.load(mine).visits == {"a": {1: "its own"}}


def test_a_postgres_store_that_does_not_own_a_run_cannot_write_its_journal(postgres_url: str) -> None:
    """From conformance spec/test_write_ownership.py::test_superseded_owner_put_writes_is_not_durable
    (a write from a store that does not own the thread is refused, and says so)."""
    with RunStore(postgres_url) as owner, RunStore(postgres_url) as other:
        run_id = owner.begin_run("f", chain_shape(), 0)
        owner.record_item(run_id, "b", 1, 0, "current")
        owner.flush()
        other.record_item(run_id, "b", 1, 0, "stale")
        with pytest.raises(StoreWriteError, match=r"taken over by another owner"):
            other.flush()
        assert owner.load(run_id).items == {("b", 1): {0: "current"}}


def test_a_run_taken_over_after_its_owner_closed_takes_the_new_owners_writes(location: str) -> None:
    """From conformance spec/test_write_ownership.py::test_new_owner_can_write_after_superseding."""
    with RunStore(location) as old:
        run_id = old.begin_run("f", chain_shape(), 0)
        old.record_visit(run_id, "a", 1, "c1")
    with RunStore(location) as new:
        assert new.get(run_id).status == "interrupted"
        assert new.claim_run(run_id).visits == {"a": {1: "c1"}}
        new.record_visit(run_id, "b", 1, "recovered")
        new.set_status(run_id, "succeeded", wait=True)
        assert new.load(run_id).visits == {"a": {1: "c1"}, "b": {1: "recovered"}}
        with pytest.raises(RunNotResumableError):
            new.claim_run(run_id)  # finished: nobody resumes it


@pytest.mark.parametrize("run_id", ["a/b c", "thread:1|ns", "ünï-✓", "x" * 2000, "'; DROP TABLE runs; --"])
def test_run_ids_with_any_characters_are_kept_as_given(store: RunStore, run_id: str) -> None:
    """From checkpoint-sqlite tests/test_namespace_validation.py (thread ids and namespaces
    with separators and odd characters)."""
    assert store.begin_run("f", chain_shape(), 0, run_id=run_id) == run_id
    store.record_visit(run_id, "a", 1, run_id)
    store.flush()
    assert store.load(run_id).visits == {"a": {1: run_id}}
    assert [r.id for r in store.runs()] == [run_id]


def test_an_empty_run_id_is_refused_naming_what_it_must_be(store: RunStore) -> None:
    """From checkpoint-sqlite tests/test_namespace_validation.py (an invalid id is refused)."""
    with pytest.raises(ValueError, match=r"run_id must be a non-empty str or None, got ''"):
        store.begin_run("f", chain_shape(), 0, run_id="")


def test_an_empty_file_is_taken_as_a_new_store(tmp_path: Path) -> None:
    """From checkpoint-sqlite tests (``from_conn_string`` on a fresh file; a file touched
    before the store first opens it, as a deployment script might)."""
    path = tmp_path / "runs.sqlite"
    path.touch()
    with RunStore(path) as store:
        run_id = store.begin_run("f", chain_shape(), 0)
    with RunStore(path) as store:
        assert [r.id for r in store.runs()] == [run_id]


_DIES = """
import os, sys
from tests.store.conftest import chain_shape
from wingman_actors.store import RunStore
print(RunStore(sys.argv[1]).begin_run("f", chain_shape(), 0), flush=True)
os._exit(0)  # no close(): the process died
"""


def test_a_run_whose_process_died_is_listed_under_interrupted_as_get_reads_it(location: str) -> None:
    """From conformance spec/test_list.py (``list(filter=...)`` yields what ``get_tuple``
    reads): the status a filter matches is the one ``get`` gives, not the one last written."""
    died = subprocess.run([sys.executable, "-c", _DIES, location], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).parents[2], check=True).stdout.strip()
    until_the_server_has_seen_dead_owners_go(location)
    with RunStore(location) as store:
        alive = store.begin_run("f", chain_shape(), 1)
        assert store.get(died).status == "interrupted"
        assert [r.id for r in store.runs(status="interrupted")] == [died]
        assert [r.id for r in store.runs(status="running")] == [alive]
