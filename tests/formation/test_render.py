"""Rendering formations as Mermaid and Graphviz DOT text."""

from __future__ import annotations

from typing import Any

import networkx as nx  # type: ignore[import-untyped]
import pytest

from wingman_actors import Agent
from wingman_actors.formation import Formation, to_dot, to_mermaid
from wingman_actors.testing import ScriptedProvider

TIMES = "\u00d7"  # the multiplication sign in fleet labels


def agent() -> Agent:
    return Agent("a", provider=ScriptedProvider([]))


def split(text: str) -> list[str]:
    return text.split()


def approved(answers: list[str]) -> bool:
    return bool(answers)


def rejected(answers: list[str]) -> bool:
    return not answers


def review(answers: list[str]) -> list[str]:
    return answers


def research() -> Formation:
    """split → many (fleet of 3) → review → write when approved; review → many when rejected (back edge)."""
    return (
        Formation("research")
        .add_function("split", split)
        .add_fleet("many", agent(), max_workers=3)
        .add_function("review", review)
        .add_agent("write", agent())
        .connect("split", "many", "review")
        .connect("review", "write", when=approved)
        .connect("review", "many", when=rejected)
    )


def test_mermaid_starts_with_a_top_down_flowchart() -> None:
    assert to_mermaid(research()).splitlines()[0] == "flowchart TD"


def test_mermaid_draws_each_kind_with_its_shape() -> None:
    lines = to_mermaid(research()).splitlines()
    assert '    split["split"]' in lines
    assert '    write("agent: write")' in lines
    assert f'    many[["fleet: many {TIMES}3"]]' in lines


def test_mermaid_fleet_without_a_worker_limit_shows_n() -> None:
    assert f'x[["fleet: x {TIMES}n"]]' in to_mermaid(Formation("f").add_fleet("x", agent()))


def test_mermaid_draws_plain_conditional_and_back_edges() -> None:
    lines = to_mermaid(research()).splitlines()
    assert "    split --> many" in lines
    assert "    review -->|when: approved| write" in lines
    assert "    review -.->|when: rejected| many" in lines


def test_mermaid_lambda_predicate_is_labelled_when() -> None:
    f = Formation("f").add_function("a", split).add_function("b", review).connect("a", "b", when=lambda x: True)
    assert "    a -->|when| b" in to_mermaid(f)


def test_mermaid_sanitizes_ids_and_keeps_labels() -> None:
    f = Formation("f").add_function('say "hi"', split).add_function("end", review).add_function("2nd step", review)
    f.connect('say "hi"', "end", "2nd step")
    text = to_mermaid(f)
    assert 'say__hi_["say #quot;hi#quot;"]' in text
    assert 'n_end["end"]' in text and 'n_2nd_step["2nd step"]' in text
    assert "say__hi_ --> n_end" in text and "n_end --> n_2nd_step" in text


def test_mermaid_keeps_ids_unique_after_sanitizing() -> None:
    f = Formation("f").add_function("a-b", split).add_function("a b", review).connect("a-b", "a b")
    assert "a_b --> a_b_2" in to_mermaid(f)


def test_mermaid_draws_an_invalid_formation_with_unknown_nodes_as_question_marks() -> None:
    f = Formation("f").add_function("a", split)
    f.graph.add_edge("a", "ghost")
    text = to_mermaid(f)
    assert 'ghost["? ghost"]' in text and "a --> ghost" in text


def test_mermaid_of_a_plan_equals_mermaid_of_its_formation() -> None:
    f = research()
    assert to_mermaid(f.validate()) == to_mermaid(f) == f.to_mermaid()


def test_dot_uses_box_ellipse_and_box3d() -> None:
    text = to_dot(research())
    assert '"split" [shape=box, label="split"];' in text
    assert '"write" [shape=ellipse, label="agent: write"];' in text
    assert f'"many" [shape=box3d, label="fleet: many {TIMES}3"];' in text


def test_dot_labels_conditional_edges_and_dashes_back_edges() -> None:
    text = to_dot(research())
    assert '"split" -> "many";' in text
    assert '"review" -> "write" [label="when: approved"];' in text
    assert '"review" -> "many" [label="when: rejected", style=dashed];' in text


def test_dot_is_a_named_digraph() -> None:
    lines = research().to_dot().splitlines()
    assert lines[0] == 'digraph "research" {' and lines[-1] == "}"


def test_dot_escapes_quotes_and_draws_unknown_nodes_dotted() -> None:
    f = Formation("f").add_function('say "hi"', split)
    f.graph.add_edge('say "hi"', "ghost")
    text = to_dot(f)
    assert '"say \\"hi\\"" -> "ghost";' in text
    assert '"ghost" [shape=box, label="? ghost", style=dotted];' in text


def test_render_accepts_a_bare_digraph() -> None:
    g = nx.DiGraph()
    g.add_node("a", kind="agent")
    assert 'a("agent: a")' in to_mermaid(g)


@pytest.mark.parametrize("render", [to_mermaid, to_dot])
def test_render_refuses_other_objects(render: Any) -> None:
    with pytest.raises(TypeError, match=r"pass a Formation, a Plan or a networkx\.DiGraph"):
        render([1, 2])


def test_error_edges_inside_and_around_a_nested_formation_are_styled_by_their_link_numbers() -> None:
    inner = Formation("inner").add_function("a", lambda x: x).add_function("h", lambda f: 0)
    inner.connect("a", "h", on_error=True)
    outer = (
        Formation("outer").add_function("s", lambda x: x).add_formation("sub", inner).add_function("h2", lambda f: 1)
        .connect("s", "sub").connect("sub", "h2", on_error=True)
    )
    lines = outer.to_mermaid().splitlines()
    links = [line.strip() for line in lines if "-->" in line or "-.->" in line]
    assert links == ["sub_a -.->|on error| sub_h", "s --> sub", "sub -.->|on error| h2"]
    assert lines[-1] == "    linkStyle 0,2 stroke:#d62728"
