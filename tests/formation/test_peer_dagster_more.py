"""More behaviours ported from Dagster's own test suite (dagster-io/dagster,
``python_modules/dagster/dagster_tests/``): retry policies
(``core_tests/execution_tests/test_retries.py``), success and failure hooks
(``core_tests/hook_tests/test_hook_run.py``), type checks of op inputs and outputs
(``core_tests/types_tests/``), and some on ``backend="ray"``. (Malformed graphs are in
``test_peer_dagster_graphs.py``; ``test_peer_dagster.py``'s docstring maps ops, jobs and
graphs onto formations.)

``RetryPolicy(max_retries, delay, backoff=EXPONENTIAL, jitter)`` is ``retries``,
``backoff``, ``jitter`` (and ``max_backoff``); Dagster's ``STEP_UP_FOR_RETRY`` is our
``node_retry`` event (with the delay), ``STEP_FAILURE`` after the retries ``node_failed``.
A failure hook is an error edge: its handler receives a ``NodeFailure`` (node, error,
input, attempts) once the retries are spent; a success hook is an ``on_event`` listener
of ``node_finished``.

Deliberately different, or without a counterpart (each test that touches one says so):
- ``Failure(allow_retries=False)`` is an exception whose class says ``retryable = False``;
  ``RetryRequested`` (the op asking for a retry, with its own count and wait) has no
  counterpart: ``retries``/``retry_on`` are the node's.
- A failure hook observes a failure that still fails the job; our error edge handles it
  (the run goes on from the handler, and succeeds).
- Dagster checks an op's output against its declared type as the op ends; ours checks a
  value against the annotation of the parameter that receives it (a ``PayloadError``
  naming the edge, never retried), and the two annotations against each other at
  validation.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, PayloadError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent


class Events:
    """Every event of a run (pass as ``on_event``), and those of one type on one node."""

    def __init__(self) -> None:
        self.seen: list[FormationEvent] = []

    def __call__(self, event: FormationEvent) -> None:
        self.seen.append(event)

    def of(self, kind: str, node: str | None = None) -> list[FormationEvent]:
        return [e for e in self.seen if e.type == kind and (node is None or e.node == node)]


def fails_times(counter: Counter, times: int, error: type[Exception] = ValueError) -> Any:
    """An op that fails its first ``times`` calls, then returns ``"okay perfect"``."""

    def op(_: Any) -> str:
        if counter.hit("op") <= times:
            raise error(f"failure {counter.count('op')}")
        return "okay perfect"

    return op


class Point(BaseModel):
    x: int
    y: int


def always_fails(_: Any) -> Any:
    raise ValueError("always")


# --- retry policies --------------------------------------------------------------------------


def test_an_op_that_fails_once_is_retried_and_succeeds() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_step_retry
    (one STEP_UP_FOR_RETRY, one success)."""
    events, counter = Events(), Counter()
    result = Formation("step_retry").add_function("fail_first_time", fails_times(counter, 1), retries=1, backoff=0).run(
        None, on_event=events)
    assert result.output == "okay perfect"
    assert (len(events.of("node_started")), len(events.of("node_retry")), len(events.of("node_finished"))) == (2, 1, 1)
    assert result.nodes["fail_first_time"].attempts == 2


def test_retries_spent_fail_the_run_after_one_failure_event() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_step_retry_limit
    (``three_max``: 3 up-for-retry, then 1 failure)."""
    events = Events()
    with pytest.raises(FormationRuntimeError, match=r"node 'three_max' failed after 4 attempt\(s\).*ValueError: always") as caught:
        Formation("retry_limits").add_function("three_max", always_fails, retries=3, backoff=0).run(None, on_event=events)
    assert (caught.value.node, caught.value.attempts) == ("three_max", 4)
    assert isinstance(caught.value.__cause__, ValueError)
    assert (len(events.of("node_retry")), len(events.of("node_failed"))) == (3, 1)


def test_the_delay_of_a_retry_is_waited_before_the_next_attempt() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_step_retry_fixed_wait
    (``RetryRequested(seconds_to_wait=...)``: the restart comes after the delay); ours the
    node's ``backoff``."""
    starts: list[float] = []

    def listen(event: FormationEvent) -> None:
        if event.type == "node_started":
            starts.append(time.monotonic())

    Formation("wait").add_function("op", fails_times(Counter(), 1), retries=1, backoff=0.1, jitter=False).run(
        None, on_event=listen)
    assert starts[1] - starts[0] >= 0.1


def test_exponential_backoff_without_jitter_doubles_each_delay() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_calculate_delay
    (``Backoff.EXPONENTIAL``: delay * 2 ** (attempt - 1))."""
    events = Events()
    with pytest.raises(FormationRuntimeError):
        Formation("exp").add_function("op", always_fails, retries=3, backoff=0.01, jitter=False).run(None, on_event=events)
    assert [(e.data["attempt"], e.data["delay_s"]) for e in events.of("node_retry")] == [(1, 0.01), (2, 0.02), (3, 0.04)]


def test_max_backoff_caps_the_exponential_delay() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_calculate_delay
    (a long exponential series stays under its cap)."""
    events = Events()
    with pytest.raises(FormationRuntimeError):
        Formation("cap").add_function("op", always_fails, retries=4, backoff=0.01, jitter=False, max_backoff=0.03).run(
            None, on_event=events)
    assert [e.data["delay_s"] for e in events.of("node_retry")] == [0.01, 0.02, 0.03, 0.03]


def test_jittered_delays_stay_between_half_and_all_of_the_exponential_delay() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_jitter
    (``Jitter.FULL``/``PLUS_MINUS`` randomise the delay within bounds); ours is the upper
    half of the exponential delay (``jitter=True``, the default)."""
    events = Events()
    with pytest.raises(FormationRuntimeError):
        Formation("jitter").add_function("op", always_fails, retries=4, backoff=0.005).run(None, on_event=events)
    delays = [e.data["delay_s"] for e in events.of("node_retry")]
    for attempt, delay in enumerate(delays, start=1):
        full = 0.005 * 2 ** (attempt - 1)
        assert full / 2 <= delay <= full


def test_an_error_that_says_it_allows_no_retries_fails_at_once() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_failure_allow_retries
    (``Failure(allow_retries=False)``); ours an exception class with ``retryable = False``."""

    class Fatal(Exception):
        retryable = False

    counter = Counter()
    with pytest.raises(FormationRuntimeError, match=r"after 1 attempt\(s\)") as caught:
        Formation("fatal").add_function("op", fails_times(counter, 5, Fatal), retries=3, backoff=0).run(None)
    assert (caught.value.attempts, counter.count("op")) == (1, 1)


def test_retry_on_retries_only_the_errors_it_names() -> None:
    """Ported from dagster-io/dagster examples/docs_snippets/docs_snippets/concepts/ops_jobs_graphs/op_retries.py
    (``RetryRequested`` raised only when ``should_retry(e)``); ours ``retry_on``."""
    transient, permanent = Counter(), Counter()
    f = Formation("retry_on").add_function("op", fails_times(transient, 1, ConnectionError), retries=2, backoff=0,
                                           retry_on=ConnectionError)
    assert f.run(None).output == "okay perfect"
    g = Formation("retry_on").add_function("op", fails_times(permanent, 1, KeyError), retries=2, backoff=0,
                                           retry_on=ConnectionError)
    with pytest.raises(FormationRuntimeError, match=r"after 1 attempt\(s\)"):
        g.run(None)
    assert (transient.count("op"), permanent.count("op")) == (2, 1)


def test_a_retry_policy_applies_to_a_mapped_op_item_by_item() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py
    (a mapped op with a retry policy retries each mapping key on its own)."""
    counter = Counter()

    def flaky(x: int) -> int:
        if counter.hit(x) <= x:  # item n fails n times
            raise ValueError(f"item {x}")
        return x

    result = Formation("each").add_map("op", flaky, retries=2, backoff=0).run([0, 1, 2])
    assert result.output == [0, 1, 2]
    assert counter.calls == {0: 1, 1: 2, 2: 3}


@pytest.mark.parametrize("error", ["type check", "no retries allowed"])
def test_a_mapped_graph_whose_op_cannot_succeed_on_a_retry_is_not_retried(error: str) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_failure_allow_retries
    with the op inside a graph mapped over items: a type-check failure (never retried) or
    an error that allows no retries, in an item's inner op, fails the map at its first
    attempt, as it does a map of a function or a graph used once."""

    class Fatal(Exception):
        retryable = False

    counter = Counter()

    def takes_int(x: int) -> int:
        counter.hit(x)
        if error == "no retries allowed" and x == 1:
            raise Fatal("cannot succeed")
        return x

    items: list[Any] = [0, "one"] if error == "type check" else [0, 1]
    graph = Formation("graph").add_function("op", takes_int)
    with pytest.raises(FormationRuntimeError, match=r"after 1 attempt\(s\)") as caught:
        Formation("job").add_map("each", formation=graph, retries=2, backoff=0).run(items)
    assert caught.value.attempts == 1
    assert counter.count(0) == 1


# --- hooks: error edges and listeners --------------------------------------------------------


def report(failure: NodeFailure) -> dict[str, Any]:
    """A failure hook: what the failure says."""
    return {"node": failure.node, "error": repr(failure.error), "input": failure.input, "attempts": failure.attempts}


def test_a_failure_hook_gets_the_ops_exception_and_its_input() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/hook_tests/test_hook_run.py::test_failure_hook_op_exception
    (``context.op_exception``); ours ``NodeFailure.error`` and ``.input``, and the job
    goes on from the handler."""
    f = Formation("hooked").add_function("a_failing_op", always_fails).add_function("hook", report)
    result = f.connect("a_failing_op", "hook", on_error=True).run(41)
    assert result.outputs == {"hook": {"node": "a_failing_op", "error": "ValueError('always')", "input": 41, "attempts": 1}}
    assert result.nodes["a_failing_op"].status == "failed"


def test_a_failure_hook_runs_once_after_the_retries_are_spent() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_retry_policy_with_failure_hook."""
    calls = Counter()

    def hook(failure: NodeFailure) -> int:
        calls.hit("hook")
        return failure.attempts

    f = Formation("hooked").add_function("op", always_fails, retries=2, backoff=0).add_function("hook", hook)
    assert f.connect("op", "hook", on_error=True).run(None).outputs == {"hook": 3}
    assert calls.count("hook") == 1


def test_a_failure_hook_is_not_called_when_a_retry_succeeds() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/hook_tests/test_hook_run.py::test_failure_hook_not_triggered_on_retry_success
    (a step that is retried and then succeeds triggers the success hook only)."""
    counter, hooked = Counter(), Counter()
    f = (Formation("hooked").add_function("op", fails_times(counter, 1), retries=1, backoff=0)
         .add_function("hook", lambda failure: hooked.hit("hook")).connect("op", "hook", on_error=True))
    result = f.run(None)
    assert result.outputs == {"op": "okay perfect"}
    assert (hooked.count("hook"), result.nodes["hook"].status) == (0, "skipped")


def test_a_success_hook_sees_every_op_that_succeeded_with_its_output() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/hook_tests/test_hook_run.py::test_success_hook_on_op_instance."""
    events = Events()
    (Formation("job").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2).connect("a", "b")
     .run(1, on_event=events))
    assert [(e.node, e.data["output"]) for e in events.of("node_finished")] == [("a", 2), ("b", 4)]


def test_success_and_failure_hooks_each_see_their_own_ops() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/hook_tests/test_hook_run.py::test_success_and_failure_hooks
    (both hooks on a job: the success hook fires for the op that succeeded, the failure
    hook for the one that failed)."""
    events = Events()
    f = (Formation("job").add_function("ok", lambda x: x).add_function("broken", always_fails)
         .add_function("hook", report).connect("ok", "broken").connect("broken", "hook", on_error=True))
    f.run(1, on_event=events)
    assert [e.node for e in events.of("node_finished")] == ["ok", "hook"]
    assert [(e.node, e.data["error"]) for e in events.of("node_failed")] == [("broken", "ValueError: always")]


def test_a_failure_hook_on_a_graph_gets_the_failure_of_the_op_inside() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/hook_tests/test_hook_run.py::test_hook_graph
    (a hook on a graph applies to the ops in it); ours the error edge of the formation node,
    whose ``NestedRunError`` names the inner op."""
    inner = Formation("inner").add_function("first", lambda x: x).add_function("broken", always_fails)
    f = Formation("job").add_formation("graph", inner.connect("first", "broken"))

    def hook(failure: NodeFailure) -> tuple[str, str | None]:
        return failure.node, getattr(failure.error, "inner").node  # noqa: B009  (NestedRunError.inner)

    assert f.add_function("hook", hook).connect("graph", "hook", on_error=True).run(1).outputs == {"hook": ("graph", "broken")}


def test_a_hook_that_raises_does_not_fail_the_job() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/hook_tests/test_hook_run.py::test_hook_user_error
    (HOOK_ERRORED, and the job still succeeds); ours a listener that raises is logged."""
    seen: list[str] = []

    def broken_listener(event: FormationEvent) -> None:
        seen.append(event.type)
        raise RuntimeError("hook broke")

    assert Formation("job").add_function("a", lambda x: x + 1).run(1, on_event=broken_listener).output == 2
    assert seen[-1] == "run_finished"


def test_a_failure_handler_that_raises_fails_the_run_naming_the_handler() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/hook_tests/test_hook_run.py::test_failure_hook_user_error
    (a failure hook that errors); ours the handler is a node, and its own failure fails
    the run naming it."""

    def broken_handler(_: NodeFailure) -> None:
        raise KeyError("handler broke")

    f = Formation("job").add_function("op", always_fails).add_function("handler", broken_handler)
    with pytest.raises(FormationRuntimeError, match=r"node 'handler' failed.*KeyError: 'handler broke'") as caught:
        f.connect("op", "handler", on_error=True).run(1)
    assert (caught.value.nodes["op"].status, caught.value.node) == ("failed", "handler")


# --- type checks ----------------------------------------------------------------------------


def test_an_input_that_fails_its_type_check_fails_the_op_naming_the_edge_without_retrying() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/types_tests/test_types.py::test_input_type_failure
    (``DagsterTypeCheckDidNotPass`` on the input)."""
    counter = Counter()

    def takes_int(x: int) -> int:
        counter.hit("takes_int")
        return x

    def gives_any(_: Any) -> Any:
        return "not a number"

    f = (Formation("typed").add_function("gives_any", gives_any).add_function("takes_int", takes_int, retries=3, backoff=0)
         .connect("gives_any", "takes_int"))
    with pytest.raises(FormationRuntimeError, match=r"edge 'gives_any' → 'takes_int'.*str does not fit.*int") as caught:
        f.run(None)
    assert isinstance(caught.value.__cause__, PayloadError)
    assert (caught.value.attempts, counter.count("takes_int")) == (1, 0)


def test_an_input_is_converted_to_its_annotated_model() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/types_tests/test_types.py::test_python_object_dagster_type
    (a typed input is loaded as its type)."""
    def norm(p: Point) -> int:
        return abs(p.x) + abs(p.y)

    assert Formation("typed").add_function("src", lambda _: {"x": 3, "y": -4}).add_function("norm", norm).connect(
        "src", "norm").run(None).output == 7


def test_an_optional_input_accepts_none() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/types_tests/test_types.py::test_optional_input
    (``Optional[int]`` passes None)."""

    def maybe(_: Any) -> int | None:
        return None

    def show(x: int | None) -> str:
        return "nothing" if x is None else str(x)

    assert Formation("opt").add_function("maybe", maybe).add_function("show", show).connect("maybe", "show").run(0).output == "nothing"


def test_an_output_type_that_does_not_fit_the_next_input_is_refused_before_running() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/types_tests/test_types.py::test_output_type_failure
    (Dagster fails the op as its output is checked; ours refuses the formation at
    validation, naming the edge, both types and the fix)."""

    def gives_str(_: Any) -> str:
        return "a"

    def takes_int(x: int) -> int:
        return x

    f = Formation("typed").add_function("gives_str", gives_str).add_function("takes_int", takes_int)
    with pytest.raises(FormationSetupError, match=r"edge 'gives_str' → 'takes_int': 'gives_str' outputs str but parameter 'x' of 'takes_int' expects int"):
        f.connect("gives_str", "takes_int").validate()


def test_a_graph_whose_first_op_is_mapped_refuses_what_its_op_cannot_take_before_running() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_not_allowed.py
    and core_tests/types_tests/test_types.py::test_input_type_failure: a graph whose first
    op maps an ``int`` op is refused at validation when fed ``list[str]`` or a ``str`` (as
    the same map is, not nested), naming the edge and the map; a ``list[int]`` is fine."""

    def words(_: Any) -> list[str]:
        return ["a"]

    def word(_: Any) -> str:
        return "a"

    def numbers(_: Any) -> list[int]:
        return [1, 2]

    def takes_int(x: int) -> int:
        return x + 1

    graph = Formation("graph").add_map("each", takes_int)
    for feed, shown in ((words, r"list\[str\]"), (word, "str")):
        f = Formation("job").add_function("feed", feed).add_formation("graph", graph).connect("feed", "graph")
        with pytest.raises(FormationSetupError, match=rf"edge 'feed' → 'graph': 'feed' outputs {shown} but .*source 'each' expects list\[int\]"):
            f.validate()
    ok = Formation("job").add_function("feed", numbers).add_formation("graph", graph).connect("feed", "graph")
    assert ok.run(None).output == [2, 3]


# --- backend="ray" --------------------------------------------------------------------------


def flaky_item(x: int) -> int:
    """Item 1 fails on its first call in this process (a Ray actor's process)."""
    if x == 1 and not getattr(flaky_item, "failed", False):
        flaky_item.failed = True  # type: ignore[attr-defined]
        raise ValueError("item 1, first time")
    return x * 10


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_mapped_op_on_ray_retries_its_failed_item_and_collects_in_order() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_map
    (``multiprocess`` executor) on backend="ray"."""
    f = Formation("ray_map").add_function("emit", emit_three).add_map("each", flaky_item, retries=1, backoff=0)
    result = f.connect("emit", "each").run(None, backend="ray", timeout=120)
    assert (result.output, result.nodes["each"].attempts) == ([0, 10, 20], 2)


def emit_three(_: Any) -> list[int]:
    return [0, 1, 2]


def ray_report(failure: NodeFailure) -> tuple[str, int]:
    return failure.node, failure.attempts


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_failure_hook_on_a_graph_on_ray_gets_the_failure_after_retries() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_retry_policy_with_failure_hook
    on backend="ray", the failing op inside a nested graph."""
    inner = Formation("inner").add_function("broken", always_fails)
    f = Formation("job").add_formation("graph", inner, retries=1, backoff=0).add_function("hook", ray_report)
    assert f.connect("graph", "hook", on_error=True).run(None, backend="ray", timeout=120).outputs == {"hook": ("graph", 2)}
