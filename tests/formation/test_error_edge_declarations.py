"""Declaring error edges: what ``connect(..., on_error=True)`` and a hand-built graph may
say, what validation refuses (each with a FormationSetupError naming the edge and the
fix), and how error edges are drawn."""

from __future__ import annotations

from typing import Any

import networkx as nx
import pytest

from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationSetupError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import FormationShape
from wingman_actors.testing import ScriptedProvider


def source(x: int) -> int:
    return x


def typed_handler(failure: NodeFailure) -> str:
    return failure.node


def text_handler(text: str) -> str:
    return text


def two(handler: Any = typed_handler, **policies: Any) -> Formation:
    return Formation("f").add_function("a", source, **policies).add_function("h", handler)


def problems_of(f: Formation) -> list[str]:
    with pytest.raises(FormationSetupError) as info:
        f.validate()
    return info.value.problems


def test_connect_writes_the_on_error_edge_attribute() -> None:
    f = two().connect("a", "h", on_error=True)
    assert f.graph.edges["a", "h"] == {"on_error": True}


def test_connect_without_on_error_writes_no_attribute() -> None:
    assert two().connect("a", "h", on_error=False).graph.edges["a", "h"] == {}


def test_the_plan_keeps_error_edges_out_of_the_normal_out_edges() -> None:
    f = two().add_function("b", source).connect("a", "b").connect("a", "h", on_error=True)
    spec = f.validate().nodes["a"]
    assert [e.target for e in spec.out_edges] == ["b"]
    assert [(e.target, e.on_error) for e in spec.error_edges] == [("h", True)]


def test_connect_refuses_an_error_edge_with_a_condition() -> None:
    with pytest.raises(FormationSetupError, match="cannot also carry when="):
        two().connect("a", "h", on_error=True, when=lambda x: x > 0)
    assert two().graph.number_of_edges() == 0


def test_connect_refuses_a_non_bool_on_error_and_points_to_the_node_policy() -> None:
    with pytest.raises(FormationSetupError, match=r"on_error must be True .* on_error='skip'"):
        two().connect("a", "h", on_error="skip")  # type: ignore[arg-type]


def test_a_hand_built_error_edge_with_a_condition_is_refused_by_validate() -> None:
    graph = nx.DiGraph()
    graph.add_node("a", kind="function", fn=source)
    graph.add_node("h", kind="function", fn=typed_handler)
    graph.add_edge("a", "h", on_error=True, when=bool)
    [problem] = problems_of(Formation("hand", graph))
    assert problem.startswith("edge 'a' → 'h': an error edge (on_error=True)") and "when=" in problem


def test_a_hand_built_edge_with_a_policy_value_for_on_error_is_refused() -> None:
    graph = nx.DiGraph()
    graph.add_node("a", kind="function", fn=source)
    graph.add_node("h", kind="function", fn=typed_handler)
    graph.add_edge("a", "h", on_error="skip")
    assert problems_of(Formation("hand", graph))[0].startswith("edge 'a' → 'h': on_error must be True")


def test_a_misspelt_on_error_edge_attribute_gets_a_suggestion() -> None:
    graph = nx.DiGraph()
    graph.add_node("a", kind="function", fn=source)
    graph.add_node("h", kind="function", fn=typed_handler)
    graph.add_edge("a", "h", on_eror=True)
    assert any("did you mean 'on_error'" in p for p in problems_of(Formation("hand", graph)))


def test_a_handler_whose_parameter_cannot_take_a_node_failure_is_refused() -> None:
    [problem] = problems_of(two(text_handler).connect("a", "h", on_error=True))
    assert problem.startswith("error edge 'a' → 'h': 'h' receives a NodeFailure when 'a' fails")
    assert "annotate it as NodeFailure" in problem


def test_an_unannotated_handler_is_accepted() -> None:
    two(lambda failure: str(failure)).connect("a", "h", on_error=True).validate()


def test_a_handler_annotated_with_a_union_holding_node_failure_is_accepted() -> None:
    def either(x: int | NodeFailure) -> str:
        return str(x)

    two(either).connect("a", "h", on_error=True).validate()


def test_the_node_output_type_does_not_matter_along_an_error_edge() -> None:
    def text(x: int) -> str:
        return str(x)

    Formation("f").add_function("a", text).add_function("h", typed_handler).connect("a", "h", on_error=True).validate()


def test_an_agent_handler_prompt_may_use_only_input() -> None:
    agent = Agent("e", provider=ScriptedProvider(["ok"]))
    f = Formation("f").add_function("a", source).add_agent("h", agent, prompt="Explain: {error}")
    problems = problems_of(f.connect("a", "h", on_error=True))
    assert any("prompt uses {error}" in p for p in problems)
    good = Formation("f").add_function("a", source).add_agent("h", agent, prompt="Explain: {input}")
    good.connect("a", "h", on_error=True).validate()


def test_on_error_skip_with_an_error_edge_is_refused() -> None:
    [problem] = problems_of(two(on_error="skip").connect("a", "h", on_error=True))
    assert problem.startswith("node 'a' has on_error='skip' and error edge(s) to 'h'")


def test_on_error_fail_with_an_error_edge_is_accepted() -> None:
    two(on_error="fail").connect("a", "h", on_error=True).validate()


def test_a_cycle_closed_through_an_error_edge_is_bounded_and_accepted() -> None:
    def either(x: int | NodeFailure) -> int:
        return 0

    f = Formation("f").add_function("start", lambda x: x).add_function("a", either).add_function("h", lambda e: 1)
    f.connect("start", "a").connect("a", "h", on_error=True).connect("h", "a").validate()


def test_an_error_edge_may_close_a_cycle_back_to_the_failed_node() -> None:
    def either(x: int | NodeFailure) -> int:
        return 0

    plan = Formation("f").add_function("a", either).connect("a", "a", on_error=True).validate()
    [edge] = plan.nodes["a"].error_edges
    assert (edge.back, plan.nodes["a"].is_sink) == (True, True)


def test_an_error_edge_is_conditional_in_the_run_store_shape() -> None:
    plain = two().connect("a", "h")
    guarded = two().connect("a", "h", on_error=True)
    assert FormationShape.of(plain.graph).diff(FormationShape.of(guarded.graph)) == [
        "edge 'a' → 'h' was unconditional, is now conditional"
    ]


def test_mermaid_draws_an_error_edge_dotted_red_and_labelled() -> None:
    f = two().add_function("b", source).connect("a", "b").connect("a", "h", on_error=True)
    lines = f.to_mermaid().splitlines()
    assert "    a --> b" in lines
    assert "    a -.->|on error| h" in lines
    assert lines[-1] == "    linkStyle 1 stroke:#d62728"


def test_dot_draws_an_error_edge_dashed_red_and_labelled() -> None:
    dot = two().connect("a", "h", on_error=True).to_dot()
    assert '"a" -> "h" [label="on error", style=dashed, color="#d62728", fontcolor="#d62728"];' in dot


def test_a_plan_is_drawn_with_its_error_edges_too() -> None:
    from wingman_actors.formation import to_mermaid

    plan = two().connect("a", "h", on_error=True).validate()
    assert "a -.->|on error| h" in to_mermaid(plan)
