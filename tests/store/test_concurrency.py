"""Many threads (and two stores on one file) write and read at once: no "database is
locked", nothing lost."""

from __future__ import annotations

import threading
from pathlib import Path

from wingman_actors.store import RunStore

from .conftest import chain_shape

THREADS = 20
RUNS_PER_THREAD = 15


def test_twenty_threads_writing_and_reading_lose_nothing_and_never_hit_a_lock(path: Path) -> None:
    shape = chain_shape()
    errors: list[BaseException] = []
    started: dict[int, list[str]] = {}
    with RunStore(path) as first, RunStore(path) as second:
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
    with RunStore(path) as store:
        listed = {r.id: r.status for r in store.runs()}
        assert len(listed) == THREADS * RUNS_PER_THREAD
        for n, ids in started.items():
            for i, run_id in enumerate(ids):
                journal = store.load(run_id)
                assert journal.run.input == {"thread": n, "i": i}
                assert journal.visits == {node: {1: f"{n}-{i}-{v}"} for v, node in enumerate("abc", start=1)}
                assert journal.items == {(node, 1): {0: v} for v, node in enumerate("abc", start=1)}
                assert listed[run_id] == ("succeeded" if i % 3 else "failed")


def test_concurrent_claims_of_one_run_let_exactly_one_win(path: Path) -> None:
    from wingman_actors.store import RunNotResumableError

    shape = chain_shape()
    wins: list[str] = []
    refusals: list[str] = []
    with RunStore(path) as store:
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
