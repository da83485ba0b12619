"""Microsoft Agent Framework's visualisation and executor-input tests
(python/packages/core/tests/workflow/test_viz.py and test_executor.py in microsoft/agent-framework),
ported to ``Formation.to_mermaid()``/``to_dot()`` and to the runtime check of a node's input.

Deliberately different: MAF draws a fan-in through an intermediate "fan-in" node, conditional
edges dashed and labelled "conditional", and its start executor marked "(Start)"; ours draws a join
as the edges into the node, labels a conditional edge ``when`` (``otherwise`` for the default), and
needs no start mark (every node without forward predecessors is a source)."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError


def chain(*names: str) -> Formation:
    f = Formation("viz")
    for name in names:
        f.add_function(name, lambda x: x)
    return f.connect(*names) if len(names) > 1 else f


def mermaid_ids(text: str) -> dict[str, str]:
    """The mermaid node ids by the label they are declared with (``id["label"]``)."""
    return {label: node_id for node_id, label in re.findall(r'^\s*(\S+)\["([^"]*)"\]\s*$', text, re.M)}


@pytest.mark.parametrize("names", [
    ("step-a", "step_a"), ("step a", "step-a", "step_a", "step_a_2"), ("步骤甲", "步骤乙"),
    ("1step", "n_1step"), ("_step", "n__step"), ("step-a", "step_b"), ("end", "subgraph", "graph"),
])
def test_distinct_node_names_keep_distinct_mermaid_nodes_and_their_edges(names: tuple[str, ...]) -> None:
    """From test_viz.py::test_workflow_viz_mermaid_distinct_executor_ids (names that sanitise alike,
    non-ASCII names and names starting with a digit stay distinct nodes, with their edges)."""
    text = chain(*names).to_mermaid()
    ids = mermaid_ids(text)

    assert set(ids) == set(names)
    assert len(set(ids.values())) == len(names)
    for a, b in pairwise(names):
        assert f"{ids[a]} --> {ids[b]}" in text


def test_a_sub_workflow_is_drawn_as_a_subgraph_of_its_own_nodes_and_edges() -> None:
    """From test_viz.py::test_workflow_viz_sub_workflow_mermaid and ::test_workflow_viz_sub_workflow_digraph
    (the sub-workflow is a cluster whose nodes are namespaced under its executor)."""
    sub = chain("sub_exec1", "sub_exec2")
    f = (Formation("main").add_function("main_executor", lambda x: x).add_formation("workflow_executor_1", sub)
         .add_function("final_executor", lambda x: x).connect("main_executor", "workflow_executor_1", "final_executor"))
    mermaid, dot = f.to_mermaid(), f.to_dot()

    assert 'subgraph workflow_executor_1 ["formation: workflow_executor_1"]' in mermaid
    inner = mermaid_ids(mermaid)
    assert f"{inner['sub_exec1']} --> {inner['sub_exec2']}" in mermaid
    assert 'subgraph "cluster_workflow_executor_1"' in dot
    assert '"workflow_executor_1/sub_exec1" -> "workflow_executor_1/sub_exec2"' in dot


def test_nested_sub_workflows_are_drawn_as_nested_subgraphs() -> None:
    """From test_viz.py::test_workflow_viz_nested_sub_workflows (a cluster per level of nesting)."""
    inner = chain("inner_exec")
    middle = Formation("middle").add_function("middle_exec", lambda x: x).add_formation("inner_wf_exec", inner)
    middle.connect("middle_exec", "inner_wf_exec")
    outer = Formation("outer").add_function("outer_exec", lambda x: x).add_formation("middle_wf_exec", middle)
    outer.connect("outer_exec", "middle_wf_exec")

    assert outer.to_dot().count("subgraph ") >= 2
    assert outer.to_mermaid().count("subgraph ") >= 2
    assert '"middle_wf_exec/inner_wf_exec/inner_exec"' in outer.to_dot()


def test_conditional_and_default_edges_are_labelled_and_plain_edges_are_not() -> None:
    """From test_viz.py::test_workflow_viz_conditional_edge and ::test_workflow_viz_mermaid_conditional_edge
    (a conditional edge is marked; a plain edge is not)."""
    f = (Formation("cond").add_function("start", lambda x: x).add_function("mid", lambda x: x)
         .add_function("other", lambda x: x).add_function("end", lambda x: x)
         .connect("start", "mid", when=lambda m: m == "foo").connect("start", "other", otherwise=True).connect("mid", "end"))
    text = f.to_mermaid()
    ids = mermaid_ids(text)

    assert f"{ids['start']} -->|when| {ids['mid']}" in text
    assert f"{ids['start']} -->|otherwise| {ids['other']}" in text
    assert f"{ids['mid']} --> {ids['end']}" in text


def test_a_fan_in_is_drawn_as_one_edge_from_each_source_into_the_join() -> None:
    """From test_viz.py::test_workflow_viz_fan_in_edge_group (the fan-in is visible). Deliberately
    different: no intermediate "fan-in" node, the edges go into the join itself."""
    f = (Formation("fan").add_function("start", lambda x: x).add_function("s1", lambda x: x).add_function("s2", lambda x: x)
         .add_function("t", lambda s1, s2: [s1, s2]).connect("start", "s1", "t").connect("start", "s2", "t"))
    dot = f.to_dot()

    assert '"s1" -> "t"' in dot and '"s2" -> "t"' in dot
    assert "fan-in" not in dot


# -- the input a node accepts -----------------------------------------------------------------------


def test_a_value_the_next_node_cannot_take_fails_it_naming_the_edge_and_is_not_retried() -> None:
    """From test_executor.py (a message no handler of the executor accepts is an error naming the
    types). Ours: a ``PayloadError`` naming the edge and both types, which retries do not repeat."""

    def producer(x: int) -> Any:
        return "not a number"

    def consumer(n: int) -> int:
        return n + 1

    f = (Formation("types").add_function("producer", producer).add_function("consumer", consumer, retries=2, backoff=0.01)
         .connect("producer", "consumer"))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1)

    message = str(caught.value)
    assert "edge 'producer' → 'consumer'" in message and "str" in message and "int" in message
    assert caught.value.nodes["consumer"].attempts == 1


def test_a_run_input_the_source_cannot_take_fails_naming_the_input_edge() -> None:
    """From test_executor.py (the workflow's input must match the start executor's handler type)."""

    def consumer(n: int) -> int:
        return n + 1

    with pytest.raises(FormationRuntimeError, match="edge 'input' → 'consumer'"):
        Formation("types").add_function("consumer", consumer).run("x")
