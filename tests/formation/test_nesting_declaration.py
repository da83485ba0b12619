"""Nested formations at declaration: the builder, validation across the boundary, and
drawing the inner formation."""

from __future__ import annotations

from typing import Any

import networkx as nx  # type: ignore[import-untyped]
import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationSetupError
from wingman_actors.formation import to_dot, to_mermaid


def inc(x: int) -> int:
    return x + 1


def shout(s: str) -> str:
    return s.upper()


def count(s: str) -> int:
    return len(s)


def problems(formation: Formation) -> list[str]:
    with pytest.raises(FormationSetupError) as caught:
        formation.validate()
    return caught.value.problems


def test_add_formation_writes_exactly_the_documented_attributes() -> None:
    inner = Formation("inner").add_function("inc", inc)
    outer = Formation("outer").add_formation("sub", inner, retries=2)
    assert dict(outer.graph.nodes["sub"]) == {"kind": "formation", "formation": inner, "retries": 2}


def test_add_formation_refuses_what_is_not_a_formation() -> None:
    with pytest.raises(FormationSetupError, match=r"formation must be a Formation.*got DiGraph"):
        Formation("outer").add_formation("sub", nx.DiGraph())  # type: ignore[arg-type]


def test_add_formation_refuses_the_formation_itself() -> None:
    outer = Formation("outer")
    with pytest.raises(FormationSetupError, match="cannot be nested in itself"):
        outer.add_formation("me", outer)


def test_a_formation_nested_in_itself_through_another_is_refused_naming_the_loop() -> None:
    a, b = Formation("a"), Formation("b")
    a.add_formation("to_b", b)
    b.add_formation("to_a", a)
    [problem] = problems(a)
    assert "formation node 'to_a' nests formation 'a' inside itself ('a' → 'b' → 'a')" in problem
    assert problem.startswith("formation node 'to_b' (formation 'b'): ")


def test_a_hand_built_formation_node_nesting_its_own_formation_is_refused() -> None:
    graph = nx.DiGraph()
    outer = Formation("outer", graph)
    graph.add_node("me", kind="formation", formation=outer)
    assert problems(outer) == [
        "formation node 'me' nests formation 'outer' inside itself ('outer' → 'outer'); a formation cannot "
        "contain itself, directly or through another nested formation: nest a different one"
    ]


def test_the_inner_formations_problems_are_reported_with_the_nodes_name() -> None:
    inner = Formation("inner").add_function("two", lambda a, b: a)
    [problem] = problems(Formation("outer").add_formation("sub", inner))
    assert problem.startswith("formation node 'sub' (formation 'inner'): source function node 'two' must accept")


def test_a_formation_node_without_a_formation_is_reported() -> None:
    graph = nx.DiGraph()
    graph.add_node("sub", kind="formation")
    assert problems(Formation("hand", graph)) == [
        "formation node 'sub' needs formation=<a Formation> (the formation it runs), got nothing"
    ]


def test_a_function_attribute_on_a_formation_node_is_reported() -> None:
    graph = nx.DiGraph()
    graph.add_node("sub", kind="formation", formation=Formation("inner").add_function("inc", inc), fn=inc)
    assert problems(Formation("hand", graph)) == [
        "formation node 'sub' has fn=, which only applies to function and map nodes; remove it"
    ]


def test_what_reaches_a_formation_node_is_checked_against_the_inner_sources() -> None:
    inner = Formation("inner").add_function("shout", shout)
    outer = Formation("outer").add_function("inc", inc).add_formation("sub", inner).connect("inc", "sub")
    assert problems(outer) == [
        "edge 'inc' → 'sub': 'inc' outputs int but formation node 'sub' runs formation 'inner', whose source "
        "'shout' expects str; make them agree or put a converting function node between them"
    ]


def test_the_sources_of_a_formation_nested_two_deep_are_checked_by_path() -> None:
    middle = Formation("middle").add_formation("deep", Formation("inner").add_function("shout", shout))
    outer = Formation("outer").add_function("inc", inc).add_formation("mid", middle).connect("inc", "mid")
    [problem] = problems(outer)
    assert "whose source 'deep/shout' expects str" in problem


def test_the_inner_sinks_output_type_is_the_formation_nodes_output_type() -> None:
    inner = Formation("inner").add_function("count", count)
    outer = Formation("outer").add_formation("sub", inner).add_function("shout", shout).connect("sub", "shout")
    [problem] = problems(outer)
    assert problem.startswith("edge 'sub' → 'shout': 'sub' outputs int but parameter 's' of 'shout' expects str")


def test_matching_types_across_the_boundary_validate() -> None:
    inner = Formation("inner").add_function("shout", shout).add_function("count", count).connect("shout", "count")
    outer = Formation("outer").add_function("text", str).add_formation("sub", inner).add_function("inc", inc)
    plan = outer.connect("text", "sub", "inc").validate()
    assert plan.nodes["sub"].output_type is int
    assert plan.nodes["sub"].subplan is not None and plan.nodes["sub"].subplan.name == "inner"


def test_a_formation_with_several_sinks_outputs_a_dict() -> None:
    inner = Formation("inner").add_function("shout", shout).add_function("count", count)
    assert Formation("outer").add_formation("sub", inner).validate().nodes["sub"].output_type == dict[str, Any]


def test_mermaid_draws_the_inner_formation_as_a_subgraph() -> None:
    inner = Formation("inner").add_function("a", inc).add_function("b", inc).connect("a", "b")
    outer = Formation("outer").add_function("src", inc).add_formation("sub", inner).connect("src", "sub")
    assert to_mermaid(outer).splitlines() == [
        "flowchart TD",
        '    src["src"]',
        '    subgraph sub ["formation: sub"]',
        '        sub_a["a"]',
        '        sub_b["b"]',
        "        sub_a --> sub_b",
        "    end",
        "    src --> sub",
    ]


def test_mermaid_of_a_plan_with_a_formation_node_equals_mermaid_of_its_formation() -> None:
    inner = Formation("inner").add_function("a", inc)
    outer = Formation("outer").add_formation("sub", Formation("mid").add_formation("deep", inner))
    assert to_mermaid(outer.validate()) == to_mermaid(outer)
    assert '            sub_deep_a["a"]' in to_mermaid(outer).splitlines()


def test_mermaid_keeps_ids_unique_between_outer_and_inner_nodes() -> None:
    inner = Formation("inner").add_function("a", inc)
    outer = Formation("outer").add_formation("sub", inner).add_function("sub_a", inc).connect("sub", "sub_a")
    lines = to_mermaid(outer).splitlines()
    assert '        sub_a_2["a"]' in lines  # the outer node keeps its id; the inner one gets another
    assert "    sub --> sub_a" in lines


def test_dot_draws_the_inner_formation_as_a_cluster_and_attaches_edges_to_it() -> None:
    inner = Formation("inner").add_function("a", inc).add_function("b", inc).connect("a", "b")
    outer = (Formation("outer").add_function("src", inc).add_formation("sub", inner).add_function("out", inc)
             .connect("src", "sub", "out"))
    text = to_dot(outer)
    assert "    compound=true;" in text
    assert '    subgraph "cluster_sub" {\n        label="formation: sub";\n        "sub/a" [shape=box' in text
    assert '    "src" -> "sub/a" [lhead="cluster_sub"];' in text
    assert '    "sub/b" -> "out" [ltail="cluster_sub"];' in text


def test_a_formation_nested_in_itself_is_drawn_without_end() -> None:
    graph = nx.DiGraph()
    outer = Formation("outer", graph)
    graph.add_node("me", kind="formation", formation=outer)
    assert to_mermaid(outer).splitlines() == ["flowchart TD", '    me["formation: me"]']
    assert '"me" [shape=box, label="formation: me"];' in to_dot(outer)


def test_a_type_route_narrows_what_reaches_a_formation_node() -> None:
    def either(x: int) -> str | int:
        return str(x) if x % 2 else x

    inner = Formation("inner").add_function("shout", shout)
    outer = Formation("outer").add_function("either", either).add_formation("sub", inner).add_function("num", inc)
    outer.connect("either", "sub", when=str).connect("either", "num", otherwise=True)
    assert outer.validate().nodes["sub"].output_type is str


def test_formations_nested_deeper_than_the_limit_are_refused_and_the_limit_runs() -> None:
    from wingman_actors.formation._subplans import MAX_NESTING

    def tower(levels: int) -> Formation:
        f = Formation("l0").add_function("inc", inc)
        for i in range(1, levels + 1):
            f = Formation(f"l{i}").add_formation("sub", f)
        return f

    assert tower(MAX_NESTING).run(0).output == 1  # the deepest nesting allowed completes
    with pytest.raises(FormationSetupError, match=rf"nest more than {MAX_NESTING} levels deep .*flatten some"):
        tower(MAX_NESTING + 1).validate()


def test_a_node_named_like_the_path_of_a_nested_node_is_refused() -> None:
    # inner nodes are named by path ("review/check") in events and result.nodes: an outer
    # node of that name took the inner node's trace over, and its events could not be told apart
    review = Formation("review").add_function("check", inc)
    f = Formation("blog").add_formation("review", review).add_function("review/check", inc).connect("review", "review/check")
    with pytest.raises(FormationSetupError, match=r"node 'review/check' of formation 'blog' is named like a node "
                                                  r"inside formation node 'review'.*rename it"):
        f.validate()


def test_a_node_named_like_a_nested_path_is_refused_inside_an_inner_formation_too() -> None:
    deep = Formation("deep").add_function("x", inc)
    inner = Formation("inner").add_formation("d", deep).add_function("d/x", inc).connect("d", "d/x")
    with pytest.raises(FormationSetupError, match=r"node 'd/x' of formation 'inner' is named like"):
        Formation("outer").add_formation("i", inner).validate()
