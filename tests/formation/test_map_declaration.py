"""Declaring map nodes: the builder's attributes, validation of the list input, the item
type and the function's signature, the output type downstream, and drawing."""

from __future__ import annotations

from typing import Any

import networkx as nx
import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationSetupError


def words(text: str) -> list[str]:
    return text.split()


def length(word: str) -> int:
    return len(word)


async def alength(word: str) -> int:
    return len(word)


def problems(f: Formation) -> list[str]:
    with pytest.raises(FormationSetupError) as info:
        f.validate()
    return info.value.problems


def test_add_map_writes_kind_fn_and_max_workers_and_the_policies() -> None:
    f = Formation("m").add_map("len", length, max_workers=5, retries=2, timeout=3)

    assert dict(f.graph.nodes["len"]) == {"kind": "map", "fn": length, "max_workers": 5, "retries": 2, "timeout": 3}


def test_the_output_type_is_a_list_of_the_functions_return_type() -> None:
    f = Formation("m").add_function("words", words).add_map("len", length).connect("words", "len")

    assert f.validate().nodes["len"].output_type == list[int]


def test_the_output_type_of_an_async_function_is_a_list_of_what_it_returns_once_awaited() -> None:
    f = Formation("m").add_function("words", words).add_map("len", alength).connect("words", "len")

    assert f.validate().nodes["len"].output_type == list[int]


def test_a_map_output_feeding_a_parameter_of_another_type_is_refused() -> None:
    def shout(text: str) -> str:
        return text.upper()

    f = (Formation("m").add_function("words", words).add_map("len", length).add_function("shout", shout)
         .connect("words", "len", "shout"))

    assert any("'len' outputs list[int]" in p and "expects str" in p for p in problems(f))


def test_a_map_fed_something_that_is_not_a_list_is_refused_naming_the_edge() -> None:
    f = Formation("m").add_function("one", length).add_map("len", length).connect("one", "len")

    (problem,) = problems(f)
    assert "edge 'one' → 'len'" in problem and "needs a list" in problem and "outputs int" in problem


def test_items_of_another_type_than_the_parameter_are_refused() -> None:
    def numbers(n: int) -> list[int]:
        return list(range(n))

    f = Formation("m").add_function("numbers", numbers).add_map("len", length).connect("numbers", "len")

    (problem,) = problems(f)
    assert "whose items are int" in problem and "parameter 'word' of map node 'len' expects str" in problem


def test_a_map_with_several_predecessors_is_refused_as_it_would_get_a_dict() -> None:
    f = (Formation("m").add_function("a", words).add_function("b", words).add_map("len", length)
         .connect("a", "len").connect("b", "len"))

    (problem,) = problems(f)
    assert "map node 'len' has several forward predecessors" in problem and "merge them into a list" in problem


def test_a_function_that_cannot_take_one_item_is_refused() -> None:
    def pair(a: str, b: str) -> str:
        return a + b

    (problem,) = problems(Formation("m").add_map("pair", pair))
    assert "map node 'pair' calls its function with one item at a time" in problem and "pair(a: str, b: str)" in problem


def test_add_map_refuses_a_function_that_is_not_callable() -> None:
    with pytest.raises(FormationSetupError, match=r"add_map\('m', \.\.\.\): fn must be callable.*got int"):
        Formation("m").add_map("m", 3)  # type: ignore[arg-type]


def test_a_formation_passed_to_add_map_positionally_is_refused_naming_the_keyword() -> None:
    inner = Formation("inner").add_function("up", str.upper)
    with pytest.raises(FormationSetupError, match=r"fn is the formation 'inner'.*add_map\('box', formation=\.\.\.\)"):
        Formation("m").add_map("box", inner)  # type: ignore[arg-type]


def test_add_map_refuses_a_negative_max_workers() -> None:
    with pytest.raises(FormationSetupError, match=r"max_workers must be an int >= 0"):
        Formation("m").add_map("m", length, max_workers=-1)


def test_add_map_takes_a_function_or_a_formation_not_both() -> None:
    with pytest.raises(FormationSetupError, match=r"exactly one of fn .* got both fn and formation"):
        Formation("m").add_map("m", length, formation=Formation("inner"))
    with pytest.raises(FormationSetupError, match=r"got neither fn nor formation"):
        Formation("m").add_map("m")


def test_a_hand_built_map_node_without_fn_is_refused_naming_the_fix() -> None:
    graph = nx.DiGraph()
    graph.add_node("m", kind="map", max_workers=2)

    (problem,) = problems(Formation("m", graph))
    assert "map node 'm' has neither fn= nor formation=" in problem and "fn=<a callable taking one item>" in problem


def test_an_agent_attribute_on_a_map_node_is_refused() -> None:
    graph = nx.DiGraph()
    graph.add_node("m", kind="map", fn=length, prompt="{input}")

    assert any("map node 'm' has prompt=" in p for p in problems(Formation("m", graph)))


def test_max_workers_on_a_function_node_names_fleet_and_map_nodes() -> None:
    with pytest.raises(FormationSetupError, match=r"max_workers applies only to fleet and map nodes"):
        Formation("m").add_function("f", length, max_workers=2)


@pytest.mark.parametrize(("draw", "expected"), [
    (Formation.to_mermaid, 'len[/"map: len \u00d73"/]'),
    (Formation.to_dot, '"len" [shape=parallelogram, label="map: len \u00d73"];'),
])
def test_a_map_node_is_drawn_as_a_parallelogram_with_its_worker_count(draw: Any, expected: str) -> None:
    f = Formation("m").add_function("words", words).add_map("len", length, max_workers=3).connect("words", "len")

    assert expected in draw(f)
