"""The fleet's worker machinery: the long-lived worker pool a fleet node keeps."""

from __future__ import annotations

import threading

import pytest

from wingman_actors.agents._fleet_loops import WorkerPool


def test_a_pool_runs_jobs_and_reports_their_results_and_errors() -> None:
    pool = WorkerPool("t")
    try:
        ok = pool.submit(lambda a, b: a + b, 2, b=3)
        bad = pool.submit(lambda: 1 / 0)
        assert ok.result(5) == 5
        with pytest.raises(ZeroDivisionError):
            bad.result(5)
    finally:
        pool.shutdown()


def test_idle_workers_are_reused_instead_of_starting_new_threads() -> None:
    pool = WorkerPool("t")
    try:
        [f.result(5) for f in [pool.submit(threading.get_ident) for _ in range(3)]]
        started = pool.size
        ran_on: set[int] = set()
        for _ in range(5):  # each batch once the previous one has finished: every worker idle
            ran_on |= {f.result(5) for f in [pool.submit(threading.get_ident) for _ in range(started)]}
        assert pool.size == started <= 3
        assert ran_on <= {t.ident for t in threading.enumerate() if t.name.startswith("wingman-fleet-t-")}
    finally:
        pool.shutdown()


def test_a_pool_starts_a_thread_per_job_running_at_once() -> None:
    pool = WorkerPool("t")
    gate = threading.Barrier(4, timeout=5)
    try:
        jobs = [pool.submit(gate.wait) for _ in range(4)]  # all four must run together
        assert sorted(f.result(5) for f in jobs) == [0, 1, 2, 3]
        assert pool.size == 4
    finally:
        pool.shutdown()


def test_shutdown_ends_every_worker_and_refuses_new_work() -> None:
    pool = WorkerPool("gone")
    pool.submit(lambda: None).result(5)
    pool.shutdown()
    assert not [t for t in threading.enumerate() if t.name.startswith("wingman-fleet-gone-")]
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: None)
    pool.shutdown()  # twice is harmless

