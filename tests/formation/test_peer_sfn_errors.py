"""Retry, Catch, Fail and TimeoutSeconds of AWS Step Functions, as LocalStack's own suite tests
them (localstack/localstack, ``tests/aws/services/stepfunctions/v2/error_handling/``,
``scenarios/test_base_scenarios.py``, ``base/test_base.py``, ``timeouts/test_timeouts.py`` and
the ASL templates under ``tests/aws/services/stepfunctions/templates/``). A Task state is a
function node; ``Retry`` is ``retries``/``retry_on``/``backoff``/``max_backoff``/``jitter``;
``Catch`` is an error edge (``connect(a, handler, on_error=True)``) whose handler receives a
``NodeFailure``; a ``Fail`` state is a node that raises; ``TimeoutSeconds`` is the node's
``timeout``.

Deliberately different (DESIGN.md "Error edges" and "Supervision" document ours):
- A Catch list picks the first catcher whose ``ErrorEquals`` names the error; an error edge
  takes no condition (``on_error=True`` with ``when=`` is refused), so catchers by error type
  are one error edge to a node whose ``when=`` edges route on ``failure.error``'s type, with
  ``otherwise=True`` as ``States.ALL``.
- Several retriers with their own ``MaxAttempts`` per error become one ``retries`` count and
  ``retry_on`` (the error types retried): an error ``retry_on`` does not name gets one attempt.
- ``BackoffRate`` is fixed at 2.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NodeTimeoutError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore


class LambdaUnknownError(Exception):
    """Stands for ``Lambda.Unknown``."""


class TaskFailedError(Exception):
    """Stands for ``States.TaskFailed``."""


class SomeFailure(Exception):
    """What a ``Fail`` state with ``"Error": "SomeFailure"`` raises."""


def raises(error: BaseException, counter: Counter | None = None, name: str = "task") -> Any:
    def task(x: Any) -> Any:
        if counter is not None:
            counter.hit(name)
        raise error

    return task


def catchers(error: BaseException) -> Formation:
    """task_lambda_invoke_catch_relevant.json5: catchers for Lambda.Unknown, States.TaskFailed and
    States.ALL, in that order, after a task that raises ``error``."""
    return (Formation("catch_relevant").add_function("start", raises(error))
            .add_function("final", lambda x: {"final": x})
            .add_function("caught", lambda f: f)
            .add_function("lambda_unknown", lambda f: {"lambda_unknown": str(f.error)})
            .add_function("task_failed", lambda f: {"task_failed_error": str(f.error)})
            .add_function("all_error", lambda f: {"all_error": type(f.error).__name__})
            .connect("start", "final").connect("start", "caught", on_error=True)
            .connect("caught", "lambda_unknown", when=lambda f: isinstance(f.error, LambdaUnknownError))
            .connect("caught", "task_failed", when=lambda f: isinstance(f.error, TaskFailedError))
            .connect("caught", "all_error", otherwise=True))


@pytest.mark.parametrize(("error", "outputs"), [
    (LambdaUnknownError("boom"), {"lambda_unknown": {"lambda_unknown": "boom"}}),
    (TaskFailedError("bad"), {"task_failed": {"task_failed_error": "bad"}}),
    (KeyError("k"), {"all_error": {"all_error": "KeyError"}}),
])
def test_catchers_by_error_type_route_the_failure_to_the_handler_of_its_type(error: Exception,
                                                                             outputs: dict[str, Any]) -> None:
    """From LocalStack error_handling/test_task_lambda.py::test_raise_exception_catch and the
    task_lambda_invoke_catch_relevant.json5 template (the first matching catcher takes it,
    States.ALL the rest)."""
    result = catchers(error).run({})
    assert result.outputs == outputs
    assert result.nodes["start"].status == "failed" and result.nodes["final"].status == "skipped"


def test_an_error_edge_with_a_condition_is_refused_at_declaration_naming_the_way_to_route_it() -> None:
    """From LocalStack's task_lambda_invoke_catch_relevant.json5 (``ErrorEquals`` on a catcher):
    ours takes no condition on an error edge, and says so when given one."""
    f = Formation("conditional_catch").add_function("start", lambda x: x).add_function("h", lambda f: f)
    with pytest.raises(FormationSetupError) as caught:
        f.connect("start", "h", on_error=True, when=lambda f: True)
    assert "on_error" in str(caught.value) and "'start'" in str(caught.value)


def test_a_task_that_succeeds_takes_its_next_state_and_no_catcher_runs() -> None:
    """From LocalStack scenarios/test_base_scenarios.py::test_catch_empty (a Task with catchers
    that does not fail goes on to Next)."""
    result = (Formation("ok").add_function("start", lambda x: x + 1)
              .add_function("final", lambda x: x * 10).add_function("caught", lambda f: "caught")
              .connect("start", "final").connect("start", "caught", on_error=True).run(1))
    assert result.outputs == {"final": 20}
    assert result.nodes["caught"].status == "skipped"


def test_an_error_retry_on_does_not_name_is_caught_after_one_attempt_though_retries_remain() -> None:
    """From LocalStack scenarios/test_base_scenarios.py::test_map_state_retry_multiple_retriers
    (a retrier for ``NoSuchError`` does not retry ``HandleItemFailError``)."""
    counter = Counter()
    f = (Formation("narrow_retry")
         .add_function("task", raises(SomeFailure("no"), counter), retries=3, backoff=0, retry_on=ConnectionError)
         .add_function("handler", lambda f: (f.attempts, type(f.error).__name__))
         .connect("task", "handler", on_error=True))
    assert f.run(1).outputs == {"handler": (1, "SomeFailure")}
    assert counter.count("task") == 1


def test_a_retried_error_is_caught_once_its_attempts_are_spent_with_their_count() -> None:
    """From LocalStack scenarios/test_base_scenarios.py::test_parallel_state_retry and
    test_lambda_empty_retry (``MaxAttempts: 2``: three attempts, then the catcher)."""
    counter = Counter()
    f = (Formation("retry_then_catch")
         .add_function("task", raises(SomeFailure("again"), counter), retries=2, backoff=0, retry_on=SomeFailure)
         .add_function("handler", lambda f: f.attempts).connect("task", "handler", on_error=True))
    result = f.run(1)
    assert (result.outputs["handler"], counter.count("task"), result.nodes["task"].attempts) == (3, 3, 3)


def test_max_attempts_zero_is_one_attempt_and_no_retry() -> None:
    """From LocalStack scenarios/test_base_scenarios.py::test_retry_interval_features_max_attempts_zero."""
    counter = Counter()
    with pytest.raises(FormationRuntimeError) as caught:
        Formation("no_retry").add_function("task", raises(SomeFailure("x"), counter), retries=0).run(1)
    assert (caught.value.attempts, counter.count("task")) == (1, 1)


def test_negative_max_attempts_are_refused_at_declaration_naming_the_node() -> None:
    """From LocalStack test_sfn_api_validation.py (a retrier's ``MaxAttempts`` must be >= 0)."""
    with pytest.raises(FormationSetupError) as caught:
        Formation("bad").add_function("task", lambda x: x, retries=-1).validate()
    assert "task" in str(caught.value) and "retries" in str(caught.value)


def test_a_fail_state_fails_the_run_with_its_error_and_cause() -> None:
    """From LocalStack base/test_base.py::test_state_fail (raise_failure.json5: the execution
    fails with the Fail state's Error and Cause)."""
    with pytest.raises(FormationRuntimeError) as caught:
        (Formation("raise_failure").add_function("start", lambda x: x)
         .add_function("fail", raises(SomeFailure("This state machines raises a 'SomeFailure' failure.")))
         .connect("start", "fail").run({}))
    err = caught.value
    assert err.node == "fail" and isinstance(err.__cause__, SomeFailure)
    assert err.nodes["fail"].error == "SomeFailure: This state machines raises a 'SomeFailure' failure."
    assert err.outputs == {"start": {}} and err.nodes["start"].output == {}


def test_a_fail_state_without_a_cause_reports_the_error_name_alone() -> None:
    """From LocalStack base/test_base.py::test_state_fail_empty (raise_empty_failure.json5: a Fail
    state with neither Error nor Cause)."""
    with pytest.raises(FormationRuntimeError) as caught:
        Formation("raise_empty_failure").add_function("fail", raises(SomeFailure())).run({})
    assert caught.value.nodes["fail"].error == "SomeFailure"
    assert "SomeFailure" in str(caught.value)


def test_a_catcher_handler_goes_on_to_the_states_after_it() -> None:
    """From LocalStack's task_service_lambda_invoke_catch_all.json5 (error_handling templates: the
    catcher's ``Next`` continues the execution, with the error beside the input)."""
    f = (Formation("catch_then_more").add_function("task", raises(SomeFailure("down")))
         .add_function("handler", lambda f: {"input": f.input, "error": str(f.error)})
         .add_function("after", lambda d: f"{d['input']['id']} recovered from {d['error']}")
         .connect("task", "handler", on_error=True).connect("handler", "after"))
    result = f.run({"id": 7})
    assert result.outputs == {"after": "7 recovered from down"}  # 'task' is a sink too (its only way on is an error edge)


def test_a_failed_task_and_its_handler_join_the_main_path_again_without_the_other_branch() -> None:
    """From LocalStack's task_service_lambda_invoke_catch_all.json5 (the catcher and the happy path
    lead to one later state)."""
    def publish(parse: str | None = None, cached: str | None = None) -> str:
        return f"parse={parse} cached={cached}"

    def build(fetch: Any) -> Formation:
        return (Formation("rejoin").add_function("fetch", fetch).add_function("parse", str.upper)
                .add_function("cached", lambda f: f"cached {f.input}").add_function("publish", publish)
                .connect("fetch", "parse").connect("fetch", "cached", on_error=True)
                .connect("parse", "publish").connect("cached", "publish"))

    assert build(raises(ConnectionError("offline"))).run("page").output == "parse=None cached=cached page"
    assert build(lambda x: x).run("page").output == "parse=PAGE cached=None"


def test_a_catcher_handler_that_fails_itself_fails_the_run_naming_the_handler() -> None:
    """From LocalStack scenarios/test_base_scenarios.py::test_catch_states_runtime (an error in
    what runs after the catcher is the execution's failure)."""
    with pytest.raises(FormationRuntimeError) as caught:
        (Formation("bad_handler").add_function("task", raises(SomeFailure("first")))
         .add_function("handler", raises(TaskFailedError("second"))).connect("task", "handler", on_error=True)
         .run(1))
    err = caught.value
    assert err.node == "handler" and isinstance(err.__cause__, TaskFailedError)
    assert err.nodes["task"].status == "failed" and err.nodes["handler"].status == "failed"


def test_an_output_the_next_state_cannot_take_is_caught_by_that_states_catcher() -> None:
    """From LocalStack scenarios/test_base_scenarios.py::test_catch_states_runtime
    (catch_states_runtime.json5: a States.Runtime error about the data, not the task, is
    caught and not retried)."""
    counter = Counter()

    def typed(n: int) -> int:
        counter.hit("typed")
        return n

    f = (Formation("runtime").add_function("task", lambda x: "not a number")
         .add_function("typed", typed, retries=3, backoff=0)
         .add_function("caught", lambda f: (type(f.error).__name__, f.input, f.attempts))
         .connect("task", "typed").connect("typed", "caught", on_error=True))
    result = f.run(1)
    assert result.outputs == {"caught": ("PayloadError", "not a number", 1)}
    assert counter.count("typed") == 0
    assert isinstance(result.nodes["typed"].error, str) and "PayloadError" in result.nodes["typed"].error


def test_a_timed_out_task_is_caught_with_a_timeout_error(release: threading.Event) -> None:
    """From LocalStack error_handling/test_task_service_lambda.py::test_invoke_timeout
    (task_service_lambda_invoke_catch_timeout.json5: States.Timeout reaches a States.ALL catcher).
    The handler's error is a ``NodeTimeoutError``; ``States.Timeout`` is its own error name."""
    def stuck(x: int) -> int:
        release.wait(5)
        return x

    f = (Formation("catch_timeout").add_function("task", stuck, timeout=0.2)
         .add_function("caught", lambda f: (isinstance(f.error, NodeTimeoutError), isinstance(f.error, TimeoutError),
                                            f.input))
         .connect("task", "caught", on_error=True))
    started = time.monotonic()
    # a NodeTimeoutError, told apart from a run's own timeout: it is not a TimeoutError (though
    # retry_on=TimeoutError retries it)
    assert f.run(5).outputs == {"caught": (True, False, 5)}
    assert time.monotonic() - started < 3


def test_a_timeout_is_retried_only_when_retry_on_names_timeouts(release: threading.Event) -> None:
    """From LocalStack timeouts/test_timeouts.py::test_fixed_timeout_service_lambda and the
    retriers of scenarios (a retrier whose ErrorEquals does not list States.Timeout does not
    retry a timeout)."""
    counter = Counter()

    def stuck(x: int) -> int:
        counter.hit("task")
        release.wait(5)
        return x

    with pytest.raises(FormationRuntimeError) as caught:
        Formation("timeouts").add_function("task", stuck, timeout=0.2, retries=2, backoff=0,
                                           retry_on=ConnectionError).run(1)
    assert isinstance(caught.value.__cause__, NodeTimeoutError)
    assert (caught.value.attempts, counter.count("task")) == (1, 1)


def test_a_global_timeout_fails_the_run_naming_the_state_still_running(release: threading.Event) -> None:
    """From LocalStack timeouts/test_timeouts.py::test_global_timeout (the state machine's own
    TimeoutSeconds ends the execution as TIMED_OUT, whatever state is running)."""
    def stuck(x: int) -> int:
        release.wait(5)
        return x

    started = time.monotonic()
    with pytest.raises(TimeoutError) as caught:
        (Formation("global_timeout").add_function("first", lambda x: x + 1).add_function("wait", stuck)
         .connect("first", "wait").run(1, timeout=1.0))  # (starting the formation counts in it)
    assert time.monotonic() - started < 4
    err: Any = caught.value
    assert err.unfinished == ["wait"] and err.nodes["first"].output == 2


def test_retries_count_per_visit_of_a_state_in_a_loop() -> None:
    """From LocalStack's lambda_repeat_until_loop.json5 with a retrier on the task (each entry
    of the state starts its retrier afresh)."""
    counter = Counter()

    def flaky(n: int) -> int:
        if counter.hit(n) == 1:
            raise ConnectionError(f"first try of {n}")
        return n + 1

    f = (Formation("loop_retries").add_function("step", flaky, retries=1, backoff=0)
         .add_function("done", lambda n: n)
         .connect("step", "step", when=lambda n: n < 4).connect("step", "done", when=lambda n: n >= 4))
    result = f.run(0)
    assert result.output == 4
    assert [counter.count(n) for n in range(4)] == [2, 2, 2, 2]
    assert result.nodes["step"].visits == 4


def test_a_redriven_run_hands_the_journalled_failure_to_the_fixed_catcher_without_retrying_the_task(
        store: RunStore) -> None:
    """From LocalStack error_handling/test_task_lambda.py::test_raise_exception_catch (a catcher's
    handler), with the failed execution redriven (Step Functions' RedriveExecution reruns it from
    the state that failed, here the handler): the task's failure is journalled and handed to the
    handler again, rebuilt, by its class name alone when it had no message."""
    counter = Counter()
    broken = {"on": True}

    def handler(f: NodeFailure) -> str:
        if broken["on"]:
            raise RuntimeError("handler down")
        return f"caught {f.error} after {f.attempts} attempt(s) of {f.input}"

    f = (Formation("redrive").add_function("task", raises(SomeFailure(), counter), retries=1, backoff=0)
         .add_function("handler", handler).connect("task", "handler", on_error=True))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(5, store=store, run_id="r1")
    assert caught.value.node == "handler"
    broken["on"] = False
    result = f.resume("r1", store=store)
    assert result.outputs == {"handler": "caught SomeFailure after 2 attempt(s) of 5"}
    assert counter.count("task") == 2


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()
