"""Many runs in flight, concurrency limits, cancellation and fan-out to child workflows,
ported from the Hatchet Python SDK's examples, their e2e tests and its unit tests
(hatchet-dev/hatchet, ``sdks/python/examples/cancellation``, ``concurrency_limit``,
``concurrency_cancel_in_progress``, ``concurrency_limit_rr``, ``fanout``, ``bulk_fanout``,
``child``, ``sdks/python/tests/test_cancellation.py``): a workflow run is a submitted run,
``max_runs``/``slots`` a node's ``concurrency``, a child workflow a nested formation and a
fan-out to children a map over it.

Deliberately different: Hatchet's concurrency strategies (``CANCEL_IN_PROGRESS``,
``GROUP_ROUND_ROBIN`` by a key expression) are server policies; ours has no keyed groups,
so the cancel-in-progress strategy is the caller cancelling the older run, and the
round-robin test pins the order runs are taken in (first submitted, first started).
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError, Future
from typing import Any

import pytest

from tests.support.peers import Counter, InFlight, busy_with, cancellable, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, MapItemsError


def test_a_cancelled_run_ends_cancelled_without_output_and_its_step_sees_the_cancel() -> None:
    """From hatchet examples/cancellation/test_cancellation.py (status CANCELLED, no output;
    the step's exit_flag is set) and tests/test_cancellation.py
    test_cancellation_during_await_raises (the await is cancelled quickly)."""
    cancelled, entered = threading.Event(), threading.Event()
    events: list[str] = []
    f = Formation("CancelWorkflow").add_function("step1", cancellable(cancelled, entered), timeout=30, retries=1)
    with f.start(on_event=lambda e: events.append(e.type.value)) as running:
        future = running.submit(None)
        assert entered.wait(5)
        started = time.monotonic()
        assert future.cancel() is True
        with pytest.raises(CancelledError):
            future.result(timeout=5)
        assert cancelled.wait(2) and time.monotonic() - started < 2
        assert until(lambda: "run_cancelled" in events)
    assert "node_retry" not in events and "run_finished" not in events


def test_cancelling_a_run_twice_or_after_it_ended_says_so() -> None:
    """From hatchet tests/test_cancellation.py test_cancel_idempotent (a second cancel is
    safe and changes nothing) and test_cancel_sets_flag."""
    cancelled, entered = threading.Event(), threading.Event()
    f = Formation("twice").add_function("step1", cancellable(cancelled, entered))
    with f.start() as running:
        future = running.submit(None)
        assert entered.wait(5)
        assert running.cancel(future.run_id) is True
        with pytest.raises(CancelledError):
            future.result(timeout=5)
        # the run has ended: running.cancel says so; the future's cancel() of a cancelled future
        # is True, as concurrent.futures' (tests/formation/test_peer_futures.py pins that)
        assert running.cancel(future.run_id) is False and future.cancel() is True
    assert cancelled.wait(2) and future.cancelled()


def test_cancelling_a_parent_run_cancels_its_child_workflow() -> None:
    """From hatchet tests/test_cancellation.py (CancellationReason.PARENT_CANCELLED: a
    child's work is cancelled with its parent)."""
    cancelled, entered = threading.Event(), threading.Event()
    child = Formation("child").add_function("prep", str).add_function("wait", cancellable(cancelled, entered))
    parent = (Formation("parent").add_function("start", lambda x: x)
              .add_formation("child", child.connect("prep", "wait")).connect("start", "child"))
    with parent.start() as running:
        future = running.submit("x")
        assert entered.wait(5)
        assert future.cancel() is True
        with pytest.raises(CancelledError):
            future.result(timeout=5)
        assert cancelled.wait(2)


def test_cancelling_a_queued_run_means_it_never_starts(gate: tuple[threading.Event, threading.Event]) -> None:
    """From hatchet examples/cancellation (a run cancelled before a worker took it never
    runs)."""
    entered, release = gate
    counter = Counter()
    with Formation("queue").add_function("busy", busy_with("first", gate, counter)).start() as running:
        first = running.submit("first")
        assert entered.wait(5)
        queued = running.submit("queued")
        assert queued.cancel() is True
        release.set()
        assert first.result(timeout=5).output == "first"
        assert running.submit("after").result(timeout=5).output == "after"
    assert queued.cancelled() and counter.count("queued") == 0


def test_cancel_in_progress_leaves_only_the_newest_run_to_complete() -> None:
    """From hatchet examples/concurrency_cancel_in_progress/test_concurrency_cancel_in_progress.py
    (ten runs of group A, one after another: each new one cancels the one in progress; the
    last completes, the nine others are cancelled)."""
    release = threading.Event()
    started = Counter()

    async def task(i: int) -> int:
        started.hit("task")
        while not release.is_set():
            await asyncio.sleep(0.005)
        return i

    with Formation("cancel_in_progress").add_function("task", task).start() as running:
        futures: list[Future[Any]] = []
        for i in range(10):
            if futures:
                assert futures[-1].cancel() is True
            futures.append(running.submit(i))
            assert until(lambda: started.count("task") == len(futures), within=5)
        release.set()
        assert futures[-1].result(timeout=5).output == 9
    assert all(f.cancelled() for f in futures[:-1])


def test_a_concurrency_limit_caps_the_runs_a_task_works_on_at_once() -> None:
    """From hatchet examples/concurrency_limit/test_concurrency_limit.py (max_runs: no more
    than the limit run at once, and the limit is used)."""
    flight = InFlight()
    full = threading.Event()

    def step(x: int) -> int:
        with flight:
            if flight.now >= 2:
                full.set()
            full.wait(5)
            time.sleep(0.01)
            return x

    with Formation("limit").add_function("step", step, concurrency=2).start() as running:
        futures = [running.submit(i) for i in range(8)]
        assert [f.result(timeout=10).output for f in futures] == list(range(8))
    assert flight.peak == 2


def test_runs_waiting_for_a_busy_task_start_in_the_order_they_were_submitted(
        gate: tuple[threading.Event, threading.Event]) -> None:
    """From hatchet examples/concurrency_limit_rr (GROUP_ROUND_ROBIN: queued runs are
    taken fairly, none starved; ours takes them first in, first out)."""
    entered, release = gate
    started: list[str] = []

    def step(x: str) -> str:
        started.append(x)  # one replica: one call at a time
        if x == "busy":
            entered.set()
            release.wait(10)
        return x

    with Formation("rr").add_function("step", step).start() as running:
        futures = [running.submit("busy")]
        assert entered.wait(5)
        futures += [running.submit(f"run{i}") for i in range(5)]
        release.set()
        assert [f.result(timeout=10).output for f in futures] == ["busy"] + [f"run{i}" for i in range(5)]
    assert started == ["busy"] + [f"run{i}" for i in range(5)]


def test_hundreds_of_runs_through_a_dag_each_resolve_with_their_own_result() -> None:
    """From hatchet examples/bulk_operations and bulk_fanout (many runs triggered at once:
    every one resolves with its own result)."""

    def total(double: int, square: int) -> int:
        return double + square

    f = (Formation("bulk").add_function("start", lambda x: x, concurrency=2)
         .add_function("double", lambda x: 2 * x).add_function("square", lambda x: x * x)
         .add_function("total", total)
         .connect("start", "double", "total").connect("start", "square", "total"))
    with f.start() as running:
        futures = [running.submit(i) for i in range(300)]
        assert [fut.result(timeout=30).output for fut in futures] == [2 * i + i * i for i in range(300)]


def child_workflow() -> Formation:
    """Hatchet's FanoutChild: process, then process2 reading process's output."""
    return (Formation("FanoutChild").add_function("process", lambda a: {"status": a})
            .add_function("process2", lambda out: {"status2": out["status"] + "2"})
            .connect("process", "process2"))


def test_a_parent_fans_out_to_a_child_workflow_per_item_and_gets_their_results_in_order() -> None:
    """From hatchet examples/fanout/worker.py and bulk_fanout/test_bulk_fanout.py (n=12
    children, 12 results)."""
    parent = (Formation("FanoutParent").add_function("inputs", lambda n: [str(i) for i in range(n)])
              .add_map("spawn", formation=child_workflow(), max_workers=4).connect("inputs", "spawn"))
    result = parent.run(12)
    assert result.output == [{"status2": f"{i}2"} for i in range(12)]


def test_a_fan_out_over_no_items_spawns_no_child_and_gives_an_empty_list() -> None:
    """From hatchet examples/fanout/worker.py (``ParentInput(n=0)``: ``aio_run_many([])``)."""
    parent = (Formation("FanoutParent").add_function("inputs", lambda n: [str(i) for i in range(n)])
              .add_map("spawn", formation=child_workflow()).connect("inputs", "spawn"))
    assert parent.run(0).output == []


def test_a_fan_out_runs_no_more_children_at_once_than_its_limit() -> None:
    """From hatchet examples/fanout/worker.py (the worker's ``slots`` bound the children
    running at once)."""
    flight = InFlight()

    def work(x: int) -> int:
        with flight:
            time.sleep(0.01)
            return x

    child = Formation("child").add_function("work", work)
    parent = Formation("parent").add_map("spawn", formation=child, max_workers=3)
    assert parent.run(list(range(12))).output == list(range(12))
    assert 1 <= flight.peak <= 3


def test_a_failing_child_fails_the_parent_naming_the_item_and_the_childs_task() -> None:
    """From hatchet examples/child and fanout (a child run's failure is raised in the parent
    that awaited it)."""

    def process(a: str) -> str:
        if a == "2":
            raise ValueError(f"child {a} failed")
        return a

    child = Formation("child").add_function("process", process)
    parent = Formation("parent").add_map("spawn", formation=child)
    with pytest.raises(FormationRuntimeError) as caught:
        parent.run(["0", "1", "2", "3"])
    err = caught.value
    assert err.node == "spawn" and isinstance(err.__cause__, MapItemsError)
    assert list(err.__cause__.errors) == [2]
    assert "child 2 failed" in str(err)
