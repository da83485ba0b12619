"""Retries meeting cancels and time limits, and runs awaited from async code, ported from the
Hatchet Python SDK's examples and unit tests (hatchet-dev/hatchet, ``sdks/python/examples/retries``,
``timeout``, ``cancellation``, ``sdks/python/tests/test_cancellation.py``,
``test_task_default_fallbacks.py``); see ``test_peer_hatchet.py`` for the module map.

Durations: Hatchet takes them as ``timedelta`` (``execution_timeout=timedelta(seconds=5)``); so
do we, besides a number of seconds (tests/test_timedelta_timeouts.py covers every entry point).
"""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta
from typing import Any

import pytest

from tests.support.peers import Counter, cancellable, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent


def failing(counter: Counter) -> Any:
    def backoff_task(_: Any) -> None:
        counter.hit("backoff_task")
        raise ConnectionError("backoff task failed")

    return backoff_task


def test_cancelling_a_run_waiting_out_a_backoff_ends_it_at_once_and_tries_no_more() -> None:
    """From hatchet examples/retries/worker.py backoff_task and tests/test_cancellation.py
    (a run cancelled between attempts is not retried)."""
    counter = Counter()
    events: list[str] = []
    f = Formation("BackoffWorkflow").add_function("backoff_task", failing(counter), retries=3, backoff=5,
                                                  jitter=False)
    with f.start(on_event=lambda e: events.append(e.type.value)) as running:
        future = running.submit(None)
        assert until(lambda: "node_retry" in events)
        started = time.monotonic()
        assert future.cancel() is True
        assert until(lambda: "run_cancelled" in events) and time.monotonic() - started < 1
    assert counter.count("backoff_task") == 1


def test_a_task_waiting_out_a_backoff_does_not_hold_its_slot() -> None:
    """From hatchet examples/retries/worker.py backoff_task (a task waiting to be retried
    holds no worker slot: other runs' tasks run meanwhile)."""
    counter = Counter()
    events: list[str] = []

    def backoff_task(x: str) -> str:
        if x == "a" and counter.hit("a") == 1:
            raise ConnectionError("backoff task failed")
        return x

    f = Formation("BackoffWorkflow").add_function("backoff_task", backoff_task, retries=1, backoff=5, jitter=False)
    with f.start(on_event=lambda e: events.append(e.type.value)) as running:
        a = running.submit("a")
        assert until(lambda: "node_retry" in events)
        assert running.submit("b").result(timeout=2).output == "b"
        assert not a.done()
        assert a.cancel() is True


def test_a_runs_timeout_ends_it_during_a_backoff_not_after_it() -> None:
    """From hatchet examples/timeout (a run's time limit holds while its task waits to be
    retried)."""
    counter = Counter()
    f = Formation("BackoffWorkflow").add_function("backoff_task", failing(counter), retries=3, backoff=5,
                                                  jitter=False)
    started = time.monotonic()
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(None, timeout=0.3)
    assert time.monotonic() - started < 2 and "timed out" in str(caught.value)
    assert counter.count("backoff_task") == 1


@pytest.mark.parametrize(("retry_on", "attempts"), [(ValueError, 1), (TimeoutError, 3)])
def test_an_execution_timeout_is_retried_as_a_timeout_error(retry_on: type[Exception], attempts: int) -> None:
    """From hatchet examples/timeout/worker.py and retries (a timed-out attempt is retried by
    the task's retries; ours names it ``TimeoutError`` for ``retry_on``)."""
    release = threading.Event()

    def hangs(_: Any) -> None:
        release.wait(5)

    f = Formation("timeouts").add_function("timeout_task", hangs, timeout=0.05, retries=2, backoff=0.001,
                                           retry_on=retry_on)
    try:
        with pytest.raises(FormationRuntimeError) as caught:
            f.run(None)
    finally:
        release.set()
    assert caught.value.attempts == attempts and isinstance(caught.value.__cause__, NodeTimeoutError)


def test_jittered_backoff_never_waits_longer_than_its_maximum() -> None:
    """From hatchet examples/retries/worker.py backoff_task (``backoff_max_seconds=10``: the
    waits stop growing at the maximum)."""
    counter = Counter()

    def flaky(_: Any) -> str:
        if counter.hit("flaky") <= 6:
            raise ConnectionError("flaky")
        return "ok"

    events: list[FormationEvent] = []
    f = Formation("jitter").add_function("flaky", flaky, retries=8, backoff=0.004, max_backoff=0.01)
    assert f.run(None, on_event=events.append).output == "ok"
    delays = [e.data["delay_s"] for e in events if e.type.value == "node_retry"]
    assert len(delays) == 6 and all(0 <= d <= 0.01 for d in delays)


def test_a_child_workflow_that_times_out_reaches_the_parents_failure_handler_as_a_timeout() -> None:
    """From hatchet tests/child_spawn_cache_on_retry ("Task exceeded timeout of" raised for
    the parent waiting on its child) and examples/on_failure."""
    release = threading.Event()

    def hangs(_: Any) -> None:
        release.wait(5)

    child = Formation("child").add_function("hangs", hangs)
    f = (Formation("parent").add_formation("child", child, timeout=0.1)
         .add_function("on_failure", lambda failure: failure).connect("child", "on_failure", on_error=True))
    try:
        result = f.run(None)
    finally:
        release.set()
    failure = result.outputs["on_failure"]
    assert isinstance(failure, NodeFailure) and isinstance(failure.error, NodeTimeoutError)
    assert failure.node == "child" and "timed out after 0.1s" in str(failure.error)


def test_cancelling_the_task_awaiting_a_run_cancels_the_run() -> None:
    """From hatchet tests/test_cancellation.py test_cancel_callback_invoked_on_external_task_cancel
    (the awaiting task cancelled from outside: the work is cancelled too)."""
    cancelled, entered = threading.Event(), threading.Event()

    async def main() -> list[str]:
        events: list[str] = []
        f = Formation("CancelWorkflow").add_function("step1", cancellable(cancelled, entered))
        async with f.astart(on_event=lambda e: events.append(e.type.value)) as running:

            async def run() -> Any:
                return await running.asubmit(None)

            task = asyncio.create_task(run())
            while not entered.is_set():
                await asyncio.sleep(0.005)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            for _ in range(400):
                if "run_cancelled" in events:
                    break
                await asyncio.sleep(0.005)
        return events

    events = asyncio.run(main())
    assert "run_cancelled" in events and cancelled.wait(2)


def test_a_timedelta_for_a_time_limit_is_taken_as_its_seconds() -> None:
    """From hatchet tests/test_task_default_fallbacks.py and test_durations.py (durations
    given as timedelta)."""
    formation = Formation("td").add_function("n", lambda x: x + 1, timeout=timedelta(seconds=5))
    assert formation.run(1, timeout=timedelta(seconds=5)).output == 2
