"""An ``async def`` function node's replica has many visits in flight: each visit's
coroutine is a task on the replica's event loop, started at once, and reports to the
runtime when it ends, with the sync path's retries, timeouts, cancels and error routes.
(One visit at a time per replica was the old behaviour: tests/formation/test_async_nodes.py
has the rest of the async node's contract.)"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError
from typing import Any

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError
from wingman_actors.formation import NodeFailure


async def nap(x: int) -> int:
    await asyncio.sleep(0.2)
    return x


def test_fifty_runs_through_one_async_replica_overlap_their_awaits() -> None:
    with Formation("overlap").add_function("nap", nap, concurrency=1).start() as running:
        t0 = time.perf_counter()
        futures = [running.submit(i) for i in range(50)]
        outputs = [f.result(10).output for f in futures]
        elapsed = time.perf_counter() - t0

    assert outputs == list(range(50))
    assert elapsed < 2  # one at a time would take 50 x 0.2 s = 10 s


def test_a_timeout_cancels_only_the_visit_that_ran_out_of_time() -> None:
    unwound: list[int] = []

    async def sleepy(x: int) -> int:
        try:
            await asyncio.sleep(30 if x == 0 else 0.3)
        finally:
            unwound.append(x)
        return x

    with Formation("t").add_function("sleepy", sleepy, timeout=1.0).start() as running:
        slow = running.submit(0)
        fast = [running.submit(i) for i in range(1, 6)]
        assert [f.result(5).output for f in fast] == [1, 2, 3, 4, 5]
        with pytest.raises(FormationRuntimeError) as info:
            slow.result(5)
    assert isinstance(info.value.__cause__, NodeTimeoutError)
    # the timed-out visit's finally runs on its loop thread; stop() does not wait for the
    # cleanup of a run that has ended
    deadline = time.monotonic() + 2
    while len(unwound) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(unwound) == [0, 1, 2, 3, 4, 5]


def test_cancelling_one_run_cancels_its_visit_and_runs_its_finally_while_others_go_on() -> None:
    started = threading.Event()
    unwound = threading.Event()

    async def wait_or_pass(x: int) -> int:
        if x:
            await asyncio.sleep(0.2)
            return x
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            unwound.set()
        return x

    with Formation("c").add_function("wait_or_pass", wait_or_pass).start() as running:
        stuck = running.submit(0)
        assert started.wait(5)
        others = [running.submit(i) for i in range(1, 4)]
        assert stuck.cancel()
        with pytest.raises(CancelledError):
            stuck.result(1)
        assert unwound.wait(5)
        assert [f.result(5).output for f in others] == [1, 2, 3]


def test_a_run_timeout_cancels_the_visits_of_that_run() -> None:
    unwound = threading.Event()

    async def long(x: int) -> int:
        try:
            await asyncio.sleep(30)
        finally:
            unwound.set()
        return x

    t0 = time.perf_counter()
    with pytest.raises(FormationRuntimeError):
        Formation("rt").add_function("long", long).run(1, timeout=0.2)

    assert time.perf_counter() - t0 < 2
    assert unwound.wait(5)


def test_retries_of_an_async_node_run_while_other_visits_are_in_flight() -> None:
    calls: dict[int, int] = {}

    async def flaky(x: int) -> int:
        calls[x] = calls.get(x, 0) + 1
        await asyncio.sleep(0.05)
        if calls[x] < 3:
            raise ConnectionError("try again")
        return x

    with Formation("r").add_function("flaky", flaky, retries=2, backoff=0).start() as running:
        futures = [running.submit(i) for i in range(10)]
        assert [f.result(10).output for f in futures] == list(range(10))
    assert calls == {i: 3 for i in range(10)}


def test_a_failed_async_visit_takes_the_error_edge() -> None:
    async def broken(x: int) -> int:
        await asyncio.sleep(0)
        raise ValueError(f"bad {x}")

    def handle(failure: NodeFailure) -> str:
        return f"handled {failure.node}: {failure.error}"

    f = (Formation("e").add_function("broken", broken).add_function("handle", handle)
         .connect("broken", "handle", on_error=True))

    assert f.run(3).outputs == {"handle": "handled broken: bad 3"}


def test_a_failed_async_visit_keeps_the_replica_serving_the_others() -> None:
    async def maybe(x: int) -> int:
        await asyncio.sleep(0.1)
        if x == 0:
            raise ValueError("zero")
        return x

    with Formation("f").add_function("maybe", maybe).start() as running:
        futures: list[Any] = [running.submit(i) for i in range(5)]
        with pytest.raises(FormationRuntimeError):
            futures[0].result(5)
        assert [f.result(5).output for f in futures[1:]] == [1, 2, 3, 4]
        threads = [t.name for t in threading.enumerate() if t.name.startswith("wingman-node-maybe")]
    assert sorted(threads) == ["wingman-node-maybe-0", "wingman-node-maybe-loop-0"]


def test_stopping_a_formation_cancels_the_visits_in_flight_and_leaves_no_thread() -> None:
    unwound: list[int] = []
    started = threading.Semaphore(0)

    async def hang(x: int) -> int:
        started.release()
        try:
            await asyncio.sleep(30)
        finally:
            unwound.append(x)
        return x

    running = Formation("s").add_function("hang", hang).start()
    futures = [running.submit(i) for i in range(5)]
    for _ in range(5):
        assert started.acquire(timeout=5)
    t0 = time.perf_counter()
    running.stop()

    assert time.perf_counter() - t0 < 2
    assert sorted(unwound) == [0, 1, 2, 3, 4]
    for f in futures:
        with pytest.raises(FormationRuntimeError):
            f.result(1)
    assert not [t for t in threading.enumerate() if t.name.startswith("wingman-node-hang")]


def test_a_visit_stuck_in_blocking_code_is_abandoned_and_its_retry_runs_on_a_fresh_replica() -> None:
    calls: list[float] = []
    release = threading.Event()

    async def blocks_once(x: int) -> int:
        calls.append(time.perf_counter())
        if len(calls) == 1:
            release.wait(5)  # blocking code: the loop cannot cancel it
        return x

    t0 = time.perf_counter()
    try:
        result = Formation("b").add_function("blocks_once", blocks_once, timeout=0.2, retries=1, backoff=0).run(4)
        elapsed = time.perf_counter() - t0
    finally:
        release.set()

    assert result.output == 4 and len(calls) == 2
    assert elapsed < 2


def test_a_replica_has_at_most_max_in_flight_visits_and_the_rest_wait_in_the_queue() -> None:
    from wingman_actors.actors._async_function import MAX_IN_FLIGHT

    held: dict[str, Any] = {"running": 0, "peak": 0}

    async def hold(x: int) -> int:
        if "gate" not in held:
            held["loop"], held["gate"] = asyncio.get_running_loop(), asyncio.Event()
        held["running"] += 1
        held["peak"] = max(held["peak"], held["running"])
        try:
            await held["gate"].wait()
        finally:
            held["running"] -= 1
        return x

    with Formation("cap").add_function("hold", hold).start() as running:
        futures = [running.submit(i) for i in range(MAX_IN_FLIGHT + 20)]
        deadline = time.monotonic() + 20
        while held["running"] < MAX_IN_FLIGHT and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # room for any visit beyond the limit to start
        peak = held["peak"]
        held["loop"].call_soon_threadsafe(held["gate"].set)
        assert [f.result(20).output for f in futures] == list(range(MAX_IN_FLIGHT + 20))

    assert peak == MAX_IN_FLIGHT


def test_a_replica_replaced_for_a_stuck_visit_finishes_its_other_visits_as_usual() -> None:
    release = threading.Event()

    async def step(x: int) -> int:
        if x == 0:
            release.wait(1.0)  # blocking code: the loop and its other visits wait
        else:
            await asyncio.sleep(0.05)
        return x

    try:
        with Formation("d").add_function("step", step).start() as running:
            other = running.submit(1)  # in flight on the loop before the stuck one
            stuck = running.submit(0, timeout=0.3)
            with pytest.raises(FormationRuntimeError):
                stuck.result(5)
            time.sleep(0.1)  # the run's future fails just before its visits are released
            t0 = time.perf_counter()
            assert running.submit(2).result(5).output == 2  # on the fresh replica, at once
            assert time.perf_counter() - t0 < 0.5
            assert other.result(5).output == 1  # not cancelled: it ends when the loop is free
    finally:
        release.set()
