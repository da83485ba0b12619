"""DAG workflows, conditions on parent outputs, retries and non-retryable errors, ported from
the Hatchet Python SDK's examples and their e2e tests (hatchet-dev/hatchet,
``sdks/python/examples/dag``, ``conditions``, ``retries``, ``non_retryable``,
``bug_tests/dag_operator_task_named_like_workflow``): a task's ``parents=[...]`` are our
edges, ``ctx.task_output(parent)`` is a keyword of the joining function, ``skip_if`` on a
parent's output is a ``when=`` route (the node runs when the condition does *not* hold),
``ctx.was_skipped(parent)`` is a keyword left at its default. See
``test_peer_hatchet_more.py`` for failures and time limits, and
``test_peer_hatchet_runs.py`` for concurrency, cancellation and fan-out.

Deliberately different (docs/formations.md documents ours): Hatchet's ``skip_if`` on one
parent of a task with several parents skips the task; our route on one incoming edge holds
back only that edge's value, so the node still runs on its other predecessors' values
(a node is skipped when *none* of its incoming edges fires): put the condition on every
incoming edge, or route before the join, to skip it.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.support.peers import Counter, Order
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent


def both_entered(entered: dict[str, threading.Event], me: str, other: str, value: int) -> int:
    """Mark ``me`` entered and wait until ``other`` has entered too (so both run at once)."""
    entered[me].set()
    if not entered[other].wait(5):
        raise AssertionError(f"{other} never started while {me} was running")
    return value


def dag(entered: dict[str, threading.Event]) -> Formation:
    """Hatchet's DAGWorkflow: step1 and step2 in parallel, step3 their sum, step4 after step1 and step3."""

    def step3(step1: int, step2: int) -> int:
        return step1 + step2

    def step4(step1: int, step3: int) -> dict[str, Any]:
        return {"step1": step1, "step3": step3}

    return (Formation("DAGWorkflow")
            .add_function("step1", lambda _: both_entered(entered, "step1", "step2", 3), timeout=5)
            .add_function("step2", lambda _: both_entered(entered, "step2", "step1", 4), timeout=5)
            .add_function("step3", step3).add_function("step4", step4)
            .connect("step1", "step3").connect("step2", "step3")
            .connect("step1", "step4").connect("step3", "step4"))


def fresh_entered() -> dict[str, threading.Event]:
    return {"step1": threading.Event(), "step2": threading.Event()}


def test_a_task_with_two_parents_receives_both_parents_outputs_by_name() -> None:
    """From hatchet examples/dag/worker.py (step3 sums ctx.task_output(step1) and
    ctx.task_output(step2))."""
    result = dag(fresh_entered()).run(None)
    assert result.nodes["step3"].output == 7


def test_a_task_whose_parents_are_a_grandparent_and_a_parent_runs_once_with_both() -> None:
    """From hatchet examples/dag/worker.py (step4's parents are step1 and step3, which
    itself depends on step1)."""
    order = Order()
    result = dag(fresh_entered()).run(None, on_event=order)
    assert result.output == {"step1": 3, "step3": 7}
    assert order.nodes.count("step4") == 1 and order.nodes.index("step4") > order.nodes.index("step3")


def test_tasks_without_a_common_parent_run_at_the_same_time() -> None:
    """From hatchet examples/dag/test_dag.py (step1 and step2 have no parents: both are
    started at once; each here waits for the other to have started)."""
    entered = fresh_entered()
    result = dag(entered).run(None, timeout=20)
    assert entered["step1"].is_set() and entered["step2"].is_set()
    assert (result.nodes["step1"].output, result.nodes["step2"].output) == (3, 4)


def test_the_result_keeps_every_tasks_output_not_only_the_last() -> None:
    """From hatchet examples/dag/test_dag.py (the run's result has an entry for each of the
    four steps)."""
    result = dag(fresh_entered()).run(None)
    assert {name: trace.status for name, trace in result.nodes.items()} == dict.fromkeys(
        ["step1", "step2", "step3", "step4"], "succeeded")
    assert [result.nodes[n].output for n in ("step1", "step2", "step3")] == [3, 4, 7]


def test_a_task_named_like_its_formation_runs_and_is_reported_by_its_name() -> None:
    """From hatchet examples/bug_tests/dag_operator_task_named_like_workflow (a task that
    bears the workflow's name was confused with the workflow)."""
    f = (Formation("report").add_function("fetch", lambda x: x + 1).add_function("report", lambda x: x * 10)
         .connect("fetch", "report"))
    result = f.run(1)
    assert (result.output, result.outputs) == (20, {"report": 20})
    assert result.nodes["report"].status == "succeeded"


def branching(number: int) -> Formation:
    """Hatchet's TaskConditionWorkflow, without the waits: left_branch runs unless the number
    is above 50, right_branch unless it is at most 50; ``sum`` counts a skipped branch as 0."""

    def total(start: int, left_branch: int = 0, right_branch: int = 0) -> int:
        return start + left_branch + right_branch

    return (Formation("TaskConditionWorkflow").add_function("start", lambda _: number)
            .add_function("left_branch", lambda n: 1000).add_function("right_branch", lambda n: 2000)
            .add_function("sum", total)
            .connect("start", "left_branch", when=lambda n: not n > 50)
            .connect("start", "right_branch", when=lambda n: not n <= 50)
            .connect("start", "sum").connect("left_branch", "sum").connect("right_branch", "sum"))


@pytest.mark.parametrize(("number", "ran", "skipped"), [(10, "left_branch", "right_branch"),
                                                        (90, "right_branch", "left_branch")])
def test_a_condition_on_a_parents_output_runs_exactly_one_of_two_branches(number: int, ran: str,
                                                                          skipped: str) -> None:
    """From hatchet examples/conditions/test_conditions.py test_waits (left_branch or
    right_branch is skipped, by skip_if on wait_for_sleep's random number)."""
    result = branching(number).run(None)
    assert (result.nodes[ran].status, result.nodes[skipped].status) == ("succeeded", "skipped")


def test_a_join_after_a_skipped_branch_runs_with_the_branches_that_ran() -> None:
    """From hatchet examples/conditions/worker.py ``sum`` (``ctx.was_skipped(left_branch)``
    counts it as 0: here the skipped branch's keyword keeps its default)."""
    assert branching(10).run(None).output == 10 + 1000
    assert branching(90).run(None).output == 90 + 2000


def test_what_depends_only_on_a_skipped_task_is_skipped_too() -> None:
    """From hatchet examples/conditions/worker.py CancelIfWorkflow (downstream_skip, whose
    only parent did not run, does not run)."""
    counter = Counter()

    def downstream(x: int) -> int:
        counter.hit("downstream")
        return x

    f = (Formation("CancelIfWorkflow").add_function("start", lambda _: 2)
         .add_function("guarded", lambda n: 3).add_function("downstream", downstream)
         .add_function("other", lambda n: n)
         .connect("start", "guarded", when=lambda n: not n > 1).connect("guarded", "downstream")
         .connect("start", "other"))
    result = f.run(None)
    assert (result.nodes["guarded"].status, result.nodes["downstream"].status) == ("skipped", "skipped")
    assert counter.count("downstream") == 0 and result.outputs == {"other": 2}


def test_a_skip_condition_made_of_an_or_group_skips_when_either_holds() -> None:
    """From hatchet examples/conditions/test_conditions.py test_skip_if_or_group_parent
    (``or_(random_number >= 1, random_number > 1000)``)."""

    def either(n: int) -> bool:
        return n >= 1 or n > 1000

    f = (Formation("SkipIfOrGroupWorkflow").add_function("sio_start", lambda n: n)
         .add_function("sio_target", lambda n: 2).add_function("after", lambda n: n)
         .connect("sio_start", "sio_target", when=lambda n: not either(n))
         .connect("sio_start", "after"))
    assert f.run(5).nodes["sio_target"].status == "skipped"
    assert f.run(0).nodes["sio_target"].output == 2


def test_a_condition_on_one_of_two_parents_holds_back_only_that_parents_value() -> None:
    """From hatchet examples/conditions/worker.py skip_with_multiple_parents (Hatchet skips
    the task when the condition on ``start`` holds; ours runs it on its other parent's
    value: see the module docstring)."""
    seen: list[dict[str, Any]] = []

    def target(inputs: dict[str, Any]) -> str:
        seen.append(inputs)
        return "ran"

    f = (Formation("multi").add_function("start", lambda n: n).add_function("wait_for_sleep", lambda n: n + 1)
         .add_function("skip_with_multiple_parents", target)
         .connect("start", "wait_for_sleep")
         .connect("start", "skip_with_multiple_parents", when=lambda n: not n > 0)
         .connect("wait_for_sleep", "skip_with_multiple_parents"))
    result = f.run(5)
    assert result.output == "ran" and seen == [{"wait_for_sleep": 6}]


def test_a_task_waiting_for_the_first_of_two_conditions_takes_the_one_that_comes_first() -> None:
    """From hatchet examples/conditions/test_conditions.py test_skip_if_sleep_skips_when_sleep_wins
    (``or_`` of a sleep and an event: the first satisfied wins; ``join="any"`` here, the event
    never coming)."""
    event = threading.Event()

    def wait_for_event(x: int) -> str:
        event.wait(5)
        return "event"

    f = (Formation("SkipIfSleepWorkflow").add_function("sis_start", lambda n: n)
         .add_function("sleep", lambda n: "sleep").add_function("event", wait_for_event)
         .add_function("sis_target", lambda first: sorted(first), join="any")
         .connect("sis_start", "sleep", "sis_target").connect("sis_start", "event", "sis_target"))
    try:
        result = f.run(1)
    finally:
        event.set()
    assert result.output == ["sleep"] and result.nodes["event"].status == "cancelled"


def retry_events(f: Formation, value: Any) -> tuple[Any, list[FormationEvent]]:
    events: list[FormationEvent] = []
    try:
        return f.run(value, on_event=events.append), events
    except FormationRuntimeError as err:
        return err, events


def test_a_task_that_always_fails_is_tried_its_retries_plus_one_times_then_fails_the_run() -> None:
    """From hatchet examples/retries/worker.py always_fail (retries=3)."""
    counter = Counter()

    def always_fail(_: Any) -> None:
        counter.hit("always_fail")
        raise RuntimeError("simple task failed")

    err, events = retry_events(Formation("SimpleRetryWorkflow").add_function("always_fail", always_fail,
                                                                              retries=3, backoff=0.001), None)
    assert isinstance(err, FormationRuntimeError)
    assert (err.node, err.attempts, counter.count("always_fail")) == ("always_fail", 4, 4)
    assert "simple task failed" in str(err) and err.nodes["always_fail"].error == "RuntimeError: simple task failed"
    assert [e.data["attempt"] for e in events if e.type.value == "node_retry"] == [1, 2, 3]


def test_a_task_that_fails_twice_succeeds_on_its_third_attempt() -> None:
    """From hatchet examples/retries/worker.py fail_twice (``ctx.retry_count < 2`` raises)."""
    counter = Counter()

    def fail_twice(_: Any) -> dict[str, str]:
        if counter.hit("fail_twice") - 1 < 2:
            raise RuntimeError("simple task failed")
        return {"status": "success"}

    result = Formation("retry").add_function("fail_twice", fail_twice, retries=3, backoff=0.001).run(None)
    assert result.output == {"status": "success"} and result.nodes["fail_twice"].attempts == 3


def test_backoff_grows_by_its_factor_and_stops_growing_at_its_maximum() -> None:
    """From hatchet examples/retries/worker.py backoff_task (factor 2, at most
    ``backoff_max_seconds``: 2, 4, 8, 10, 10 s; scaled down here)."""
    counter = Counter()

    def backoff_task(_: Any) -> str:
        if counter.hit("backoff_task") <= 4:
            raise RuntimeError("backoff task failed")
        return "success"

    f = Formation("BackoffWorkflow").add_function("backoff_task", backoff_task, retries=10, backoff=0.002,
                                                  max_backoff=0.01, jitter=False)
    result, events = retry_events(f, None)
    assert result.output == "success"
    assert [e.data["delay_s"] for e in events if e.type.value == "node_retry"] == pytest.approx(
        [0.002, 0.004, 0.008, 0.01])


def cel_like(handled: bool = False) -> Formation:
    """``start`` outputs ``{}``; its route reads a key that is not there (Hatchet's CEL
    ``input.key == 'value'`` over ``{}``)."""
    f = (Formation("cel").add_function("start", lambda x: x, retries=2, backoff=0.001)
         .add_function("target", lambda o: "ran").connect("start", "target", when=lambda o: o["key"] == "value"))
    if handled:
        f.add_function("on_failure", lambda failure: "handled").connect("start", "on_failure", on_error=True)
    return f


def test_a_condition_that_cannot_be_evaluated_fails_the_run_naming_the_edge_and_the_fix() -> None:
    """From hatchet tests/test_cel_debugging.py (``input.key == 'value'`` over ``{}``: the
    expression's status is failure, not False)."""
    events: list[str] = []
    with pytest.raises(FormationRuntimeError) as caught:
        cel_like().run({}, on_event=lambda e: events.append(e.type.value))
    err = caught.value
    assert (err.node, err.attempts) == ("start", 1) and isinstance(err.__cause__, KeyError)
    assert "edge 'start' → 'target' raised KeyError" in str(err) and "make it return a bool" in str(err)
    assert "node_retry" not in events  # start's code succeeded: running it again would not help


def test_a_failure_handler_of_a_task_does_not_catch_its_routes_error() -> None:
    """From hatchet tests/test_cel_debugging.py and examples/on_failure (a broken condition
    is not a failure of the task's code). Ours: the run fails even with an error edge from
    ``start`` (an open question: ``on_error="skip"`` does skip ``start`` for it)."""
    with pytest.raises(FormationRuntimeError, match="edge 'start' → 'target' raised KeyError"):
        cel_like(handled=True).run({})


@pytest.mark.parametrize(("value", "fired"), [("alice", "target"), (5, "target"), ("", "other"), (0, "other")])
def test_a_condition_that_returns_a_value_not_a_bool_fires_by_its_truth(value: Any, fired: str) -> None:
    """From hatchet tests/test_cel_debugging.py (an expression may evaluate to a string or an
    int, ``input.user_id``, ``input.count``): ours takes the value's truth, as ``if`` does."""
    f = (Formation("truth").add_function("start", lambda x: {"user_id": x})
         .add_function("target", lambda o: "ran").add_function("other", lambda o: "other")
         .connect("start", "target", when=lambda o: o["user_id"]).connect("start", "other", otherwise=True))
    assert list(f.run(value).outputs) == [fired]
