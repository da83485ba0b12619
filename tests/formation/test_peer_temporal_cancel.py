"""Behaviours ported from Temporal's Python SDK's own tests (temporalio/sdk-python,
``tests/worker/test_activity.py``, ``tests/worker/test_workflow.py``): cancelling a
workflow and its activities, ``async def`` activities, worker shutdown, and a few of them
on ``backend="ray"``. A workflow handle's ``cancel()`` is our ``future.cancel()`` /
``running.cancel(run_id)``; an ``async def`` activity is an ``async def`` node; stopping a
worker is ``RunningFormation.stop()``. (Retries, timeouts and failure types:
``test_peer_temporal.py``.)

Deliberately different (DESIGN.md documents ours):
- A Temporal activity that catches its cancellation may return a value, and the workflow
  may use it; a cancelled run is cancelled: the coroutine's ``except``/``finally`` runs
  (its cleanup), and whatever it returns is dropped.
- A sync Temporal activity on a thread pool gets a ``CancelledError`` raised into its
  thread; a sync function attempt is abandoned (Python cannot interrupt a thread): the
  run ends at once, the node takes new work on a fresh replica, and the old thread runs
  on until its code returns.
- A worker shutting down cancels its activities and the workflow goes on elsewhere; a
  stopped formation fails the runs it had in flight (journalled ones resume elsewhere).
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError
from typing import Any

import pytest

from tests.support.peers import Counter, local_ray, sleeps_until_cancelled  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError
from wingman_actors.formation.events import FormationEvent

SLACK = 1.0  # a loaded, shared 2-core machine


def wait_for(event: threading.Event, timeout: float = 5.0) -> None:
    assert event.wait(timeout), "the node never started"


class Cleanup:
    """An ``async def`` node that waits long, saying when it started, when it saw its
    cancellation and when its ``finally`` ran; it returns ``caught`` if it swallows the
    cancellation (as Temporal's ``test_activity_cancel_catch`` does)."""

    def __init__(self, swallow: bool = False) -> None:
        self.swallow = swallow
        self.started, self.cancelled, self.cleaned = threading.Event(), threading.Event(), threading.Event()

    async def __call__(self, x: Any) -> Any:
        self.started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.cancelled.set()
            if self.swallow:
                return "caught"
            raise
        finally:
            self.cleaned.set()
        return x


# --- cancelling a run and its activities ------------------------------------------------


def test_cancelling_a_run_cancels_its_async_node_whose_cleanup_runs() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_cancel_throw."""
    node, events = Cleanup(), []
    f = Formation("cancel").add_function("wait_cancel", node)
    with f.start(on_event=lambda e: events.append(e.type)) as running:
        future = running.submit("x")
        wait_for(node.started)
        assert future.cancel() is True
        with pytest.raises(CancelledError):
            future.result(5)
        assert node.cleaned.wait(2) and node.cancelled.is_set()
    assert "run_cancelled" in events and "run_finished" not in events


def test_a_cancelled_async_node_that_swallows_the_cancel_still_ends_its_run_cancelled() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_cancel_catch.
    Temporal hands the caught cancellation's return value to the workflow; ours drops it."""
    node, outputs = Cleanup(swallow=True), []

    def listen(event: FormationEvent) -> None:
        if event.type == "node_finished":
            outputs.append(event.data["output"])

    with Formation("catch").add_function("wait_cancel", node).add_function("after", str.upper).connect(
            "wait_cancel", "after").start(on_event=listen) as running:
        future = running.submit("x")
        wait_for(node.started)
        assert running.cancel(future.run_id) is True
        with pytest.raises(CancelledError):
            future.result(5)
        assert node.cleaned.wait(2) and node.cancelled.is_set()
    assert outputs == []  # neither "caught" nor anything downstream of it


def test_cancelling_a_run_abandons_its_stuck_sync_node_and_the_node_takes_new_work_at_once() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_sync_activity_thread_cancel_uncaught
    (Temporal raises CancelledError into the activity's thread; ours abandons the attempt)."""
    reached, release = threading.Event(), threading.Event()

    def wait_cancel(x: str) -> str:
        if x == "stuck":
            reached.set()
            release.wait(5)
        return x.upper()

    try:
        with Formation("sync").add_function("wait_cancel", wait_cancel).start() as running:
            stuck = running.submit("stuck")
            wait_for(reached)
            started = time.monotonic()
            assert stuck.cancel() is True
            with pytest.raises(CancelledError):
                stuck.result(5)
            assert running.submit("next").result(5).output == "NEXT"  # the old thread is still blocked
            assert time.monotonic() - started < SLACK
            assert not release.is_set()
    finally:
        release.set()


def test_a_queued_run_is_cancelled_before_it_starts_and_the_run_ahead_of_it_finishes() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_cancel_before_run_completes."""
    counter, reached, release = Counter(), threading.Event(), threading.Event()

    def slow(x: str) -> str:
        counter.hit(x)
        reached.set()
        release.wait(5)
        return x

    with Formation("queue").add_function("slow", slow).start() as running:
        first = running.submit("first")
        wait_for(reached)
        queued = running.submit("queued")
        assert queued.cancel() is True
        release.set()
        assert first.result(5).output == "first"
        with pytest.raises(CancelledError):
            queued.result(5)
    assert counter.calls == {"first": 1}


def test_cancelling_a_run_that_finished_returns_false_and_keeps_its_result() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_cancel_after_complete
    (cancelling a completed workflow has no effect on its result)."""
    with Formation("done").add_function("a", str.upper).start() as running:
        future = running.submit("x")
        assert future.result(5).output == "X"
        assert future.cancel() is False and running.cancel(future.run_id) is False
        assert future.result(0).output == "X"


def test_cancelling_one_run_leaves_the_other_runs_in_flight_untouched() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_cancel_activity
    (one workflow's cancel reaches only its own activities)."""
    started = {x: threading.Event() for x in ("a", "b", "c")}
    release = threading.Event()

    async def wait(x: str) -> str:
        started[x].set()
        while not release.is_set():
            await asyncio.sleep(0.005)
        return x * 2

    with Formation("many").add_function("wait", wait, concurrency=3).start() as running:
        futures = {x: running.submit(x) for x in started}
        for event in started.values():
            wait_for(event)
        assert running.cancel(futures["b"].run_id) is True
        with pytest.raises(CancelledError):
            futures["b"].result(5)
        release.set()
        assert {x: futures[x].result(5).output for x in ("a", "c")} == {"a": "aa", "c": "cc"}


def test_a_node_timeout_cancels_its_async_coroutine_whose_cleanup_runs() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_heartbeat_details_timeout
    (an activity timed out by the server is cancelled in the worker)."""
    cancelled = threading.Event()
    f = Formation("timeout").add_function("slow", sleeps_until_cancelled(cancelled), timeout=0.1)
    with pytest.raises(FormationRuntimeError, match=r"node 'slow'") as raised:
        f.run("x")
    assert isinstance(raised.value.__cause__, NodeTimeoutError)
    assert cancelled.wait(2)


# --- async activities and workflows -----------------------------------------------------


def test_arun_awaits_async_nodes_without_blocking_the_callers_loop() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_hello (an async activity)."""

    async def main() -> None:
        async def say_hello(name: str) -> str:
            await asyncio.sleep(0.01)
            return f"Hello, {name}!"

        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.001)

        task = asyncio.create_task(ticker())
        try:
            result = await Formation("async").add_function("say_hello", say_hello).arun("Temporal")
        finally:
            task.cancel()
        assert result.output == "Hello, Temporal!" and ticks > 1

    asyncio.run(main())


def test_two_async_nodes_of_one_run_are_in_flight_at_once() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_max_concurrent_activities
    (many async activities run concurrently on one worker)."""

    async def main() -> None:
        started = {"left": threading.Event(), "right": threading.Event()}

        def meets(me: str, other: str) -> Any:
            async def node(x: int) -> str:
                started[me].set()
                deadline = time.monotonic() + 5
                while not started[other].is_set():  # each waits until the other one has started
                    assert time.monotonic() < deadline, f"{other} never started while {me} was running"
                    await asyncio.sleep(0.005)
                return me

            return node

        f = (Formation("fan").add_function("src", lambda x: x).add_function("left", meets("left", "right"))
             .add_function("right", meets("right", "left")).connect("src", "left").connect("src", "right"))
        assert (await f.arun(1)).outputs == {"left": "left", "right": "right"}

    asyncio.run(main())


def test_an_async_node_that_raises_fails_arun_with_its_error_as_the_cause() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_failure (async)."""

    async def main() -> None:
        async def raise_error(x: Any) -> None:
            await asyncio.sleep(0)
            raise RuntimeError("oh no!")

        with pytest.raises(FormationRuntimeError, match=r"node 'raise_error'.*RuntimeError: oh no!") as raised:
            await Formation("fails").add_function("raise_error", raise_error).arun(1)
        assert type(raised.value.__cause__) is RuntimeError

    asyncio.run(main())


def test_cancelling_the_task_awaiting_asubmit_cancels_the_run_and_its_coroutine() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_cancel_activity
    (an async client's handle.cancel())."""

    async def main() -> None:
        node, events = Cleanup(), []
        async with Formation("acancel").add_function("wait", node).astart(
                on_event=lambda e: events.append(e.type)) as running:
            run = running.asubmit("x")
            waiter = asyncio.ensure_future(run)
            deadline = time.monotonic() + 5
            while not node.started.is_set():
                assert time.monotonic() < deadline
                await asyncio.sleep(0.005)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            deadline = time.monotonic() + 2
            while not node.cleaned.is_set() or "run_cancelled" not in events:
                assert time.monotonic() < deadline, events
                await asyncio.sleep(0.005)
        assert node.cancelled.is_set() and "run_finished" not in events

    asyncio.run(main())


# --- worker shutdown --------------------------------------------------------------------


def test_stopping_the_formation_fails_its_run_in_flight_and_cancels_its_async_node() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_worker_shutdown.
    Temporal's workflow goes on after the activity's cancel; ours fails (no future is left unresolved)."""
    node = Cleanup()
    running = Formation("shutdown").add_function("wait_on_event", node).start()
    try:
        future = running.submit("x")
        wait_for(node.started)
    finally:
        running.stop()
    with pytest.raises(FormationRuntimeError, match=r"stopped before run .* finished"):
        future.result(0)
    assert node.cleaned.wait(2) and node.cancelled.is_set()


# --- backend="ray" ----------------------------------------------------------------------


def _down_twice(x: str) -> str:
    import os
    import tempfile

    marker = os.path.join(tempfile.gettempdir(), f"wingman-temporal-peer-{x}")
    with open(marker, "a") as fh:  # attempts counted across Ray's worker processes
        fh.write(".")
    with open(marker) as fh:
        attempts = len(fh.read())
    if attempts < 3:
        raise ConnectionError(f"down ({attempts})")
    os.unlink(marker)
    return f"{x} on attempt {attempts}"


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_node_on_ray_is_retried_until_it_answers() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_heartbeat_details on backend="ray"."""
    key = f"retry-{time.monotonic_ns()}"
    f = Formation("ray-retry").add_function("act", _down_twice, retries=3, backoff=0.01)
    result = f.run(key, backend="ray", timeout=120)
    assert (result.output, result.nodes["act"].attempts) == (f"{key} on attempt 3", 3)


def _sleeps(x: Any) -> str:
    time.sleep(30)
    return "late"


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_node_on_ray_past_its_timeout_fails_the_run_with_a_node_timeout_error() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_heartbeat_details_timeout
    on backend="ray"."""
    with Formation("ray-timeout").add_function("slow", _sleeps, timeout=0.5).start(backend="ray") as running:
        future = running.submit("x", timeout=60)
        started = time.monotonic()
        with pytest.raises(FormationRuntimeError, match=r"node 'slow'") as raised:
            future.result(60)
        assert time.monotonic() - started < 0.5 + 5 * SLACK
    assert isinstance(raised.value.__cause__, NodeTimeoutError)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_cancelling_a_run_on_ray_ends_it_cancelled() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_cancel_throw on backend="ray"."""
    events: list[str] = []
    with Formation("ray-cancel").add_function("slow", _sleeps).start(
            backend="ray", on_event=lambda e: events.append(e.type)) as running:
        future = running.submit("x")
        deadline = time.monotonic() + 60
        while "node_started" not in events:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert future.cancel() is True
        with pytest.raises(CancelledError):
            future.result(10)
    assert "run_cancelled" in events


def _cleans_up(marker: str) -> Any:
    """An ``async def`` node that answers ``"warm"`` at once, and otherwise waits long and
    touches ``marker`` at the end of its ``finally`` (which awaits first)."""

    async def slow(x: Any) -> str:
        if x == "warm":
            return x
        try:
            await asyncio.sleep(30)
        finally:
            await asyncio.sleep(0.05)  # a cleanup that awaits (closing a connection, say)
            with open(marker, "w"):
                pass
        return "late"

    return slow


def _eventually_exists(path: Any, timeout: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_async_node_on_ray_timed_out_in_run_has_its_cleanup_run_before_its_process_goes(tmp_path: Any) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_cancel_catch on backend="ray"
    (a timed-out activity's cancellation handler runs; ours: run() stops the formation, whose Ray actors are
    ended, right after the run fails)."""
    marker = tmp_path / "cleaned"
    with pytest.raises(FormationRuntimeError, match=r"node 'slow'") as raised:
        Formation("ray-cleanup").add_function("slow", _cleans_up(str(marker)), timeout=1.0).run(
            "x", backend="ray", timeout=60)
    assert isinstance(raised.value.__cause__, NodeTimeoutError)
    assert _eventually_exists(marker), "the coroutine's finally never ran: its process was killed first"


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_async_node_on_ray_cut_by_the_run_timeout_has_its_cleanup_run(tmp_path: Any) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_timeout_support on
    backend="ray" (the workflow's execution timeout cancels its running activity; ours: the formation
    stops right after, as run() stops it)."""
    marker = tmp_path / "cleaned"
    with Formation("ray-run-timeout").add_function("slow", _cleans_up(str(marker))).start(backend="ray") as running:
        assert running.submit("warm", timeout=60).result(60).output == "warm"  # its process is up
        with pytest.raises(FormationRuntimeError, match=r"timed out after 0.5s"):
            running.submit("x", timeout=0.5).result(60)
    assert _eventually_exists(marker), "the coroutine's finally never ran: its process was killed first"


def _items_clean_up(folder: str) -> Any:
    """An ``async def`` map function: each item waits long and touches ``<folder>/<item>`` at the
    end of its ``finally`` (which awaits first)."""

    async def item(x: int) -> int:
        try:
            await asyncio.sleep(30)
        finally:
            await asyncio.sleep(0.05)
            with open(f"{folder}/{x}", "w"):
                pass
        return x

    return item


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_async_map_on_ray_timed_out_in_run_has_every_items_cleanup_run(tmp_path: Any) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_cancel_activity on
    backend="ray" (activities gathered by a workflow, all cancelled; their handlers run)."""
    with pytest.raises(FormationRuntimeError, match=r"node 'each'"):
        Formation("ray-map-cleanup").add_map("each", _items_clean_up(str(tmp_path)), timeout=1.0).run(
            [1, 2], backend="ray", timeout=60)
    assert _eventually_exists(tmp_path / "1") and _eventually_exists(tmp_path / "2")
