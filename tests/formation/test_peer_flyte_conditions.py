"""Conditions, ported from Flyte's Python SDK's own tests (flyteorg/flytekit,
``tests/flytekit/unit/core/test_conditions.py`` and ``test_dynamic_conditional.py``):
``conditional("x").if_(...).then(a).elif_(...).then(b).else_().then(c)`` is a decision
node with conditional edges (``connect(d, a, when=...)``) and one ``otherwise=True`` edge;
the branches join again in a node with ``join="any"`` (only one branch runs).

Deliberately different (DESIGN.md "Routes" documents ours):
- ``.else_().fail("message")`` fails the workflow with a ``ValueError`` carrying the
  message; ours: a decision without an ``otherwise`` edge whose conditions all stay shut
  fails the run with ``NoRouteError`` naming the node, a preview of its output and the
  conditions, and saying how to add the missing branch. A run that must fail with the
  user's own message routes ``otherwise`` to a node that raises it.
- Flyte refuses ``if_(promise)`` of a bool, ``if_(None)`` and ``if_(x is True)`` at
  compile time (``is_true()`` is the spelling); ours takes any predicate of one
  argument, a type, or a tuple or union of types, and refuses anything else (``when=True``,
  ``when=None`` is no condition at all) at declaration.
- Flyte's ``on_failure`` node runs when an ``else_().fail()`` fails the workflow; a deciding
  node's own error edge is not taken on ``NoRouteError`` (the node finished). The failure
  reaches a handler through an ``otherwise`` edge to a node that raises, or from a
  sub-workflow's error edge.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NoRouteError, PayloadError


def double(n: float) -> float:
    return 2 * n


def square(n: float) -> float:
    return n * n


def fractions(my_input: float, *, else_fail: bool = True) -> Formation:
    """``conditional("fractions")``: 0.1 < x < 1 doubles, 1 < x < 10 squares; else a
    ``fail`` (no ``otherwise`` edge) or ``double`` (an ``otherwise`` edge)."""
    f = (Formation("multiplier_2").add_function("decide", lambda x: x)
         .add_function("double", double).add_function("square", square)
         .add_function("result", lambda v: next(iter(v.values())), join="any")
         .connect("decide", "double", when=lambda x: 0.1 < x < 1.0)
         .connect("decide", "square", when=lambda x: 1.0 < x < 10.0)
         .connect("double", "result").connect("square", "result"))
    if not else_fail:
        f.add_function("else_double", double).connect("decide", "else_double", otherwise=True)
        f.connect("else_double", "result")
    return f


def test_the_if_branch_runs_when_its_condition_holds() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_nested_condition
    (``multiplier_2(my_input=0.3) == 0.6``)."""
    assert fractions(0.3).run(0.3).output == pytest.approx(0.6)


def test_the_elif_branch_runs_when_only_its_condition_holds() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_nested_condition
    (``multiplier_2(my_input=5.0) == 25``)."""
    result = fractions(5.0).run(5.0)
    assert result.output == 25.0 and result.nodes["double"].status == "skipped"


def test_an_else_fail_is_a_no_route_error_naming_the_decision_and_the_value() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_condition_else_fail
    (``.else_().fail(...)`` raises for 10.0). Ours: ``NoRouteError`` naming the node, the
    output and the fix (see the module docstring)."""
    with pytest.raises(NoRouteError) as info:
        fractions(10.0).run(10.0)
    err = info.value
    assert err.node == "decide" and err.preview == "10.0" and len(err.edges) == 2
    assert "otherwise=True" in str(err)
    assert err.nodes["double"].status == "skipped" and err.nodes["square"].status == "skipped"


def test_an_else_branch_runs_when_no_condition_holds() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_nested_condition_2
    (``.else_().then(double(...))``: ``multiplier_2(my_input=10.0) == 20``)."""
    assert fractions(10.0, else_fail=False).run(10.0).output == 20.0


def test_an_else_that_fails_with_the_users_message_is_a_node_that_raises_it() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_condition_else_fail
    (``fail("The input must be between 0 and 10")``: the message reaches the caller)."""

    def fail(_: float) -> float:
        raise ValueError("The input must be between 0 and 10")

    f = fractions(10.0).add_function("fail", fail).connect("decide", "fail", otherwise=True)
    with pytest.raises(FormationRuntimeError, match="The input must be between 0 and 10") as info:
        f.run(10.0)
    assert info.value.node == "fail" and isinstance(info.value.__cause__, ValueError)


def test_only_the_chosen_branch_is_called() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_call_counts
    (``five`` in four branches is executed once)."""
    calls = Counter()

    def five(_: Any) -> int:
        calls.hit("five")
        return 5

    f = Formation("if_elif_else_branching").add_function("x", lambda x: x)
    for i, when in enumerate([lambda x: x == 2, lambda x: x == 3, lambda x: x == 4]):
        f.add_function(f"five_{i}", five).connect("x", f"five_{i}", when=when)
    f.add_function("five_else", five).connect("x", "five_else", otherwise=True)
    f.add_function("out", lambda v: next(iter(v.values())), join="any")
    for n in ("five_0", "five_1", "five_2", "five_else"):
        f.connect(n, "out")
    assert f.run(2).output == 5
    assert calls.count("five") == 1


def test_a_condition_nested_in_a_branch_decides_after_the_outer_one() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_nested_condition
    (an inner ``conditional("inner_fractions")`` in the ``if_`` branch; 0.5 fails it, 0.3 passes)."""
    f = (Formation("multiplier_2").add_function("decide", lambda x: x)
         .add_function("inner_fractions", lambda x: x).add_function("double", double)
         .add_function("square", square)
         .connect("decide", "inner_fractions", when=lambda x: 0.1 < x < 1.0)
         .connect("inner_fractions", "double", when=lambda x: x < 0.5)
         .connect("decide", "square", when=lambda x: 1.0 < x < 10.0))
    assert f.run(0.3).outputs == {"double": pytest.approx(0.6)}
    with pytest.raises(NoRouteError) as info:
        f.run(0.5)
    assert info.value.node == "inner_fractions" and info.value.preview == "0.5"


def test_a_branch_may_be_a_nested_formation_and_the_other_a_function() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_subworkflow_condition
    (``.if_(x == 2).then(t()).else_().then(wf1())``: both give 5)."""
    wf1 = Formation("wf1").add_function("t", lambda _: 5)
    f = (Formation("branching").add_function("x", lambda x: x).add_function("t", lambda _: 5)
         .add_formation("wf1", wf1).add_function("out", lambda v: next(iter(v.values())), join="any")
         .connect("x", "t", when=lambda x: x == 2).connect("x", "wf1", otherwise=True)
         .connect("t", "out").connect("wf1", "out"))
    assert f.run(2).output == 5 and f.run(3).output == 5
    assert f.run(3).nodes["t"].status == "skipped"


def test_branches_returning_named_tuples_give_the_chosen_tuple() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_subworkflow_condition_named_tuple."""

    class SampleNamedTuple(NamedTuple):
        b: int
        c: str

    def t(_: Any) -> SampleNamedTuple:
        return SampleNamedTuple(5, "foo")

    def wf1_t(_: Any) -> SampleNamedTuple:
        return SampleNamedTuple(3, "bar")

    wf1 = Formation("wf1").add_function("t", wf1_t)
    f = (Formation("branching").add_function("x", lambda x: x).add_function("t", t)
         .add_formation("wf1", wf1).add_function("out", lambda v: next(iter(v.values())), join="any")
         .connect("x", "t", when=lambda x: x == 2).connect("x", "wf1", otherwise=True)
         .connect("t", "out").connect("wf1", "out"))
    assert f.run(2).output == (5, "foo") and f.run(3).output == (3, "bar")


def test_a_condition_on_one_field_of_a_named_tuple_routes_by_it() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_subworkflow_condition_single_named_tuple
    (``t().b`` feeds a branch)."""

    class SampleNamedTuple(NamedTuple):
        b: int

    def t(_: Any) -> SampleNamedTuple:
        return SampleNamedTuple(5)

    def b_of(nt: SampleNamedTuple) -> int:
        return nt.b

    f = (Formation("branching").add_function("t", t).add_function("b", b_of).add_function("other", b_of)
         .connect("t", "b", when=lambda nt: nt.b == 5).connect("t", "other", otherwise=True))
    assert f.run(None).outputs == {"b": 5}


def test_a_condition_on_a_bool_output_is_a_predicate_or_the_bool_type() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_condition_unary_bool
    (``if_(result.is_true())`` routes a bool output)."""
    f = (Formation("decompose").add_function("return_true", lambda _: True)
         .add_function("success", lambda _: 20).add_function("failed", lambda _: 10)
         .connect("return_true", "success", when=lambda b: b is True)
         .connect("return_true", "failed", otherwise=True))
    assert f.run(None).outputs == {"success": 20}


@pytest.mark.parametrize("when", [True, 1, "x == 2"])
def test_a_condition_that_is_not_a_predicate_or_a_type_is_refused_at_declaration(when: Any) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_condition_unary_bool
    (``if_(result)``, ``if_(None)`` and ``if_(result is True)`` are refused when the workflow is
    declared: ``result is True`` is a plain bool computed at declaration)."""
    f = Formation("decompose").add_function("return_true", lambda _: True).add_function("success", lambda _: 20)
    with pytest.raises(FormationSetupError, match=r"'return_true' → 'success'|when"):
        f.connect("return_true", "success", when=when)
    assert not f.graph.has_edge("return_true", "success")


def test_a_condition_on_a_list_output_routes_an_empty_list_elsewhere() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_dynamic_conditional.py::test_dynamic_conditional
    (a condition decides on what a task returned before the dynamic part maps over it)."""

    def split(text: str) -> list[str]:
        return text.split()

    f = (Formation("wf").add_function("split", split).add_map("upper", str.upper)
         .add_function("empty", lambda _: ["<none>"])
         .connect("split", "upper", when=lambda xs: len(xs) > 0).connect("split", "empty", otherwise=True))
    assert f.run("a b").outputs == {"upper": ["A", "B"]}
    assert f.run("").outputs == {"empty": ["<none>"]}


def test_a_condition_inside_a_mapped_formation_decides_per_item() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_dynamic_conditional.py::test_dynamic_conditional
    (a dynamic workflow running a conditional sub-workflow once per item)."""
    inner = (Formation("per_item").add_function("x", lambda x: x).add_function("double", double)
             .add_function("square", square).add_function("out", lambda v: next(iter(v.values())), join="any")
             .connect("x", "double", when=lambda x: x < 1.0).connect("x", "square", otherwise=True)
             .connect("double", "out").connect("square", "out"))
    assert Formation("wf").add_map("each", formation=inner).run([0.5, 3.0]).output == [1.0, 9.0]


def test_no_route_inside_a_mapped_formation_fails_that_item_naming_the_inner_node() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_dynamic_conditional.py (an ``else_().fail``
    inside the per-item conditional fails the item and so the workflow)."""
    inner = (Formation("per_item").add_function("x", lambda x: x).add_function("double", double)
             .connect("x", "double", when=lambda x: x < 1.0))
    with pytest.raises(FormationRuntimeError) as info:
        Formation("wf").add_map("each", formation=inner).run([0.5, 3.0, 0.25])
    cause = info.value.__cause__
    assert info.value.node == "each" and cause is not None
    errors = getattr(cause, "errors", {})
    assert list(errors) == [1] and "'x'" in str(errors[1]) and "3.0" in str(errors[1])


def branches_into(merge: Any) -> Formation:
    return (Formation("math_ops").add_function("decide", lambda x: x).add_function("double", double)
            .add_function("square", square).add_function("merge", merge)
            .connect("decide", "double", when=lambda x: x < 1.0).connect("decide", "square", otherwise=True)
            .connect("double", "merge").connect("square", "merge"))


def test_a_node_after_the_branches_gets_the_taken_branchs_value_and_defaults_for_the_other() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_condition_sub_workflows
    ("Flyte will only make `sum` and `sub` available as outputs because they are common between
    all branches"): a join after exclusive branches receives the one that ran; the parameter of
    the branch skipped takes its default."""

    def merge(double: float | None = None, square: float | None = None) -> tuple[float | None, float | None]:
        return double, square

    assert branches_into(merge).run(0.5).output == (1.0, None)
    assert branches_into(merge).run(3.0).output == (None, 9.0)


def test_a_node_after_the_branches_without_defaults_fails_naming_the_parameter_and_the_fix() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_condition_sub_workflows
    (what is not common to every branch is not available after the conditional)."""

    def merge(double: float, square: float) -> float:
        return double + square

    with pytest.raises(FormationRuntimeError) as info:
        branches_into(merge).run(0.5)
    assert info.value.node == "merge" and isinstance(info.value.__cause__, PayloadError)
    assert "got no value for parameter(s) square" in str(info.value) and "| None = None" in str(info.value)


def test_an_else_fail_is_not_caught_by_the_deciding_nodes_own_error_edge() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_condition_else_fail with
    test_workflows.py::test_failure_node_local_execution (Flyte's ``on_failure`` node runs when an
    ``else_().fail()`` fails the workflow). Deliberately different: the deciding node finished, so
    its error edge (taken when the node fails) is not taken; the run fails with ``NoRouteError``
    (docs/formations.md "Routes": "whatever its on_error")."""
    handled: list[str] = []

    def clean_up(failure: Any) -> str:
        handled.append("clean_up")
        return "cleaned"

    f = fractions(10.0).add_function("clean_up", clean_up).connect("decide", "clean_up", on_error=True)
    with pytest.raises(NoRouteError) as info:
        f.run(10.0)
    assert info.value.node == "decide" and handled == []


def test_an_else_fail_reaches_a_failure_node_through_a_node_that_raises() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_condition_else_fail with
    test_workflows.py::test_failure_node_local_execution: the ``else_().fail(message)`` branch is
    an ``otherwise`` edge to a node that raises the message, whose error edge leads to the
    failure node."""

    def fail(_: float) -> float:
        raise ValueError("The input must be between 0 and 10")

    def clean_up(failure: Any) -> str:
        return f"cleaned up after {failure.error}"

    f = (fractions(10.0).add_function("fail", fail).add_function("clean_up", clean_up)
         .connect("decide", "fail", otherwise=True).connect("fail", "clean_up", on_error=True))
    assert f.run(10.0).outputs == {"clean_up": "cleaned up after The input must be between 0 and 10"}


def test_an_else_fail_inside_a_sub_workflow_reaches_the_outer_failure_node_with_its_path() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_subworkflow_condition with
    test_workflows.py::test_failure_node_local_execution (the sub-workflow's failed conditional
    fails it, and the parent's failure node runs)."""

    def clean_up(failure: Any) -> str:
        return f"{failure.node} failed at {failure.error.path}: {type(failure.error.inner).__name__}"

    f = (Formation("wf").add_formation("sub", fractions(10.0)).add_function("clean_up", clean_up)
         .connect("sub", "clean_up", on_error=True))
    assert f.run(10.0).outputs == {"clean_up": "sub failed at sub/decide: NoRouteError"}
