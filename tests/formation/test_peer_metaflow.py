"""Foreach, switch and recursive-switch behaviours ported from Metaflow's own test suite
(Netflix/metaflow, ``test/core/tests/*.py``): each Metaflow test there is a flow run over
many graph shapes and checked by ``check_results``; here each shape is a formation.

How Metaflow maps onto formations:
- a ``foreach`` split and its inner steps are a map node (``add_map``, over a function or,
  for several inner steps, over a formation); the foreach join is whatever receives the
  map's list, in item order;
- a static split and its join are a fan-out and a fan-in node (a dict keyed by branch);
- a ``switch`` is a node whose out-edges carry ``when=``; a recursive switch is a back edge
  through a condition, bounded by ``max_visits``;
- ``@retry`` is ``retries``, ``@catch`` an error edge (``on_error=True``) receiving a
  ``NodeFailure``, ``@timeout`` a node ``timeout`` (``test_peer_metaflow_errors.py``).

Deliberately different (DESIGN.md "The formation language"):
- Metaflow steps share artifacts through ``self``; a node receives its predecessors'
  outputs, and a join merges nothing by itself (``merge_artifacts``): it receives each
  branch's value under the branch's name.
- A foreach task knows ``self.index`` and ``self.input``; a map item is the item alone (an
  upstream ``enumerate`` gives the index).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support.peers import Counter, InFlight, Order
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NoRouteError


def test_a_foreach_join_receives_the_items_in_list_order_not_in_finishing_order() -> None:
    """From metaflow test/core/tests/foreach_join_order.py (a non-monotonic list of more than
    four items; the join's inputs in foreach-index order): the first items finish last."""
    arr = [5, 3, 1, 4, 2, 6]

    def inner(x: int) -> int:
        time.sleep(0.005 * (6 - arr.index(x)))
        return x

    f = (Formation("foreach_join_order").add_map("inner", inner)
         .add_function("join", lambda got: got).connect("inner", "join"))
    assert f.run(arr).output == arr


def test_a_foreach_item_gets_its_index_from_an_enumerated_list() -> None:
    """From metaflow test/core/tests/nonmonotonic_foreach.py (``self.input == self.arr[self.index]``).
    Metaflow gives each foreach task ``self.index``; here the split enumerates the list."""

    def inner(pair: tuple[int, int]) -> dict[str, int]:
        index, value = pair
        return {"index": index, "my_input": value}

    f = (Formation("nonmonotonic").add_function("split", lambda arr: list(enumerate(arr)))
         .add_map("inner", inner).connect("split", "inner"))
    got = f.run([5, 3, 1, 4, 2, 6]).output
    assert [g["index"] for g in got] == list(range(6))
    assert [g["my_input"] for g in got] == [5, 3, 1, 4, 2, 6]


def test_a_wide_foreach_runs_every_item_within_its_worker_limit() -> None:
    """From metaflow test/core/tests/wide_foreach.py (a foreach over 1,200 items, every one joined)."""
    flight = InFlight()

    def inner(i: int) -> int:
        with flight:
            return i * 2

    got = Formation("wide").add_map("inner", inner, max_workers=8).run(list(range(1200))).output
    assert got == [i * 2 for i in range(1200)]
    assert 1 <= flight.peak <= 8


def test_an_unbounded_foreach_maps_over_a_list_whose_length_is_known_only_at_run_time() -> None:
    """From metaflow test/core/tests/basic_unbounded_foreach.py (the split's width is decided
    by the step that runs it)."""
    f = (Formation("ubf").add_function("split", lambda n: [f"item{i}" for i in range(n)])
         .add_map("inner", str.upper).add_function("join", lambda items: ",".join(items))
         .connect("split", "inner", "join"))
    assert f.run(3).output == "ITEM0,ITEM1,ITEM2"
    assert f.run(0).output == ""


def test_a_nested_foreach_gives_one_result_per_combination_in_order() -> None:
    """From metaflow test/core/tests/nested_foreach.py (a foreach inside a foreach: every
    combination of the outer and inner items reaches the joins)."""
    inner = (Formation("inner").add_function("split", lambda pair: [pair[0] + c for c in pair[1]])
             .add_map("each", str.upper).connect("split", "each"))
    f = (Formation("nested").add_function("outer_split", lambda xs: [(x, "yz") for x in xs])
         .add_map("outer", formation=inner).add_function("join", lambda rows: sorted(x for row in rows for x in row))
         .connect("outer_split", "outer", "join"))
    assert f.run(["a", "b", "c"]).output == ["AY", "AZ", "BY", "BZ", "CY", "CZ"]


def test_a_foreach_in_a_switch_runs_only_on_the_branch_taken() -> None:
    """From metaflow test/core/tests/foreach_in_switch.py (a switch case that is a foreach split)."""
    counter = Counter()

    def inner(x: int) -> int:
        counter.hit("inner")
        return x * x

    f = (Formation("foreach_in_switch").add_function("start", lambda x: x)
         .add_map("inner", inner).add_function("single", lambda x: [len(x)])
         .connect("start", "inner", when=lambda x: len(x) > 1)
         .connect("start", "single", otherwise=True))
    result = f.run([1, 2, 3])
    assert result.outputs == {"inner": [1, 4, 9]} and result.nodes["single"].status == "skipped"
    result = f.run([7])
    assert result.outputs == {"single": [1]} and result.nodes["inner"].status == "skipped"
    assert counter.count("inner") == 3


def test_a_switch_inside_a_foreach_routes_each_item_on_its_own() -> None:
    """From metaflow test/core/tests/switch_in_foreach.py (each foreach task takes its own case)."""
    inner = (Formation("inner").add_function("switch", lambda x: x)
             .add_function("even", lambda x: f"{x} even").add_function("odd", lambda x: f"{x} odd")
             .connect("switch", "even", when=lambda x: x % 2 == 0)
             .connect("switch", "odd", otherwise=True))
    f = Formation("switch_in_foreach").add_map("each", formation=inner, max_workers=2)
    # the two cases exclude each other (otherwise vs the condition): each item gives its case's value
    assert f.run([1, 2, 3, 4]).output == ["1 odd", "2 even", "3 odd", "4 even"]


def test_a_recursive_switch_inside_a_foreach_counts_its_loop_per_item() -> None:
    """From metaflow test/core/tests/recursive_switch_inside_foreach.py (items looping 3, 5 and
    2 times). Here one item loops 8 times: ``max_visits`` bounds each item's own run, not the
    items' visits summed (3 + 8 + 2 > 10)."""

    def start(item: dict[str, Any]) -> dict[str, Any]:
        return {"id": item["id"], "max_loops": item["iterations"], "count": 0}

    def body(state: dict[str, Any]) -> dict[str, Any]:
        return {**state, "count": state["count"] + 1}

    def exit_loop(state: dict[str, Any]) -> str:
        assert state["count"] == state["max_loops"]
        return f"Item {state['id']} finished after {state['count']} iterations."

    inner = (Formation("item_loop").add_function("loop_start", start).add_function("loop_body", body)
             .add_function("loop_exit", exit_loop)
             .connect("loop_start", "loop_body")
             .connect("loop_body", "loop_body", when=lambda s: s["count"] < s["max_loops"])
             .connect("loop_body", "loop_exit", when=lambda s: s["count"] >= s["max_loops"]))
    f = (Formation("recursive_switch_inside_foreach").add_map("each", formation=inner, max_workers=3)
         .add_function("join", sorted).connect("each", "join"))
    items = [{"id": "A", "iterations": 3}, {"id": "B", "iterations": 8}, {"id": "C", "iterations": 2}]
    assert f.run(items).output == ["Item A finished after 3 iterations.", "Item B finished after 8 iterations.",
                                   "Item C finished after 2 iterations."]


def looping(max_iterations: int, max_visits: int = 10) -> Formation:
    """Metaflow's ``recursive_switch`` graph: start → loop ⟲ (while continue) → exit → end."""

    def loop(state: dict[str, int]) -> dict[str, int]:
        return {**state, "count": state["count"] + 1}

    return (Formation("recursive_switch").add_function("start", lambda _: {"count": 0, "max": max_iterations})
            .add_function("loop", loop, max_visits=max_visits)
            .add_function("exit", lambda s: s["count"]).add_function("end", lambda c: c)
            .connect("start", "loop")
            .connect("loop", "loop", when=lambda s: s["count"] < s["max"])
            .connect("loop", "exit", when=lambda s: s["count"] >= s["max"])
            .connect("exit", "end"))


def test_a_recursive_switch_loops_until_its_condition_says_exit() -> None:
    """From metaflow test/core/tests/recursive_switch.py (count to ``max_iterations=10``): ten
    visits are within the default ``max_visits`` of 10, every visit's output kept."""
    result = looping(10).run(None)
    assert result.output == 10
    assert result.nodes["loop"].visits == 10
    assert [s["count"] for s in result.nodes["loop"].outputs] == list(range(1, 11))


def test_a_recursive_switch_past_its_visit_limit_fails_naming_the_node_and_the_fix() -> None:
    """From metaflow test/core/tests/recursive_switch.py. Metaflow loops without a bound; ours
    stops a loop at ``max_visits`` (DESIGN "Runs": a cycle is bounded) with an error saying
    what to raise."""
    with pytest.raises(FormationRuntimeError, match=r"node 'loop' was visited more than max_visits=10") as info:
        looping(11).run(None)
    assert info.value.node == "loop" and "max_visits" in str(info.value)
    assert looping(11, max_visits=11).run(None).output == 11


def test_a_switch_takes_only_the_case_its_condition_names() -> None:
    """From metaflow test/core/tests/switch_basic.py (``self.next({"a": self.a, "b": self.b},
    condition="cond")``): the other case never starts."""
    order = Order()
    f = (Formation("switch_basic").add_function("start", lambda cond: cond)
         .add_function("a", lambda c: "took a").add_function("b", lambda c: "took b")
         .connect("start", "a", when=lambda c: c == "a").connect("start", "b", when=lambda c: c == "b"))
    assert f.run("b", on_event=order).outputs == {"b": "took b"}
    assert order.nodes == ["start", "b"]


def test_a_switch_on_a_value_no_case_names_fails_with_no_route_naming_the_value() -> None:
    """From metaflow test/core/tests/switch_basic.py (Metaflow fails a switch whose value is
    not among its cases): ``NoRouteError`` naming the node and the value."""
    f = (Formation("switch_basic").add_function("start", lambda cond: cond)
         .add_function("a", lambda c: "took a").add_function("b", lambda c: "took b")
         .connect("start", "a", when=lambda c: c == "a").connect("start", "b", when=lambda c: c == "b"))
    with pytest.raises(NoRouteError) as info:
        f.run("zebra")
    assert info.value.node == "start" and "zebra" in info.value.preview


def test_a_switch_case_that_fans_out_joins_before_the_end_and_the_other_case_is_skipped() -> None:
    """From metaflow test/core/tests/switch_fanout_case.py (``hit`` → finalize; ``miss`` →
    clip and face, joined): the end receives only the case taken."""

    def end(finalize: str | None = None, join_miss: str | None = None) -> str:
        return finalize or join_miss or "nothing"

    f = (Formation("switch_fanout").add_function("start", lambda c: c)
         .add_function("finalize", lambda _: "hit")
         .add_function("clip", lambda _: "clip").add_function("face", lambda _: "face")
         .add_function("join_miss", lambda clip, face: ",".join(sorted([clip, face])))
         .add_function("end", end)
         .connect("start", "finalize", when=lambda c: c == "hit")
         .connect("start", "clip", when=lambda c: c == "miss").connect("start", "face", when=lambda c: c == "miss")
         .connect("clip", "join_miss").connect("face", "join_miss")
         .connect("finalize", "end").connect("join_miss", "end"))
    hit = f.run("hit")
    assert hit.output == "hit" and hit.nodes["join_miss"].status == "skipped"
    miss = f.run("miss")
    assert miss.output == "clip,face" and miss.nodes["finalize"].status == "skipped"


def test_a_switch_nested_in_a_switch_case_routes_on_both_conditions() -> None:
    """From metaflow test/core/tests/switch_nested.py (a case that is itself a switch)."""
    f = (Formation("switch_nested").add_function("start", lambda x: x)
         .add_function("inner", lambda x: x).add_function("other", lambda x: "outer no")
         .add_function("yes", lambda x: "inner yes").add_function("no", lambda x: "inner no")
         .connect("start", "inner", when=lambda x: x["outer"]).connect("start", "other", otherwise=True)
         .connect("inner", "yes", when=lambda x: x["inner"]).connect("inner", "no", otherwise=True))
    assert f.run({"outer": True, "inner": False}).outputs == {"no": "inner no"}
    assert f.run({"outer": True, "inner": True}).outputs == {"yes": "inner yes"}
    assert f.run({"outer": False, "inner": True}).outputs == {"other": "outer no"}


def test_a_static_split_inside_a_switch_case_joins_both_branches() -> None:
    """From metaflow test/core/tests/branch_in_switch.py (a case that splits into two branches
    and joins them)."""
    f = (Formation("branch_in_switch").add_function("start", lambda x: x)
         .add_function("split", lambda x: x).add_function("left", lambda x: x + 1)
         .add_function("right", lambda x: x * 10).add_function("join", lambda left, right: left + right)
         .add_function("small", lambda x: -x)
         .connect("start", "split", when=lambda x: x > 0).connect("start", "small", otherwise=True)
         .connect("split", "left", "join").connect("split", "right", "join"))
    assert f.run(2).outputs == {"join": 23}
    result = f.run(-2)
    assert result.outputs == {"small": 2}
    assert {result.nodes[n].status for n in ("split", "left", "right", "join")} == {"skipped"}


def test_a_switch_inside_one_branch_of_a_static_split_still_meets_the_other_branch_at_the_join() -> None:
    """From metaflow test/core/tests/switch_in_branch.py (one branch switches, the join waits
    for the case taken and the other branch)."""

    def join(plain: int, case: dict[str, int]) -> int:
        return plain + next(iter(case.values()))

    f = (Formation("switch_in_branch").add_function("start", lambda x: x)
         .add_function("plain", lambda x: x).add_function("switch", lambda x: x)
         .add_function("big", lambda x: 1000).add_function("small", lambda x: 1)
         .add_function("case", lambda branches: branches, join="any")
         .add_function("join", join)
         .connect("start", "plain", "join").connect("start", "switch")
         .connect("switch", "big", when=lambda x: x > 10).connect("switch", "small", otherwise=True)
         .connect("big", "case").connect("small", "case").connect("case", "join"))
    assert f.run(50).output == 1050
    assert f.run(5).output == 6


def test_a_join_receives_every_branchs_value_under_its_name_without_merging() -> None:
    """From metaflow test/core/tests/merge_artifacts.py (``merge_artifacts(inputs)`` fails on a
    conflicting artifact unless it is excluded). Deliberately different: a join receives a
    dict keyed by branch, so values that differ never conflict, and what the join keeps is
    its own choice."""
    f = (Formation("merge").add_function("start", lambda x: x)
         .add_function("a", lambda x: {"conflicting": "a", "shared": x})
         .add_function("b", lambda x: {"conflicting": "b", "shared": x})
         .add_function("join", lambda branches: branches)
         .connect("start", "a", "join").connect("start", "b", "join"))
    assert f.run(1).output == {"a": {"conflicting": "a", "shared": 1}, "b": {"conflicting": "b", "shared": 1}}


def test_a_value_from_before_the_split_reaches_the_join_when_the_join_is_fed_from_there() -> None:
    """From metaflow test/core/tests/merge_artifacts_propagation.py (an artifact set before the
    split is still there after the join). Ours passes values along edges, so the join takes
    the start's value on an edge of its own."""

    def join(start: str, a: str, b: str) -> str:
        return f"{start}|{a}|{b}"

    f = (Formation("propagation").add_function("start", lambda x: f"set in start {x}")
         .add_function("a", lambda s: "a").add_function("b", lambda s: "b").add_function("join", join)
         .connect("start", "a", "join").connect("start", "b", "join").connect("start", "join"))
    assert f.run(1).output == "set in start 1|a|b"


def test_the_steps_of_a_run_start_after_everything_they_descend_from() -> None:
    """From metaflow test/core/tests/lineage.py (each step's lineage is the steps before it on
    its path): a node starts only after all its ancestors."""
    order = Order()
    f = (Formation("lineage").add_function("start", lambda x: x).add_function("a", lambda x: x)
         .add_function("b", lambda x: x).add_function("c", lambda x: x)
         .add_function("join", lambda a, c: a + c).add_function("end", lambda x: x)
         .connect("start", "a", "join").connect("start", "b", "c", "join").connect("join", "end"))
    assert f.run(1, on_event=order).output == 2
    pos = {n: order.nodes.index(n) for n in order.nodes}
    assert pos["start"] < pos["a"] < pos["join"] and pos["start"] < pos["b"] < pos["c"] < pos["join"] < pos["end"]


def test_parameters_reach_every_step_that_reads_them() -> None:
    """From metaflow test/core/tests/basic_parameters.py (``Parameter``s read in every step):
    the run's input feeds each source."""

    def use(params: dict[str, Any]) -> str:
        return f"{params['str_param']}:{params['int_param'] * 2}"

    f = (Formation("parameters").add_function("one", use).add_function("two", lambda p: p["bool_param"])
         .add_function("end", lambda one, two: (one, two))
         .connect("one", "end").connect("two", "end"))
    assert f.run({"str_param": "foo", "int_param": 123, "bool_param": True}).output == ("foo:246", True)


def test_a_foreach_under_load_keeps_every_items_result_with_its_item() -> None:
    """From metaflow test/core/tests/basic_foreach.py (every foreach task's artifact reaches the
    join as its own): items finishing concurrently never mix their results."""
    barrier = threading.Barrier(4, timeout=10)

    def inner(i: int) -> str:
        barrier.wait()  # all four in flight together
        return f"task {i}"

    got = Formation("basic_foreach").add_map("inner", inner, max_workers=4).run([0, 1, 2, 3]).output
    assert got == ["task 0", "task 1", "task 2", "task 3"]


def test_a_foreach_join_keeps_list_order_when_the_first_item_is_retried_and_finishes_last() -> None:
    """From metaflow test/core/tests/foreach_join_order.py with catch_retry.py's ``@retry`` on
    the inner step: the retried first task finishes after every other, and the join still
    receives the items in foreach-index order."""
    counter = Counter()

    def inner(x: int) -> int:
        if x == 5 and counter.hit(x) == 1:
            raise ValueError("retry me")
        return x

    arr = [5, 3, 1, 4, 2, 6]
    f = (Formation("join_order_retry").add_map("inner", inner, retries=1, backoff=0)
         .add_function("join", lambda got: got).connect("inner", "join"))
    assert f.run(arr).output == arr and counter.count(5) == 2
