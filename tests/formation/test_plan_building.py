"""How a plan is built: the topological order (against networkx's, on random graphs) and
the validators nodes of one plan share."""

from __future__ import annotations

import random

import networkx as nx  # type: ignore[import-untyped]
import pytest

from wingman_actors._graphs import topological_order
from wingman_actors.formation import Formation


def _random_dag(rng: random.Random) -> tuple[list[str], dict[str, list[str]]]:
    names = [f"n{i}" for i in range(rng.randint(1, 30))]
    rank = names[:]
    rng.shuffle(rank)  # edges go up this hidden ranking: acyclic, in no particular declared order
    successors: dict[str, list[str]] = {n: [] for n in names}
    for i, u in enumerate(rank):
        for v in rank[i + 1:]:
            if rng.random() < 0.15:
                successors[u].append(v)
    return names, successors


def test_the_topological_order_is_networkx_lexicographical_one_by_declaration_position() -> None:
    rng = random.Random(23)
    for _ in range(300):
        names, successors = _random_dag(rng)
        graph = nx.DiGraph()
        graph.add_nodes_from(names)
        graph.add_edges_from((u, v) for u, vs in successors.items() for v in vs)
        position = {n: i for i, n in enumerate(names)}
        expected = tuple(nx.lexicographical_topological_sort(graph, key=position.__getitem__))
        assert topological_order(names, successors) == expected


def test_the_topological_order_refuses_edges_with_a_cycle() -> None:
    with pytest.raises(ValueError, match="cycle"):
        topological_order(["a", "b"], {"a": ["b"], "b": ["a"]})


def test_nodes_of_one_plan_that_take_the_same_type_share_one_validator() -> None:
    def inc(x: int) -> int:
        return x + 1

    def show(x: int) -> str:
        return str(x)

    plan = Formation("shared").add_function("a", inc).add_function("b", inc).add_function("c", show) \
        .connect("a", "b", "c").validate()
    adapters = [plan.nodes[n].input_adapter for n in ("a", "b", "c")]
    assert adapters[0] is not None and adapters[0] is adapters[1] is adapters[2]
    assert adapters[0].validate_python("7") == 7
