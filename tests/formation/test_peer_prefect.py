"""Behaviours ported from Prefect's own test suite (PrefectHQ/prefect, ``tests/test_tasks.py``
and ``tests/test_flows.py``): tasks called in flows, task states, retries, timeouts of
tasks and flows, ``allow_failure``, submitted futures and flow parameters validated
against their annotations (flow timeouts, futures and parameters in
``test_peer_prefect_flows.py``). ``test_peer_prefect_maps.py`` takes ``task.map``,
``test_peer_prefect_subflows.py`` subflows, async flows, concurrency and ``backend="ray"``,
and ``tests/durable/test_peer_prefect_durable.py`` flow retries over persisted results.

A Prefect flow is a formation run: a task is a function node, ``task(upstream)`` is an
edge, the flow's return value is the single sink's output, ``timeout_seconds`` on a task
is a node ``timeout`` and on a flow the run's ``timeout``, ``retries`` are ``retries``
(``retry_delay_seconds=n`` is ``backoff=n, jitter=False`` but doubles per retry),
``allow_failure(upstream)`` is an error edge (the handler gets a ``NodeFailure`` with
the exception) and ``return_state=True`` is the run's node traces.

Deliberately different (DESIGN.md documents ours), each test that touches one says so:
- A failed Prefect task raises its own exception out of the flow call; ours fails the run
  with a ``FormationRuntimeError`` naming the node, the exception chained as its cause.
- A Prefect flow that returns a failed task's state fails; a node that fails is a failed
  run unless ``on_error="skip"`` or an error edge says otherwise.
- Prefect's ``retry_delay_seconds`` may be a list and ``retry_condition_fn`` a predicate,
  ``retry_jitter_factor`` a float; ours are ``backoff`` (a number, doubled per retry),
  ``retry_on`` (exception classes) and ``jitter`` (a bool): the others are refused at
  declaration, naming what is accepted.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NodeTimeoutError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent

SLACK = 1.5  # what a loaded machine may add to a time limit (measured: < 0.05 s); a run that waits for stuck code (4 s) exceeds it


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set when the test ends: stuck node code waits on it (up to 4 s), so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def fails(message: str = "Test") -> Any:
    def node(_: Any) -> Any:
        raise ValueError(message)

    return node


# --- tasks called in flows ------------------------------------------------------------


def test_a_function_nodes_return_value_is_the_runs_output() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskCall::test_sync_task_called_inside_sync_flow."""
    assert Formation("bar").add_function("foo", lambda x: x).run(1).output == 1


def test_a_node_receives_its_upstreams_return_value() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskCall::test_task_called_with_task_dependency."""
    f = Formation("test_flow").add_function("foo", lambda x: x).add_function("bar", lambda y: y + 1)
    assert f.connect("foo", "bar").run(1).output == 2


def test_a_node_whose_parameters_are_named_after_its_upstreams_gets_them_as_keywords() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskInputs::test_task_inputs_populated_with_two_upstream_futures
    (``bar(a, b)`` with two upstream futures)."""

    def bar(a: int, b: int) -> int:
        return a * 10 + b

    f = (Formation("test_flow").add_function("a", lambda x: x).add_function("b", lambda x: x + 1)
         .add_function("bar", bar).connect("a", "bar").connect("b", "bar"))
    assert f.run(1).output == 12


def test_a_node_mutating_its_input_does_not_change_what_another_node_received() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskCall::test_task_doesnt_modify_args.
    Prefect hands a task the caller's own object (``identity(val) is val``) and an
    appending task changes it; ours isolates payloads (DESIGN "Payloads are isolated"):
    two sources get the run's input, one appends, the other still sees ``[1, 2]``."""
    seen: list[list[int]] = []

    def appender(x: list[int]) -> list[int]:
        x.append(3)
        return x

    def identity(x: list[int]) -> list[int]:
        time.sleep(0.02)  # let the appender go first
        seen.append(list(x))
        return x

    val = [1, 2]
    result = Formation("f").add_function("appender", appender).add_function("identity", identity).run(val)
    assert result.outputs == {"appender": [1, 2, 3], "identity": [1, 2]}
    assert seen == [[1, 2]] and val == [1, 2]


def test_a_failing_node_fails_the_run_with_its_exception_as_the_cause() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskCall::test_task_failure_raises_in_flow.
    Prefect raises the task's ValueError out of the flow; ours a FormationRuntimeError
    naming the node, with the ValueError chained as its cause."""
    f = Formation("bar").add_function("foo", fails()).add_function("after", lambda x: "bar").connect("foo", "after")
    with pytest.raises(FormationRuntimeError, match=r"node 'foo' failed after 1 attempt") as info:
        f.run(None)
    assert isinstance(info.value.__cause__, ValueError) and str(info.value.__cause__) == "Test"
    assert (info.value.node, info.value.attempts) == ("foo", 1)


def test_a_skipped_failure_does_not_affect_the_rest_of_the_run() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskSubmit::test_task_failure_does_not_affect_flow.
    The formation has two sinks, so ``output`` is None (DESIGN: the single sink's value)
    and ``outputs`` holds the one that produced a value."""
    f = (Formation("bar").add_function("start", lambda x: x).add_function("foo", fails(), on_error="skip")
         .add_function("bar", lambda x: "bar").connect("start", "foo").connect("start", "bar"))
    result = f.run(None)
    assert result.outputs == {"bar": "bar"}
    assert (result.nodes["foo"].status, result.nodes["bar"].status) == ("skipped", "succeeded")


def test_downstream_of_a_failed_node_does_not_run() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskSubmit::test_downstream_does_not_run_if_upstream_fails.
    Prefect leaves the downstream task ``NotReady``; ours is skipped (on_error="skip")
    and never called."""
    counter = Counter()

    def bar(y: Any) -> Any:
        counter.hit("bar")
        return y

    f = (Formation("test_flow").add_function("fails", fails("Fail task!"), on_error="skip")
         .add_function("bar", bar).connect("fails", "bar"))
    result = f.run(None)
    assert counter.count("bar") == 0
    assert result.nodes["fails"].status == "skipped" and "Fail task!" in (result.nodes["fails"].error or "")
    assert result.nodes["bar"].status == "skipped" and result.nodes["bar"].visits == 0


def test_an_error_edge_hands_the_downstream_node_the_upstreams_exception() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskSubmit::test_downstream_receives_exception_if_upstream_fails_and_allow_failure.
    ``bar.submit(allow_failure(f))`` is ``connect("fails", "bar", on_error=True)``; bar
    receives a NodeFailure, whose ``error`` is the exception. (``fails``, whose only
    out-edge is an error edge, is a sink too: its output would be a run output had it
    succeeded, so the run's outputs are read by name.)"""
    f = (Formation("test_flow").add_function("fails", fails("Fail task!"))
         .add_function("bar", lambda y: y.error).connect("fails", "bar", on_error=True))
    result = f.run(None)
    assert list(result.outputs) == ["bar"]
    assert isinstance(result.outputs["bar"], ValueError) and "Fail task!" in str(result.outputs["bar"])
    assert result.nodes["fails"].status == "failed"


def test_a_join_takes_a_failure_beside_the_values_of_its_other_upstreams() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskSubmit::test_downstream_receives_exception_in_collection_if_upstream_fails_and_allow_failure
    (``bar(allow_failure([f, 1, 2]))``): a handler of the failure and two other nodes
    feed one join, which gets all three."""

    def bar(handler: NodeFailure, one: int, two: int) -> list[Any]:
        return [handler.error, one, two]

    f = (Formation("test_flow").add_function("fails", fails("Fail task!")).add_function("handler", lambda e: e)
         .add_function("one", lambda _: 1).add_function("two", lambda _: 2).add_function("bar", bar)
         .connect("fails", "handler", on_error=True).connect("handler", "bar").connect("one", "bar")
         .connect("two", "bar"))
    out = f.run(None).outputs["bar"]  # ``fails`` is a sink too (see the test above)
    assert isinstance(out[0], ValueError) and str(out[0]) == "Fail task!" and out[1:] == [1, 2]


# --- states ---------------------------------------------------------------------------


@pytest.mark.parametrize("error", [ValueError("Hello"), None])
def test_a_nodes_trace_reflects_the_exception_its_run_raised(error: Exception | None) -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskStates::test_final_state_reflects_exceptions_during_run."""

    def bar(_: Any) -> str:
        if error:
            raise error
        return "ok"

    f = Formation("foo").add_function("bar", bar, on_error="skip")
    trace = f.run(None).nodes["bar"]
    if error:
        assert (trace.status, trace.error) == ("skipped", "ValueError: Hello")
    else:
        assert (trace.status, trace.error, trace.output) == ("succeeded", None, "ok")


def test_a_failed_runs_error_carries_every_nodes_trace() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskStates::test_final_state_reflects_exceptions_during_run
    (the flow's state lists which task failed): the error's ``nodes`` say which node
    failed, which finished and which the run never reached."""
    f = (Formation("f").add_function("ok", lambda x: x).add_function("boom", fails("Hello"))
         .add_function("never", lambda x: x).connect("ok", "boom").connect("boom", "never"))
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1)
    nodes = info.value.nodes
    assert {n: t.status for n, t in nodes.items()} == {"ok": "succeeded", "boom": "failed", "never": "skipped"}
    assert nodes["boom"].error == "ValueError: Hello" and info.value.outputs == {"ok": 1}


# --- retries ---------------------------------------------------------------------------


@pytest.mark.parametrize("always_fail", [True, False])
def test_retries_3_means_4_attempts(always_fail: bool) -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskRetries::test_task_respects_retry_count."""
    counter = Counter()

    def flaky_function(_: Any) -> bool:
        if counter.hit("calls") == 4 and not always_fail:
            return True
        raise ValueError("flaky")

    f = Formation("test_flow").add_function("flaky_function", flaky_function, retries=3, backoff=0)
    if always_fail:
        with pytest.raises(FormationRuntimeError, match=r"after 4 attempt") as info:
            f.run(None)
        assert isinstance(info.value.__cause__, ValueError) and info.value.attempts == 4
    else:
        result = f.run(None)
        assert result.output is True and result.nodes["flaky_function"].attempts == 4
    assert counter.count("calls") == 4


def test_retries_stop_at_the_first_success() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskRetries::test_task_only_uses_necessary_retries."""
    counter = Counter()
    retries: list[int] = []

    def flaky_function(_: Any) -> bool:
        if counter.hit("calls") == 2:
            return True
        raise ValueError()

    def listen(event: FormationEvent) -> None:
        if event.type == "node_retry":
            retries.append(event.data["attempt"])

    f = Formation("test_flow").add_function("flaky_function", flaky_function, retries=3, backoff=0)
    result = f.run(None, on_event=listen)
    assert (result.output, result.nodes["flaky_function"].attempts, counter.count("calls")) == (True, 2, 2)
    assert retries == [1]  # Prefect's states: Running, Retrying, Completed


def test_each_retry_is_a_new_attempt_started_after_the_one_before() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskRetries::test_task_retries_receive_latest_task_run_in_context
    (run_count goes 1, 2, 3, 4 and start times increase): node_started carries the
    attempt number, in order."""
    started: list[tuple[int, float]] = []

    def listen(event: FormationEvent) -> None:
        if event.type == "node_started":
            started.append((event.data["attempt"], time.monotonic()))

    f = Formation("test_flow").add_function("flaky_function", fails(), retries=3, backoff=0)
    with pytest.raises(FormationRuntimeError):
        f.run(None, on_event=listen)
    assert [a for a, _ in started] == [1, 2, 3, 4]
    assert all(t0 <= t1 for (_, t0), (_, t1) in itertools.pairwise(started))


def test_retry_waits_double_from_the_backoff_without_jitter() -> None:
    """Ported from PrefectHQ/prefect tests/test_task_engine.py::TestTaskRetries::test_sync_task_respects_retry_delay_seconds
    (``retry_delay_seconds=[1, 2, 3]`` waits 1, 2, 3 s; ``retry_delay_seconds=1`` waits 1 s
    each time): ours doubles ``backoff`` per retry (DESIGN "Supervision"), so
    ``backoff=0.01, jitter=False`` gives the delays 0.01, 0.02, 0.04 (node_retry's ``delay_s``)."""
    delays: list[float] = []

    def listen(event: FormationEvent) -> None:
        if event.type == "node_retry":
            delays.append(event.data["delay_s"])

    f = Formation("f").add_function("n", fails(), retries=3, backoff=0.01, jitter=False)
    with pytest.raises(FormationRuntimeError):
        f.run(None, on_event=listen)
    assert delays == [0.01, 0.02, 0.04]


def test_a_list_of_retry_delays_is_refused_naming_what_backoff_takes() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskConstructorValidation::test_task_cannot_configure_too_many_custom_retry_delays.
    Prefect takes up to 50 delays in a list; ours takes one number, doubled per retry
    (DESIGN "Retries"), and says so at declaration."""
    with pytest.raises(FormationSetupError, match=r"backoff must be a number of seconds >= 0"):
        Formation("f").add_function("insanity", fails(), retries=3, backoff=[1, 2, 3])


def test_a_negative_or_fractional_jitter_is_refused_naming_the_fix() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskConstructorValidation::test_task_cannot_configure_negative_relative_jitter.
    Prefect's ``retry_jitter_factor`` is a float >= 0; ours ``jitter`` is True or False."""
    with pytest.raises(FormationSetupError, match=r"jitter must be True .* or False, got -10"):
        Formation("f").add_function("insanity", fails(), retries=3, jitter=-10)


def test_a_retry_condition_that_is_a_predicate_is_refused_naming_exception_classes() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskHooksOnFailure::test_task_condition_fn_raises_when_not_a_callable.
    Prefect's ``retry_condition_fn`` is a callable deciding per failure; ours ``retry_on``
    names exception classes (DESIGN "Retries"): a predicate is refused, naming the fix."""
    with pytest.raises(FormationSetupError, match=r"retry_on must be an exception class or a tuple of them"):
        Formation("f").add_function("my_task", fails(), retries=1, retry_on=lambda exc: True)


def test_retry_on_retries_only_the_errors_it_names() -> None:
    """Ported from PrefectHQ/prefect tests/test_task_engine.py::TestTaskRetries::test_task_passes_failed_state_to_retry_fn
    (a ``retry_condition_fn`` that retries a SyntaxError): ours names the errors worth a
    retry in ``retry_on``; another error gives up at once."""
    counter = Counter()

    def my_task(kind: str) -> str:
        n = counter.hit(kind)
        if kind == "conn" and n == 1:
            raise ConnectionError("flaky")
        if kind == "value":
            raise ValueError("bad input")
        return "ok"

    f = Formation("f").add_function("my_task", my_task, retries=2, backoff=0, retry_on=ConnectionError)
    assert f.run("conn").output == "ok" and counter.count("conn") == 2
    with pytest.raises(FormationRuntimeError, match=r"after 1 attempt"):
        f.run("value")
    assert counter.count("value") == 1


# --- task timeouts ---------------------------------------------------------------------


def test_a_node_timeout_times_out_and_the_run_fails_with_a_node_timeout_error(release: threading.Event) -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskTimeouts::test_task_timeouts_actually_timeout
    and ::test_task_timeouts_are_not_task_crashes: the failure is a NodeTimeoutError (a
    TimedOut state, not a crash), within the limit, without waiting for the stuck code."""
    f = Formation("test_flow").add_function("times_out", lambda x: release.wait(4), timeout=0.1)
    started = time.monotonic()
    with pytest.raises(FormationRuntimeError) as info:
        f.run(1)
    assert time.monotonic() - started < 0.1 + SLACK
    assert isinstance(info.value.__cause__, NodeTimeoutError) and info.value.__cause__.node == "times_out"
    assert info.value.nodes["times_out"].status == "failed"


def test_a_timed_out_node_skips_its_dependents_and_spares_independent_nodes(release: threading.Event) -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::timeout_test_flow and
    TestTaskTimeouts::test_task_timeouts_do_not_crash_flow_runs (times_out → depends,
    and independent): with on_error="skip" the run ends, depends is skipped and
    independent gives 42."""
    f = (Formation("test_flow").add_function("start", lambda x: x)
         .add_function("times_out", lambda x: release.wait(4), timeout=0.1, on_error="skip")
         .add_function("depends", lambda x: x).add_function("independent", lambda _: 42)
         .connect("start", "times_out", "depends").connect("start", "independent"))
    result = f.run(1)
    assert result.outputs == {"independent": 42}
    assert {n: t.status for n, t in result.nodes.items()} == {
        "start": "succeeded", "times_out": "skipped", "depends": "skipped", "independent": "succeeded"}
    assert "NodeTimeoutError" in (result.nodes["times_out"].error or "")


def test_a_node_timeout_does_not_fire_before_it_is_exceeded() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskTimeouts::test_task_timeouts_do_not_timeout_prematurely."""

    def my_task(_: Any) -> int:
        time.sleep(0.05)
        return 42

    result = Formation("my_flow").add_function("my_task", my_task, timeout=100).run(None)
    assert (result.output, result.nodes["my_task"].attempts) == (42, 1)


def test_a_timed_out_attempt_is_retried() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskTimeouts::test_task_timeouts_actually_timeout,
    with ``retries=1``: a TimedOut state is a failed one, which the task's retries retry."""
    counter = Counter()
    release = threading.Event()

    def slow_first(x: int) -> int:
        if counter.hit("calls") == 1:
            release.wait(4)
        return x

    try:
        result = Formation("f").add_function("n", slow_first, timeout=0.1, retries=1, backoff=0).run(7)
    finally:
        release.set()
    assert (result.output, result.nodes["n"].attempts, counter.count("calls")) == (7, 2, 2)


def test_a_timeout_of_zero_is_refused_naming_none_for_no_limit() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowWithOptions::test_with_options_can_unset_timeout_seconds_with_zero.
    Prefect reads ``timeout_seconds=0`` as no timeout; ours refuses 0 (it would time out
    at once) and names ``None``, for a node and for a run alike."""
    with pytest.raises(FormationSetupError, match=r"timeout must be a number of seconds > 0, or None or math.inf for no limit"):
        Formation("f").add_function("initial_flow", lambda x: x, timeout=0)
    with pytest.raises(ValueError, match=r"timeout must be a number of seconds > 0, or None or math.inf for no limit, got 0"):
        Formation("f").add_function("initial_flow", lambda x: x).run(1, timeout=0)


def test_a_timeout_error_the_node_raises_itself_is_not_reported_as_a_node_timeout() -> None:
    """Ported from PrefectHQ/prefect tests/test_flows.py::TestFlowTimeouts::test_user_timeout_is_not_hidden."""

    def my_flow(_: Any) -> None:
        raise TimeoutError("Oh no!")

    with pytest.raises(FormationRuntimeError, match=r"TimeoutError: Oh no!") as info:
        Formation("f").add_function("my_flow", my_flow, timeout=30).run(None)
    assert type(info.value.__cause__) is TimeoutError
