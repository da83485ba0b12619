"""Errors, retries, input validation, aborts and run status, from Mastra's workflow tests
(mastra-ai/mastra, ``packages/core/src/workflows/workflow.test.ts``: the "Error Handling", "Retry",
"Schema Validation", "abort" suites and the run status tests), ported to formations.

Mastra reports a failed step in ``result.steps[id]`` (``status: 'failed'``, ``error: 'Error: msg'``,
no stack trace) and the run as ``failed``; here the run raises ``FormationRuntimeError`` whose
``nodes`` are the same traces (``error`` is ``"ValueError: msg"``). A step's ``inputSchema`` (zod) is a
function parameter annotated with a pydantic model; ``retryConfig: {attempts, delay}`` is ``retries``
with ``backoff``; ``run.cancel()`` is ``future.cancel()``.

Deliberately different: Mastra waits ``delay`` between every attempt; our backoff doubles each retry
(with jitter) unless ``max_backoff`` caps it (``max_backoff=backoff, jitter=False`` is Mastra's
fixed delay).
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import Counter, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, PayloadError
from wingman_actors.formation import NestedRunError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.store import RunStore


def failing(counter: Counter, name: str, message: str = "Step execution failed") -> Any:
    def step(_: Any) -> Any:
        counter.hit(name)
        raise ValueError(message)

    return step


def counted(counter: Counter, name: str, output: Any) -> Any:
    def step(_: Any) -> Any:
        counter.hit(name)
        return output

    return step


def test_a_failing_step_fails_the_run_naming_it_and_the_steps_after_it_never_run() -> None:
    """From workflow.test.ts "should handle step execution errors" and "should handle failing
    dependencies" (step2 is not called; step1's result says ``failed``, its error starts with the
    error's class and message)."""
    counter = Counter()
    f = (Formation("fails").add_function("step1", failing(counter, "step1"))
         .add_function("step2", counted(counter, "step2", {})).connect("step1", "step2"))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run({})
    err = caught.value
    assert (err.node, err.attempts) == ("step1", 1)
    assert isinstance(err.__cause__, ValueError)
    assert err.nodes["step1"].status == "failed"
    assert err.nodes["step1"].error == "ValueError: Step execution failed"
    assert counter.count("step2") == 0 and err.nodes["step2"].status != "succeeded"


class ValidationFailure(Exception):
    """A library's error with details beside its message (Mastra's ``MastraError``)."""

    def __init__(self, text: str, details: dict[str, str]) -> None:
        super().__init__(text)
        self.details = details


@pytest.mark.parametrize("error", [ValueError("Test error: step execution failed."),
                                   ValidationFailure("Step execution failed.", {"field": "test"})])
def test_a_failed_steps_error_is_kept_and_journalled_as_its_message_without_a_traceback(
        error: Exception, store: RunStore) -> None:
    """From workflow.test.ts "should persist error message without stack trace in snapshot" and
    "should persist MastraError message without stack trace in snapshot"."""

    def step1(_: Any) -> Any:
        raise error

    expected = f"{type(error).__name__}: {error}"
    with pytest.raises(FormationRuntimeError) as caught:
        Formation("persist").add_function("step1", step1).run({}, store=store, run_id="persist-run")
    assert caught.value.nodes["step1"].error == expected
    record = store.get("persist-run")
    assert record.status == "failed"
    assert record.error is not None and expected in record.error
    for text in (record.error, caught.value.nodes["step1"].error):
        assert "\n" not in text and "Traceback" not in text and 'File "' not in text


def test_a_failing_parallel_step_fails_the_run_and_its_siblings_output_is_kept() -> None:
    """From workflow.test.ts "should handle step execution errors within branches": ``.parallel([step1,
    step2]).then(step3)``, step2 fails: step1 succeeded, step2 failed, step3 never runs."""
    counter = Counter()
    step1_done = threading.Event()  # step2 fails after step1 has finished, as the peer's steps do

    def step2(x: Any) -> Any:
        step1_done.wait(5)
        return failing(counter, "step2")(x)

    def note(e: FormationEvent) -> None:
        if e.type == "node_finished" and e.node == "step1":
            step1_done.set()

    f = (Formation("branches").add_function("begin", lambda x: x)
         .add_function("step1", counted(counter, "step1", {})).add_function("step2", step2)
         .add_function("step3", lambda step1, step2: counter.hit("step3"))
         .connect("begin", "step1", "step3").connect("begin", "step2", "step3"))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run({}, on_event=note)
    nodes = caught.value.nodes
    assert caught.value.node == "step2"
    assert (nodes["step1"].status, nodes["step1"].output) == ("succeeded", {})
    assert nodes["step2"].error == "ValueError: Step execution failed"
    assert counter.count("step3") == 0


def test_a_step_failing_inside_a_nested_formation_fails_the_formation_node_saying_which_inner_step() -> None:
    """From workflow.test.ts "should handle step execution errors within nested workflows" (the nested
    workflow's step says ``failed`` with ``Error: Error: Step execution failed``)."""
    counter = Counter()
    inner = (Formation("test-workflow").add_function("begin", lambda x: x)
             .add_function("step1", counted(counter, "step1", {})).add_function("step2", failing(counter, "step2"))
             .add_function("step3", lambda step1, step2: {}).connect("begin", "step1", "step3")
             .connect("begin", "step2", "step3"))
    f = Formation("main-workflow").add_formation("test-workflow", inner)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run({})
    err = caught.value
    assert err.node == "test-workflow"
    assert isinstance(err.__cause__, NestedRunError)
    assert "test-workflow/step2" in str(err) and "ValueError: Step execution failed" in str(err)
    assert err.nodes["test-workflow"].status == "failed"
    assert err.nodes["test-workflow/step2"].error == "ValueError: Step execution failed"
    assert err.nodes["test-workflow/step1"].status == "succeeded"


def test_a_step_is_not_retried_unless_told() -> None:
    """From workflow.test.ts "should retry a step default 0 times"."""
    counter = Counter()
    f = (Formation("once").add_function("step1", counted(counter, "step1", {"result": "success"}))
         .add_function("step2", failing(counter, "step2", "Step failed")).connect("step1", "step2"))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run({})
    assert (counter.count("step1"), counter.count("step2"), caught.value.attempts) == (1, 1, 1)


def test_a_step_with_five_retries_runs_six_times_and_the_steps_before_it_once() -> None:
    """From workflow.test.ts "should retry a step with a custom retry config" (``retryConfig: {attempts:
    5}``: the failing step is called 6 times, the one before it once)."""
    counter = Counter()
    f = (Formation("retried").add_function("step1", counted(counter, "step1", {"result": "success"}))
         .add_function("step2", failing(counter, "step2", "Step failed"), retries=5, backoff=0.001)
         .connect("step1", "step2"))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run({})
    assert (counter.count("step1"), counter.count("step2")) == (1, 6)
    assert caught.value.nodes["step2"].attempts == 6
    assert caught.value.nodes["step2"].error == "ValueError: Step failed"
    assert caught.value.nodes["step1"].output == {"result": "success"}


def retry_delays(**policies: Any) -> list[float]:
    """The ``delay_s`` of each ``node_retry`` of a step that always fails, with four retries."""
    delays: list[float] = []

    def note(e: FormationEvent) -> None:
        if e.type == "node_retry":
            delays.append(e.data["delay_s"])

    f = Formation("delays").add_function("step", failing(Counter(), "step"), retries=4, jitter=False, **policies)
    with pytest.raises(FormationRuntimeError):
        f.run({}, on_event=note)
    return delays


def test_a_fixed_delay_between_retries_is_a_backoff_capped_at_itself() -> None:
    """From workflow.test.ts "should retry a step with a custom retry config" (``delay: 200``, the same
    wait before every attempt). Deliberately different: our default backoff doubles each retry;
    ``max_backoff=backoff`` gives Mastra's fixed delay."""
    assert retry_delays(backoff=0.01, max_backoff=0.01) == pytest.approx([0.01] * 4)
    assert retry_delays(backoff=0.001) == pytest.approx([0.001, 0.002, 0.004, 0.008])


class Start(BaseModel):
    start: str


def test_a_step_whose_input_misses_a_required_field_fails_naming_the_field_and_is_not_retried() -> None:
    """From workflow.test.ts "should throw error if inputData is invalid" (step1 succeeds, step2's
    input lacks ``start``: step2 fails with "Step input validation failed ... start", the run fails)."""
    counter = Counter()

    def step2(x: Start) -> dict[str, str]:
        counter.hit("step2")
        return {"result": "success"}

    f = (Formation("invalid").add_function("step1", lambda x: {"result": "success"})
         .add_function("step2", step2, retries=3, backoff=0.001).connect("step1", "step2"))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run({"start": "2"})
    err = caught.value
    assert err.node == "step2" and isinstance(err.__cause__, PayloadError)
    assert "start" in str(err.__cause__) and "Field required" in str(err.__cause__)
    assert "'step1' → 'step2'" in str(err.__cause__)
    assert (err.nodes["step2"].attempts, counter.count("step2")) == (1, 0)
    assert err.nodes["step1"].output == {"result": "success"}


class Trigger(BaseModel):
    required: str
    nested: dict[str, int] = {"value": 1}


def test_a_steps_input_model_fills_in_its_defaults() -> None:
    """From workflow.test.ts "should use default value from inputSchema" and "should use default value
    from inputSchema for step input"."""

    def step1(x: Trigger) -> Trigger:
        return x

    assert Formation("defaults").add_function("step1", step1).run({"required": "test"}).output == Trigger(
        required="test", nested={"value": 1})


class FinalIn(BaseModel):
    newValue: int  # (Mastra's field names)
    other: int


def test_a_nested_formation_whose_step_gets_invalid_input_fails_while_its_parallel_sibling_succeeds() -> None:
    """From workflow.test.ts "should throw error if inputData is invalid in nested workflows": in
    ``nested-workflow-a`` the final step's input lacks ``other``; ``nested-workflow-b`` finishes with
    ``finalValue: 1``; the step after both never runs."""
    counter = Counter()

    def final(x: FinalIn) -> dict[str, int]:
        return {"finalValue": x.newValue + x.other}

    wfb_done = threading.Event()  # wfa fails after wfb has finished (Mastra's parallel waits for both)

    def start_after_wfb(x: dict[str, int]) -> dict[str, int]:
        wfb_done.wait(5)
        return {"newValue": x["startValue"] + 1}

    def note(e: FormationEvent) -> None:
        if e.type == "node_finished" and e.node == "wfb":
            wfb_done.set()

    wfa = (Formation("wfa").add_function("start", start_after_wfb)
           .add_function("final", final).connect("start", "final"))
    wfb = (Formation("wfb").add_function("start", lambda x: {"newValue": x["startValue"] + 1})
           .add_function("remap", lambda x: {"newValue": x["newValue"], "other": 0})
           .add_function("final", final).connect("start", "remap", "final"))
    f = (Formation("counter").add_function("begin", lambda x: x).add_formation("wfa", wfa).add_formation("wfb", wfb)
         .add_function("last", lambda wfa, wfb: counter.hit("last"))
         .connect("begin", "wfa", "last").connect("begin", "wfb", "last"))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run({"startValue": 0}, on_event=note)
    nodes = caught.value.nodes
    assert caught.value.node == "wfa"
    assert nodes["wfa/final"].status == "failed" and "other" in (nodes["wfa/final"].error or "")
    assert nodes["wfb"].output == {"finalValue": 1}
    assert counter.count("last") == 0


def test_cancelling_a_run_between_steps_keeps_what_finished_and_starts_nothing_more() -> None:
    """From workflow.test.ts "should be able to abort workflow execution in between steps" (status
    ``canceled``, step1's output kept, step2 never started)."""
    counter = Counter()
    release = threading.Event()
    events: list[FormationEvent] = []

    def step1(x: dict[str, str]) -> dict[str, str]:
        return {"result": "step1: " + x["value"]}

    def pause(x: Any) -> Any:  # Mastra's ``.sleep(1000)`` between the steps
        release.wait(5)
        return x

    f = (Formation("abort").add_function("step1", step1).add_function("sleep", pause)
         .add_function("step2", counted(counter, "step2", {})).connect("step1", "sleep", "step2"))
    try:
        with f.start(on_event=events.append) as running:
            future = running.submit({"value": "test"})
            assert until(lambda: any(e.type == "node_started" and e.node == "sleep" for e in events))
            assert future.cancel()
            with pytest.raises(CancelledError):
                future.result(timeout=5)
            assert until(lambda: any(e.type == "run_cancelled" for e in events))
    finally:
        release.set()
    cancelled = next(e for e in events if e.type == "run_cancelled")
    assert cancelled.data["outputs"] == {"step1": {"result": "step1: test"}}
    assert cancelled.data["unfinished"] == ["sleep"]
    assert counter.count("step2") == 0


def test_cancelling_a_run_during_an_async_step_cancels_the_steps_await() -> None:
    """From workflow.test.ts "should be able to abort workflow execution during a step" (the step's
    ``abortSignal`` fires; here its coroutine gets ``CancelledError`` at its ``await``)."""
    aborted, started = threading.Event(), threading.Event()

    async def step2(x: dict[str, str]) -> dict[str, str]:
        started.set()
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            aborted.set()
            raise
        return {"result": "step2: " + x["result"]}

    f = (Formation("abort-during").add_function("step1", lambda x: {"result": "step1: " + x["value"]})
         .add_function("step2", step2).connect("step1", "step2"))
    with f.start() as running:
        future = running.submit({"value": "test"})
        assert started.wait(5)
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result(timeout=5)
        assert aborted.wait(5)


def test_a_run_is_running_in_the_store_until_its_last_step_ends_then_succeeded(tmp_path: Path) -> None:
    """From workflow.test.ts "should only update workflow status to success after all steps have run
    successfully" (while ``final`` runs, the stored run and ``final`` are ``running``)."""
    store = RunStore(tmp_path / "runs.sqlite")
    entered, release = threading.Event(), threading.Event()

    def final(x: dict[str, int]) -> dict[str, int]:
        entered.set()
        release.wait(5)
        return x

    f = (Formation("status").add_function("increment", lambda x: {"value": x["value"] + 1})
         .add_function("final", final).connect("increment", "final"))
    try:
        with f.start(store=store) as running:
            future = running.submit({"value": 0})
            assert entered.wait(5)
            assert store.get(future.run_id).status == "running"
            release.set()
            assert future.result(timeout=5).output == {"value": 1}
            store.flush(future.run_id)
            assert store.get(future.run_id).status == "succeeded"
    finally:
        release.set()
        store.close()
