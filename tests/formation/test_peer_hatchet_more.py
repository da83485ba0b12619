"""Non-retryable errors, on-failure tasks, time limits and return-type validation, ported
from the Hatchet Python SDK's examples and their e2e tests (hatchet-dev/hatchet,
``sdks/python/examples/non_retryable``, ``on_failure``, ``timeout``, ``return_exceptions``,
``sdks/python/tests/correct_failure_on_timeout_with_multi_concurrency``): ``retries`` as
Hatchet's, ``skip_retry_on_exceptions`` is ``retry_on`` or an error's ``retryable = False``,
an ``on_failure_task`` is an error edge, ``execution_timeout`` a node's ``timeout`` and
``schedule_timeout`` a run's ``timeout`` counted from ``submit``.

Deliberately different: Hatchet's ``on_failure_task`` belongs to the workflow and runs once
whichever task failed (``ctx.fetch_run_failures()`` lists them); ours is an edge from each
node that may fail to its handler, so a workflow-wide handler is an error edge from every
such node.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import Counter, busy_with
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NodeTimeoutError, PayloadError
from wingman_actors.formation import NodeFailure


def raising(counter: Counter, name: str, error: BaseException) -> Any:
    def node(_: Any) -> None:
        counter.hit(name)
        raise error

    return node


def failed_attempts(f: Formation) -> tuple[FormationRuntimeError, int]:
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(None)
    return caught.value, caught.value.attempts


def test_an_error_outside_retry_on_is_not_retried() -> None:
    """From hatchet examples/non_retryable/worker.py should_not_retry_no_match (a
    ValueError listed as not retryable: one attempt despite retries=1)."""
    counter = Counter()
    f = Formation("NonRetryable").add_function(
        "should_not_retry", raising(counter, "n", ValueError("no retry")), retries=1, backoff=0.001,
        retry_on=(ConnectionError, TypeError))
    err, attempts = failed_attempts(f)
    assert (attempts, counter.count("n")) == (1, 1) and isinstance(err.__cause__, ValueError)


def test_an_error_of_another_type_than_the_non_retryable_one_is_retried() -> None:
    """From hatchet examples/non_retryable/worker.py should_retry_wrong_exception_type
    (ValueError is not retried; a TypeError is)."""

    class NotRetried(ValueError):
        retryable = False

    counter = Counter()
    f = Formation("NonRetryable").add_function(
        "should_retry", raising(counter, "n", TypeError("retry me")), retries=1, backoff=0.001)
    assert failed_attempts(f)[1] == 2 and counter.count("n") == 2
    f = Formation("NonRetryable").add_function(
        "should_not_retry", raising(counter, "m", NotRetried("do not")), retries=1, backoff=0.001)
    assert failed_attempts(f)[1] == 1 and counter.count("m") == 1


@pytest.mark.parametrize(("message", "attempts"), [("this should not retry", 1), ("bazqux", 2)])
def test_an_error_marked_not_retryable_by_its_message_gives_up_only_when_it_matches(message: str,
                                                                                    attempts: int) -> None:
    """From hatchet examples/non_retryable/worker.py should_not_retry and
    should_retry_wrong_match (``NonRetryableException(ValueError, match="should not retry")``:
    here the instance is marked, by the caller that knows the message)."""

    def should_not_retry(_: Any) -> None:
        err = ValueError(message)
        if "should not retry" in message:
            err.retryable = False  # type: ignore[attr-defined]
        raise err

    f = Formation("NonRetryable").add_function("task", should_not_retry, retries=1, backoff=0.001)
    err, tried = failed_attempts(f)
    assert tried == attempts and str(err.__cause__) == message


def test_the_failure_handler_gets_the_failed_tasks_error_and_the_run_goes_on() -> None:
    """From hatchet examples/on_failure/worker.py OnFailureWorkflowWithDetails (the handler
    sees one failure, "step1 failed", and returns success)."""
    seen: list[NodeFailure] = []

    def on_failure(failure: NodeFailure) -> dict[str, str]:
        seen.append(failure)
        return {"status": "success"}

    f = (Formation("OnFailureWorkflow").add_function("step1", raising(Counter(), "s", RuntimeError("step1 failed")),
                                                     retries=1, backoff=0.001)
         .add_function("on_failure", on_failure).connect("step1", "on_failure", on_error=True))
    result = f.run("in")
    # step1 is a sink too (its only out-edge is an error edge), so the handler's value is in outputs
    assert result.outputs == {"on_failure": {"status": "success"}} and result.nodes["step1"].status == "failed"
    assert len(seen) == 1
    assert (seen[0].node, str(seen[0].error), seen[0].input, seen[0].attempts) == ("step1", "step1 failed", "in", 2)
    assert seen[0].run_id == result.run_id


def test_the_failure_handler_does_not_run_when_nothing_fails() -> None:
    """From hatchet examples/on_failure/test_on_failure.py (the on-failure task is only for
    failed runs)."""
    counter = Counter()

    def on_failure(failure: NodeFailure) -> str:
        counter.hit("on_failure")
        return "handled"

    f = (Formation("ok").add_function("step1", lambda x: x).add_function("on_failure", on_failure)
         .add_function("next", lambda x: f"{x}!").connect("step1", "next")
         .connect("step1", "on_failure", on_error=True))
    result = f.run("fine")
    assert result.outputs == {"next": "fine!"} and result.nodes["on_failure"].status == "skipped"
    assert counter.count("on_failure") == 0


def test_the_failure_handler_sees_an_execution_timeout_as_the_failure() -> None:
    """From hatchet examples/on_failure/worker.py (step1 has ``execution_timeout=1s``; a
    timeout is a failure the on-failure task handles)."""
    release = threading.Event()

    def hangs(_: Any) -> None:
        release.wait(5)

    f = (Formation("timeouts").add_function("step1", hangs, timeout=0.1)
         .add_function("on_failure", lambda failure: type(failure.error).__name__)
         .connect("step1", "on_failure", on_error=True))
    try:
        result = f.run(None)
    finally:
        release.set()
    assert result.outputs == {"on_failure": "NodeTimeoutError"}


def shared_handler(seen: list[dict[str, NodeFailure]], b_fails: bool) -> Formation:
    def handler(failures: dict[str, NodeFailure]) -> str:
        seen.append(failures)
        return "handled"

    b = raising(Counter(), "b", RuntimeError("b failed")) if b_fails else (lambda x: "b ok")
    return (Formation("both").add_function("start", lambda x: x)
            .add_function("a", raising(Counter(), "a", RuntimeError("a failed"))).add_function("b", b)
            .add_function("handler", handler)
            .connect("start", "a").connect("start", "b")
            .connect("a", "handler", on_error=True).connect("b", "handler", on_error=True))


def test_a_handler_shared_by_two_failing_tasks_runs_once_with_both_failures() -> None:
    """From hatchet examples/on_failure/worker.py (one on-failure task for the workflow;
    ``ctx.fetch_run_failures()`` lists the failures): an error edge from each task into one
    handler joins their failures, keyed by node."""
    seen: list[dict[str, NodeFailure]] = []
    result = shared_handler(seen, b_fails=True).run(None)
    assert result.outputs == {"handler": "handled"} and len(seen) == 1
    assert {name: str(failure.error) for name, failure in seen[0].items()} == {"a": "a failed", "b": "b failed"}


def test_a_handler_shared_by_two_tasks_hears_only_the_one_that_failed() -> None:
    """From hatchet examples/on_failure/worker.py OnFailureWorkflowWithDetails
    (``len(failures) == 1``: the task that succeeded is not among the failures)."""
    seen: list[dict[str, NodeFailure]] = []
    result = shared_handler(seen, b_fails=False).run(None)
    assert result.outputs == {"handler": "handled", "b": "b ok"}
    assert [list(failures) for failures in seen] == [["a"]]


def test_an_execution_timeout_fails_the_run_saying_the_task_timed_out() -> None:
    """From hatchet examples/timeout/test_timeout.py test_run_timeout ("Task exceeded
    timeout")."""
    release = threading.Event()

    def slow(_: Any) -> None:
        release.wait(5)

    started = time.monotonic()
    try:
        with pytest.raises(FormationRuntimeError) as caught:
            Formation("TimeoutWorkflow").add_function("timeout_task", slow, timeout=0.2).run(None)
    finally:
        release.set()
    assert time.monotonic() - started < 2
    assert caught.value.node == "timeout_task" and isinstance(caught.value.__cause__, NodeTimeoutError)
    assert "timeout_task" in str(caught.value) and "0.2" in str(caught.value)


def test_a_run_queued_behind_busy_work_fails_at_its_own_timeout_and_the_busy_run_is_untouched(
        gate: tuple[threading.Event, threading.Event]) -> None:
    """From hatchet tests/correct_failure_on_timeout_with_multi_concurrency (two runs with
    small schedule timeouts, no slot free: both fail once the limit is reached)."""
    entered, release = gate
    counter = Counter()
    with Formation("slots").add_function("busy", busy_with("first", gate, counter)).start() as running:
        first = running.submit("first")
        assert entered.wait(5)
        queued = [running.submit(f"queued{i}", timeout=0.2) for i in range(2)]
        for future in queued:
            with pytest.raises(FormationRuntimeError) as caught:
                future.result(timeout=5)
            assert "timed out" in str(caught.value) or "timeout" in str(caught.value).lower()
        assert not first.done()
        release.set()
        assert first.result(timeout=5).output == "first"
        assert running.submit("after").result(timeout=5).output == "after"
    assert counter.count("queued0") == counter.count("queued1") == 0  # a run that timed out in the queue never starts


class StepOutput(BaseModel):
    random_number: int


def test_a_return_type_that_does_not_fit_the_next_tasks_input_is_refused_at_declaration() -> None:
    """From hatchet examples/dag/worker.py (a task's return type, StepOutput, is what its
    children read: Hatchet validates outputs against it)."""

    def step1(_: Any) -> StepOutput:
        return StepOutput(random_number=1)

    def step2(n: int) -> int:
        return n

    with pytest.raises(FormationSetupError) as caught:
        Formation("typed").add_function("step1", step1).add_function("step2", step2).connect("step1", "step2").validate()
    assert "step1" in str(caught.value) and "step2" in str(caught.value)


def test_an_output_that_breaks_the_next_tasks_type_fails_that_task_without_retrying() -> None:
    """From hatchet examples/dag/worker.py (a wrong output is a validation error, not a
    transient one)."""
    counter = Counter()

    def step1(_: Any) -> Any:
        return {"random_number": "many"}

    def step2(out: StepOutput) -> int:
        counter.hit("step2")
        return out.random_number

    f = Formation("typed").add_function("step1", step1).add_function("step2", step2, retries=3, backoff=0.001)
    with pytest.raises(FormationRuntimeError) as caught:
        f.connect("step1", "step2").run(None)
    assert caught.value.node == "step2" and caught.value.attempts == 1 and counter.count("step2") == 0
    assert isinstance(caught.value.__cause__, PayloadError)


def test_an_output_matching_the_next_tasks_model_arrives_as_that_model() -> None:
    """From hatchet examples/dag/worker.py (``ctx.task_output(step1).random_number``)."""

    def step2(out: StepOutput) -> int:
        return out.random_number * 2

    f = Formation("typed").add_function("step1", lambda _: {"random_number": 21}).add_function("step2", step2)
    assert f.connect("step1", "step2").run(None).output == 42


def test_many_runs_at_once_report_each_failure_on_its_own_future() -> None:
    """From hatchet examples/return_exceptions/test_return_exceptions.py (``run_many(...,
    return_exceptions=True)``: the even-indexed runs fail with their index in the message,
    the odd ones succeed)."""

    def task(index: int) -> dict[str, str]:
        if index % 2 == 0:
            raise ValueError(f"error in task with index {index}")
        return {"message": "this is a successful task."}

    with Formation("return_exceptions").add_function("task", task, concurrency=2).start() as running:
        futures: list[Future[Any]] = [running.submit(i) for i in range(10)]
        for i, future in enumerate(futures):
            if i % 2 == 0:
                assert f"error in task with index {i}" in str(future.exception(timeout=10))
            else:
                assert future.result(timeout=10).output == {"message": "this is a successful task."}


class HelloInput(BaseModel):
    name: str


class HelloOutput(BaseModel):
    greeting: str


def say_hello(inp: HelloInput) -> HelloOutput:
    return HelloOutput(greeting=f"Hello, {inp.name}!")


def test_a_runs_input_is_validated_into_the_first_tasks_model_and_a_bad_one_fails_at_once() -> None:
    """From hatchet examples/trigger_methods/workflow.py (``input_validator=HelloInput``: the
    run's input is parsed into the model; one that does not fit is refused, not retried)."""
    f = Formation("hello").add_function("say_hello", say_hello, retries=2, backoff=0.001)
    assert f.run({"name": "World"}).output == HelloOutput(greeting="Hello, World!")
    with pytest.raises(FormationRuntimeError) as caught:
        f.run({"nme": "World"})
    assert caught.value.attempts == 1 and isinstance(caught.value.__cause__, PayloadError)
    assert "'input' → 'say_hello'" in str(caught.value) and "name: Field required" in str(caught.value)
