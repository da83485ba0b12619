"""State-change hooks and cancellation, ported from Prefect's own test suite
(PrefectHQ/prefect, ``tests/test_tasks.py::TestTaskHooksOnCompletion`` /
``TestTaskHooksOnFailure``, ``tests/test_flows.py::TestFlowHooksOnFailure`` /
``TestFlowHooksOnCancellation``): Prefect's ``on_completion``/``on_failure``/
``on_cancellation`` hooks are a run's ``on_event`` listener, reading ``node_finished``,
``node_failed`` (after the retries), ``run_failed`` and ``run_cancelled``; a cancelled
flow run is a submitted run's ``future.cancel()``. Also the concurrency of ``async def``
nodes. (``test_peer_prefect.py``'s module docstring maps the rest of Prefect.)

Deliberately different:
- Prefect takes a list of hooks per state; a run takes one ``on_event`` callable (a
  listener that fans out to several is the user's).
- Prefect's task concurrency limits cap the runs of a task at once; an ``async def``
  node's visits all await at once on its replica's loop whatever ``concurrency`` says
  (docs/async.md, "Many runs through one async node"): an ``asyncio.Semaphore`` caps them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import CancelledError
from typing import Any

import pytest

from tests.support.peers import Counter, sleeps_until_cancelled
from wingman_actors import Formation
from wingman_actors.formation.events import FormationEvent


class Hooks:
    """Every event of a run, as (type, node), thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, str | None]] = []

    def __call__(self, event: FormationEvent) -> None:
        with self.lock:
            self.events.append((event.type.value, event.node))

    def of(self, kind: str) -> list[str | None]:
        with self.lock:
            return [node for t, node in self.events if t == kind]


def fails(_: Any) -> None:
    raise Exception("oops")


def test_completion_hooks_fire_for_each_finished_node_and_no_failure_hook() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskHooksOnCompletion::test_on_completion_hooks_run_on_completed
    and TestTaskHooksOnFailure::test_on_failure_hooks_dont_run_on_completed."""
    hooks = Hooks()
    Formation("my_flow").add_function("my_task", lambda x: x).run(1, on_event=hooks)
    assert hooks.of("node_finished") == ["my_task"] and hooks.of("run_finished") == [None]
    assert hooks.of("node_failed") == [] and hooks.of("run_failed") == []


def test_failure_hooks_fire_for_the_failed_node_and_the_run_and_no_completion_hook() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskHooksOnFailure::test_on_failure_hooks_run_on_failure
    and TestTaskHooksOnCompletion::test_on_completion_hooks_dont_run_on_failure."""
    hooks = Hooks()
    with pytest.raises(Exception, match=r"oops"):
        Formation("my_flow").add_function("my_task", fails).run(1, on_event=hooks)
    assert hooks.of("node_failed") == ["my_task"] and hooks.of("run_failed") == ["my_task"]  # naming the node
    assert hooks.of("node_finished") == [] and hooks.of("run_finished") == []


def test_a_failure_hook_fires_once_after_the_retries_not_on_each_retry() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskHooksOnFailure::test_failure_hooks_dont_run_on_retries."""
    hooks = Hooks()
    with pytest.raises(Exception, match=r"oops"):
        Formation("my_flow").add_function("my_task", fails, retries=2, backoff=0).run(1, on_event=hooks)
    assert hooks.of("node_retry") == ["my_task", "my_task"] and hooks.of("node_failed") == ["my_task"]


def test_a_failure_hook_fires_when_the_input_does_not_fit_the_annotation() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowHooksOnFailure::test_on_failure_hooks_run_on_bad_parameters."""
    hooks = Hooks()

    def my_flow(x: int) -> int:
        return x

    with pytest.raises(Exception, match=r"PayloadError"):
        Formation("f").add_function("my_flow", my_flow).run("x", on_event=hooks)
    assert (hooks.of("node_failed"), hooks.of("run_failed")) == (["my_flow"], ["my_flow"])


def test_a_hook_that_raises_does_not_stop_the_run_or_the_hooks_after_it(caplog: pytest.LogCaptureFixture) -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskHooksOnCompletion::test_other_completion_hooks_run_if_a_hook_fails:
    the listener raises on every node_finished; the run ends as it would, the later events
    still reach the listener, and the error is logged."""
    seen: list[str] = []

    def listener(event: FormationEvent) -> None:
        seen.append(event.type.value)
        if event.type == "node_finished":
            raise RuntimeError("bad hook")

    f = Formation("f").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2).connect("a", "b")
    with caplog.at_level(logging.ERROR):
        assert f.run(1, on_event=listener).output == 4
    assert seen == ["run_started", "node_started", "node_finished", "node_started", "node_finished", "run_finished"]
    assert sum("event listener failed on node_finished" in r.getMessage() for r in caplog.records) == 2


def test_a_failing_subflow_fires_the_inner_hooks_then_the_parents() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowHooksOnCancellation::test_on_cancelled_hook_on_subflow_succeeds
    and TestFlowHooksOnCrashed::test_on_crashed_hook_on_subflow_succeeds (the subflow's hook,
    then the parent's ``on_failure``)."""
    hooks = Hooks()
    f = Formation("my_flow").add_formation("subflow", Formation("s").add_function("inner", fails))
    with pytest.raises(Exception, match=r"oops"):
        f.run(None, on_event=hooks)
    failed = [(t, n) for t, n in hooks.events if t in ("node_failed", "run_failed")]
    assert failed == [("node_failed", "subflow/inner"), ("node_failed", "subflow"), ("run_failed", "subflow")]


# --- cancellation ---------------------------------------------------------------------


def test_cancelling_a_run_fires_the_cancellation_hook_once_and_cancels_its_work() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowHooksOnCancellation::test_on_cancellation_hooks_run_on_cancelled_state
    (``future.cancel()``: the run's coroutine is cancelled, ``run_cancelled`` fires once)."""
    hooks, cancelled, started = Hooks(), threading.Event(), threading.Event()

    async def work(x: Any) -> Any:
        started.set()
        return await sleeps_until_cancelled(cancelled)(x)

    with Formation("my_flow").add_function("work", work).start(on_event=hooks) as running:
        future = running.submit(None)
        assert started.wait(5)
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result(timeout=5)
    assert cancelled.wait(2) and hooks.of("run_cancelled") == [None]


def test_a_run_cancelled_by_id_reports_run_cancelled_and_not_run_failed() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowHooksOnCancellation::test_on_cancellation_hooks_are_ignored_if_terminal_state_failed
    (the other way round: a cancelled run fires no failure hook); ``running.cancel(run_id)``."""
    hooks, cancelled, started = Hooks(), threading.Event(), threading.Event()

    async def work(x: Any) -> Any:
        started.set()
        return await sleeps_until_cancelled(cancelled)(x)

    with Formation("my_flow").add_function("work", work).start(on_event=hooks) as running:
        future = running.submit(None)
        assert started.wait(5)
        assert running.cancel(future.run_id)
        with pytest.raises(CancelledError):
            future.result(timeout=5)
    assert cancelled.wait(2)
    assert hooks.of("run_cancelled") == [None] and hooks.of("run_failed") == [] and hooks.of("run_finished") == []


def test_cancelling_a_finished_run_fires_no_cancellation_hook() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowHooksOnCancellation::test_on_cancellation_hooks_are_ignored_if_terminal_state_completed."""
    hooks = Hooks()
    with Formation("my_flow").add_function("work", lambda x: x).start(on_event=hooks) as running:
        future = running.submit(1)
        assert future.result(timeout=5).output == 1
        assert future.cancel() is False and running.cancel(future.run_id) is False
    assert hooks.of("run_finished") == [None] and hooks.of("run_cancelled") == []


def test_cancelling_a_run_cancels_the_work_of_its_subflow() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowHooksOnCancellation::test_on_cancelled_hook_on_subflow_succeeds
    (a cancellation reaches into the subflow): the inner coroutine is cancelled."""
    hooks, cancelled, started = Hooks(), threading.Event(), threading.Event()

    async def inner(x: Any) -> Any:
        started.set()
        return await sleeps_until_cancelled(cancelled)(x)

    f = Formation("my_flow").add_formation("subflow", Formation("s").add_function("inner", inner))
    with f.start(on_event=hooks) as running:
        future = running.submit(None)
        assert started.wait(5)
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result(timeout=5)
    assert cancelled.wait(2) and hooks.of("run_cancelled") == [None]


# --- concurrency of async nodes -------------------------------------------------------


def test_an_async_node_awaits_every_visit_at_once_and_a_semaphore_caps_them() -> None:
    """Ported from PrefectHQ/prefect tests/test_flow_engine.py (``concurrency`` /
    ``aconcurrency`` limits around a task's work). Prefect's limit caps the task runs at once;
    an async node of ours awaits all its visits at once (docs/async.md), so the cap is an
    ``asyncio.Semaphore`` in the function: six runs, two at a time."""
    lock, counter = threading.Lock(), Counter()
    running, peak = [0], [0]
    limit: dict[Any, asyncio.Semaphore] = {}

    async def call_service(x: int) -> int:
        counter.hit("started")
        sem = limit.setdefault(asyncio.get_running_loop(), asyncio.Semaphore(2))
        async with sem:
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            await asyncio.sleep(0.1)
            with lock:
                running[0] -= 1
        return x

    with Formation("f").add_function("call_service", call_service).start() as started:
        futures = [started.submit(i) for i in range(6)]
        assert [fut.result(timeout=10).output for fut in futures] == list(range(6))
    assert peak[0] == 2 and counter.count("started") == 6
