"""Workflows, sub-workflows, failure nodes and node overrides, ported from Flyte's Python
SDK's own tests (flyteorg/flytekit, ``tests/flytekit/unit/core/``: ``test_workflows.py``,
``test_composition.py``, ``test_node_creation.py``, ``test_imperative.py``): a workflow is
a formation, a sub-workflow a formation node (``add_formation``), an imperative workflow
a ``networkx.DiGraph`` built by hand, ``with_overrides(retries=, timeout=)`` the node's
policy attributes, and ``on_failure=`` error edges into one handler.

Deliberately different (DESIGN.md "Error edges", "Supervision" document ours):
- Flyte's ``on_failure`` handler runs when any node fails, with the workflow's inputs and
  the error, and the workflow still fails. Ours: an error edge from each node that may fail
  into the handler (it receives ``{failed node: NodeFailure}``), and the run goes on from
  the handler (it succeeds); a handler that raises fails the run, naming the handler.
- A workflow may return any node's output; a run's outputs are its sinks'
  (``result.nodes[name].output`` holds every node's).
"""

from __future__ import annotations

import datetime
import threading
import time
from typing import Any, Literal

import networkx as nx
import pytest

from tests.support.peers import Counter, Order
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NodeTimeoutError, PayloadError
from wingman_actors.formation import NestedRunError, NodeFailure
from wingman_actors.store import RunStore


def t1(a: str) -> str:
    return a + " world"


def sum_sub(ab: tuple[int, int]) -> tuple[int, int]:
    a, b = ab
    return a + b, a - b


# --- sub-workflows ----------------------------------------------------------------------


def test_a_sub_workflow_gives_its_sink_output_to_the_outer_workflow() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_conditions.py::test_condition_sub_workflows
    (``sub_wf(a=a, b=b)`` returns ``sum_sub``'s tuple: ``math_ops(3, 2) == (5, 1)``)."""
    sub_wf = Formation("sub_wf").add_function("sum_sub", sum_sub)
    math_ops = Formation("math_ops").add_formation("sub_wf", sub_wf)
    assert math_ops.run((3, 2)).output == (5, 1)


def test_a_sub_workflow_used_twice_runs_twice_its_nodes_named_by_each_use() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_composition.py::test_wf1_with_subwf
    (``my_subwf`` calls ``t1`` twice in a row; here a sub-workflow used twice in one parent)."""
    calls = Counter()

    def add_one(x: int) -> int:
        calls.hit("add_one")
        return x + 1

    sub = Formation("sub").add_function("add_one", add_one)
    order = Order()
    f = Formation("parent").add_formation("first", sub).add_formation("second", sub).connect("first", "second")
    assert f.run(1, on_event=order).output == 3
    assert calls.count("add_one") == 2
    assert order.nodes == ["first", "first/add_one", "second", "second/add_one"]


def test_a_sub_workflow_nested_three_deep_runs_and_names_its_nodes_by_path() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_composition.py::test_wf1_with_subwf
    (a workflow calling a sub-workflow; here three deep)."""
    leaf = Formation("leaf").add_function("t1", t1)
    mid = Formation("mid").add_formation("leaf", leaf)
    top = Formation("top").add_formation("mid", mid)
    result = top.run("hello")
    assert result.output == "hello world"
    assert result.nodes["mid/leaf/t1"].output == "hello world"


def test_a_type_mismatch_into_a_sub_workflow_is_refused_at_validation_naming_the_inner_node() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_type_hints.py::test_wf1_with_subwf
    (a sub-workflow's inputs are typed like a task's: a str output cannot feed its int input)."""

    def double(x: int) -> int:
        return 2 * x

    def text(_: Any) -> str:
        return "x"

    sub = Formation("sub").add_function("double", double)
    f = Formation("wf").add_function("text", text).add_formation("sub", sub).connect("text", "sub")
    with pytest.raises(FormationSetupError) as info:
        f.validate()
    message = str(info.value)
    assert "edge 'text' → 'sub'" in message and "source 'double' expects int" in message and "outputs str" in message


def test_a_sub_workflows_output_type_is_checked_against_what_follows() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_type_hints.py::test_wf1_with_subwf
    (the sub-workflow's declared output feeds the next task: types must agree)."""

    def double(x: int) -> int:
        return 2 * x

    def shout(s: str) -> str:
        return s.upper()

    sub = Formation("sub").add_function("double", double)
    f = Formation("wf").add_formation("sub", sub).add_function("shout", shout).connect("sub", "shout")
    with pytest.raises(FormationSetupError, match=r"'sub' → 'shout'"):
        f.validate()


def test_a_failing_sub_workflow_fails_the_outer_run_naming_the_inner_node() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_workflows.py::test_failure_node_local_execution
    (the failing task ``t1`` is named in the error that reaches the caller)."""

    def fail(_: Any) -> None:
        raise ValueError("Fail!")

    sub = Formation("subwf").add_function("create_cluster", lambda n: n).add_function("t1", fail)
    sub.connect("create_cluster", "t1")
    with pytest.raises(FormationRuntimeError) as info:
        Formation("wf").add_formation("subwf", sub).run("flyteorg")
    cause = info.value.__cause__
    assert info.value.node == "subwf" and isinstance(cause, NestedRunError)
    assert cause.path == "subwf/t1" and "Fail!" in str(cause)
    assert cause.nodes["subwf/create_cluster"].output == "flyteorg"


# --- failure nodes (on_failure) ---------------------------------------------------------


def cluster_workflow(fail_at: str | None, handled: list[str]) -> Formation:
    """``create_cluster >> t1 >> delete_cluster``; ``fail_at`` raises ``ValueError("Fail!")``;
    every node's error edge goes to ``clean_up``."""

    def step(name: str) -> Any:
        def run(cluster: str) -> str:
            if name == fail_at:
                raise ValueError("Fail!")
            return cluster

        return run

    def clean_up(failed: dict[str, NodeFailure]) -> str:
        (node, failure), = failed.items()
        handled.append(node)
        return f"Deleting cluster {failure.input} due to {failure.error}"

    f = Formation("wf")
    for n in ("create_cluster", "t1", "delete_cluster"):
        f.add_function(n, step(n))
    f.connect("create_cluster", "t1", "delete_cluster").add_function("clean_up", clean_up)
    for n in ("create_cluster", "t1", "delete_cluster"):
        f.connect(n, "clean_up", on_error=True)
    return f


def test_a_failure_node_runs_with_the_error_of_the_node_that_failed() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_workflows.py::test_failure_node_local_execution
    (``clean_up`` prints ``Deleting cluster flyteorg due to <the error>``). Ours goes on from the
    handler; see the module docstring."""
    handled: list[str] = []
    result = cluster_workflow("t1", handled).run("flyteorg")
    assert result.outputs == {"clean_up": "Deleting cluster flyteorg due to Fail!"}
    assert handled == ["t1"]
    statuses = {n: result.nodes[n].status for n in ("create_cluster", "t1", "delete_cluster")}
    assert statuses == {"create_cluster": "succeeded", "t1": "failed", "delete_cluster": "skipped"}


def test_the_failure_node_is_skipped_when_nothing_fails() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_workflows.py::test_failure_node_local_execution
    (``on_failure`` runs only when a node fails)."""
    handled: list[str] = []
    result = cluster_workflow(None, handled).run("flyteorg")
    assert result.outputs == {"delete_cluster": "flyteorg"} and handled == []
    assert result.nodes["clean_up"].status == "skipped"


def test_the_failure_node_hears_of_whichever_node_failed() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_workflows.py::test_failure_node_local_execution
    (one handler for the whole workflow: the first node and the last fail in turn)."""
    for fail_at in ("create_cluster", "delete_cluster"):
        handled: list[str] = []
        result = cluster_workflow(fail_at, handled).run("flyteorg")
        assert handled == [fail_at] and result.nodes[fail_at].status == "failed"


def test_a_failure_node_that_fails_fails_the_run_naming_it() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_workflows.py::test_failure_node_local_execution
    (Flyte's workflow fails after its failure node; ours fails when the handler raises)."""

    def fail(_: Any) -> None:
        raise ValueError("Fail!")

    def clean_up(failure: NodeFailure) -> None:
        raise RuntimeError(f"clean up failed too, after {failure.error}")

    f = (Formation("wf").add_function("t1", fail).add_function("clean_up", clean_up)
         .connect("t1", "clean_up", on_error=True))
    with pytest.raises(FormationRuntimeError, match=r"clean up failed too, after Fail!") as info:
        f.run(None)
    assert info.value.node == "clean_up" and info.value.nodes["t1"].status == "failed"


def test_a_failure_node_after_a_sub_workflow_gets_the_nested_error() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_workflows.py (the failure policy docs: a failing
    sub-workflow triggers the parent's failure node)."""

    def fail(_: Any) -> None:
        raise ValueError("Fail!")

    def clean_up(failure: NodeFailure) -> str:
        assert isinstance(failure.error, NestedRunError)
        return f"{failure.node}: {failure.error.path}"

    sub = Formation("subwf").add_function("t1", fail)
    f = (Formation("wf1").add_formation("subwf", sub).add_function("clean_up", clean_up)
         .connect("subwf", "clean_up", on_error=True))
    assert f.run("my_cluster").outputs == {"clean_up": "subwf: subwf/t1"}


def test_a_failure_node_of_a_journalled_run_is_not_run_again_on_resume(tmp_path: Any) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_workflows.py::test_failure_node_local_execution
    (a failure node runs once per failure); ours across a resume: a run whose handler failed
    resumes from the handler, the failed node is not retried."""
    calls = Counter()
    broken = {"handler": True}

    def t1(_: Any) -> None:
        calls.hit("t1")
        raise ValueError("Fail!")

    def clean_up(failure: NodeFailure) -> str:
        calls.hit("clean_up")
        if broken["handler"]:
            raise RuntimeError("handler broke")
        return f"cleaned after {failure.error}"

    f = Formation("wf").add_function("t1", t1).add_function("clean_up", clean_up).connect("t1", "clean_up", on_error=True)
    with RunStore(tmp_path / "runs.db") as store:
        with pytest.raises(FormationRuntimeError):
            f.run(None, store=store, run_id="r1")
        broken["handler"] = False
        assert f.resume("r1", store=store).outputs == {"clean_up": "cleaned after Fail!"}
    assert (calls.count("t1"), calls.count("clean_up")) == (1, 2)


# --- node overrides: retries and timeouts ------------------------------------------------


def test_retries_set_on_the_graph_after_a_run_apply_to_the_next_run() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_node_creation.py::test_retries_override
    (``t1().with_overrides(retries=2)`` changes the node's retries)."""
    calls = Counter()

    def flaky(x: int) -> int:
        if calls.hit("flaky") % 3:
            raise RuntimeError("transient")
        return x

    f = Formation("wf").add_function("flaky", flaky)
    with pytest.raises(FormationRuntimeError):
        f.run(1)
    f.graph.nodes["flaky"].update(retries=2, backoff=0)
    result = f.run(1)
    assert result.output == 1 and result.nodes["flaky"].attempts == 2


def test_a_node_timeout_fails_the_run_within_the_limit_with_a_timeout_error() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_node_creation.py::test_timeout_override
    (``with_overrides(timeout=...)``: the node's time limit)."""
    release = threading.Event()

    def stuck(_: Any) -> None:
        release.wait(10)

    f = Formation("wf").add_function("t1", stuck, timeout=0.3)
    started = time.monotonic()
    try:
        with pytest.raises(FormationRuntimeError) as info:
            f.run(None)
    finally:
        release.set()
    assert time.monotonic() - started < 0.3 + 1.5
    assert info.value.node == "t1" and isinstance(info.value.__cause__, NodeTimeoutError)


def test_a_timedelta_timeout_is_taken_and_an_invalid_one_is_refused_naming_the_node() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_node_creation.py::test_timeout_override_invalid_value
    (Flyte takes "datetime.timedelta or int seconds", and refuses anything else)."""
    assert Formation("wf").add_function("t1", t1, timeout=datetime.timedelta(seconds=100)).validate()
    with pytest.raises(FormationSetupError, match=r"node 't1': timeout must be a number of seconds") as info:
        Formation("wf").add_function("t1", t1, timeout="100s")
    assert "'100s'" in str(info.value)


def test_a_timeout_on_a_sub_workflow_bounds_its_whole_run_and_it_takes_work_again() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_node_creation.py::test_timeout_override
    (an override on a sub-workflow node)."""
    release = threading.Event()

    def maybe_stuck(x: int) -> int:
        if x < 0:
            release.wait(10)
        return x

    sub = Formation("sub").add_function("maybe_stuck", maybe_stuck)
    f = Formation("wf").add_formation("sub", sub, timeout=0.3)
    try:
        with f.start() as running:
            with pytest.raises(FormationRuntimeError) as info:
                running.submit(-1).result(timeout=10)
            assert isinstance(info.value.__cause__, NodeTimeoutError)
            assert running.submit(5).result(timeout=10).output == 5
    finally:
        release.set()


def prep_then_flaky(calls: Counter) -> Formation:
    """The sub-workflow ``prep -> flaky``: ``prep`` adds one, ``flaky`` fails its first call and
    then doubles; both count their calls in ``calls``."""

    def prep(x: int) -> int:
        calls.hit("prep")
        return x + 1

    def flaky(x: int) -> int:
        if calls.hit("flaky") == 1:
            raise RuntimeError("transient")
        return 2 * x

    return Formation("sub").add_function("prep", prep).add_function("flaky", flaky).connect("prep", "flaky")


def test_retries_of_a_sub_workflow_run_it_again_from_its_start() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_node_creation.py::test_retries_override
    (retries on a sub-workflow node: the whole sub-workflow is attempted again)."""
    calls = Counter()
    sub = prep_then_flaky(calls)
    result = Formation("wf").add_formation("sub", sub, retries=1, backoff=0).run(1)
    assert result.output == 4 and result.nodes["sub"].attempts == 2
    assert calls.count("prep") == 2


def test_a_journalled_sub_workflow_retry_resumes_it_without_rerunning_what_finished(tmp_path: Any) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_node_creation.py::test_retries_override
    (retries on a sub-workflow node). A journalled run's retry resumes the inner run: the inner
    visits already journalled are not run again (only a store keeps them between attempts)."""
    calls = Counter()
    sub = prep_then_flaky(calls)
    f = Formation("wf").add_formation("sub", sub, retries=1, backoff=0)
    with RunStore(tmp_path / "runs.db") as store:
        assert f.run(1, store=store).output == 4
    assert (calls.count("prep"), calls.count("flaky")) == (1, 2)


def test_a_negative_retries_override_is_refused_naming_the_node() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_node_creation.py::test_retries_override
    (the retries of an override are checked)."""
    with pytest.raises(FormationSetupError, match=r"node 't1': retries must be an int >= 0"):
        Formation("wf").add_function("t1", t1, retries=-1)


def test_a_bad_override_on_a_hand_built_node_is_reported_at_validation() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_node_creation.py::test_timeout_override
    (an override is checked when the workflow compiles)."""
    f = Formation("wf").add_function("t1", t1)
    f.graph.nodes["t1"]["timeout"] = -5
    with pytest.raises(FormationSetupError, match=r"'t1'.*timeout"):
        f.validate()


def test_nodes_run_in_the_order_their_edges_say() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_node_creation.py::test_normal_task
    (``t1 >> t2``: explicit ordering between tasks)."""
    order = Order()
    f = (Formation("wf").add_function("t1", t1).add_function("t2", lambda _: "side effect")
         .add_function("t3", lambda s: s).connect("t1", "t2", "t3"))
    assert f.run("hello", on_event=order).output == "side effect"
    assert order.nodes == ["t1", "t2", "t3"]


# --- imperative workflows ---------------------------------------------------------------


def test_an_imperative_workflow_built_with_networkx_runs_like_the_declared_one() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_imperative.py::test_imperative
    (``Workflow(name=...)``, ``add_entity(t1, a=...)``, ``add_workflow_output``: the same as the
    ``@workflow`` function)."""
    g = nx.DiGraph()
    g.add_node("t1", kind="function", fn=t1)
    g.add_node("t2", kind="function", fn=str.upper)
    g.add_edge("t1", "t2")
    built = Formation("my_workflow").add_function("t1", t1).add_function("t2", str.upper).connect("t1", "t2")
    assert Formation("my_workflow", g).run("hello").output == built.run("hello").output == "HELLO WORLD"
    assert Formation("my_workflow", g).to_mermaid() == built.to_mermaid()


def test_an_imperative_workflow_of_a_map_and_a_sub_workflow_runs() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_imperative.py::test_imperative
    (``add_subwf``) and test_imperative_with_list_io (list outputs between entities)."""
    g = nx.DiGraph()
    g.add_node("split", kind="function", fn=str.split)
    g.add_node("t1", kind="map", fn=t1)
    g.add_node("join", kind="formation", formation=Formation("join").add_function("join", " / ".join))
    g.add_edges_from([("split", "t1"), ("t1", "join")])
    assert Formation("wf", g).run("a b").output == "a world / b world"


def test_an_imperative_entity_whose_input_is_never_bound_is_refused() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_imperative.py::test_imperative_tuples
    (``add_entity(t3, a=..., b=...)``: every input of an entity is bound; ``ImperativeWorkflow.add_entity``
    requires it)."""

    def two(a: str, b: str) -> str:
        return a + b

    g = nx.DiGraph()
    g.add_node("t1", kind="function", fn=t1)
    g.add_node("two", kind="function", fn=two)
    g.add_edge("t1", "two")
    with pytest.raises(FormationSetupError, match=r"function node 'two'.*give the other parameters defaults"):
        Formation("wf", g).validate()


def test_an_imperative_edge_to_a_node_never_declared_is_refused_naming_it() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_imperative.py::test_imperative_tuples
    (``t1_node.outputs["bad"]``: a binding to what the workflow does not have is a ``KeyError``)."""
    g = nx.DiGraph()
    g.add_node("t1", kind="function", fn=t1)
    g.add_edge("t1", "missing")
    with pytest.raises(FormationSetupError, match=r"'missing'"):
        Formation("wf", g).validate()


def test_adding_an_entity_under_a_taken_name_is_refused() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_node_creation.py::test_normal_task
    (``create_node(t2, "foo")`` is refused: a node is declared once, one way)."""
    f = Formation("wf").add_function("t1", t1)
    with pytest.raises(FormationSetupError, match=r"already has a node named 't1'"):
        f.add_map("t1", t1)
    assert f.graph.nodes["t1"]["kind"] == "function"


# --- type checks between tasks ----------------------------------------------------------


def typed_pair(out: Any, param: Any) -> Formation:
    """``a -> b``, ``a``'s return annotated ``out`` and ``b``'s input ``x`` annotated ``param``."""

    def a(_: Any) -> Any:
        return None

    def b(x: Any) -> Any:
        return x

    a.__annotations__["return"] = out
    b.__annotations__["x"] = param
    return Formation("wf").add_function("a", a).add_function("b", b).connect("a", "b")


@pytest.mark.parametrize(("out", "param"), [
    (int | None, int), (list[int], list[str]), (dict[str, int], dict[str, str]), (float, int), (str, int),
])
def test_a_task_output_that_does_not_fit_the_next_input_is_refused_at_validation(out: Any, param: Any) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_type_hints.py::test_wf_output_mismatch and
    test_type_engine.py (an Optional, a list or a dict of another type does not bind to the next
    task's input)."""
    f = typed_pair(out, param)
    with pytest.raises(FormationSetupError, match=r"edge 'a' → 'b'.*parameter 'x' of 'b'"):
        f.validate()


@pytest.mark.parametrize(("out", "param"), [(bool, int), (int, float), (Literal["a"], str), (Any, int)])
def test_a_task_output_that_fits_the_next_input_validates(out: Any, param: Any) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_type_engine.py and
    test_type_hints.py (an output binds where its type fits; an untyped one is not refused)."""
    typed_pair(out, param).validate()


def test_a_str_feeding_a_literal_input_is_checked_when_it_arrives() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_type_engine.py (Flyte's
    literal type transformer refuses a value outside a ``Literal``'s choices). Ours lets a ``str`` output feed a
    ``Literal[...]`` parameter at validation (it may be one of them) and refuses a value that is
    not one when it arrives, naming the node."""

    def choose(_: Any) -> str:
        return "maybe"

    def act(answer: Literal["yes", "no"]) -> str:
        return answer

    f = Formation("wf").add_function("choose", choose).add_function("act", act).connect("choose", "act")
    f.validate()
    with pytest.raises(FormationRuntimeError) as info:
        f.run(None)
    assert info.value.node == "act" and isinstance(info.value.__cause__, PayloadError)
    assert "maybe" in str(info.value)


def test_the_workflow_input_is_checked_against_the_first_task_before_it_runs() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_imperative.py::test_codecov
    (``wb(3)`` and ``wb(in2=...)``: a workflow called with inputs that do not fit raises before any
    task runs)."""
    calls = Counter()

    def first(x: int) -> int:
        calls.hit("first")
        return x

    with pytest.raises(FormationRuntimeError) as info:
        Formation("wf").add_function("first", first).run("not a number")
    assert info.value.node == "first" and calls.count("first") == 0
