"""Many threads (and two stores on one file) write and read at once: no "database is
locked", nothing lost."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from tests.support.peers import until
from wingman_actors.store import RunStore, StoreClosedError

from .conftest import chain_shape

THREADS = 20
RUNS_PER_THREAD = 15


def test_twenty_threads_writing_and_reading_lose_nothing_and_never_hit_a_lock(location: str) -> None:
    shape = chain_shape()
    errors: list[BaseException] = []
    started: dict[int, list[str]] = {}
    with RunStore(location) as first, RunStore(location) as second:
        def work(n: int) -> None:
            store = first if n % 2 else second  # two writers on one file, as two processes would be
            mine = started.setdefault(n, [])
            try:
                for i in range(RUNS_PER_THREAD):
                    run_id = store.begin_run("chain", shape, {"thread": n, "i": i})
                    mine.append(run_id)
                    for v, node in enumerate("abc", start=1):
                        store.record_visit(run_id, node, 1, f"{n}-{i}-{v}")
                        store.record_item(run_id, node, 1, 0, v)
                    store.set_status(run_id, "succeeded" if i % 3 else "failed", error=None)
                    # reads see this store's own writes at once
                    journal = store.load(run_id)
                    assert journal.visits["c"][1] == f"{n}-{i}-3", journal.visits
                    assert store.get(run_id).status in ("succeeded", "failed")
                    store.runs("failed")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,), name=f"store-test-{n}") for n in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=50)
        first.flush()
        second.flush()
    assert errors == []
    with RunStore(location) as store:
        listed = {r.id: r.status for r in store.runs()}
        assert len(listed) == THREADS * RUNS_PER_THREAD
        for n, ids in started.items():
            for i, run_id in enumerate(ids):
                journal = store.load(run_id)
                assert journal.run.input == {"thread": n, "i": i}
                assert journal.visits == {node: {1: f"{n}-{i}-{v}"} for v, node in enumerate("abc", start=1)}
                assert journal.items == {(node, 1): {0: v} for v, node in enumerate("abc", start=1)}
                assert listed[run_id] == ("succeeded" if i % 3 else "failed")


def test_concurrent_claims_of_one_run_let_exactly_one_win(location: str) -> None:
    from wingman_actors.store import RunNotResumableError

    shape = chain_shape()
    wins: list[str] = []
    refusals: list[str] = []
    with RunStore(location) as store:
        run_id = store.begin_run("chain", shape, 0)
        store.set_status(run_id, "failed")
        barrier = threading.Barrier(10)

        def claim() -> None:
            barrier.wait()
            try:
                store.claim_run(run_id, shape)
                wins.append(run_id)
            except RunNotResumableError as exc:
                refusals.append(exc.status)

        threads = [threading.Thread(target=claim, name=f"store-claim-{i}") for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=50)
    assert len(wins) == 1 and refusals == ["running"] * 9


def test_a_claim_queued_behind_another_stores_claim_of_the_run_is_refused_once_that_one_commits(
        postgres_url: str) -> None:
    """Two stores (two processes) claim one run at the same moment: the second claim waits for
    the first one's row lock, then sees the run running for the first (a live owner) and is
    refused. The interleaving is forced: a connection of the test holds the run's row lock
    while the other store's claim, then the run's own store's claim, queue behind it (the
    server hands the row over in that order). The waiting claim used to judge the new owner's
    liveness from the owner row of the run's previous owner (itself), found none matching,
    and took the run over from a store running it (seen as both resumes of a suspended run
    failing, NoPendingInterruptError and StoreWriteError)."""
    import psycopg

    from wingman_actors.store import RunNotResumableError

    shape = chain_shape()
    wins: list[str] = []
    refusals: list[str] = []

    def claim(store: RunStore, name: str) -> None:
        try:
            store.claim_run(run_id, shape)
            wins.append(name)
        except RunNotResumableError as exc:
            refusals.append(f"{name}: {exc.status}")

    with RunStore(postgres_url) as one, RunStore(postgres_url) as other, \
            psycopg.connect(postgres_url, autocommit=True) as holder:
        run_id = one.begin_run("chain", shape, 0)  # (its owner is one)
        one.set_status(run_id, "failed", wait=True)

        def waiting() -> int:
            row = holder.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> "
                                 "pg_backend_pid() AND datname = current_database()").fetchone()
            return int(row[0]) if row else 0

        threads = [threading.Thread(target=claim, args=(s, n), name=f"store-claim-{n}")
                   for s, n in ((other, "other"), (one, "one"))]
        with holder.transaction():
            holder.execute("SELECT 1 FROM runs WHERE id = %s FOR UPDATE", (run_id,))
            for queued, thread in enumerate(threads, start=1):
                thread.start()
                assert until(lambda queued=queued: waiting() == queued, within=20), "the claim did not queue"
        for thread in threads:
            thread.join(timeout=20)
        assert wins == ["other"] and refusals == ["one: running"], (wins, refusals)
        assert one.get(run_id).status == "running"


_OTHER_PROCESS = """
import sys
from wingman_actors.store import RunStore
from tests.store.conftest import chain_shape
with RunStore(sys.argv[1]) as store:
    for i in range(int(sys.argv[2])):
        run_id = store.begin_run("chain", chain_shape(), i, run_id=f"child-{i}")
        for v, node in enumerate("abc", start=1):
            store.record_visit(run_id, node, 1, v)
        store.set_status(run_id, "succeeded")
"""


def test_two_processes_writing_one_file_lose_nothing(location: str) -> None:
    import subprocess
    import sys

    runs = 300
    RunStore(location).close()  # the schema exists before both start
    child = subprocess.Popen([sys.executable, "-c", _OTHER_PROCESS, location, str(runs)],
                             cwd=Path(__file__).parents[2], stderr=subprocess.PIPE, text=True)
    shape = chain_shape()
    with RunStore(location) as store:
        for i in range(runs):
            run_id = store.begin_run("chain", shape, i, run_id=f"parent-{i}")
            for v, node in enumerate("abc", start=1):
                store.record_visit(run_id, node, 1, v)
            store.set_status(run_id, "succeeded")
        _, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        listed = store.runs("succeeded")
        assert len(listed) == 2 * runs
        for who in ("parent", "child"):
            assert store.load(f"{who}-{runs - 1}").visits == {"a": {1: 1}, "b": {1: 2}, "c": {1: 3}}


_READ_AND_CLOSE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
print(conn.execute("SELECT count(*) FROM runs").fetchone()[0])
conn.close()  # the last connection to the file checkpoints it and deletes its WAL
"""


def _count_in_another_process(path: Path) -> int:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _READ_AND_CLOSE, str(path)], capture_output=True, text=True,
                          timeout=60, check=True)
    return int(done.stdout)


def test_opening_and_closing_a_second_store_keeps_the_first_one_visible_to_other_processes(path: Path) -> None:
    shape = chain_shape()
    with RunStore(path) as first:
        first.begin_run("chain", shape, 1)
        RunStore(path).close()  # must not drop the locks that tell other processes `first` uses the file
        assert _count_in_another_process(path) == 1
        assert path.with_name(path.name + "-wal").exists()  # another process's close left it to `first`
        first.begin_run("chain", shape, 2)
        assert _count_in_another_process(path) == 2


def _use_the_inherited_store(store: RunStore, queue: Any) -> None:
    outcome = []
    for attempt in (lambda: store.begin_run("chain", chain_shape(), 2), store.runs, store.flush):
        try:
            attempt()
            outcome.append("used")
        except StoreClosedError as exc:
            outcome.append(str(exc))
    store.close()  # touches nothing of the parent's
    queue.put(outcome)


def test_a_store_inherited_by_a_forked_child_refuses_to_be_used_there(location: str) -> None:
    import multiprocessing
    import warnings

    ctx = multiprocessing.get_context("fork")
    queue = ctx.SimpleQueue()
    with RunStore(location) as store:
        store.begin_run("chain", chain_shape(), 1)
        child = ctx.Process(target=_use_the_inherited_store, args=(store, queue))
        with warnings.catch_warnings():  # Python 3.12+ warns about fork() in a process with threads
            warnings.simplefilter("ignore", DeprecationWarning)
            child.start()
        child.join(30)
        assert child.exitcode == 0
        outcome = queue.get()
        assert all("opened before the process forked" in o for o in outcome), outcome
        store.begin_run("chain", chain_shape(), 3)  # the parent's store goes on
        assert [store.get(r.id).input for r in store.runs()] == [1, 3]
