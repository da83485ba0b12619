"""Benchmark of the run journal alone (``wingman_actors.store``), without the runtime.

``store_journal``: many threads each record 3-visit runs as the runtime will (a durable
``begin_run``, three ``record_visit`` calls, ``set_status("succeeded")``), then the file
is measured. Reports runs/s, journal writes/s, bytes per node visit beyond the payload
(with the run records shared out over the visits, and of the journal alone),
the file size per 1,000 runs, and the CPU time per run (steadier than wall time on a
busy machine). Run alone with ``python -m wingman_actors._bench.store [--quick]``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import tempfile
import threading
import time

import networkx as nx  # type: ignore[import-untyped]

from ..store import FormationShape, RunStore
from ._measurement import Measurement

__all__ = ["store_journal"]

_THREADS = 16
_VISITS = 3
_WRITES_PER_RUN = 2 + _VISITS  # begin_run, the visits, set_status


def _shape() -> FormationShape:
    g = nx.DiGraph([("a", "b"), ("b", "c")])
    nx.set_node_attributes(g, "function", "kind")
    return FormationShape.of(g)


def _record_runs(store: RunStore, shape: FormationShape, runs: int, threads: int) -> tuple[float, float]:
    """Wall and CPU seconds (of the whole process) to record ``runs`` 3-visit runs from
    ``threads`` threads, all committed."""
    per_thread = runs // threads
    start = threading.Barrier(threads + 1)

    def work() -> None:
        start.wait()
        for i in range(per_thread):
            run_id = store.begin_run("bench-chain", shape, i)
            for v, node in enumerate(("a", "b", "c"), start=1):
                store.record_visit(run_id, node, 1, i + v)
            store.set_status(run_id, "succeeded")

    workers = [threading.Thread(target=work, name=f"bench-store-{n}") for n in range(threads)]
    for w in workers:
        w.start()
    start.wait()
    t0, cpu0 = time.perf_counter(), time.process_time()
    for w in workers:
        w.join()
    store.flush()
    return time.perf_counter() - t0, time.process_time() - cpu0


def _size(path: str) -> int:
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def _payload_bytes(runs: int) -> int:
    """The JSON text of every input and visit output of the recorded runs."""
    return sum(len(json.dumps(i)) + sum(len(json.dumps(i + v)) for v in range(1, _VISITS + 1)) for i in range(runs))


def _checkpointed_size(path: str) -> int:
    """The database's size once a checkpoint has folded the WAL into it."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return _size(path)


def _journal_row_bytes(tmp: str, shape: FormationShape, visits: int) -> float:
    """Bytes per visit of the journal alone (no run records): one run with many visits."""
    path = os.path.join(tmp, "journal-only.sqlite")
    with RunStore(path) as store:
        run_id = store.begin_run("bench-chain", shape, 0)
    before = _checkpointed_size(path)
    with RunStore(path) as store:
        for v in range(1, visits + 1):
            store.record_visit(run_id, "a", v, v)
    payload = sum(len(json.dumps(v)) for v in range(1, visits + 1))
    return (_checkpointed_size(path) - before - payload) / visits


def store_journal(quick: bool) -> Measurement:
    runs = 3_000 if quick else 20_000
    reps = 3 if quick else 5
    shape = _shape()
    rates: list[float] = []
    per_visit: list[float] = []
    per_1000: list[float] = []
    cpu_per_run: list[float] = []
    with tempfile.TemporaryDirectory(prefix="wingman-bench-store-") as tmp:
        for rep in range(reps):
            path = os.path.join(tmp, f"runs-{rep}.sqlite")
            with RunStore(path) as store:
                elapsed, cpu = _record_runs(store, shape, runs, _THREADS)
            rates.append(runs / elapsed)
            cpu_per_run.append(cpu / runs * 1e6)
            size = _checkpointed_size(path)
            visits = runs // _THREADS * _THREADS * _VISITS
            per_visit.append((size - _payload_bytes(runs // _THREADS * _THREADS)) / visits)
            per_1000.append(size / (runs // _THREADS * _THREADS) * 1000)
        row_bytes = _journal_row_bytes(tmp, shape, 5_000 if quick else 50_000)
    rate = statistics.median(rates)
    overhead = statistics.median(per_visit)
    writes = rate * _WRITES_PER_RUN
    return Measurement(
        "store_journal", round(rate), "runs/s", ">= 3,000 runs/s (15,000 writes/s); <= 300 B/visit beyond payload",
        writes >= 15_000 and overhead <= 300, None,
        {"writes_per_s": round(writes), "cpu_us_per_run": round(statistics.median(cpu_per_run), 1),
         "threads": _THREADS, "runs": runs, "runs_per_s": [round(r) for r in rates],
         "bytes_per_visit_beyond_payload": round(overhead, 1),
         "journal_bytes_per_visit_beyond_payload": round(row_bytes, 1),
         "file_bytes_per_1000_runs": round(statistics.median(per_1000))},
    )


def main() -> None:
    """Print the measurement as JSON."""
    import sys

    print(json.dumps(store_journal("--quick" in sys.argv).to_dict(), indent=2))


if __name__ == "__main__":
    main()
