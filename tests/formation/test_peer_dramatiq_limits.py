"""Time limits, age limits, shutdown, aborts and rate limits, ported from Dramatiq's own test
suite (Bogdanp/dramatiq ``tests/middleware/test_time_limit.py``, ``tests/test_actors.py``,
``tests/middleware/test_shutdown.py``, ``tests/test_abortable.py``,
``tests/test_concurrent_rate_limiter.py``): a node's ``timeout`` is Dramatiq's ``time_limit``,
a run's ``timeout`` given to ``submit()`` its per-message ``time_limit`` and ``max_age``, a
running formation's ``stop()`` a worker's shutdown, a run's ``cancel()`` an abort, and a
node's ``concurrency`` or a map's ``max_workers`` a concurrency limiter.

Deliberately different: Dramatiq stops a thread past its time limit (or at shutdown) by
raising an exception inside it; here an ``async def`` node is cancelled at its ``await``,
while a plain function's attempt is abandoned: its thread finishes on its own, and its late
value is dropped (nothing downstream ever sees it).
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError
from typing import Any

import pytest

from tests.support.peers import Counter, InFlight, sleeps_until_cancelled, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError


def test_a_node_time_limit_fails_the_run_and_the_late_value_never_reaches_the_next_node() -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actors_can_be_assigned_time_limits (one attempt, no
    success).

    Deliberately different: the function is not interrupted; it finishes on its own thread
    after the run failed, and what it returns is dropped."""
    counter = Counter()
    release = threading.Event()

    def do_work(x: int) -> int:
        counter.hit("attempt")
        release.wait(5)
        counter.hit("finished")
        return x

    def after(x: int) -> int:
        counter.hit("after")
        return x

    f = (Formation("tl").add_function("do_work", do_work, timeout=0.2).add_function("after", after)
         .connect("do_work", "after"))
    started = time.monotonic()
    try:
        with pytest.raises(FormationRuntimeError, match=r"node 'do_work' failed after 1 attempt") as info:
            f.run(1)
        assert time.monotonic() - started < 2.0
        assert isinstance(info.value.__cause__, NodeTimeoutError)
        assert info.value.nodes["after"].status == "skipped"
    finally:
        release.set()
    assert until(lambda: counter.count("finished") == 1)
    assert (counter.count("attempt"), counter.count("after")) == (1, 0)


def test_an_async_node_past_its_time_limit_is_cancelled_at_its_await() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_time_limit.py::test_time_limits_are_handled (the actor
    sees ``TimeLimitExceeded`` where it waits, and never succeeds)."""
    cancelled = threading.Event()
    f = Formation("tl").add_function("do_work", sleeps_until_cancelled(cancelled), timeout=0.2)
    with pytest.raises(FormationRuntimeError, match=r"node 'do_work'.*timed out|timeout"):
        f.run(None)
    assert cancelled.wait(3)


def test_a_time_limit_set_per_run_fails_that_run_and_leaves_runs_without_it_alone() -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actor_messages_can_be_assigned_time_limits
    (``send_with_options(time_limit=...)``: the limit is the message's, not the actor's)."""
    counter = Counter()

    async def do_work(x: float) -> float:
        counter.hit(x)
        await asyncio.sleep(x)
        return x

    with Formation("per-run").add_function("do_work", do_work, concurrency=2).start() as running:
        limited = running.submit(5.0, timeout=0.2)
        free = running.submit(0.05)
        with pytest.raises(FormationRuntimeError, match=r"timed out after 0.2s"):
            limited.result(5)
        assert free.result(5).output == 0.05


def test_a_timed_out_attempt_is_retried_and_reported_as_a_timeout_in_the_retry_event() -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actors_can_be_assigned_time_limits with
    ``max_retries=1`` (a time limit is a failure like any other, retried by the Retries middleware)."""
    counter = Counter()
    retries: list[dict[str, Any]] = []

    async def do_work(x: int) -> int:
        if counter.hit("attempt") == 1:
            await asyncio.sleep(5)
        return x * 2

    f = Formation("tl").add_function("do_work", do_work, timeout=0.2, retries=1, backoff=0)
    result = f.run(4, on_event=lambda e: retries.append(e.data) if e.type == "node_retry" else None)
    assert (result.output, result.nodes["do_work"].attempts) == (8, 2)
    assert len(retries) == 1 and "timeout" in retries[0]["error"].lower()


def test_a_run_whose_time_ran_out_while_it_was_queued_is_never_executed() -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actors_can_be_assigned_message_age_limits (a
    message older than its ``max_age`` when a worker gets to it is skipped, not run)."""
    counter = Counter()
    release = threading.Event()

    def do_work(x: str) -> str:
        counter.hit(x)
        if x == "busy":
            release.wait(5)
        return x

    with Formation("age").add_function("do_work", do_work).start() as running:
        busy = running.submit("busy")
        assert until(lambda: counter.count("busy") == 1)
        stale = running.submit("stale", timeout=0.2)
        with pytest.raises(FormationRuntimeError, match=r"timed out after 0.2s"):
            stale.result(5)
        release.set()
        assert busy.result(5).output == "busy"
        assert running.submit("fresh").result(5).output == "fresh"
    assert counter.count("stale") == 0


def test_stopping_a_formation_cancels_an_async_node_in_flight_and_resolves_its_run() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_shutdown.py::test_shutdown_notifications_are_received (the
    actor is told of the shutdown where it waits, and does not succeed)."""
    cancelled = threading.Event()
    entered = threading.Event()

    async def do_work(x: Any) -> str:
        entered.set()
        return await sleeps_until_cancelled(cancelled)(x)

    running = Formation("shutdown").add_function("do_work", do_work).start()
    try:
        future = running.submit(None)
        assert entered.wait(5)
    finally:
        running.stop()
    with pytest.raises(FormationRuntimeError, match=r"stopped before run .* finished"):
        future.result(5)
    assert cancelled.wait(3)


def test_stopping_a_formation_leaves_a_finished_runs_result_and_cuts_short_only_the_one_in_flight() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_shutdown.py::test_shutdown_notifications_dont_notify_completed_threads
    (one success, one shutdown)."""
    counter = Counter()
    entered = threading.Event()

    async def do_work(n: int) -> int:
        if n > 1:
            entered.set()
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                counter.hit("shutdown")
                raise
        counter.hit("success")
        return n

    running = Formation("shutdown").add_function("do_work", do_work, concurrency=2).start()
    try:
        short = running.submit(1)
        assert short.result(5).output == 1
        long = running.submit(10)
        assert entered.wait(5)
    finally:
        running.stop()
    assert short.result(0).output == 1
    with pytest.raises(FormationRuntimeError, match=r"stopped before"):
        long.result(5)
    assert until(lambda: counter.count("shutdown") == 1)
    assert counter.count("success") == 1


def test_stopping_a_formation_does_not_wait_for_a_plain_function_that_ignores_the_shutdown() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_shutdown.py::test_shutdown_notifications_can_be_ignored.

    Deliberately different: Dramatiq's worker waits for an actor that does not ask to be
    notified, and it succeeds; ``stop()`` resolves its run at once (within its grace) and
    the function finishes on its own thread, its value dropped."""
    counter = Counter()
    entered, release = threading.Event(), threading.Event()

    def do_work(_: Any) -> str:
        entered.set()
        release.wait(5)
        counter.hit("finished")
        return "done"

    running = Formation("shutdown").add_function("do_work", do_work).start()
    try:
        future = running.submit(None)
        assert entered.wait(5)
        started = time.monotonic()
        running.stop()
        assert time.monotonic() - started < 2.5  # the grace is at most 1 s
        with pytest.raises(FormationRuntimeError, match=r"stopped before"):
            future.result(0)
    finally:
        release.set()
        running.stop()
    assert until(lambda: counter.count("finished") == 1)


def test_stopping_a_formation_resolves_the_runs_queued_behind_the_one_in_flight_without_running_them() -> None:
    """Ported from Bogdanp/dramatiq tests/test_worker.py (a stopping worker requeues the messages it had
    prefetched): no run queued at stop is left unresolved, and none of them starts."""
    counter = Counter()
    entered, release = threading.Event(), threading.Event()

    def do_work(x: int) -> int:  # a plain function: one call at a time per replica, the rest queue
        counter.hit(x)
        entered.set()
        release.wait(5)
        return x

    running = Formation("queue").add_function("do_work", do_work).start()
    try:
        futures = [running.submit(i) for i in range(5)]
        assert entered.wait(5)
    finally:
        running.stop()
        release.set()
    for future in futures:
        with pytest.raises(FormationRuntimeError, match=r"stopped before"):
            future.result(5)
    assert [counter.count(i) for i in range(5)] == [1, 0, 0, 0, 0]


def test_aborting_a_queued_run_means_it_never_runs_and_aborting_the_running_one_frees_the_node() -> None:
    """Ported from Bogdanp/dramatiq tests/test_abortable.py (``abort(message_id)`` of a pending message skips
    it; of a running one raises ``Abort`` in it; other messages go on). The running
    attempt of a plain function is abandoned (see the module's docs)."""
    counter = Counter()
    release = threading.Event()

    def do_work(x: str) -> str:  # a plain function: the runs after the first wait in the node's queue
        counter.hit(x)
        if x == "running":
            release.wait(5)
        return x

    try:
        with Formation("abort").add_function("do_work", do_work).start() as running:
            in_flight = running.submit("running")
            assert until(lambda: counter.count("running") == 1)
            queued, other = running.submit("queued"), running.submit("other")
            assert running.cancel(queued.run_id) is True
            assert in_flight.cancel() is True
            with pytest.raises(CancelledError):
                in_flight.result(5)
            with pytest.raises(CancelledError):
                queued.result(5)
            assert other.result(5).output == "other"  # the node took it at once, the abandoned call still held
            assert running.cancel(other.run_id) is False
    finally:
        release.set()
    assert (counter.count("queued"), counter.count("other")) == (0, 1)


def test_aborting_a_run_in_a_map_stops_the_items_not_yet_started() -> None:
    """Ported from Bogdanp/dramatiq tests/test_abortable.py with a group (aborting the messages of a group):
    the items still waiting for a worker never start."""
    counter = Counter()
    entered = threading.Event()

    async def item(i: int) -> int:
        counter.hit("started")
        entered.set()
        await asyncio.sleep(5)
        return i

    with Formation("abort").add_map("items", item, max_workers=2).start() as running:
        future = running.submit(list(range(10)))
        assert entered.wait(5)
        assert future.cancel() is True
        with pytest.raises(CancelledError):
            future.result(5)
    assert counter.count("started") <= 2


def test_a_node_concurrency_limit_holds_across_many_runs() -> None:
    """Ported from Bogdanp/dramatiq tests/test_concurrent_rate_limiter.py::test_concurrent_rate_limiter_limits_concurrency
    (with a limit of 2, no more than 2 calls at once; every call made).

    Deliberately different: ``concurrency`` counts replicas, and bounds the calls at once
    of a plain function only; an ``async def`` node's replica awaits many visits at once
    (docs/async.md: limit those with an ``asyncio.Semaphore``)."""
    flight = InFlight()
    pair = threading.Barrier(2, timeout=5)

    def do_work(x: int) -> int:
        with flight:
            pair.wait()  # both replicas busy at once, or a broken barrier fails the run
        return x

    with Formation("limit").add_function("do_work", do_work, concurrency=2).start() as running:
        futures = [running.submit(i) for i in range(8)]
        assert [f.result(10).output for f in futures] == list(range(8))
    assert flight.peak == 2


def test_a_map_worker_limit_holds_across_its_items() -> None:
    """Ported from Bogdanp/dramatiq tests/test_concurrent_rate_limiter.py (``ConcurrentRateLimiter(limit=3)``
    around the work of every message of a group)."""
    flight = InFlight()
    trio = threading.Barrier(3, timeout=5)

    def item(x: int) -> int:
        with flight:
            trio.wait()
        return x * x

    result = Formation("limit").add_map("items", item, max_workers=3).run(list(range(9)))
    assert result.output == [x * x for x in range(9)]
    assert flight.peak == 3
