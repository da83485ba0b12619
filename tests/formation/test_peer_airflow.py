"""Behaviours ported from Apache Airflow's own test suite (apache/airflow,
``airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py`` and the branching tests of
``providers/standard/tests/unit/standard/operators/test_python.py``): trigger rules and
branches. Mapping and task groups are in ``test_peer_airflow_maps.py``, retries, timeouts,
callbacks and malformed DAGs in ``test_peer_airflow_retries.py``, cleared-and-rerun tasks in
``tests/durable/test_peer_airflow_durable.py``.

An Airflow DAG run is a formation run: a task is a function node, ``a >> b`` is an edge, an
XCom is the value on the edge. Trigger rules map onto joins: ``all_success`` and
``none_failed_min_one_success`` are the default ``join="all"`` (which fires with the
predecessors that delivered, a skipped one left out), ``one_success`` is ``join="any"``,
``all_done``/``one_failed``/``all_failed`` are error edges (``connect(a, h, on_error=True)``)
into the join. ``BranchPythonOperator`` is ``when=``/``otherwise=True`` routes.

Deliberately different (DESIGN.md documents ours), each test that touches one says so:
- Airflow's ``all_success`` skips a task one of whose upstreams was skipped; our join fires
  with the predecessors that delivered ("each forward predecessor has delivered (or been
  skipped)"), as Airflow's ``none_failed_min_one_success`` does.
- A failed Airflow upstream marks its downstream ``upstream_failed`` and the DAG run
  failed; a failed node fails our run at once (``FormationRuntimeError`` naming it), unless
  ``on_error="skip"`` or an error edge says otherwise.
- ``ShortCircuitOperator`` returning a falsy value skips everything downstream and the DAG
  run succeeds; a node whose only out-edges are conditional and none fires fails our run with
  ``NoRouteError`` (DESIGN "Routes"): a short circuit needs an ``otherwise`` edge.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NoRouteError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent


def fails(message: str = "boom") -> Any:
    def node(_: Any) -> Any:
        raise ValueError(message)

    return node


def const(value: Any) -> Any:
    return lambda _: value


def fan(*, a: Any, b: Any, join: str = "all", a_policy: dict[str, Any] | None = None,
        b_policy: dict[str, Any] | None = None) -> Formation:
    """start → a, start → b, a → join, b → join: the shape every trigger-rule test uses."""
    return (Formation("dag").add_function("start", lambda x: x)
            .add_function("a", a, **(a_policy or {})).add_function("b", b, **(b_policy or {}))
            .add_function("join", lambda d: d, join=join)
            .connect("start", "a").connect("start", "b").connect("a", "join").connect("b", "join"))


def skip_reasons(events: list[FormationEvent]) -> dict[str, str]:
    return {e.node: e.data["reason"] for e in events if e.type == "node_skipped" and e.node is not None}


# --- trigger rules as joins ---------------------------------------------------------------


def test_a_task_without_upstreams_runs_with_the_runs_input() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_no_upstream_tasks."""
    result = Formation("dag").add_function("test_task", lambda x: x + 1).run(1)
    assert result.output == 2 and result.nodes["test_task"].status == "succeeded"


def test_all_success_fires_the_join_once_every_upstream_has_delivered() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_all_success_tr_success."""
    result = fan(a=const("A"), b=const("B")).run(0)
    assert result.output == {"a": "A", "b": "B"}
    assert result.nodes["join"].visits == 1


def test_all_success_with_a_failed_upstream_fails_the_run_naming_it() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_all_success_tr_failure.
    Airflow marks the join ``upstream_failed``; ours fails the run, naming the node, its cause
    chained; the join never runs."""
    with pytest.raises(FormationRuntimeError, match=r"node 'b' failed after 1 attempt") as info:
        fan(a=const("A"), b=fails()).run(0)
    assert info.value.node == "b" and isinstance(info.value.__cause__, ValueError)
    assert info.value.nodes["join"].status != "succeeded"


def test_all_success_with_a_skipped_upstream_fires_with_the_upstreams_that_delivered() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_all_success_tr_skip.
    Airflow skips an ``all_success`` task with a skipped upstream; our join fires with the
    values that came (Airflow's ``none_failed_min_one_success``, DESIGN "Joins are per visit")."""
    result = fan(a=const("A"), b=fails(), b_policy={"on_error": "skip"}).run(0)
    assert result.output == {"a": "A"}
    assert (result.nodes["b"].status, result.nodes["join"].status) == ("skipped", "succeeded")


def test_a_join_whose_upstreams_were_all_skipped_is_skipped_and_never_called() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_one_success_tr_failure_all_skipped."""
    calls = Counter()
    f = fan(a=fails(), b=fails(), a_policy={"on_error": "skip"}, b_policy={"on_error": "skip"})
    f.graph.nodes["join"]["fn"] = lambda d: calls.hit("join")
    events: list[FormationEvent] = []
    result = f.run(0, on_event=events.append)
    assert result.nodes["join"].status == "skipped" and calls.count("join") == 0
    assert result.status == "succeeded" and result.outputs == {}
    assert "join" in skip_reasons(events)


def test_one_success_fires_the_join_with_the_first_upstream_that_succeeds() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_one_success_tr_success."""
    result = fan(a=const("A"), b=fails(), join="any", b_policy={"on_error": "skip"}).run(0)
    assert result.output == {"a": "A"}


def test_one_success_with_every_upstream_skipped_skips_the_join() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_one_success_tr_failure."""
    f = fan(a=fails(), b=fails(), join="any", a_policy={"on_error": "skip"}, b_policy={"on_error": "skip"})
    result = f.run(0)
    assert result.nodes["join"].status == "skipped" and result.outputs == {}


def test_one_failed_runs_a_handler_on_an_error_edge_with_the_failure() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_one_failure_tr_success.
    ``one_failed`` is an error edge: the handler gets a NodeFailure, and the run goes on."""
    f = (Formation("dag").add_function("a", fails("disk full")).add_function("alert", lambda nf: (nf.node, str(nf.error)))
         .connect("a", "alert", on_error=True))
    result = f.run(0)
    assert result.outputs == {"alert": ("a", "disk full")}  # 'a' is a sink too (its error edge is its only way on)
    assert (result.status, result.nodes["a"].status) == ("succeeded", "failed")


def test_one_failed_handler_does_not_run_when_nothing_failed() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_one_failure_tr_failure."""
    calls = Counter()
    f = (Formation("dag").add_function("a", const("ok")).add_function("alert", lambda nf: calls.hit("alert"))
         .add_function("next", lambda x: x).connect("a", "alert", on_error=True).connect("a", "next"))
    result = f.run(0)
    assert result.outputs == {"next": "ok"} and calls.count("alert") == 0
    assert result.nodes["alert"].status == "skipped"


def test_all_done_joins_a_success_and_a_handled_failure() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_all_done_tr_success.
    ``all_done`` is a join fed by the successes and by error edges' handlers."""
    f = (fan(a=const("A"), b=fails("late")).add_function("handle_b", lambda nf: f"handled {nf.node}")
         .connect("b", "handle_b", on_error=True).connect("handle_b", "join"))
    result = f.run(0)
    assert result.output == {"a": "A", "handle_b": "handled b"}
    assert result.nodes["b"].status == "failed" and result.status == "succeeded"


def test_all_failed_joins_the_failures_of_every_upstream() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_all_failed_tr_success."""

    def report(a: NodeFailure, b: NodeFailure) -> list[str]:
        return [str(a.error), str(b.error)]

    f = (Formation("dag").add_function("start", lambda x: x).add_function("a", fails("A broke"))
         .add_function("b", fails("B broke")).add_function("report", report)
         .connect("start", "a").connect("start", "b")
         .connect("a", "report", on_error=True).connect("b", "report", on_error=True))
    assert f.run(0).outputs == {"report": ["A broke", "B broke"]}


def test_all_failed_with_an_upstream_that_succeeded_fails_naming_the_error_edge_not_taken() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_all_failed_tr_failure.
    Airflow skips an ``all_failed`` task when an upstream succeeded; ours calls the handler with
    the failures that came, and a parameter left without one fails the node, saying why and
    how to accept it (a default)."""

    def report(a: NodeFailure, b: NodeFailure) -> str:
        return "both failed"

    f = (Formation("dag").add_function("start", lambda x: x).add_function("a", const("fine"))
         .add_function("b", fails("B broke")).add_function("report", report)
         .connect("start", "a").connect("start", "b")
         .connect("a", "report", on_error=True).connect("b", "report", on_error=True))
    with pytest.raises(FormationRuntimeError, match=r"no value for parameter\(s\) a: .*an error edge not taken because its source succeeded.*defaults"):
        f.run(0)


def test_always_runs_the_cleanup_whether_its_upstream_succeeded_or_failed() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_always_tr.
    ``always`` is a normal edge plus an error edge into the same node."""

    def build(work: Any) -> Formation:
        return (Formation("dag").add_function("work", work).add_function("cleanup", lambda x: "cleaned")
                .add_function("on_fail", lambda nf: nf).connect("work", "cleanup")
                .connect("work", "on_fail", on_error=True).connect("on_fail", "cleanup"))

    assert build(const(1)).run(0).output == "cleaned"
    result = build(fails()).run(0)
    assert result.output == "cleaned" and result.nodes["work"].status == "failed"


def test_none_failed_min_one_success_after_a_branch_runs_the_join_with_the_branch_taken() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_none_failed_min_one_success_tr_success."""
    f = (Formation("dag").add_function("branch", lambda x: x).add_function("left", const("L"))
         .add_function("right", const("R")).add_function("join", lambda d: d)
         .connect("branch", "left", when=lambda x: x > 0).connect("branch", "right", otherwise=True)
         .connect("left", "join").connect("right", "join"))
    assert f.run(1).output == {"left": "L"}
    assert f.run(-1).output == {"right": "R"}


def test_none_skipped_is_checked_by_the_join_itself_from_the_keys_it_received() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_none_skipped_tr_failure.
    We have no ``none_skipped`` rule: a join sees which predecessors delivered in its dict."""

    def join(d: dict[str, Any]) -> str:
        return "all ran" if set(d) == {"a", "b"} else f"skipped: {sorted({'a', 'b'} - set(d))}"

    f = fan(a=const("A"), b=fails(), b_policy={"on_error": "skip"})
    f.graph.nodes["join"]["fn"] = join
    assert f.run(0).output == "skipped: ['b']"


def test_a_join_fed_by_an_upstream_and_its_skipped_handler_waits_for_neither_twice() -> None:
    """Ported from apache/airflow airflow-core/tests/unit/ti_deps/deps/test_trigger_rule_dep.py::TestTriggerRuleDep::test_none_failed_tr_success
    (one upstream succeeded, one skipped).
    The handler of a node that succeeded is skipped; the join fires once, with the success."""
    f = (Formation("dag").add_function("a", const("A")).add_function("h", lambda nf: "handled")
         .add_function("join", lambda d: d).connect("a", "h", on_error=True).connect("a", "join").connect("h", "join"))
    result = f.run(0)
    assert result.output == {"a": "A"} and result.nodes["join"].visits == 1


# --- branching --------------------------------------------------------------------------------


def test_a_branch_runs_the_chosen_task_and_skips_the_other() -> None:
    """Ported from apache/airflow providers/standard/tests/unit/standard/operators/test_python.py::TestBranchOperator::test_with_dag_run."""
    calls = Counter()
    f = (Formation("dag").add_function("make_choice", lambda x: x)
         .add_function("branch_1", lambda x: calls.hit("branch_1")).add_function("branch_2", lambda x: calls.hit("branch_2"))
         .connect("make_choice", "branch_1", when=lambda x: x == "branch_1")
         .connect("make_choice", "branch_2", when=lambda x: x == "branch_2"))
    events: list[FormationEvent] = []
    result = f.run("branch_1", on_event=events.append)
    assert (result.nodes["branch_1"].status, result.nodes["branch_2"].status) == ("succeeded", "skipped")
    assert calls.calls == {"branch_1": 1}
    assert "did not fire" in skip_reasons(events)["branch_2"]


def test_a_branch_may_follow_several_tasks_at_once() -> None:
    """Ported from apache/airflow providers/standard/tests/unit/standard/operators/test_python.py::TestBranchOperator::test_branch_list_with_dag_run."""
    f = (Formation("dag").add_function("make_choice", lambda x: x).add_function("branch_1", const(1))
         .add_function("branch_2", const(2)).add_function("branch_3", const(3))
         .connect("make_choice", "branch_1", when=lambda x: "1" in x).connect("make_choice", "branch_2", when=lambda x: "2" in x)
         .connect("make_choice", "branch_3", when=lambda x: "3" in x))
    result = f.run(["1", "2"])
    assert result.outputs == {"branch_1": 1, "branch_2": 2} and result.nodes["branch_3"].status == "skipped"


def test_a_skip_spreads_down_the_branch_not_taken_to_every_task_that_depends_only_on_it() -> None:
    """Ported from apache/airflow providers/standard/tests/unit/standard/operators/test_python.py::TestBranchOperator::test_with_dag_run
    (the skip of ``branch_2`` followed down a chain to a join)."""
    f = (Formation("dag").add_function("branch", lambda x: x).add_function("a", const("A"))
         .add_function("b1", const("b1")).add_function("b2", lambda x: x).add_function("b3", lambda x: x)
         .add_function("join", lambda d: d)
         .connect("branch", "a", when=lambda x: x).connect("branch", "b1", otherwise=True)
         .connect("b1", "b2", "b3", "join").connect("a", "join"))
    events: list[FormationEvent] = []
    result = f.run(True, on_event=events.append)
    assert [result.nodes[n].status for n in ("b1", "b2", "b3")] == ["skipped"] * 3
    assert result.output == {"a": "A"}
    assert "'b2' was skipped" in skip_reasons(events)["b3"]


def test_a_task_reached_both_from_the_branch_and_from_the_branch_taken_runs() -> None:
    """Ported from apache/airflow providers/standard/tests/unit/standard/operators/test_python.py::TestBranchOperator::test_with_skip_in_branch_downstream_dependencies.
    ``make_choice >> branch_1 >> branch_2`` and ``make_choice >> branch_2``, choosing
    ``branch_1``: ``branch_2`` is not skipped, it runs after ``branch_1``."""
    f = (Formation("dag").add_function("make_choice", lambda x: x).add_function("branch_1", const("one"))
         .add_function("branch_2", lambda d: d)
         .connect("make_choice", "branch_1", when=lambda x: x == "branch_1")
         .connect("make_choice", "branch_2", when=lambda x: x == "branch_2").connect("branch_1", "branch_2"))
    result = f.run("branch_1")
    assert result.output == {"branch_1": "one"}
    assert [result.nodes[n].status for n in ("branch_1", "branch_2")] == ["succeeded", "succeeded"]


def test_choosing_the_later_task_skips_the_one_between_and_runs_the_later_one() -> None:
    """Ported from apache/airflow providers/standard/tests/unit/standard/operators/test_python.py::TestBranchOperator::test_with_skip_in_branch_downstream_dependencies2."""
    calls = Counter()
    f = (Formation("dag").add_function("make_choice", lambda x: x).add_function("branch_1", lambda x: calls.hit("branch_1"))
         .add_function("branch_2", lambda d: d)
         .connect("make_choice", "branch_1", when=lambda x: x == "branch_1")
         .connect("make_choice", "branch_2", when=lambda x: x == "branch_2").connect("branch_1", "branch_2"))
    result = f.run("branch_2")
    assert result.output == {"make_choice": "branch_2"}
    assert result.nodes["branch_1"].status == "skipped" and calls.count("branch_1") == 0


def test_a_branch_whose_chosen_task_fails_fails_the_run_and_the_join_never_runs() -> None:
    """Ported from apache/airflow providers/standard/tests/unit/standard/operators/test_python.py::TestBranchOperator::test_with_dag_run
    (the chosen branch fails). Airflow marks the join ``upstream_failed``; ours fails the run."""
    calls = Counter()
    f = (Formation("dag").add_function("branch", lambda x: x).add_function("a", fails()).add_function("b", const("B"))
         .add_function("join", lambda d: calls.hit("join"), join="any")
         .connect("branch", "a", when=lambda x: x).connect("branch", "b", otherwise=True)
         .connect("a", "join").connect("b", "join"))
    with pytest.raises(FormationRuntimeError, match=r"node 'a' failed"):
        f.run(True)
    assert calls.count("join") == 0


def test_a_short_circuit_with_no_way_on_fails_the_run_with_no_route() -> None:
    """Ported from apache/airflow providers/standard/tests/unit/standard/operators/test_python.py::TestShortCircuitOperator::test_short_circuiting.
    Airflow skips everything downstream and the DAG run succeeds; ours fails with NoRouteError
    naming the node and the fix (DESIGN "Routes")."""
    f = Formation("dag").add_function("check", lambda x: x).add_function("downstream", lambda x: x).connect("check", "downstream", when=bool)
    with pytest.raises(NoRouteError, match=r"otherwise=True") as info:
        f.run(0)
    assert info.value.node == "check"


def test_a_short_circuit_with_an_otherwise_edge_skips_everything_downstream() -> None:
    """Ported from apache/airflow providers/standard/tests/unit/standard/operators/test_python.py::TestShortCircuitOperator::test_short_circuiting."""
    f = (Formation("dag").add_function("check", lambda x: x).add_function("op1", lambda x: x).add_function("op2", lambda x: x)
         .add_function("stopped", lambda x: "short-circuited")
         .connect("check", "op1", when=lambda x: bool(x)).connect("op1", "op2").connect("check", "stopped", otherwise=True))
    result = f.run(0)
    assert [result.nodes[n].status for n in ("op1", "op2")] == ["skipped", "skipped"]
    assert result.outputs == {"stopped": "short-circuited"}
    assert f.run(5).outputs == {"op2": 5}


def test_a_short_circuit_before_a_join_skips_only_its_side() -> None:
    """Ported from apache/airflow providers/standard/tests/unit/standard/operators/test_python.py::TestShortCircuitOperator::test_short_circuiting
    (``ignore_downstream_trigger_rules=False``): the join still runs with the other side."""
    f = (Formation("dag").add_function("start", lambda x: x).add_function("check", lambda x: x)
         .add_function("gated", lambda x: "G").add_function("free", lambda x: "F").add_function("join", lambda d: d)
         .add_function("end", lambda x: x)
         .connect("start", "check").connect("check", "gated", when=lambda x: bool(x)).connect("check", "end", otherwise=True)
         .connect("start", "free").connect("gated", "join").connect("free", "join"))
    result = f.run(0)
    assert result.outputs["join"] == {"free": "F"} and result.nodes["gated"].status == "skipped"
