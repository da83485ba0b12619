"""Behaviours ported from LlamaIndex Workflows' own test suite (run-llama/workflows-py):
timeouts and cancel (``tests/test_workflow.py``), retry policies
(``tests/test_retry_policy.py``), human in the loop and context round trips
(``tests/test_workflow.py``, ``tests/context/test_context.py``, ``tests/test_streaming.py``),
checkpoints (``tests/test_checkpointer.py``) and a few of them on ``backend="ray"``. See
``test_peer_llamaindex.py`` for how a Workflow maps onto a formation.

Deliberately different, or without a counterpart (each test that touches one says so):
- ``ConstantDelayRetryPolicy(delay=d, maximum_attempts=n)``: ours is ``retries=n-1`` with
  exponential ``backoff`` (``jitter=False`` gives exactly ``backoff * 2**(attempt-1)``,
  capped by ``max_backoff``); a constant delay is ``max_backoff=backoff``.
- ``InputRequiredEvent``/``HumanResponseEvent`` and ``ctx.wait_for_event`` are
  ``interrupt(payload)`` in a journalled run: the run suspends (``status ==
  "suspended"``) and ``resume(run_id, answer=...)`` continues it, in any process; LlamaIndex
  keeps the run alive in memory waiting for the event (and times out without a stream).
- ``ctx.to_dict()``/``Context.from_dict`` is the run's journal in a ``RunStore``;
  ``WorkflowCheckpointer`` is ``store.history(run_id)``, ``run_from(checkpoint)`` is
  ``Formation.fork(run_id, at=...)``. There is no switch to leave a step out of the
  journal (``disable_checkpoint``): every visit is journalled.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest

from tests.formation.test_peer_llamaindex import kinds, three_steps
from tests.support.peers import Counter, local_ray, sleeps_until_cancelled  # noqa: F401  (local_ray: a fixture)
from wingman_actors import Agent, Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


def flaky(fails: int, counter: Counter, exc: type[Exception] = ValueError) -> Any:
    """A step that raises ``exc`` on its first ``fails`` calls, then answers."""

    def flaky_step(x: Any) -> str:
        if counter.hit("flaky_step") <= fails:
            raise exc("Something bad happened!")
        return "All good!"

    return flaky_step


# --- retry policies -------------------------------------------------------------------


def test_a_flaky_step_with_retries_succeeds_on_a_later_attempt() -> None:
    # workflows test_retry_policy.py::test_retry_e2e (fails three times, then "All good!")
    counter = Counter()
    f = Formation("retry").add_function("flaky_step", flaky(3, counter), retries=3, backoff=0.01)
    result = f.run(None)
    assert result.output == "All good!"
    assert (result.nodes["flaky_step"].attempts, counter.count("flaky_step")) == (4, 4)


def test_retry_delays_without_jitter_double_from_the_backoff_and_stop_at_the_cap() -> None:
    # workflows test_retry_policy.py::test_ConstantDelayRetryPolicy_next (the delay the policy
    # gives per attempt). Differs by DESIGN: exponential, capped by max_backoff.
    counter = Counter()
    events: list[FormationEvent] = []
    f = Formation("delays").add_function("flaky_step", flaky(3, counter), retries=3, backoff=0.02, jitter=False,
                                         max_backoff=0.05)
    f.run(None, on_event=events.append)
    retries = [e.data for e in events if e.type == "node_retry"]
    assert [r["attempt"] for r in retries] == [1, 2, 3]
    assert [r["delay_s"] for r in retries] == pytest.approx([0.02, 0.04, 0.05])


def test_a_constant_delay_is_a_backoff_capped_at_itself() -> None:
    # workflows test_retry_policy.py::test_ConstantDelayRetryPolicy_init/_next (delay=d each time)
    counter = Counter()
    events: list[FormationEvent] = []
    f = Formation("constant").add_function("flaky_step", flaky(3, counter), retries=3, backoff=0.03, jitter=False,
                                           max_backoff=0.03)
    f.run(None, on_event=events.append)
    assert [e.data["delay_s"] for e in events if e.type == "node_retry"] == pytest.approx([0.03] * 3)


def test_a_step_that_keeps_failing_fails_the_run_after_its_last_attempt() -> None:
    # workflows test_retry_policy.py::test_ConstantDelayRetryPolicy_next (next(attempts=max)
    # is None: no more attempts)
    counter = Counter()
    f = Formation("spent").add_function("flaky_step", flaky(99, counter), retries=2, backoff=0.01)
    with pytest.raises(FormationRuntimeError, match=r"flaky_step") as info:
        f.run(None)
    assert info.value.attempts == 3
    assert counter.count("flaky_step") == 3
    assert isinstance(info.value.__cause__, ValueError)


def test_an_error_the_retry_policy_does_not_cover_fails_at_the_first_attempt() -> None:
    # workflows test_retry_policy.py (a policy decides from the error whether to retry)
    counter = Counter()
    f = Formation("retry_on").add_function("flaky_step", flaky(1, counter, KeyError), retries=3, backoff=0.01,
                                           retry_on=ValueError)
    with pytest.raises(FormationRuntimeError, match=r"flaky_step"):
        f.run(None)
    assert counter.count("flaky_step") == 1


def test_each_attempt_of_a_retried_step_is_streamed_in_order() -> None:
    # workflows test_retry_policy.py::test_retry_e2e, watched through the stream
    counter = Counter()
    f = Formation("retry_stream").add_function("flaky_step", flaky(2, counter), retries=2, backoff=0.01)
    events = [e for e in f.run_stream(None) if e.node == "flaky_step"]
    assert [(str(e.type), e.data.get("attempt")) for e in events] == [
        ("node_started", 1), ("node_retry", 1), ("node_started", 2), ("node_retry", 2),
        ("node_started", 3), ("node_finished", 3),
    ]


def test_a_timed_out_async_attempt_is_cancelled_and_retried() -> None:
    # workflows test_retry_policy.py with test_workflow.py::test_workflow_timeout: a step's
    # timeout counts as a failed attempt, and its coroutine does not run on
    counter = Counter()
    cancelled = Counter()

    async def slow_then_fast(x: Any) -> str:
        if counter.hit("calls") == 1:
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                cancelled.hit("cancelled")
                raise
        return "done"

    t0 = time.monotonic()
    result = Formation("timeout_retry").add_function("step", slow_then_fast, timeout=0.2, retries=1,
                                                     backoff=0.01).run(None)
    assert result.output == "done"
    assert result.nodes["step"].attempts == 2
    assert time.monotonic() - t0 < 2
    deadline = time.monotonic() + 2  # (the cancelled attempt's except block runs on its loop thread)
    while cancelled.count("cancelled") < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cancelled.count("cancelled") == 1


def test_a_run_whose_timed_out_async_attempt_still_cleans_up_returns_when_its_retry_succeeds() -> None:
    # workflows test_retry_policy.py::test_retry_e2e with test_workflow.py::test_workflow_timeout:
    # the retry runs at once, and run() returns with it, not after the first attempt's cleanup
    counter = Counter()
    ended = threading.Event()

    async def slow_then_fast(x: Any) -> str:
        if counter.hit("calls") == 1:
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                await asyncio.sleep(1.0)  # cleanup, cancelled again when its loop stops
                raise
            finally:
                ended.set()
        return "done"

    t0 = time.monotonic()
    result = Formation("cleanup").add_function("step", slow_then_fast, timeout=0.2, retries=1, backoff=0.01).run(None)
    assert (result.output, result.nodes["step"].attempts) == ("done", 2)
    assert time.monotonic() - t0 < 0.55
    assert ended.wait(3)


def test_retry_delays_with_jitter_are_drawn_from_the_upper_half_of_the_exponential_delay() -> None:
    # workflows test_retry_policy.py::test_ConstantDelayRetryPolicy_next (the policy's delay
    # per attempt), with our default jitter
    counter = Counter()
    events: list[FormationEvent] = []
    Formation("jitter").add_function("flaky_step", flaky(3, counter), retries=3, backoff=0.01).run(
        None, on_event=events.append)
    delays = [e.data["delay_s"] for e in events if e.type == "node_retry"]
    assert len(delays) == 3
    for attempt, delay in enumerate(delays, start=1):
        ceiling = 0.01 * 2 ** (attempt - 1)
        assert ceiling / 2 <= delay <= ceiling


def test_a_flaky_agent_step_streams_only_its_successful_attempts_text_after_the_retry() -> None:
    # workflows test_retry_policy.py::test_retry_e2e with test_streaming.py::test_e2e: a model
    # call that fails is retried, and the stream says so before the retry's text
    provider = ScriptedProvider([RuntimeError("Something bad happened!"), "All good!"], stream_chunk=4)
    f = Formation("agent_retry").add_agent("chat", Agent("chat", provider=provider), retries=1, backoff=0.01)
    events = list(f.run_stream("hi"))
    assert [str(e.type) for e in events if e.node == "chat"] == [
        "node_started", "node_retry", "node_started", "agent_text", "agent_text", "agent_text", "node_finished"]
    assert "".join(e.data["text"] for e in events if e.type == "agent_text") == "All good!"
    assert events[-1].data["result"].output == "All good!"


def test_a_map_retries_only_the_items_that_failed() -> None:
    # workflows test_retry_policy.py::test_retry_e2e, for a step with several events in
    # flight (num_workers): a retry reruns the failed event only
    counter = Counter()

    def item(n: int) -> int:
        if counter.hit(n) == 1 and n % 2:
            raise ValueError(f"item {n} failed once")
        return n * 10

    result = Formation("map_retry").add_map("each", item, max_workers=3, retries=1, backoff=0.01).run([1, 2, 3, 4])
    assert result.output == [10, 20, 30, 40]
    assert {n: counter.count(n) for n in (1, 2, 3, 4)} == {1: 2, 2: 1, 3: 2, 4: 1}


# --- timeouts and cancel --------------------------------------------------------------


def test_a_run_timeout_fails_a_slow_async_step_within_the_limit() -> None:
    # workflows test_workflow.py::test_workflow_timeout (WorkflowTimeoutError)
    async def slow_step(_: Any) -> str:
        await asyncio.sleep(5)
        return "Done"

    t0 = time.monotonic()
    with pytest.raises(FormationRuntimeError, match=r"timed out"):
        Formation("slow").add_function("slow_step", slow_step).run(None, timeout=0.3)
    assert time.monotonic() - t0 < 1.5


def test_a_node_timeout_cancels_the_async_steps_coroutine() -> None:
    # workflows test_workflow.py::test_workflow_timeout: a timed-out step is cancelled, not
    # left running (its finally runs)
    cancelled = threading.Event()

    slow_step = sleeps_until_cancelled(cancelled)

    with pytest.raises(FormationRuntimeError, match=r"slow_step"):
        Formation("slow").add_function("slow_step", slow_step, timeout=0.2).run(None)
    assert cancelled.wait(2)


@pytest.mark.parametrize("limit", ["node", "run"])
def test_a_time_limit_returns_from_run_in_time_while_a_cancelled_async_step_still_cleans_up(limit: str) -> None:
    # workflows test_workflow.py::test_workflow_timeout (and test_streaming.py::test_task_timeout),
    # with a step whose cancellation takes a while (an async with's exit, a finally that
    # awaits). DESIGN: a time limit fails the run within it plus 0.1 s, run() included.
    ended = threading.Event()

    async def slow_step(_: Any) -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            await asyncio.sleep(1.0)  # cleanup, cancelled again when its loop stops
            raise
        finally:
            ended.set()
        return "Done"

    f = Formation("slow").add_function("slow_step", slow_step, **({"timeout": 0.2} if limit == "node" else {}))
    t0 = time.monotonic()
    with pytest.raises(FormationRuntimeError, match=r"timed out"):
        f.run(None, **({} if limit == "node" else {"timeout": 0.2}))
    assert time.monotonic() - t0 < 0.55
    assert ended.wait(3)  # the cleanup ends on its own thread


def test_a_cancelled_run_raises_cancelled_and_reports_run_cancelled(gate: tuple[threading.Event, threading.Event]) -> None:
    # workflows test_workflow.py::test_workflow_cancelled_by_user (handler.cancel_run())
    entered, release = gate
    events: list[FormationEvent] = []

    def held(x: Any) -> Any:
        entered.set()
        release.wait(10)
        return x

    f = Formation("cancel").add_function("one", lambda x: x).add_function("held", held).connect("one", "held")
    with f.start(on_event=events.append) as running:
        fut = running.submit("go")
        assert entered.wait(5)
        assert fut.cancel()
        with pytest.raises(CancelledError):
            fut.result(timeout=5)
    assert [e.type for e in events if e.node is None][-1] == "run_cancelled"


# --- human in the loop ----------------------------------------------------------------


def ask_number(counter: Counter) -> Any:
    def step1(x: Any) -> Any:
        counter.hit("step1")
        return interrupt({"prefix": "Enter a number: "})
    return step1


def human_loop(counter: Counter) -> Formation:
    """workflows' HumanInTheLoopWorkflow: step1 asks, step2 returns the answer."""

    def step2(response: Any) -> Any:
        counter.hit("step2")
        return response

    return Formation("hitl").add_function("step1", ask_number(counter)).add_function("step2", step2).connect(
        "step1", "step2")


def test_a_step_asking_for_input_suspends_the_run_and_the_answer_finishes_it(store: RunStore) -> None:
    # workflows test_workflow.py::test_human_in_the_loop (InputRequiredEvent, then
    # HumanResponseEvent(response="42")). Differs by DESIGN: the run suspends in a store.
    counter = Counter()
    f = human_loop(counter)
    first = f.run(None, store=store)
    assert first.status == "suspended"
    assert first.interrupt == {"node": "step1", "payload": {"prefix": "Enter a number: "}}
    assert f.resume(first.run_id, store=store, answer="42").output == "42"


def test_a_step_asking_for_input_in_a_run_without_a_store_fails_saying_to_give_one() -> None:
    # workflows test_workflow.py::test_human_in_the_loop (without a stream the run cannot get
    # its answer: WorkflowTimeoutError). Ours fails at once, naming the fix.
    counter = Counter()
    with pytest.raises(FormationRuntimeError, match=r"interrupt\(\) needs a journalled formation run.*store=") as info:
        human_loop(counter).run(None)
    assert info.value.node == "step1"
    assert counter.count("step2") == 0


def test_a_run_resumed_from_its_journal_runs_each_step_once(store: RunStore) -> None:
    # workflows test_workflow.py::test_human_in_the_loop_with_resume (step1_runs == 1 and
    # step2_runs == 1 after a context round trip): a newly built formation resumes it
    counter = Counter()
    run_id = human_loop(counter).run(None, store=store).run_id
    result = human_loop(counter).resume(run_id, store=store, answer="42")
    assert result.output == "42"
    assert (counter.count("step1"), counter.count("step2")) == (2, 1)  # step1 again, to return the answer
    assert [v.node for v in store.history(run_id)] == ["step1", "step2"]


def test_a_streamed_run_reports_the_interrupt_and_its_resumed_stream_finishes(store: RunStore) -> None:
    # workflows test_context.py::test_wait_for_event_in_workflow (the waiter event is seen on
    # the stream, the answer is sent, the run ends with it)
    counter = Counter()
    f = human_loop(counter)
    events = list(f.run_stream(None, store=store))
    last = events[-1]
    assert (last.type, last.data.get("suspended")) == ("run_finished", True)
    result = last.data["result"]
    assert result.interrupt["payload"] == {"prefix": "Enter a number: "}
    resumed = list(f.resume_stream(result.run_id, store=store, answer="bar"))
    assert [n for k, n in kinds(resumed) if k == "node_finished"] == ["step1", "step2"]
    assert resumed[-1].data["result"].output == "bar"


def test_two_steps_waiting_for_input_are_answered_one_after_the_other(store: RunStore) -> None:
    # workflows test_context.py::test_wait_for_multiple_events_in_workflow (waiter_one and
    # waiter_two both wait; collect_waiters gets both answers)
    f = (Formation("waiters").add_function("spawn_waiters", lambda x: x)
         .add_function("waiter_one", lambda _: interrupt("waiter_one"))
         .add_function("waiter_two", lambda _: interrupt("waiter_two"))
         .add_function("collect_waiters", lambda d: [d["waiter_one"], d["waiter_two"]])
         .connect("spawn_waiters", "waiter_one", "collect_waiters")
         .connect("spawn_waiters", "waiter_two", "collect_waiters"))
    result = f.run(None, store=store)
    answers = {"waiter_one": "foo", "waiter_two": "bar"}
    asked = []
    while result.status == "suspended":
        asked.append(result.interrupt["payload"])
        result = f.resume(result.run_id, store=store, answer=answers[result.interrupt["payload"]])
    assert sorted(asked) == ["waiter_one", "waiter_two"]
    assert result.output == ["foo", "bar"]


def test_an_async_step_can_ask_for_input_and_get_the_answer() -> None:
    # workflows test_context.py::test_wait_for_event_in_workflow (an async step awaits the
    # answer), with arun/aresume
    async def step1(x: Any) -> str:
        await asyncio.sleep(0)
        return f"got {interrupt('foo')}"

    async def main(path: Path) -> str:
        f = Formation("async_hitl").add_function("step1", step1)
        first = await f.arun(None, store=path)
        assert first.status == "suspended"
        return str((await f.aresume(first.run_id, store=path, answer="bar")).output)

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        assert asyncio.run(main(Path(tmp) / "runs.sqlite")) == "got bar"


# --- checkpoints ----------------------------------------------------------------------


def test_each_journalled_run_lists_its_steps_in_order(store: RunStore) -> None:
    # workflows test_checkpointer.py::test_checkpoints_after_successive_runs
    f = three_steps()
    ids = [f.run(str(i), store=store).run_id for i in range(2)]
    for run_id in ids:
        history = store.history(run_id)
        assert [v.node for v in history] == ["start_step", "middle_step", "end_step"]
        assert all(v.status == "succeeded" for v in history)


def test_runs_journalled_concurrently_keep_their_own_step_lists(store: RunStore) -> None:
    # workflows test_checkpointer.py::test_checkpoints_works_with_new_instances_concurrently
    def middle(x: str) -> str:
        time.sleep(0.02 * (3 - int(x)))  # mix the runs up
        return f"{x}>middle"

    f = (Formation("dummy").add_function("start_step", lambda x: x).add_function("middle_step", middle, concurrency=3)
         .add_function("end_step", lambda x: f"{x}>end").connect("start_step", "middle_step", "end_step"))
    with f.start(store=store) as running:
        results = [fut.result(timeout=10) for fut in [running.submit(str(i)) for i in range(3)]]
    for i, result in enumerate(results):
        assert result.output == f"{i}>middle>end"
        assert [(v.node, v.output) for v in store.history(result.run_id)] == [
            ("start_step", str(i)), ("middle_step", f"{i}>middle"), ("end_step", f"{i}>middle>end")]


def test_a_run_stopped_mid_way_resumes_from_its_journal_without_redoing_finished_steps(
        store: RunStore, gate: tuple[threading.Event, threading.Event]) -> None:
    # workflows test_workflow.py::test_workflow_context_to_dict_mid_run (ctx.to_dict() after
    # the first step, Context.from_dict into a new run that goes on from the second)
    entered, release = gate
    counter = Counter()

    def start_step(x: str) -> str:
        counter.hit("start_step")
        return f"{x}>start"

    def middle_step(x: str) -> str:
        if counter.hit("middle_step") == 1:
            entered.set()
            release.wait(10)
        return f"{x}>middle"

    def build() -> Formation:
        return (Formation("dummy").add_function("start_step", start_step).add_function("middle_step", middle_step)
                .add_function("end_step", lambda x: f"{x}>end").connect("start_step", "middle_step", "end_step"))

    running = build().start(store=store)
    future = running.submit("go")
    assert entered.wait(5)
    running.stop(timeout=0.1)  # the process "dies" mid-run: the run is interrupted
    with pytest.raises(FormationRuntimeError):
        future.result(timeout=5)
    release.set()
    assert store.get(future.run_id).status == "interrupted"
    assert build().resume(future.run_id, store=store).output == "go>start>middle>end"
    assert (counter.count("start_step"), counter.count("middle_step")) == (1, 2)


def test_a_run_forked_after_a_step_runs_only_the_steps_after_it(store: RunStore) -> None:
    # workflows test_checkpointer.py::test_run_from_checkpoint (run_from the checkpoint after
    # middle_step: only end_step runs and is checkpointed)
    counter = Counter()

    def end_step(x: str) -> str:
        counter.hit("end_step")
        return f"{x}>end"

    def middle_step(x: str) -> str:
        counter.hit("middle_step")
        return f"{x}>middle"

    f = (Formation("dummy").add_function("start_step", lambda x: x).add_function("middle_step", middle_step)
         .add_function("end_step", end_step).connect("start_step", "middle_step", "end_step"))
    run_id = f.run("go", store=store).run_id
    forked = f.fork(run_id, store=store, at="middle_step", output="other")
    assert store.get(forked).status == "succeeded"
    assert [(v.node, v.output) for v in store.history(forked)][-1] == ("end_step", "other>end")
    assert (counter.count("middle_step"), counter.count("end_step")) == (1, 2)
    assert [v.output for v in store.history(run_id)] == ["go", "go>middle", "go>middle>end"]


def test_a_run_stopped_at_a_breakpoint_continues_step_by_step(store: RunStore) -> None:
    # workflows test_checkpointer.py::test_checkpointer_with_stepwise and
    # test_workflow.py::test_workflow_run_step. Differs by DESIGN: no stepwise mode; a
    # breakpoint after each step stops a journalled run there.
    f = three_steps()
    steps = ["start_step", "middle_step", "end_step"]
    result = f.run("go", store=store, break_after=steps)
    seen = []
    while result.status == "suspended":
        seen.append((result.interrupt["node"], result.interrupt["payload"]["output"]))
        result = f.resume(result.run_id, store=store)
    assert seen == [("start_step", "go>start"), ("middle_step", "go>start>middle"),
                    ("end_step", "go>start>middle>end")]
    assert result.output == "go>start>middle>end"


# --- backend="ray" --------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_flaky_step_on_ray_succeeds_on_a_later_attempt() -> None:
    # workflows test_retry_policy.py::test_retry_e2e on backend="ray": the failures are
    # counted in the replica's process, so the step fails on its input instead
    def flaky_step(attempts: list[int]) -> str:
        import os
        import tempfile

        marker = Path(tempfile.gettempdir()) / f"llamawf-ray-{os.getppid()}-{attempts[0]}"
        tries = int(marker.read_text()) + 1 if marker.exists() else 1
        marker.write_text(str(tries))
        if tries < 3:
            raise ValueError("Something bad happened!")
        marker.unlink()
        return "All good!"

    f = Formation("retry_ray").add_function("flaky_step", flaky_step, retries=3, backoff=0.01)
    result = f.run([time.time_ns()], backend="ray", timeout=120)
    assert (result.output, result.nodes["flaky_step"].attempts) == ("All good!", 3)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_stream_on_ray_reports_every_step_once_in_order() -> None:
    # workflows test_streaming.py::test_e2e on backend="ray"
    events = list(three_steps().run_stream("go", backend="ray", timeout=120))
    assert kinds(events) == [("run_started", None)] + [
        (k, n) for n in ("start_step", "middle_step", "end_step") for k in ("node_started", "node_finished")
    ] + [("run_finished", None)]
    assert events[-1].data["result"].output == "go>start>middle>end"


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_step_with_concurrency_two_on_ray_serves_two_runs_at_once() -> None:
    # workflows test_workflow.py::test_workflow_num_workers on backend="ray": the two 1 s
    # steps overlap, each in its own replica's process
    def test_step(n: int) -> tuple[int, int, float, float]:
        import os

        started = time.time()
        time.sleep(1.0)
        return n, os.getpid(), started, time.time()

    f = Formation("workers_ray").add_function("test_step", test_step, concurrency=2)
    with f.start(backend="ray") as running:
        futures = [running.submit(n, timeout=90) for n in range(2)]
        (a, pid_a, start_a, end_a), (b, pid_b, start_b, end_b) = [fut.result(timeout=120).output for fut in futures]
    assert (a, b) == (0, 1)
    assert pid_a != pid_b
    assert max(start_a, start_b) < min(end_a, end_b)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_step_asking_for_input_on_ray_suspends_and_the_answer_finishes_it(store: RunStore) -> None:
    # workflows test_workflow.py::test_human_in_the_loop on backend="ray"
    def step1(x: Any) -> Any:
        return interrupt({"prefix": "Enter a number: "})

    f = Formation("hitl_ray").add_function("step1", step1).add_function("step2", lambda r: r).connect("step1", "step2")
    first = f.run(None, store=store, backend="ray", timeout=120)
    assert first.status == "suspended"
    assert f.resume(first.run_id, store=store, answer="42", backend="ray", timeout=120).output == "42"

