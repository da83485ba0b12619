"""Map-over-list behaviours ported from Google ADK's own test suite (google/adk-python,
``tests/unittests/agents/test_map_agent.py``): a MapAgent runs its sub-agent once per item
of a JSON list, maps nest (a MapAgent over a MapAgent, a tree of maps and loops), and an
empty list runs nothing. Here a MapAgent is ``add_map(name, formation=...)`` over a list
input; its sub-agent is an agent node answering from the testkit's ``ScriptedProvider``
(ADK's ``OneTwoThreeModel``: ``"5"`` → ``'["5", "6", "7"]'``). (Split from
``test_peer_adk.py``, whose module docstring maps ADK's agents onto formations.)

Deliberately different: ADK's MapAgent takes a JSON string and its outputs are events
sorted afterwards; ours takes a list and outputs the list of results in item order.
"""

from __future__ import annotations

import json
import logging
import threading

import pytest

from wingman_actors import Agent, Formation
from wingman_actors.core import InferenceRequest
from wingman_actors.testing import ScriptedProvider


def one_two_three(request: InferenceRequest) -> str:
    """ADK's OneTwoThreeModel: the number in the last message, and the next two, as JSON."""
    text = request.messages[-1].content[-1].text or ""
    return json.dumps([str(int(text) + i) for i in range(3)])


def counting(name: str = "mock_agent") -> Formation:
    """A formation of one agent node answering as OneTwoThreeModel."""
    return Formation(name).add_agent(name, Agent(name, provider=ScriptedProvider([one_two_three], cycle=True)))


def test_a_map_over_a_formation_that_maps_starts_threads_for_the_items_not_the_product_of_the_widths(
        caplog: pytest.LogCaptureFixture) -> None:
    """adk test_map_agent.py::test_map_agent_with_map_agent (an outer map over an inner map
    of agents). Each replica of the inner map node started an inner formation of its own,
    100 replicas wide (the default width), and the outer map gave the inner map node 100
    replicas: 10,000 node threads for six items, seconds to start and stop, and "still
    busy after stop" warnings. The replicas of a map node now share one inner formation."""
    peak = [0]

    def leaf(x: str) -> str:
        peak[0] = max(peak[0], threading.active_count())
        return x + "!"

    inner_map = Formation("inner").add_map("inner_map", formation=Formation("leaf").add_function("leaf", leaf))
    outer = Formation("outer").add_map("outer_map", formation=inner_map)
    with caplog.at_level(logging.WARNING):
        result = outer.run([["10", "11"], ["20", "21"], ["30", "31"]], timeout=30)
    assert result.output == [["10!", "11!"], ["20!", "21!"], ["30!", "31!"]]
    assert peak[0] < 1000
    assert not [r for r in caplog.records if "still busy" in r.getMessage()]


def test_a_map_over_a_formation_runs_the_items_of_a_nested_formation_node_at_once() -> None:
    """adk test_map_agent.py::test_map_agent_with_sequential_or_parallel_agent (the map's
    sub-agent is itself a composite: ours, a formation node inside the mapped formation).
    The items must run at once, as they do when the leaf is mapped directly: three items
    meet at a barrier. The nested node's inner formation was not widened with the map, so
    its one replica ran the items one after another (each waited at the barrier alone)."""
    together = threading.Barrier(3, timeout=5)

    def meet(x: int) -> int:
        together.wait()
        return x * 10

    per_item = Formation("per_item").add_formation("subagent", Formation("leaf").add_function("meet", meet))
    result = Formation("map").add_map("map_agent", formation=per_item).run([1, 2, 3], timeout=30)
    assert result.output == [10, 20, 30]


def expected(*starts: int) -> list[str]:
    return [json.dumps([str(j) for j in range(i, i + 3)]) for i in starts]


def test_a_map_of_an_agent_answers_each_of_a_hundred_items_in_item_order() -> None:
    # adk test_map_agent.py::test_map_agent_text_input
    m = Formation("map").add_map("map_agent", formation=counting())
    assert m.run([str(i) for i in range(100)], timeout=60).output == expected(*range(100))


def test_a_map_over_an_empty_list_outputs_an_empty_list_and_asks_no_model() -> None:
    # adk test_map_agent.py::test_map_agent_empty_input (the model would raise if asked)
    provider = ScriptedProvider([RuntimeError("never asked")])
    inner = Formation("item").add_agent("test", Agent("test", provider=provider))
    assert Formation("map").add_map("map_agent", formation=inner).run([]).output == []
    assert provider.requests == []


def test_a_map_inside_a_loop_maps_the_list_each_iteration_gives_it() -> None:
    # adk test_map_agent.py::test_map_agent_with_loop_agent_parent (LoopAgent[MapAgent], max_iterations=2)
    f = (Formation("test_loop").add_function("entry", json.loads)
         .add_map("map_agent", formation=counting(), max_visits=2)
         .add_function("flatten", lambda answers: [n for a in answers for n in json.loads(a)], max_visits=2)
         .add_function("done", lambda numbers: numbers).connect("entry", "map_agent", "flatten")
         .connect("flatten", "map_agent", when=lambda numbers: len(numbers) < 9).connect("flatten", "done", otherwise=True))
    result = f.run(json.dumps(["0"]), timeout=30)
    assert result.nodes["map_agent"].outputs == [expected(0), expected(0, 1, 2)]
    assert result.output == ["0", "1", "2", "1", "2", "3", "2", "3", "4"]


def test_a_map_over_a_map_of_agents_answers_every_inner_item_in_order() -> None:
    # adk test_map_agent.py::test_map_agent_with_map_agent (items 10, 11 / 20, 21 / 30, 31)
    inner_map = Formation("inner").add_map("inner_map", formation=counting("nested_mock"))
    outer = Formation("outer").add_map("outer_map", formation=inner_map)
    result = outer.run([["10", "11"], ["20", "21"], ["30", "31"]], timeout=30)
    assert result.output == [expected(10, 11), expected(20, 21), expected(30, 31)]


def test_a_map_over_an_agent_followed_by_a_map_of_its_answer_answers_the_whole_tree() -> None:
    # adk test_map_agent.py::test_map_agent_tree (MapAgent[Loop[mock_0, MapAgent[mock_1]]], one iteration)
    per_item = (Formation("main_sequential").add_agent("mock_0", Agent("mock_0", provider=ScriptedProvider(
        [one_two_three], cycle=True))).add_function("parse", json.loads)
        .add_map("map_inner", formation=counting("mock_1")).connect("mock_0", "parse", "map_inner"))
    result = Formation("map_outer").add_map("map_outer", formation=per_item).run(["0", "1"], timeout=30)
    assert result.output == [expected(0, 1, 2), expected(1, 2, 3)]


def test_the_replicas_of_a_map_node_run_their_items_at_once_on_the_inner_formation_they_share() -> None:
    # adk test_graph_patterns.py::test_max_parallelism_all_complete (DynamicParallelGroup, max_parallelism=2),
    # two runs in flight on a map node with two replicas: four items at once, as with one inner formation each
    together = threading.Barrier(4, timeout=5)

    def meet(x: int) -> int:
        together.wait()
        return x + 1

    f = Formation("p").add_map("p", formation=Formation("leaf").add_function("meet", meet), max_workers=2,
                               concurrency=2)
    with f.start() as running:
        first, second = running.submit([1, 2]), running.submit([3, 4])
        assert (first.result(10).output, second.result(10).output) == ([2, 3], [4, 5])
