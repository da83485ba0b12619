"""A formation's fingerprint is stable and says, through the diff, what differs."""

from __future__ import annotations

import subprocess
import sys

import networkx as nx
import pytest

from wingman_actors import Formation
from wingman_actors.formation._plan import back_edges as plan_back_edges
from wingman_actors.store import FormationMismatchError, FormationShape, RunStore, fingerprint


def _inc(x: int) -> int:
    return x + 1


def _small(x: int) -> bool:
    return x < 3


def _loop() -> Formation:
    return (Formation("loop").add_function("start", _inc).add_function("step", _inc).add_function("done", _inc)
            .connect("start", "step").connect("step", "step", when=_small).connect("step", "done"))


def test_the_same_formation_built_twice_has_the_same_fingerprint() -> None:
    assert fingerprint(_loop().graph) == fingerprint(_loop().graph)


def test_the_fingerprint_ignores_functions_and_policies() -> None:
    a = Formation("x").add_function("a", _inc).add_function("b", _inc).connect("a", "b")
    b = Formation("y").add_function("a", abs, retries=3).add_function("b", str).connect("a", "b")
    assert fingerprint(a.graph) == fingerprint(b.graph)


def test_the_fingerprint_does_not_depend_on_insertion_order_of_an_acyclic_graph() -> None:
    g1, g2 = nx.DiGraph(), nx.DiGraph()
    for n in "abc":
        g1.add_node(n, kind="function")
    for n in "cba":
        g2.add_node(n, kind="function")
    g1.add_edges_from([("a", "b"), ("a", "c")])
    g2.add_edges_from([("a", "c"), ("a", "b")])
    assert fingerprint(g1) == fingerprint(g2)


def test_the_fingerprint_is_the_same_in_another_process() -> None:
    code = ("from tests.store.test_shape import _loop; from wingman_actors.store import fingerprint; "
            "print(fingerprint(_loop().graph))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30)
    assert out.stdout.strip() == fingerprint(_loop().graph)


def test_a_changed_kind_changes_the_fingerprint_and_the_diff_names_the_node() -> None:
    old = _loop()
    new = _loop()
    new.graph.nodes["done"]["kind"] = "agent"
    assert fingerprint(old.graph) != fingerprint(new.graph)
    assert FormationShape.of(old.graph).diff(FormationShape.of(new.graph)) == [
        "node 'done': kind was 'function', is now 'agent'"]


def test_the_diff_lists_missing_and_new_nodes_and_edges_and_changed_flags() -> None:
    old = Formation("f").add_function("a", _inc).add_function("b", _inc).add_function("c", _inc)
    old.connect("a", "b").connect("b", "c", when=_small)
    new = Formation("f").add_function("a", _inc).add_function("b", _inc).add_function("d", _inc)
    new.connect("a", "b").connect("b", "d").connect("a", "d")
    assert FormationShape.of(old.graph).diff(FormationShape.of(new.graph)) == [
        "node 'c' (function) is missing",
        "node 'd' (function) is new",
        "conditional edge 'b' → 'c' is missing",
        "edge 'a' → 'd' is new",
        "edge 'b' → 'd' is new",
    ]
    cond = Formation("f").add_function("a", _inc).add_function("b", _inc).connect("a", "b", when=_small)
    plain = Formation("f").add_function("a", _inc).add_function("b", _inc).connect("a", "b")
    assert FormationShape.of(cond.graph).diff(FormationShape.of(plain.graph)) == [
        "edge 'a' → 'b' was conditional, is now unconditional"]


def test_the_diff_says_when_a_back_edge_became_forward() -> None:
    g1 = nx.DiGraph([("a", "b"), ("b", "a")])
    g2 = nx.DiGraph([("b", "a"), ("a", "b")])
    nx.set_node_attributes(g1, "function", "kind")
    nx.set_node_attributes(g2, "function", "kind")
    g2.add_node("s", kind="function")
    g2.add_edge("s", "b")
    diff = FormationShape.of(g1).diff(FormationShape.of(g2))
    assert "edge 'b' → 'a' was a back edge, is now a forward edge" in diff
    assert "edge 'a' → 'b' was a forward edge, is now a back edge" in diff


def test_the_same_shape_has_no_diff_and_survives_json() -> None:
    shape = FormationShape.of(_loop().graph)
    again = FormationShape.from_json(shape.to_json())
    assert again == shape and again.fingerprint == shape.fingerprint and shape.diff(again) == []


@pytest.mark.parametrize("edges", [
    [("a", "b"), ("b", "c")],
    [("a", "b"), ("b", "a")],
    [("s", "a"), ("a", "b"), ("b", "a"), ("b", "c"), ("c", "c")],
    [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "b")],
    [("x", "y"), ("y", "x"), ("p", "q")],
])
def test_back_flags_follow_the_runtime_plan(edges: list[tuple[str, str]]) -> None:
    g = nx.DiGraph(edges)
    shape = FormationShape.of(g)
    assert {(e.source, e.target) for e in shape.edges if e.back} == plan_back_edges(g)


def test_claim_run_refuses_another_formation_with_the_differences(store: RunStore) -> None:
    old = _loop()
    run_id = store.begin_run("loop", FormationShape.of(old.graph), 0)
    store.set_status(run_id, "failed", error="boom")
    new = _loop().add_function("extra", _inc).connect("done", "extra")
    with pytest.raises(FormationMismatchError) as err:
        store.claim_run(run_id, FormationShape.of(new.graph), formation="loop")
    assert err.value.run_id == run_id and err.value.formation == "loop"
    assert err.value.differences == ["node 'extra' (function) is new", "edge 'done' → 'extra' is new"]
    assert "does not match run" in str(err.value) and "node 'extra' (function) is new" in str(err.value)
    assert store.get(run_id).status == "failed"  # not claimed
    assert store.claim_run(run_id, FormationShape.of(old.graph)).run.status == "running"
