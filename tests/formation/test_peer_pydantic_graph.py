"""Behaviours ported from pydantic-graph's own test suite (pydantic/pydantic-ai,
``tests/graph``: the beta GraphBuilder's broadcasts, maps, joins, reducers and decisions,
and the classic ``Graph``'s runs and setup errors), translated to formations.

Each test names the peer test it comes from. pydantic-graph's joins are reducers over
whatever reaches them; ours are per-visit fan-ins (a dict keyed by predecessor) and map
nodes (a list in item order), so "sorted(result)" becomes an exact, ordered assertion.
Where DESIGN deliberately differs, a comment says so."""

from __future__ import annotations

import threading
import time
from typing import Any

import networkx as nx  # type: ignore[import-untyped]
import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, NoRouteError


def add(n: int) -> Any:
    return lambda x: x + n


def test_a_broadcast_reaches_every_step_and_the_join_collects_them_all() -> None:
    """pydantic-graph beta test_broadcast_and_spread.py::test_broadcast_to_multiple_steps."""
    f = (Formation("broadcast").add_function("source", lambda _: 10)
         .add_function("add_one", add(1)).add_function("add_two", add(2)).add_function("add_three", add(3))
         .add_function("collect", lambda d: sorted(d.values())))
    for step in ("add_one", "add_two", "add_three"):
        f.connect("source", step, "collect")
    assert f.run(None).output == [11, 12, 13]


def test_a_map_over_a_list_gives_every_result_in_item_order() -> None:
    """pydantic-graph beta test_broadcast_and_spread.py::test_map_over_list (ours keeps the
    item order, which pydantic-graph does not promise)."""
    f = (Formation("map").add_function("generate_list", lambda _: [1, 2, 3, 4, 5])
         .add_map("square", lambda x: x * x).connect("generate_list", "square"))
    assert f.run(None).output == [1, 4, 9, 16, 25]


def test_a_map_over_an_empty_list_gives_an_empty_list_and_the_join_still_fires() -> None:
    """pydantic-graph beta test_broadcast_and_spread.py::test_map_empty_list and
    test_edge_cases.py::test_null_reducer_with_no_inputs."""
    seen: list[Any] = []
    f = (Formation("empty").add_function("generate_empty", lambda _: [])
         .add_map("double", lambda x: x * 2).add_function("after", lambda xs: seen.append(xs) or len(xs))
         .connect("generate_empty", "double", "after"))
    assert f.run(None).output == 0
    assert seen == [[]]


def test_a_map_of_one_item_gives_a_list_of_one() -> None:
    """pydantic-graph beta test_edge_cases.py::test_map_single_item."""
    f = Formation("one").add_function("single_item", lambda _: [42]).add_map("process", lambda x: x * 2)
    assert f.connect("single_item", "process").run(None).output == [84]


def test_the_step_after_a_map_runs_once_with_every_result() -> None:
    """pydantic-graph beta test_joins_and_reducers.py::test_downstream_join_id_non_empty_map_reuses_parent_reducer."""
    seen: list[list[int]] = []

    def after_join(xs: list[int]) -> list[int]:
        seen.append(xs)
        return xs

    f = (Formation("after").add_function("generate_numbers", lambda _: [1, 2, 3]).add_map("passthrough", lambda x: x)
         .add_function("after_join", after_join).connect("generate_numbers", "passthrough", "after_join"))
    assert f.run(None).output == [1, 2, 3]
    assert seen == [[1, 2, 3]]


def test_nested_broadcasts_of_different_lengths_meet_at_one_join() -> None:
    """pydantic-graph beta test_broadcast_and_spread.py::test_nested_broadcasts."""
    f = (Formation("nested").add_function("start_value", lambda _: 5)
         .add_function("path_a1", add(1)).add_function("path_a2", add(10))
         .add_function("path_b1", lambda x: x * 2).add_function("path_b2", lambda x: x * 3)
         .add_function("collect", lambda path_a2, path_b2: [path_a2, path_b2])
         .connect("start_value", "path_a1", "path_a2", "collect")
         .connect("start_value", "path_b1", "path_b2", "collect"))
    assert f.run(None).output == [16, 30]


def test_a_map_then_a_broadcast_per_item_gives_each_items_branches() -> None:
    """pydantic-graph beta test_broadcast_and_spread.py::test_map_then_broadcast: each item
    goes to two steps; ours maps a formation with two sinks over the items."""
    per_item = Formation("per_item").add_function("add_one", add(1)).add_function("add_two", add(2))
    f = (Formation("map_broadcast").add_function("generate_list", lambda _: [10, 20])
         .add_map("each", formation=per_item).connect("generate_list", "each"))
    assert f.run(None).output == [{"add_one": 11, "add_two": 12}, {"add_one": 21, "add_two": 22}]


def test_sequential_maps_map_each_item_of_each_item() -> None:
    """pydantic-graph beta test_broadcast_and_spread.py::test_multiple_sequential_maps: a map
    inside a map (ours: a map of a formation whose node is a map)."""
    inner = (Formation("unpack").add_function("unpack_pair", lambda p: [p[0], p[1]])
             .add_map("stringify", lambda n: f"num:{n}").connect("unpack_pair", "stringify"))
    f = (Formation("maps").add_function("generate_pairs", lambda _: [(1, 2), (3, 4)])
         .add_map("pairs", formation=inner).connect("generate_pairs", "pairs"))
    assert f.run(None).output == [["num:1", "num:2"], ["num:3", "num:4"]]


def test_two_independent_maps_are_combined_by_one_join() -> None:
    """pydantic-graph beta test_joins_and_reducers.py::test_multiple_joins."""
    f = (Formation("joins").add_function("start", lambda _: None)
         .add_function("source_a", lambda _: [1, 2]).add_function("source_b", lambda _: [10, 20])
         .add_map("process_a", lambda x: x * 2).add_map("process_b", lambda x: x * 3)
         .add_function("combine", lambda process_a, process_b: {"a": process_a, "b": process_b})
         .connect("start", "source_a", "process_a", "combine").connect("start", "source_b", "process_b", "combine"))
    assert f.run(None).output == {"a": [2, 4], "b": [30, 60]}


def test_the_first_value_join_takes_the_fastest_branch_and_cancels_the_others() -> None:
    """pydantic-graph beta test_joins_and_reducers.py::test_reduce_first_value: five
    branches, one quick; the join takes its value and the slow ones are cancelled. Ours:
    a static fan-out into a ``join="any"`` node (a map node has no first-value join)."""
    started: list[int] = []
    release = threading.Event()

    def slow_process(i: int) -> Any:
        def run(_: Any) -> str:
            started.append(i)
            if i != 1:
                release.wait(5)
            return f"result-{i}"

        return run

    f = Formation("first").add_function("generate", lambda _: None).add_function("first", lambda d: d, join="any")
    for i in range(1, 6):
        f.add_function(f"p{i}", slow_process(i)).connect("generate", f"p{i}", "first")
    t0 = time.perf_counter()
    try:
        result = f.run(None)
    finally:
        release.set()
    assert result.output == {"p1": "result-1"}
    assert time.perf_counter() - t0 < 3
    assert all(result.nodes[f"p{i}"].status == "cancelled" for i in range(2, 6))


def test_a_first_value_join_inside_a_loop_never_takes_a_late_value_of_an_earlier_iteration() -> None:
    """pydantic-graph beta test_joins_and_reducers.py::test_reduce_first_value, inside a
    loop (DESIGN: joins are per visit; a join="any" drops its losers' late values). In
    iteration 0 ``fast`` wins and ``slow`` is still working; iteration 1 must pair with
    iteration 1's values: ``slow``'s late value of iteration 0 is dropped, not taken as
    iteration 1's."""
    seen: list[dict[str, str]] = []

    def slow(i: int) -> str:
        time.sleep(0.3 if i == 0 else 0)
        return f"slow{i}"

    def fast(i: int) -> str:
        time.sleep(0 if i == 0 else 0.6)
        return f"fast{i}"

    def pick(d: dict[str, str]) -> int:
        seen.append(d)
        return int(next(iter(d.values()))[-1]) + 1

    f = (Formation("first_in_loop").add_function("start", lambda i: i).add_function("fork", lambda i: i)
         .add_function("slow", slow).add_function("fast", fast).add_function("pick", pick, join="any")
         .add_function("done", lambda i: i)
         .connect("start", "fork").connect("fork", "slow", "pick").connect("fork", "fast", "pick")
         .connect("pick", "fork", when=lambda i: i < 2).connect("pick", "done", otherwise=True))
    result = f.run(0)
    assert seen == [{"fast": "fast0"}, {"slow": "slow1"}]
    assert result.output == 2
    assert result.nodes["fork"].visits == 2


def test_a_decision_routes_by_the_type_of_the_value() -> None:
    """pydantic-graph beta test_decisions.py::test_decision_with_type_matching."""
    f = (Formation("types").add_function("return_value", lambda x: x)
         .add_function("handle_int", lambda x: f"Got int: {x}").add_function("handle_str", lambda x: f"Got str: {x}")
         .connect("return_value", "handle_int", when=int).connect("return_value", "handle_str", when=str))
    assert f.run(42).outputs == {"handle_int": "Got int: 42"}
    assert f.run("a").outputs == {"handle_str": "Got str: a"}


def test_a_decision_routes_by_a_custom_matcher() -> None:
    """pydantic-graph beta test_decisions.py::test_decision_with_custom_matcher and
    test_decision_with_state_modification."""
    f = (Formation("parity").add_function("return_number", lambda x: x)
         .add_function("even_path", lambda x: f"{x} is even").add_function("odd_path", lambda x: f"{x} is odd")
         .connect("return_number", "even_path", when=lambda x: x % 2 == 0)
         .connect("return_number", "odd_path", when=lambda x: x % 2 == 1))
    result = f.run(7)
    assert result.outputs == {"odd_path": "7 is odd"}
    assert result.nodes["even_path"].status == "skipped"


def test_a_decision_whose_branch_matches_every_type_is_always_taken() -> None:
    """pydantic-graph beta test_decisions.py::test_decision_all_types_match."""
    f = (Formation("any").add_function("return_value", lambda _: 100)
         .add_function("catch_all", lambda x: f"Caught: {x}").connect("return_value", "catch_all", when=object))
    assert f.run(None).output == "Caught: 100"


def test_every_branch_whose_condition_holds_is_taken() -> None:
    """pydantic-graph beta test_decisions.py::test_decision_first_match_wins. DESIGN differs
    on purpose: our conditional edges are independent routes, so every edge whose
    condition holds fires (a fan-out); pydantic-graph's decision takes the first match
    only. ``otherwise=`` is our default branch."""
    f = (Formation("both").add_function("return_value", lambda _: 10)
         .add_function("branch_a", lambda _: "Branch A").add_function("branch_b", lambda _: "Branch B")
         .add_function("default", lambda _: "default")
         .connect("return_value", "branch_a", when=lambda x: x >= 5)
         .connect("return_value", "branch_b", when=lambda x: x >= 0)
         .connect("return_value", "default", otherwise=True))
    assert f.run(None).outputs == {"branch_a": "Branch A", "branch_b": "Branch B"}


def test_nested_decisions_route_twice() -> None:
    """pydantic-graph beta test_decisions.py::test_nested_decisions."""
    f = (Formation("nested").add_function("get_number", lambda x: x)
         .add_function("is_positive", lambda x: x).add_function("is_negative", lambda _: "Negative")
         .add_function("small_positive", lambda _: "Small positive")
         .add_function("large_positive", lambda _: "Large positive")
         .connect("get_number", "is_positive", when=lambda x: x > 0)
         .connect("get_number", "is_negative", when=lambda x: x <= 0)
         .connect("is_positive", "small_positive", when=lambda x: x < 10)
         .connect("is_positive", "large_positive", when=lambda x: x >= 10))
    assert f.run(15).outputs == {"large_positive": "Large positive"}
    assert f.run(-1).outputs == {"is_negative": "Negative"}


def test_a_decision_branch_that_maps_feeds_the_items_to_a_map() -> None:
    """pydantic-graph beta test_decisions.py::test_decision_with_map and
    test_decision_branch_map (the list branch is mapped, then summed). DESIGN differs on
    purpose: format_result has two forward predecessors, so it is a join and receives the
    dict of the branch that ran (the other was skipped), not the bare value."""
    f = (Formation("decide_map").add_function("get_value", lambda x: x)
         .add_map("double_each", lambda x: x * 2).add_function("join_sum", sum)
         .add_function("double_one", lambda x: x * 2)
         .add_function("format_result", lambda d: f"Result: {next(iter(d.values()))}")
         .connect("get_value", "double_each", when=list).connect("double_each", "join_sum", "format_result")
         .connect("get_value", "double_one", when=int).connect("double_one", "format_result"))
    assert f.run([1, 2, 3, 4, 5, 6]).output == "Result: 42"
    assert f.run(10).output == "Result: 20"


def test_a_decision_that_matches_no_branch_fails_the_run() -> None:
    """pydantic-graph beta test_decisions.py (a value no branch matches: the graph raises at
    run time); DESIGN: NoRouteError naming the node."""
    f = (Formation("nomatch").add_function("choose", lambda x: x)
         .add_function("left", lambda _: "L").add_function("right", lambda _: "R")
         .connect("choose", "left", when=lambda x: x == "left").connect("choose", "right", when=lambda x: x == "right"))
    with pytest.raises(NoRouteError) as info:
        f.run("up")
    assert info.value.node == "choose"


@pytest.mark.parametrize(("value", "expected"), [(0, 1), ("", "appended"), (None, None)])
def test_falsy_outputs_are_values_that_flow_on(value: Any, expected: Any) -> None:
    """pydantic-graph beta test_edge_cases.py::test_step_with_zero_value,
    test_step_with_empty_string and test_step_returning_none."""
    f = (Formation("falsy").add_function("produce", lambda _: value)
         .add_function("process", lambda x: None if x is None else x + (1 if isinstance(x, int) else "appended"))
         .connect("produce", "process"))
    result = f.run("ignored")
    assert (result.status, result.output) == ("succeeded", expected)
    assert result.nodes["process"].status == "succeeded"


def test_a_long_chain_passes_the_value_through_every_step() -> None:
    """pydantic-graph beta test_edge_cases.py::test_long_sequential_chain."""
    f = Formation("chain")
    names = [f"step_{i}" for i in range(10)]
    for name in names:
        f.add_function(name, lambda x: 1 if x is None else x + 1)
    assert f.connect(*names).run(None).output == 10


def test_a_join_fed_by_two_broadcasts_waits_for_both_of_its_predecessors() -> None:
    """pydantic-graph beta test_edge_cases.py::test_deeply_nested_broadcasts. DESIGN differs
    on purpose: a node with two forward predecessors is a join (it runs once, with both
    values); in pydantic-graph level2_a and level2_b run once per incoming value."""
    f = (Formation("deep").add_function("start", lambda _: 1)
         .add_function("level1_a", add(1)).add_function("level1_b", add(2))
         .add_function("level2_a", lambda level1_a, level1_b: [level1_a + 10, level1_b + 10])
         .add_function("level2_b", lambda level1_a, level1_b: [level1_a + 20, level1_b + 20])
         .add_function("collect", lambda level2_a, level2_b: sorted(level2_a + level2_b)))
    f.connect("start", "level1_a").connect("start", "level1_b")
    for a in ("level1_a", "level1_b"):
        for b in ("level2_a", "level2_b"):
            f.connect(a, b)
    f.connect("level2_a", "collect").connect("level2_b", "collect")
    assert f.run(None).output == [12, 13, 22, 23]


def test_a_loop_runs_until_a_node_ends_it_and_every_visit_is_recorded() -> None:
    """pydantic-graph test_graph.py::test_graph: Float2String → String2Length → Double,
    Double looping back to String2Length once when it sees 7; the history is every visit."""
    f = (Formation("my_graph").add_function("float2string", str).add_function("string2length", len)
         .add_function("double", lambda n: "x" * 21 if n == 7 else n).add_function("end", lambda n: n * 2)
         .connect("float2string", "string2length", "double")
         .connect("double", "string2length", when=str)
         .connect("double", "end", otherwise=True))
    assert f.run(3.14).output == 8
    result = f.run(3.14159)
    assert result.output == 42
    assert result.nodes["string2length"].outputs == [7, 21]
    assert result.nodes["double"].outputs == ["x" * 21, 21]


def test_every_edge_to_an_undeclared_node_is_reported_at_once() -> None:
    """pydantic-graph test_graph.py::test_two_bad_nodes: nodes referenced but not included
    are all listed in one setup error."""
    g = nx.DiGraph()
    g.add_node("foo", kind="function", fn=lambda x: x)
    g.add_edge("foo", "bar")
    g.add_edge("foo", "spam")
    with pytest.raises(FormationSetupError) as info:
        Formation("bad", g).validate()
    text = str(info.value)
    assert "'bar'" in text and "'spam'" in text


def test_a_map_over_a_value_that_is_not_a_list_fails_naming_the_node() -> None:
    """pydantic-graph beta test_graph_edge_cases.py::test_map_non_iterable ("Cannot map
    non-iterable"); DESIGN: a map node needs a list, a PayloadError names it."""
    f = (Formation("not_a_list").add_function("return_non_iterable", lambda _: 42)
         .add_map("process_item", lambda x: x).connect("return_non_iterable", "process_item"))
    with pytest.raises(FormationRuntimeError, match=r"map node 'process_item' needs a list input") as info:
        f.run(None)
    assert info.value.node == "process_item"
    assert info.value.attempts == 1  # a bad payload is not retried


def test_a_map_of_a_map_then_two_sums_reduce_nested_lists() -> None:
    """pydantic-graph beta test_graph_edge_cases.py::test_nested_reducers_with_prefix:
    ``.map().map()`` then a join per level; ours: a map of a formation holding a map."""
    inner = (Formation("row").add_map("inner_process", lambda x: x * 2).add_function("outer_sum", sum)
             .connect("inner_process", "outer_sum"))
    f = (Formation("nested_maps").add_function("outer_list", lambda _: [[1, 2], [3, 4]])
         .add_map("rows", formation=inner).add_function("final_sum", sum).connect("outer_list", "rows", "final_sum"))
    assert f.run(None).output == 20
