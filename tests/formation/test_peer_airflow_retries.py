"""Behaviours ported from Apache Airflow's own test suite (apache/airflow,
``airflow-core/tests/unit/models/test_taskinstance.py``, ``test_dag.py`` and
``airflow-core/tests/unit/utils/test_dag_cycle.py``): retries and their delays, execution
timeouts, failure/retry/success callbacks, and DAGs refused for their shape. (Trigger rules
and branches are in ``test_peer_airflow.py``, mapping and task groups in
``test_peer_airflow_maps.py``.)

``retries`` are ``retries``; ``retry_delay`` with ``retry_exponential_backoff`` is
``backoff`` (doubled per retry) with ``jitter=False``, ``max_retry_delay`` is
``max_backoff``; ``execution_timeout`` is a node ``timeout``; ``AirflowFailException`` (fail
without retrying) is an exception outside ``retry_on``. ``on_retry_callback``,
``on_failure_callback``, ``on_success_callback`` and ``on_skipped_callback`` are the run's
``node_retry``, ``node_failed``, ``node_finished`` and ``node_skipped`` events
(``on_event``); an ``on_failure_callback`` that must do work in the DAG is an error edge.

Deliberately different (DESIGN.md documents ours):
- Airflow's ``retry_delay`` without exponential backoff waits the same delay before each
  retry; our ``backoff`` always doubles per retry (a constant delay is ``max_backoff`` equal
  to ``backoff``).
- Setting the same dependency twice is accepted by Airflow (a no-op); ``connect`` refuses an
  edge declared twice, naming it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import networkx as nx  # type: ignore[import-untyped]
import pytest

from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NodeTimeoutError
from wingman_actors.formation.events import FormationEvent

SLACK = 1.5  # what a loaded machine may add to a time limit (measured: < 0.05 s)


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set when the test ends: stuck node code waits on it, so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def flaky(counter: Counter, failures: int, exc: type[Exception] = ValueError) -> Any:
    """Fails its first ``failures`` calls, then returns the number of the call."""

    def node(_: Any) -> int:
        n = counter.hit("calls")
        if n <= failures:
            raise exc(f"failure {n}")
        return n

    return node


def of(events: list[FormationEvent], kind: str) -> list[FormationEvent]:
    return [e for e in events if e.type == kind]


# --- retries -----------------------------------------------------------------------------


def test_a_task_is_retried_up_to_its_retries_and_then_succeeds() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_retry_handling."""
    counter = Counter()
    result = Formation("dag").add_function("task", flaky(counter, 2), retries=2, backoff=0.001).run(None)
    assert result.output == 3 and result.nodes["task"].attempts == 3


def test_a_task_that_keeps_failing_fails_after_its_last_retry_naming_the_attempts() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_retry_handling."""
    counter = Counter()
    with pytest.raises(FormationRuntimeError, match=r"node 'task' failed after 3 attempt\(s\)") as info:
        Formation("dag").add_function("task", flaky(counter, 99), retries=2, backoff=0.001).run(None)
    assert (info.value.attempts, counter.count("calls")) == (3, 3)
    assert str(info.value.__cause__) == "failure 3"


def test_exponential_backoff_doubles_the_delay_and_max_retry_delay_caps_it() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_next_retry_datetime."""
    events: list[FormationEvent] = []
    f = Formation("dag").add_function("task", flaky(Counter(), 4), retries=4, backoff=0.002, max_backoff=0.006, jitter=False)
    assert f.run(None, on_event=events.append).output == 5
    assert [e.data["delay_s"] for e in of(events, "node_retry")] == [0.002, 0.004, 0.006, 0.006]


def test_a_retry_waits_its_delay_before_the_next_attempt() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_retry_delay."""
    starts: list[float] = []

    def task(_: Any) -> str:
        starts.append(time.monotonic())
        if len(starts) == 1:
            raise ValueError("once")
        return "ok"

    assert Formation("dag").add_function("task", task, retries=1, backoff=0.05, jitter=False).run(None).output == "ok"
    assert starts[1] - starts[0] >= 0.05


def test_an_exception_outside_retry_on_fails_at_once_as_airflow_fail_exception_does() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_retry_handling
    (a task raising Airflow's ``AirflowFailException`` fails without using its retries)."""

    class Fatal(Exception):
        pass

    counter = Counter()
    f = Formation("dag").add_function("task", flaky(counter, 99, Fatal), retries=3, backoff=0.001, retry_on=ValueError)
    with pytest.raises(FormationRuntimeError, match=r"after 1 attempt"):
        f.run(None)
    assert counter.count("calls") == 1


# --- execution_timeout ------------------------------------------------------------------------


def test_an_execution_timeout_fails_the_task_within_its_limit(release: threading.Event) -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_retry_handling (a task with an ``execution_timeout``)."""
    f = Formation("dag").add_function("task", lambda _: release.wait(4), timeout=0.05)
    started = time.monotonic()
    with pytest.raises(FormationRuntimeError, match=r"timed out after 0.05s") as info:
        f.run(None)
    assert time.monotonic() - started < 0.05 + SLACK
    assert isinstance(info.value.__cause__, NodeTimeoutError)


def test_a_timed_out_task_is_retried_and_each_attempt_gets_the_whole_limit(release: threading.Event) -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_retry_handling (with an
    ``execution_timeout``: a timeout is a failed attempt)."""
    counter = Counter()

    def task(_: Any) -> str:
        if counter.hit("calls") < 3:
            release.wait(4)
        return "done"

    events: list[FormationEvent] = []
    result = Formation("dag").add_function("task", task, timeout=0.05, retries=2, backoff=0.001).run(None, on_event=events.append)
    assert result.output == "done" and result.nodes["task"].attempts == 3
    assert ["timed out" in e.data["error"] for e in of(events, "node_retry")] == [True, True]


def test_a_timeout_reaches_an_error_edge_as_any_failure() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_task_sigterm_calls_on_failure_callback
    (here a timeout, with an ``on_failure_callback`` task downstream)."""
    release = threading.Event()
    try:
        f = (Formation("dag").add_function("task", lambda _: release.wait(4), timeout=0.05)
             .add_function("on_failure", lambda nf: type(nf.error).__name__).connect("task", "on_failure", on_error=True))
        assert f.run(None).outputs == {"on_failure": "NodeTimeoutError"}
    finally:
        release.set()


def test_a_run_timeout_stops_a_task_still_retrying(release: threading.Event) -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_task_sigterm_works_with_retries
    (a run stopped while its task still has retries: here the run's ``timeout``)."""
    f = Formation("dag").add_function("task", lambda _: release.wait(4), timeout=0.1, retries=10, backoff=0.001)
    started = time.monotonic()
    with pytest.raises(FormationRuntimeError, match=r"timed out after 0.25s; unfinished: task"):
        f.run(None, timeout=0.25)
    assert time.monotonic() - started < 0.25 + SLACK


# --- callbacks as events -------------------------------------------------------------------------


def test_on_retry_and_on_failure_callbacks_are_the_retry_and_failed_events_with_the_error() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_retry_handling
    (``on_retry_callback`` then ``on_failure_callback``)."""
    events: list[FormationEvent] = []
    with pytest.raises(FormationRuntimeError):
        Formation("dag").add_function("task", flaky(Counter(), 99), retries=1, backoff=0.001).run(None, on_event=events.append)
    assert [(e.type, e.node, e.data["attempt" if e.type == "node_retry" else "attempts"]) for e in events
            if e.type in ("node_retry", "node_failed")] == [("node_retry", "task", 1), ("node_failed", "task", 2)]
    assert "failure 2" in of(events, "node_failed")[0].data["error"]


def test_on_success_callback_is_the_finished_event_with_the_output() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_retry_handling (the ``on_success_callback`` side)."""
    events: list[FormationEvent] = []
    Formation("dag").add_function("task", lambda x: x * 2).run(21, on_event=events.append)
    assert [(e.node, e.data["output"]) for e in of(events, "node_finished")] == [("task", 42)]


def test_on_skipped_callback_is_the_skipped_event_with_its_reason_for_each_skipped_task() -> None:
    """Ported from apache/airflow providers/standard/tests/unit/standard/operators/test_python.py::TestBranchOperator::test_with_dag_run
    (with Airflow's ``on_skipped_callback``, which Airflow calls only for a task that raised
    ``AirflowSkipException``; ours reports every skipped node, branch skips included)."""
    f = (Formation("dag").add_function("branch", lambda x: x).add_function("taken", lambda x: x)
         .add_function("not_taken", lambda x: x).add_function("after", lambda x: x)
         .connect("branch", "taken", when=lambda x: x).connect("branch", "not_taken", otherwise=True)
         .connect("not_taken", "after"))
    events: list[FormationEvent] = []
    f.run(True, on_event=events.append)
    reasons = {e.node: e.data["reason"] for e in of(events, "node_skipped")}
    assert set(reasons) == {"not_taken", "after"}
    assert "'branch'" in reasons["not_taken"] and "'not_taken' was skipped" in reasons["after"]


def test_a_task_skipped_after_its_failure_reports_the_failure_then_the_skip() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_run_pooling_task_with_skip
    (a task that ends skipped: Airflow's ``AirflowSkipException``; ours is a failure into ``on_error="skip"``)."""
    events: list[FormationEvent] = []
    f = Formation("dag").add_function("task", flaky(Counter(), 99), on_error="skip").add_function("after", lambda x: x).connect("task", "after")
    result = f.run(None, on_event=events.append)
    assert [(e.type, e.node) for e in events if e.type in ("node_failed", "node_skipped")] == [
        ("node_failed", "task"), ("node_skipped", "task"), ("node_skipped", "after")]
    assert result.nodes["task"].error is not None and "failure 1" in result.nodes["task"].error


def test_a_dag_runs_success_callback_is_the_run_finished_event_with_the_result() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_dagrun.py::TestDagRun::test_dagrun_success_callback."""
    events: list[FormationEvent] = []
    f = Formation("dag").add_function("test_state_succeeded1", lambda x: x).add_function("test_state_succeeded2", lambda x: x + 1)
    f.connect("test_state_succeeded1", "test_state_succeeded2").run(1, on_event=events.append)
    (finished,) = of(events, "run_finished")
    assert finished.data["result"].output == 2 and not of(events, "run_failed")


def test_a_dag_runs_failure_callback_is_the_run_failed_event_naming_the_task() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_dagrun.py::TestDagRun::test_dagrun_failure_callback."""
    events: list[FormationEvent] = []
    f = (Formation("dag").add_function("test_state_succeeded1", lambda x: x).add_function("test_state_failed2", flaky(Counter(), 99))
         .connect("test_state_succeeded1", "test_state_failed2"))
    with pytest.raises(FormationRuntimeError):
        f.run(1, on_event=events.append)
    (failed,) = of(events, "run_failed")
    assert "node 'test_state_failed2' failed" in failed.data["error"] and not of(events, "run_finished")


def test_a_run_whose_tasks_were_all_skipped_succeeds_with_no_output() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_dagrun.py::TestDagRun::test_dagrun_success_when_all_skipped."""
    f = (Formation("dag").add_function("test_short_circuit_false", flaky(Counter(), 99), on_error="skip")
         .add_function("test_state_skipped1", lambda x: x).add_function("test_state_skipped2", lambda x: x)
         .connect("test_short_circuit_false", "test_state_skipped1", "test_state_skipped2"))
    result = f.run(None)
    assert result.status == "succeeded" and result.outputs == {} and result.output is None
    assert {t.status for t in result.nodes.values()} == {"skipped"}


# --- DAGs refused for their shape ----------------------------------------------------------------


def test_a_cycle_without_a_condition_is_refused_naming_its_nodes() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/utils/test_dag_cycle.py::TestCycleTester::test_cycle_arbitrary_loop."""
    f = Formation("dag")
    for name in "ABCEF":
        f.add_function(name, str)
    f.connect("E", "A", "B", "F", "A").connect("A", "C", "F")
    with pytest.raises(FormationSetupError, match=r"cycle A → B → F → A has no conditional edge"):
        f.validate()


def test_a_cycle_at_the_end_of_a_chain_is_refused() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/utils/test_dag_cycle.py::TestCycleTester::test_cycle_downstream_loop."""
    f = Formation("dag")
    for name in "ABCDE":
        f.add_function(name, str)
    f.connect("A", "B", "C", "D", "E", "E")
    with pytest.raises(FormationSetupError, match=r"cycle E → E has no conditional edge"):
        f.validate()


def test_a_large_loop_is_refused() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/utils/test_dag_cycle.py::TestCycleTester::test_cycle_large_loop
    (1,000 tasks rather than 10,000)."""
    f = Formation("dag").add_function("start", str)
    names = ["start"] + [f"task_{i}" for i in range(1000)]
    for name in names[1:]:
        f.add_function(name, str)
    f.connect(*names, "start")
    with pytest.raises(FormationSetupError, match=r"has no conditional edge"):
        f.validate()


def test_a_task_depending_on_itself_is_refused() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/utils/test_dag_cycle.py::TestCycleTester::test_cycle_loop."""
    with pytest.raises(FormationSetupError, match=r"cycle A → A has no conditional edge"):
        Formation("dag").add_function("A", str).connect("A", "A").validate()


def test_a_dag_without_a_cycle_is_accepted_and_runs_every_branch() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/utils/test_dag_cycle.py::TestCycleTester::test_cycle_no_cycle."""
    f = Formation("dag")
    for name in "ABCDEF":
        f.add_function(name, lambda x, name=name: x + name)
    f.connect("A", "B", "C").connect("B", "D").connect("E", "F")
    assert f.run("").outputs == {"C": "ABC", "D": "ABD", "F": "EF"}


def test_a_duplicate_task_id_is_refused_naming_it() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_dag.py::TestDag::test_duplicate_task_ids_not_allowed_with_dag_context_manager."""
    with pytest.raises(FormationSetupError, match=r"already has a node named 't1'; pick another name"):
        Formation("dag").add_function("t1", str).add_function("t1", str)


def test_the_same_dependency_twice_is_refused_naming_the_edge() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_dag.py::TestDag::test_duplicate_task_ids_not_allowed_with_dag_context_manager
    (a duplicate dependency, not a duplicate task). Airflow accepts it as a no-op; ours refuses it."""
    f = Formation("dag").add_function("a", str).add_function("b", str).connect("a", "b")
    with pytest.raises(FormationSetupError, match=r"edge 'a' → 'b' is declared twice"):
        f.connect("a", "b")


def test_a_dependency_on_an_undeclared_task_is_refused_with_a_suggestion() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/utils/test_dag_cycle.py::TestCycleTester::test_cycle_no_cycle (an edge naming a task
    the DAG does not have, misspelt)."""
    f = Formation("dag").add_function("extract", str)
    with pytest.raises(FormationSetupError, match=r"no node named 'extrct' \(did you mean 'extract'\?\)"):
        f.connect("extrct", "extract")


def test_a_graph_edge_to_a_task_that_was_never_declared_is_refused_at_validation() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/utils/test_dag_cycle.py::TestCycleTester::test_cycle_empty (an edge to a task never declared, in a graph built by hand)."""
    g = nx.DiGraph()
    g.add_node("a", kind="function", fn=str)
    g.add_edge("a", "b")
    with pytest.raises(FormationSetupError, match=r"node 'b' has no kind"):
        Formation("dag", g).validate()


def test_an_unknown_trigger_rule_keyword_is_refused_listing_the_policies() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_unknown_tr
    (a trigger rule is not a policy of ours: refused at declaration, listing the policies)."""
    with pytest.raises(FormationSetupError, match=r"unknown policy keyword\(s\) 'trigger_rule' \(policies: .*join\)"):
        Formation("dag").add_function("a", str, trigger_rule="all_done")


def test_a_join_rule_we_do_not_have_is_refused_naming_the_two_we_do() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_unknown_tr.
    Airflow reports an unknown rule when the task is scheduled; ours refuses it at declaration."""
    with pytest.raises(FormationSetupError, match=r"join must be 'all' .* or 'any' .*got 'one_success'"):
        Formation("dag").add_function("a", str, join="one_success")


# --- backend="ray" --------------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_retries_and_an_error_edge_on_ray_behave_as_on_threads() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/models/test_taskinstance.py::TestTaskInstance::test_retry_handling on backend="ray"."""

    def always(_: Any) -> Any:
        raise ValueError("still broken")

    events: list[FormationEvent] = []
    f = (Formation("dag").add_function("task", always, retries=1, backoff=0.001)
         .add_function("on_failure", lambda nf: (nf.node, nf.attempts, str(nf.error))).connect("task", "on_failure", on_error=True))
    result = f.run(None, backend="ray", timeout=120, on_event=events.append)
    assert result.outputs == {"on_failure": ("task", 2, "still broken")}
    assert [e.type for e in events if e.node == "task" and e.type in ("node_retry", "node_failed")] == ["node_retry", "node_failed"]
