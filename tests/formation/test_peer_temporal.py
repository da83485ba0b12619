"""Behaviours ported from Temporal's Python SDK's own tests (temporalio/sdk-python,
``tests/worker/test_activity.py`` and ``tests/worker/test_workflow.py``): an activity is a
node visit, its ``RetryPolicy`` is the node's ``retries``/``backoff``/``max_backoff``/
``jitter``/``retry_on``, ``start_to_close_timeout`` is the node's ``timeout`` and
``schedule_to_close_timeout`` (and the workflow's execution timeout) the run's
``timeout``; ``ActivityError`` wrapping the activity's own error is our
``FormationRuntimeError`` (or the ``NodeFailure`` an error edge receives) with that error
as its cause. (Cancellation and ``async def`` activities: ``test_peer_temporal_cancel.py``;
child workflows, signals, ids and replay: ``tests/durable/test_peer_temporal*.py``.)

Deliberately different (DESIGN.md documents ours):
- Temporal's ``RetryPolicy`` retries by default without limit; a node's ``retries``
  defaults to 0 (one attempt), and ``retries=n`` is ``maximum_attempts=n + 1``.
- ``non_retryable_error_types`` lists the errors *not* to retry; ``retry_on`` lists the
  errors that *are* retried (an allow-list, as LangGraph's ``RetryPolicy``).
- ``backoff_coefficient`` is fixed at 2 (``backoff * 2**(attempt-1)``), and jitter is on by
  default (``jitter=False`` gives Temporal's exact intervals).
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NodeTimeoutError, WingmanError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent

SLACK = 1.0  # a loaded, shared 2-core machine


def flaky(counter: Counter, failures: int, error: type[Exception] = RuntimeError, name: str = "act") -> Any:
    """A node failing its first ``failures`` attempts with ``error``, then answering its attempt."""

    def act(x: Any) -> str:
        attempt = counter.hit(name)
        if attempt <= failures:
            raise error(f"try again ({attempt})")
        return f"{x} on attempt {attempt}"

    return act


@dataclasses.dataclass
class Inner:
    foo: int


@dataclasses.dataclass
class Outer:
    foo: str
    bar: Inner | None = None


class Reply(BaseModel):
    text: str


# --- activities that answer and fail ----------------------------------------------------


def test_a_function_node_answers_with_what_it_returns() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_hello."""
    f = Formation("hello").add_function("say_hello", lambda name: f"Hello, {name}!")
    result = f.run("Temporal")
    assert (result.output, result.status, result.nodes["say_hello"].attempts) == ("Hello, Temporal!", "succeeded", 1)


def test_a_node_that_raises_fails_the_run_with_its_error_as_the_cause_naming_the_node() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_failure."""

    def raise_error(x: Any) -> None:
        raise RuntimeError("oh no!")

    with pytest.raises(FormationRuntimeError, match=r"node 'raise_error'.*RuntimeError: oh no!") as raised:
        Formation("fails").add_function("raise_error", raise_error).run(1)
    assert isinstance(raised.value, WingmanError)
    assert type(raised.value.__cause__) is RuntimeError and str(raised.value.__cause__) == "oh no!"
    assert (raised.value.node, raised.value.attempts) == ("raise_error", 1)
    assert raised.value.nodes["raise_error"].status == "failed"


def test_a_function_that_needs_a_parameter_its_node_is_not_given_is_refused_before_the_run() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_bad_params
    (Temporal fails the activity at run time; we refuse the declaration: nothing runs)."""
    counter = Counter()

    def say_hello(name: str, greeting: str) -> str:
        counter.hit("say_hello")
        return f"{greeting}, {name}!"

    with pytest.raises(FormationSetupError, match=r"say_hello") as raised:
        Formation("bad").add_function("say_hello", say_hello).run("Temporal")
    assert "greeting" in str(raised.value)
    assert counter.calls == {}


def test_a_dataclass_and_a_model_reach_the_next_node_as_themselves() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_type_hints."""

    seen: list[Any] = []

    def some_activity(param: Outer) -> Reply:
        seen.append(param)
        return Reply(text=f"{type(param).__name__} {param.bar}")

    f = (Formation("typed").add_function("make", lambda x: Outer(foo=x, bar=Inner(foo=123)))
         .add_function("some_activity", some_activity).connect("make", "some_activity"))
    result = f.run("str1")
    assert seen == [Outer(foo="str1", bar=Inner(foo=123))]
    assert result.output == Reply(text="Outer Inner(foo=123)")


# --- RetryPolicy ------------------------------------------------------------------------


def test_a_node_retried_until_it_answers_reports_its_attempts() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_heartbeat_details
    (retry_max_attempts=4: three failures, then an answer)."""
    counter = Counter()
    result = Formation("retry").add_function("act", flaky(counter, 3), retries=3, backoff=0.001).run("x")
    assert result.output == "x on attempt 4"
    assert result.nodes["act"].attempts == 4 and counter.calls == {"act": 4}


def test_retries_zero_is_one_attempt_and_the_error_fails_the_run() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_sync_activity_thread_cancel_on_worker_shutdown
    (RetryPolicy(maximum_attempts=1): the first failure is final)."""
    counter = Counter()
    with pytest.raises(FormationRuntimeError, match=r"node 'act' failed after 1 attempt"):
        Formation("once").add_function("act", flaky(counter, 1)).run("x")
    assert counter.calls == {"act": 1}


def test_a_node_whose_retries_are_spent_fails_with_its_last_error_and_every_attempt_counted() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_activity_retry_exhausted
    (maximum_attempts reached: ActivityError with retry_state MAXIMUM_ATTEMPTS_REACHED)."""
    counter = Counter()
    with pytest.raises(FormationRuntimeError, match=r"node 'act' failed after 3 attempt") as raised:
        Formation("spent").add_function("act", flaky(counter, 10), retries=2, backoff=0.001).run("x")
    assert str(raised.value.__cause__) == "try again (3)"  # the last attempt's error
    assert raised.value.attempts == 3 and counter.calls == {"act": 3}


def test_an_error_that_says_it_is_not_retryable_is_not_retried_whatever_the_retries() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_error_non_retryable
    (ApplicationError(non_retryable=True) ends the retries at once; ours: an error whose
    ``retryable`` is False, as PayloadError's is)."""
    counter = Counter()

    class DoNotRetry(Exception):
        retryable = False

    def act(x: Any) -> None:
        if counter.hit("act") < 2:
            raise RuntimeError("Retry me")
        raise DoNotRetry("Do not retry me", "detail1", 123)

    with pytest.raises(FormationRuntimeError, match=r"failed after 2 attempt") as raised:
        Formation("nonretryable").add_function("act", act, retries=100, backoff=0.001).run("x")
    assert isinstance(raised.value.__cause__, DoNotRetry)
    assert raised.value.__cause__.args == ("Do not retry me", "detail1", 123)  # the details travel with it
    assert counter.calls == {"act": 2}


def test_an_error_type_retry_on_does_not_name_gives_up_at_once() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_error_non_retryable_type.
    Temporal lists the types not to retry (non_retryable_error_types); ``retry_on`` lists those to retry."""
    counter = Counter()

    class CanRetry(Exception):
        pass

    class CannotRetry(Exception):
        pass

    def act(x: Any) -> None:
        if counter.hit("act") < 2:
            raise CanRetry("Retry me")
        raise CannotRetry("Do not retry me")

    with pytest.raises(FormationRuntimeError, match=r"failed after 2 attempt.*CannotRetry: Do not retry me"):
        Formation("types").add_function("act", act, retries=100, backoff=0.001, retry_on=CanRetry).run("x")
    assert counter.calls == {"act": 2}


def test_retries_wait_backoff_doubling_and_never_longer_than_max_backoff() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_activity_retry_policy
    (initial_interval, backoff_coefficient=2, maximum_interval; jitter=False for exact intervals)."""
    counter, starts = Counter(), []
    delays: list[float] = []

    def act(x: Any) -> str:
        starts.append(time.monotonic())
        if counter.hit("act") <= 3:
            raise ConnectionError("down")
        return "up"

    def listen(event: FormationEvent) -> None:
        if event.type == "node_retry":
            delays.append(event.data["delay_s"])

    f = Formation("backoff").add_function("act", act, retries=3, backoff=0.05, max_backoff=0.08, jitter=False)
    assert f.run("x", on_event=listen).output == "up"
    assert delays == [0.05, 0.08, 0.08]  # 0.05, 0.1 and 0.2 capped at 0.08
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert all(gap >= delay * 0.9 for gap, delay in zip(gaps, delays, strict=True)), gaps


def test_jittered_backoff_stays_between_half_and_all_of_the_exponential_delay() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_activity_retry_policy
    (Temporal's intervals are exact; ours are jittered by default, within the upper half)."""
    counter = Counter()
    delays: list[float] = []
    f = Formation("jitter").add_function("act", flaky(counter, 4, ConnectionError), retries=4, backoff=0.01,
                                         max_backoff=0.03)
    f.run("x", on_event=lambda e: delays.append(e.data["delay_s"]) if e.type == "node_retry" else None)
    ceilings = [0.01, 0.02, 0.03, 0.03]
    assert len(delays) == 4
    assert all(c / 2 <= d <= c for d, c in zip(delays, ceilings, strict=True)), delays


def test_an_empty_retry_on_retries_no_error_whatever_the_retries() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_error_non_retryable_type.
    Temporal's empty ``non_retryable_error_types`` (a deny-list) retries every error; ``retry_on`` is an
    allow-list, and an empty one retries none, as LangGraph's does (test_peer_langgraph.py pins that):
    ``retry_on=None`` is how to retry every error."""
    counter = Counter()
    with pytest.raises(FormationRuntimeError, match=r"failed after 1 attempt"):
        Formation("empty").add_function("act", flaky(counter, 1), retries=3, backoff=0.001, retry_on=()).run("x")
    assert counter.calls == {"act": 1}
    assert Formation("all").add_function("act", flaky(Counter(), 1), retries=3, backoff=0.001,
                                         retry_on=None).run("x").output == "x on attempt 2"


def test_a_backoff_longer_than_max_backoff_is_accepted_and_every_wait_is_max_backoff() -> None:
    """Ported from temporalio/sdk-python tests/test_common.py::test_retry_policy_validate.
    Temporal refuses a maximum_interval below the initial_interval; ours caps every wait."""
    counter = Counter()
    delays: list[float] = []
    f = Formation("capped").add_function("act", flaky(counter, 2), retries=2, backoff=5.0, max_backoff=0.01,
                                         jitter=False)
    result = f.run("x", on_event=lambda e: delays.append(e.data["delay_s"]) if e.type == "node_retry" else None)
    assert (result.output, delays) == ("x on attempt 3", [0.01, 0.01])


# --- timeouts ---------------------------------------------------------------------------


def test_a_node_past_its_timeout_fails_the_run_within_the_limit_with_a_node_timeout_error() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_heartbeat_details_timeout
    (start_to_close_timeout: the activity fails with a TimeoutError naming its kind)."""
    release = threading.Event()

    def stuck(x: Any) -> str:
        release.wait(5)
        return "late"

    started = time.monotonic()
    try:
        with pytest.raises(FormationRuntimeError, match=r"node 'stuck'") as raised:
            Formation("limits").add_function("stuck", stuck, timeout=0.2).run("x")
        assert time.monotonic() - started < 0.2 + SLACK
    finally:
        release.set()
    cause = raised.value.__cause__
    assert isinstance(cause, NodeTimeoutError) and (cause.node, cause.attempt) == ("stuck", 1)
    assert raised.value.nodes["stuck"].status == "failed"


def test_a_timed_out_attempt_is_retried_and_the_retry_can_answer() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_activity_timeout
    (start_to_close_timeout with retries: the timed-out attempt is retried)."""
    counter, release = Counter(), threading.Event()

    def slow_once(x: Any) -> str:
        if counter.hit("slow") == 1:
            release.wait(5)
        return f"{x}!"

    try:
        result = Formation("retry-timeout").add_function("slow", slow_once, timeout=0.2, retries=1,
                                                         backoff=0.001).run("x")
    finally:
        release.set()
    assert (result.output, result.nodes["slow"].attempts) == ("x!", 2)


def test_a_timeout_is_not_retried_when_retry_on_names_only_other_errors() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_activity_error_non_retryable_type
    (a timeout is one more failure type the policy decides about)."""
    counter, release = Counter(), threading.Event()

    def stuck(x: Any) -> str:
        counter.hit("stuck")
        release.wait(5)
        return "late"

    try:
        with pytest.raises(FormationRuntimeError, match=r"failed after 1 attempt") as raised:
            Formation("no-timeout-retry").add_function("stuck", stuck, timeout=0.15, retries=3, backoff=0.001,
                                                       retry_on=ConnectionError).run("x")
    finally:
        release.set()
    assert isinstance(raised.value.__cause__, NodeTimeoutError) and counter.calls == {"stuck": 1}


def test_the_run_timeout_bounds_every_retry_together() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_activity.py::test_max_concurrent_activities
    (schedule_to_close_timeout bounds all attempts; ours: the run's timeout)."""
    counter = Counter()

    def down(x: Any) -> None:
        counter.hit("down")
        time.sleep(0.05)
        raise ConnectionError("down")

    started = time.monotonic()
    with pytest.raises(FormationRuntimeError, match=r"timed out after 0.4s") as raised:
        Formation("sched").add_function("down", down, retries=1000, backoff=0.01, max_backoff=0.02).run(
            "x", timeout=0.4)
    assert time.monotonic() - started < 0.4 + SLACK
    assert raised.value.node is None  # a run-level failure, not the node's
    assert 1 < counter.count("down") < 1000


def test_an_error_edge_handler_is_handed_the_timeout_with_the_attempt_that_ran_out() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_activity_timeout
    (the workflow catches ActivityError(cause=TimeoutError) and goes on)."""
    release = threading.Event()

    def stuck(x: Any) -> str:
        release.wait(5)
        return "late"

    def handle(failure: NodeFailure) -> str:
        assert isinstance(failure.error, NodeTimeoutError)
        return f"{failure.node} timed out on attempt {failure.error.attempt} of {failure.attempts}"

    f = (Formation("caught").add_function("stuck", stuck, timeout=0.1, retries=1, backoff=0.001)
         .add_function("handle", handle).connect("stuck", "handle", on_error=True))
    try:
        result = f.run("x")
    finally:
        release.set()
    assert result.outputs == {"handle": "stuck timed out on attempt 2 of 2"}  # stuck is a sink too: no output
    assert result.nodes["stuck"].status == "failed"


# --- failure types ----------------------------------------------------------------------


def test_an_error_edge_handler_receives_the_nodes_own_error_with_its_input_attempts_and_run() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_activity_error
    (ActivityError carries activity type, id and retry state around the ApplicationError cause)."""
    counter = Counter()
    seen: list[NodeFailure] = []

    def handle(failure: NodeFailure) -> str:
        seen.append(failure)
        return "handled"

    f = (Formation("wrapped").add_function("act", flaky(counter, 10, ValueError), retries=1, backoff=0.001)
         .add_function("handle", handle).connect("act", "handle", on_error=True))
    result = f.run("in")
    assert result.outputs == {"handle": "handled"}
    [failure] = seen
    assert (failure.node, failure.input, failure.attempts, failure.run_id) == ("act", "in", 2, result.run_id)
    assert type(failure.error) is ValueError and str(failure.error) == "try again (2)"
    assert str(failure) == "node 'act' failed after 2 attempt(s): ValueError: try again (2)"


def test_a_failure_the_handler_raises_again_fails_the_run_naming_the_handler() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_activity_error
    (a workflow that re-raises the ActivityError fails with it)."""

    def handle(failure: NodeFailure) -> str:
        raise RuntimeError(f"gave up on {failure.node}") from failure.error

    f = (Formation("rethrow").add_function("act", lambda x: 1 / 0).add_function("handle", handle)
         .connect("act", "handle", on_error=True))
    with pytest.raises(FormationRuntimeError, match=r"node 'handle'.*gave up on act") as raised:
        f.run(1)
    assert isinstance(raised.value.__cause__, RuntimeError)
    assert isinstance(raised.value.__cause__.__cause__, ZeroDivisionError)
