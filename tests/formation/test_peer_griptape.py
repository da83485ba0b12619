"""Behaviours ported from Griptape's own test suite (griptape-ai/griptape,
``tests/unit/structures/test_workflow.py``, ``test_pipeline.py`` and
``tests/unit/tasks/test_branch_task.py``, ``test_base_task.py``): workflow topologies built
from parents and children, the input and output tasks, cycles and missing ids, control-flow
and branch tasks, a failing task beside a slow one. ``test_peer_griptape_more.py`` takes
agents (prompt tasks), structure run tasks (nested formations), events, shared memory
(the Blackboard) and ``backend="ray"``.

A Griptape ``Workflow`` is a DAG of tasks wired by ``parent_ids``/``child_ids`` (or
``add_parent``/``add_child``); here a task is a node and a parent → child link an edge. A
``Pipeline`` is a chain (``connect("a", "b", "c")``). A task reads its parents' outputs
(``parent_outputs``); our node receives them: one predecessor's value, or a dict keyed by
predecessor name (keyword arguments for a function whose parameters are named after them).
A ``BranchTask``/``ChoiceControlFlowTask`` picks children by id; here the edges to the
children carry ``when=`` and a child whose edges do not fire is skipped.

Deliberately different, or without a counterpart (each test that touches one says so):
- A branch task that picks no child ends the workflow quietly; ours fails the run with
  ``NoRouteError`` naming the node, unless it has an ``otherwise=True`` edge.
- A branch task returning an unknown id is an ``ErrorArtifact`` at run time; our routes are
  edges, so a bad route is a ``FormationSetupError`` at declaration.
- Griptape's ``fail_fast=False`` runs a child whose parent returned an ``ErrorArtifact``;
  ours runs the child through an error edge (``connect(a, child, on_error=True)``), which
  hands it a ``NodeFailure``.
- Cycles: Griptape refuses every cycle; ours refuses a cycle with no conditional edge, and
  a cycle through ``when=`` is a legal, bounded loop.
- ``insert_tasks``, the ``>>``/``<<`` operators, ``to_dict``/``from_json`` and rulesets
  have no counterpart (gaps).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import networkx as nx
import pytest

from tests.support.peers import Counter, Order, sleeps_until_cancelled
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NoRouteError
from wingman_actors.formation import NodeFailure


def tag(name: str, counter: Counter | None = None) -> Any:
    """Griptape's ``MockPromptDriver`` task: answers its name and what it received."""

    def run(x: Any) -> str:
        if counter is not None:
            counter.hit(name)
        return f"{name}({x})"

    return run


def topology_1() -> Formation:
    """task1 splits into task2 and task3, which converge into task4."""
    f = Formation("topology_1")
    for n in ("task1", "task2", "task3"):
        f.add_function(n, tag(n))
    f.add_function("task4", lambda task2, task3: f"task4({task2}, {task3})")
    return f.connect("task1", "task2", "task4").connect("task1", "task3", "task4")


# --- topologies ----------------------------------------------------------------------


def test_a_diamond_runs_every_task_once_and_the_join_gets_both_parents_outputs() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_topology_1_declarative_parents."""
    order = Order()
    result = topology_1().run("in", on_event=order)
    assert result.output == "task4(task2(task1(in)), task3(task1(in)))"
    assert order.nodes[0] == "task1" and order.nodes[-1] == "task4"
    assert sorted(order.nodes[1:3]) == ["task2", "task3"]
    assert all(result.nodes[n].status == "succeeded" and result.nodes[n].visits == 1 for n in result.nodes)


def test_a_diamond_declared_by_hand_as_a_networkx_graph_runs_as_the_built_one() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_topology_1_declarative_children
    (declaring children instead of parents: here a hand-made graph instead of the builder)."""
    g = nx.DiGraph()
    for n in ("task1", "task2", "task3"):
        g.add_node(n, kind="function", fn=tag(n))
    g.add_node("task4", kind="function", fn=lambda task2, task3: f"task4({task2}, {task3})")
    g.add_edges_from([("task1", "task2"), ("task1", "task3"), ("task2", "task4"), ("task3", "task4")])
    assert Formation("by_hand", g).run("in").output == topology_1().run("in").output


def test_parents_are_the_graphs_predecessors_and_children_its_successors() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_to_graph."""
    g = topology_1().graph
    assert set(g.predecessors("task2")) == {"task1"}
    assert set(g.predecessors("task4")) == {"task2", "task3"}
    assert set(g.successors("task1")) == {"task2", "task3"}


def test_a_task_with_parents_at_several_depths_waits_for_all_of_them() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_topology_2_declarative_parents."""
    counter = Counter()
    f = Formation("topology_2")
    for n in ("taska", "taskb", "taskc"):
        f.add_function(n, tag(n, counter))
    f.add_function("taskd", lambda taska, taskb, taskc: counter.hit("taskd") and f"d[{taska}|{taskb}|{taskc}]")
    f.add_function("taske", lambda taska, taskc, taskd: counter.hit("taske") and f"e[{taska}|{taskc}|{taskd}]")
    for child, parents in {"taskb": ["taska"], "taskc": ["taska"], "taskd": ["taska", "taskb", "taskc"],
                           "taske": ["taska", "taskd", "taskc"]}.items():
        for p in parents:
            f.connect(p, child)
    result = f.run("x")
    assert result.output == "e[taska(x)|taskc(taska(x))|d[taska(x)|taskb(taska(x))|taskc(taska(x))]]"
    assert counter.calls == {"taska": 1, "taskb": 1, "taskc": 1, "taskd": 1, "taske": 1}


def test_tasks_declared_out_of_order_run_in_dependency_order() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_topology_3_declarative_parents."""
    order = Order()
    f = Formation("topology_3")
    for n in ("task3", "task2", "task4", "task1"):
        f.add_function(n, tag(n))
    f.connect("task2", "task3").connect("task4", "task2").connect("task1", "task4")
    result = f.run("x", on_event=order)
    assert order.nodes == ["task1", "task4", "task2", "task3"]
    assert result.output == "task3(task2(task4(task1(x))))"


def test_a_fan_out_fan_in_fan_out_fan_in_gives_each_join_all_its_branches() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_topology_4_declarative_parents."""
    f = Formation("movies").add_function("collect_movie_info", lambda q: q)
    infos = ["movie_info_1", "movie_info_2", "movie_info_3"]
    outs = ["send_email_task", "save_to_disk", "publish_website"]
    for n in infos + outs:
        f.add_function(n, tag(n))
    f.add_function("compare_movies", lambda d: sorted(d))
    f.add_function("summarize_to_slack", lambda d: sorted(d.items()))
    for n in infos:
        f.connect("collect_movie_info", n, "compare_movies")
    for n in outs:
        f.connect("compare_movies", n, "summarize_to_slack")
    result = f.run("films")
    assert result.output == sorted((n, f"{n}({infos})") for n in outs)
    assert len(result.nodes) == 9 and {t.status for t in result.nodes.values()} == {"succeeded"}


def test_the_sources_get_the_run_input_and_the_sink_declared_first_is_still_the_output() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_output_task
    (task4 is the final task but is declared first) and ::test_input_task."""
    f = Formation("order").add_function("task4", lambda task2, task3: f"{task2}+{task3}")
    for n in ("task1", "task2", "task3"):
        f.add_function(n, tag(n))
    f.connect("task1", "task2", "task4").connect("task1", "task3", "task4")
    result = f.run("in")
    assert result.output == "task2(task1(in))+task3(task1(in))"
    assert list(result.outputs) == ["task4"]


def test_tasks_without_links_each_take_the_input_and_each_is_an_output() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_tasks_initialization
    and ::test_run (tasks added with no parents or children all run)."""
    f = Formation("loose")
    for n in ("test1", "test2", "test3"):
        f.add_function(n, tag(n))
    assert f.run("in").outputs == {"test1": "test1(in)", "test2": "test2(in)", "test3": "test3(in)"}


def test_a_pipeline_runs_its_tasks_in_the_order_they_were_chained() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_pipeline.py::test_tasks_order and ::test_add_tasks."""
    order = Order()
    f = Formation("pipeline")
    for n in ("first", "second", "third"):
        f.add_function(n, tag(n))
    result = f.connect("first", "second", "third").run("x", on_event=order)
    assert order.nodes == ["first", "second", "third"]
    assert result.output == "third(second(first(x)))"
    assert list(f.graph.successors("first")) == ["second"] and list(f.graph.predecessors("second")) == ["first"]


def test_a_formation_runs_again_from_scratch_and_its_runs_share_nothing() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_with_memory
    (three runs of one structure). Griptape's conversation memory keeps the three runs; ours keeps
    no state between runs (a shared Blackboard does: see test_peer_griptape_more.py)."""
    counter = Counter()
    f = Formation("again").add_function("a", tag("a", counter)).add_function("b", tag("b", counter)).connect("a", "b")
    assert [f.run(i).output for i in range(3)] == ["b(a(0))", "b(a(1))", "b(a(2))"]
    assert counter.calls == {"a": 3, "b": 3}


def test_a_node_added_after_a_run_takes_part_in_the_next_run() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_pipeline.py::test_prompt_stack_without_memory
    (a task added after the pipeline ran)."""
    f = Formation("grow").add_function("task1", tag("task1"))
    assert f.run("x").output == "task1(x)"
    f.add_function("task2", tag("task2")).connect("task1", "task2")
    assert f.run("x").output == "task2(task1(x))"


def test_a_fan_in_function_with_one_parameter_gets_its_parents_outputs_keyed_by_name() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_base_task.py::test_parent_outputs."""
    f = Formation("parents")
    for n in ("foobar1", "foobar2", "foobar3"):
        f.add_function(n, lambda x, n=n: n)
    f.add_function("child", lambda parents: parents)
    for n in ("foobar1", "foobar2", "foobar3"):
        f.connect(n, "child")
    assert f.run(None).output == {"foobar1": "foobar1", "foobar2": "foobar2", "foobar3": "foobar3"}


# --- declaration errors ----------------------------------------------------------------


@pytest.mark.parametrize(("edges", "missing"), [
    ([("task1", "missing")], "missing"),
    ([("missing", "task1")], "missing"),
    ([("task1", "task2"), ("task2", "missing")], "missing"),
])
def test_linking_to_a_task_that_does_not_exist_names_it_and_says_how_to_declare_it(
        edges: list[tuple[str, str]], missing: str) -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_raises_on_missing_parent_or_child_id.
    Griptape raises at ``run()``; ours at ``connect``, before anything runs."""
    f = Formation("missing").add_function("task1", tag("task1")).add_function("task2", tag("task2"))
    with pytest.raises(FormationSetupError, match=r"no node named 'missing'.*declare it first") as info:
        for u, v in edges:
            f.connect(u, v)
    assert isinstance(info.value, ValueError)


def test_a_link_to_a_misspelt_task_suggests_the_declared_name() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_raises_on_missing_parent_or_child_id
    (Griptape names the missing id; ours also suggests the close one)."""
    f = Formation("typo").add_function("task1", tag("task1")).add_function("task2", tag("task2"))
    with pytest.raises(FormationSetupError, match=r"'taks2'.*did you mean 'task2'"):
        f.connect("task1", "taks2")


@pytest.mark.parametrize("edges", [
    [("a", "a")],
    [("a", "b"), ("b", "b")],
    [("a", "b"), ("b", "a")],
    [("c", "a"), ("a", "b"), ("b", "c")],
], ids=["self", "self_after_a", "two", "three"])
def test_a_cycle_without_a_condition_is_refused_naming_its_nodes(edges: list[tuple[str, str]]) -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_raises_on_cycle.
    Griptape says "nodes are in a cycle"; ours names the cycle's nodes and the fix (a ``when=``
    on one of its edges), and a cycle with a condition is a legal loop."""
    f = Formation("cycle").add_function("a", tag("a")).add_function("b", tag("b")).add_function("c", tag("c"))
    for u, v in edges:
        f.graph.add_edge(u, v)
    with pytest.raises(FormationSetupError, match=r"(?i)cycle") as info:
        f.validate()
    text = str(info.value)
    assert all(repr(n) in text or n in text for edge in edges for n in edge if edge[0] != edge[1] or n == edge[0])
    assert "when=" in text


def test_a_task_id_declared_twice_is_refused_naming_it() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_base_task.py::test_add_child
    (adding the same task twice keeps one); declaring a node name twice is an error instead."""
    f = Formation("dup").add_function("task1", tag("task1"))
    with pytest.raises(FormationSetupError, match=r"'task1'"):
        f.add_function("task1", tag("other"))
    assert f.run("x").output == "task1(x)"


def test_linking_the_same_parent_and_child_twice_is_refused() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_base_task.py::test_add_parent
    (``add_parent`` twice keeps one link); ours refuses the second ``connect``, naming the edge."""
    f = Formation("twice").add_function("parent", tag("parent")).add_function("task", tag("task")).connect("parent", "task")
    with pytest.raises(FormationSetupError, match=r"'parent' → 'task' is declared twice"):
        f.connect("parent", "task")


def test_every_bad_link_is_reported_at_once() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_raises_on_missing_parent_or_child_id
    (Griptape stops at the first missing id; ours lists every problem in one error)."""
    f = Formation("many").add_function("task1", tag("task1"))
    with pytest.raises(FormationSetupError) as info:
        f.connect("missing_a", "task1", "missing_b")
    assert "'missing_a'" in str(info.value) and "'missing_b'" in str(info.value)


# --- branch tasks and control flow ------------------------------------------------------


def branching(choose: Any, counter: Counter | None = None) -> Formation:
    """Griptape's branch test workflow: 1 → branch → {2, 3} → 4, the branch picking children."""
    f = (Formation("branching").add_function("1", tag("1", counter)).add_function("branch", choose)
         .add_function("2", tag("2", counter)).add_function("3", tag("3", counter))
         .add_function("4", lambda d: sorted(d)))
    return (f.connect("1", "branch").connect("branch", "2", when=lambda picked: "2" in picked)
            .connect("branch", "3", when=lambda picked: "3" in picked).connect("2", "4").connect("3", "4"))


def test_a_branch_that_picks_one_child_skips_the_other_and_the_join_still_runs() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_branch_task.py::test_one_branch."""
    counter = Counter()
    result = branching(lambda _: ["2"], counter).run("go")
    assert result.output == ["2"]
    assert {n: t.status for n, t in result.nodes.items()} == {
        "1": "succeeded", "branch": "succeeded", "2": "succeeded", "3": "skipped", "4": "succeeded"}
    assert counter.count("3") == 0


def test_a_branch_that_picks_both_children_runs_both_and_the_join_gets_both() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_branch_task.py::test_multi_branch."""
    result = branching(lambda _: ["2", "3"]).run("go")
    assert result.output == ["2", "3"]
    assert {t.status for t in result.nodes.values()} == {"succeeded"}


def test_a_branch_that_picks_no_child_fails_the_run_naming_it() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_branch_task.py::test_no_branch.
    Griptape finishes quietly with both children skipped and 4 pending; ours fails with
    ``NoRouteError`` naming the branch node (DESIGN: "Routes")."""
    with pytest.raises(NoRouteError) as info:
        branching(lambda _: []).run("go")
    assert info.value.node == "branch"


def test_a_branch_with_an_otherwise_edge_takes_it_when_it_picks_no_child() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_branch_task.py::test_no_branch
    (the way to end quietly when no child is picked: an ``otherwise`` edge)."""
    f = branching(lambda _: []).add_function("none", lambda _: "nothing picked").connect("branch", "none", otherwise=True)
    result = f.run("go")
    assert result.outputs == {"none": "nothing picked"}
    assert {n: result.nodes[n].status for n in ("2", "3", "4")} == {"2": "skipped", "3": "skipped", "4": "skipped"}


def test_a_route_whose_condition_is_neither_a_predicate_nor_a_type_is_refused_at_declaration() -> None:
    """Ported from griptape-ai/griptape tests/unit/tasks/test_branch_task.py::test_bad_branch
    (an invalid child id is an ErrorArtifact at run time; a bad route is a setup error here)."""
    f = Formation("bad").add_function("branch", lambda x: x).add_function("2", tag("2"))
    with pytest.raises(FormationSetupError, match=r"when"):
        f.connect("branch", "2", when="42")  # type: ignore[arg-type]


def test_a_branch_not_taken_skips_a_whole_sub_branch_and_the_final_join_runs_once() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_workflow_with_multiple_control_flow_tasks."""
    counter = Counter()
    f = Formation("two_controls")
    for n in ("task1", "task2", "task3", "task4", "task5"):
        f.add_function(n, tag(n, counter))
    f.add_function("cf1", lambda x: "task3").add_function("cf2", lambda x: "task5")
    f.add_function("task6", lambda d: counter.hit("task6") and sorted(d))
    f.connect("task1", "cf1").connect("cf1", "task2", when=lambda c: c == "task2").connect("cf1", "task3", when=lambda c: c == "task3")
    f.connect("task2", "cf2").connect("cf2", "task4", when=lambda c: c == "task4").connect("cf2", "task5", when=lambda c: c == "task5")
    for n in ("task3", "task4", "task5"):
        f.connect(n, "task6")
    result = f.run("go")
    assert result.output == ["task3"]
    assert {n: result.nodes[n].status for n in ("task2", "cf2", "task4", "task5")} == dict.fromkeys(
        ("task2", "cf2", "task4", "task5"), "skipped")
    assert counter.calls == {"task1": 1, "task3": 1, "task6": 1}


def test_a_control_flow_task_with_two_parents_routes_on_one_parents_output() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_workflow_with_control_flow_task_multiple_input_parents."""
    f = (Formation("two_parents").add_function("task1", lambda _: "3").add_function("task2", tag("task2"))
         .add_function("cf", lambda task1, task2: "task3" if task1 == "3" else "task4")
         .add_function("task3", tag("task3")).add_function("task4", tag("task4")).add_function("task5", lambda d: d))
    f.connect("task1", "cf").connect("task2", "cf").connect("cf", "task3", when=lambda c: c == "task3")
    f.connect("cf", "task4", when=lambda c: c == "task4").connect("task3", "task5").connect("task4", "task5")
    result = f.run("go")
    assert result.output == {"task3": "task3(task3)"}
    assert result.nodes["task4"].status == "skipped"


def test_a_child_with_another_parent_runs_whichever_way_the_control_flow_goes() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_workflow_with_control_flow_task_multiple_child_parents
    (run twice, the second time choosing the other child: task3 still runs through task2)."""
    choice = {"pick": "task3"}
    f = (Formation("shared_child").add_function("task1", tag("task1")).add_function("task2", tag("task2"))
         .add_function("cf", lambda _: choice["pick"]).add_function("task3", lambda d: sorted(d))
         .add_function("task4", tag("task4")).add_function("task5", lambda d: sorted(d)))
    f.connect("task1", "task2", "task3").connect("task1", "cf").connect("cf", "task3", when=lambda c: c == "task3")
    f.connect("cf", "task4", when=lambda c: c == "task4").connect("task3", "task5").connect("task4", "task5")
    first = f.run("go")
    assert first.nodes["task3"].output == ["cf", "task2"] and first.nodes["task4"].status == "skipped"
    choice["pick"] = "task4"
    second = f.run("go")
    assert second.nodes["task3"].output == ["task2"]
    assert second.output == ["task3", "task4"]


# --- a task that fails ------------------------------------------------------------------


def test_a_failing_task_fails_the_run_at_once_without_waiting_for_a_slow_sibling() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_with_error_artifact
    (fail fast: the workflow's output is None). Ours raises, naming the node; the slow sibling is cancelled."""
    cancelled, started = threading.Event(), threading.Event()
    sleep = sleeps_until_cancelled(cancelled)

    async def waiting(x: Any) -> str:
        started.set()
        return await sleep(x)

    def error_task(_: Any) -> str:
        assert started.wait(5)  # fails once the slow sibling is working
        raise RuntimeError("error")

    f = (Formation("fail_fast").add_function("waiting", waiting)
         .add_function("error_task", error_task).add_function("end", lambda d: d)
         .connect("waiting", "end").connect("error_task", "end"))
    t0 = time.monotonic()
    with pytest.raises(FormationRuntimeError) as info:
        f.run("go", timeout=10)
    assert time.monotonic() - t0 < 3
    assert info.value.node == "error_task"
    assert isinstance(info.value.__cause__, RuntimeError)
    assert cancelled.wait(3)


def test_an_error_edge_lets_the_child_run_with_the_failure_beside_the_other_parents_output() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_with_error_artifact_no_fail_fast
    (``fail_fast=False``: end runs with the ErrorArtifact; ours hands it a NodeFailure)."""

    async def waiting(_: Any) -> str:
        await asyncio.sleep(0.05)
        return "done"

    def error_task(_: Any) -> str:
        raise RuntimeError("error")

    f = (Formation("no_fail_fast").add_function("waiting", waiting).add_function("error_task", error_task)
         .add_function("end", lambda waiting, error_task: (waiting, type(error_task).__name__, str(error_task.error)))
         .connect("waiting", "end").connect("error_task", "end", on_error=True))
    result = f.run("go", timeout=10)
    # error_task, whose only out-edge is an error edge, is a sink too (a success would be a run
    # output), so the run has two sinks: its outputs are by name
    assert result.outputs == {"end": ("done", "NodeFailure", "error")}
    assert result.nodes["error_task"].status == "failed"
    assert result.nodes["end"].status == "succeeded"


def test_a_failure_handed_on_names_the_node_its_input_and_attempts() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_with_error_artifact_no_fail_fast
    (what a child learns of the failed parent)."""

    def error_task(x: Any) -> str:
        raise ValueError(f"bad {x}")

    f = (Formation("handed").add_function("error_task", error_task, retries=1, backoff=0.0)
         .add_function("handler", lambda failure: failure).connect("error_task", "handler", on_error=True))
    result = f.run("in", timeout=10)
    failure = result.outputs["handler"]
    assert isinstance(failure, NodeFailure)
    assert (failure.node, failure.input, failure.attempts, failure.run_id) == ("error_task", "in", 2, result.run_id)
    assert "bad in" in str(failure.error)


def test_a_failing_task_with_on_error_skip_skips_its_children_and_the_run_goes_on() -> None:
    """Ported from griptape-ai/griptape tests/unit/structures/test_workflow.py::test_run_with_error_artifact_no_fail_fast
    (the other policy: skip the failed task and what depends only on it)."""

    def error_task(_: Any) -> str:
        raise RuntimeError("error")

    f = (Formation("skip").add_function("ok", tag("ok")).add_function("error_task", error_task, on_error="skip")
         .add_function("after_error", tag("after_error")).connect("error_task", "after_error"))
    result = f.run("go")
    assert result.outputs == {"ok": "ok(go)"}
    assert result.nodes["error_task"].status == "skipped" and result.nodes["after_error"].status == "skipped"
    assert "error" in (result.nodes["error_task"].error or "")
