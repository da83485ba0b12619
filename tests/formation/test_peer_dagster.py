"""Behaviours ported from Dagster's own test suite (dagster-io/dagster,
``python_modules/dagster/dagster_tests/``): dynamic outputs mapped and collected
(``execution_tests/dynamic_tests/``), fan-in, optional outputs that skip what follows,
and nested graphs (``core_tests/graph_tests/``, ``core_tests/definitions_tests/``).
``test_peer_dagster_more.py`` takes retry policies, hooks, type checks and malformed
graphs; ``tests/durable/test_peer_dagster.py`` takes re-execution.

An op is a node, a job a formation. ``DynamicOut`` plus ``.map(op)`` plus ``.collect()``
is one map node (``add_map(name, fn)``, or ``add_map(name, formation=graph)`` for a graph
of ops per item) whose output is the collected list; an optional output an op does not
yield is a conditional edge that does not fire; a graph used as an op is
``add_formation``.

Deliberately different (DESIGN.md documents ours; each test that touches one says so):
- Dagster keys mapped steps by ``mapping_key`` and collects a dict by key; ours keys items
  by index (events ``"each/<index>/<inner node>"``) and collects a list in item order.
- Dagster refuses a dynamic output inside a mapped step (``test_not_allowed.py``); a map
  over a formation that itself maps is legal here.
- A Dagster op downstream of an optional output not yielded still runs over an empty
  collect (``test_fan_in_skips``: "arguably should be skip"); ours is skipped, and so is
  what depends only on it.
- When an op fails, Dagster runs the independent branches to their end; ours fails the
  run at once (``on_error="fail"``) and cancels what is in flight, keeping the outputs of
  the nodes that finished.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support.peers import Counter, Order
from wingman_actors import Formation
from wingman_actors.errors import (
    FormationRuntimeError,
    FormationSetupError,
    MapItemsError,
    NoRouteError,
    PayloadError,
)
from wingman_actors.formation.events import FormationEvent


def multiply_inputs(y: int, ten: int = 10) -> int:
    return y * ten


def multiply_by_two(y: int) -> int:
    return y * 2


def echo(x: int) -> int:
    return x


def sum_numbers(nums: list[int]) -> int:
    return sum(nums)


def emit(num: int) -> list[int]:
    """Dagster's ``emit``: one dynamic output per number below ``num``."""
    return list(range(num))


def dynamic_pipeline() -> Formation:
    """Dagster's ``dynamic_pipeline``: ``emit`` → each number through ``multiply_inputs`` then
    ``multiply_by_two`` → ``sum_numbers`` of the collected list → ``double_total`` → ``echo``."""
    per_item = (Formation("per_item").add_function("multiply_inputs", multiply_inputs)
                .add_function("multiply_by_two", multiply_by_two).connect("multiply_inputs", "multiply_by_two"))
    return (Formation("dynamic_pipeline").add_function("emit", emit).add_map("each", formation=per_item)
            .add_function("sum_numbers", sum_numbers).add_function("double_total", multiply_by_two)
            .add_function("echo", echo).connect("emit", "each", "sum_numbers", "double_total", "echo"))


# --- dynamic outputs: map and collect --------------------------------------------------------


def test_each_dynamic_item_runs_through_the_mapped_graph_and_the_collected_sum_flows_on() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_map."""
    result = dynamic_pipeline().run(3)
    assert result.nodes["each"].output == [0, 20, 40]
    assert [result.nodes[n].output for n in ("sum_numbers", "double_total", "echo")] == [60, 120, 120]
    assert result.output == 120


def test_each_mapped_item_is_seen_as_its_own_step_named_by_index() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_map
    (``multiply_inputs[0]`` … in ``events_by_step_key``); ours names an item's inner node
    ``each/<index>/multiply_inputs`` (Dagster keys by ``mapping_key``)."""
    order = Order()
    result = dynamic_pipeline().run(3, on_event=order)
    assert {f"each/{i}/multiply_inputs" for i in range(3)} <= set(order.nodes)
    assert {f"each/{i}/multiply_by_two" for i in range(3)} <= set(order.nodes)
    assert result.nodes["each/multiply_inputs"].outputs == [0, 10, 20]  # one trace per inner node, items in order


def test_mapping_an_empty_range_collects_an_empty_list_and_the_total_is_zero() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_map_empty."""
    result = dynamic_pipeline().run(0)
    assert (result.nodes["each"].output, result.nodes["double_total"].output, result.output) == ([], 0, 0)
    assert result.nodes["each"].status == "succeeded"


def test_a_map_over_a_graph_nested_three_deep_answers_each_item() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_composite_wrapping."""
    inner = Formation("inner").add_function("echo", echo)
    middle = Formation("middle").add_formation("inner", inner)
    outer = Formation("outer").add_formation("middle", middle)
    deep = Formation("deep").add_function("emit", emit).add_map("outer", formation=outer).connect("emit", "outer")
    result = deep.run(3)
    assert result.output == [0, 1, 2]
    assert result.nodes["outer/middle/inner/echo"].outputs == [0, 1, 2]


def test_a_graph_whose_first_step_maps_a_graph_takes_the_typed_list_it_maps() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_composite_wrapping
    (the mapping inside a graph): a graph whose source maps another graph over its input
    takes a ``list[int]`` when the mapped graph takes ``int``, fed by a node or by a map
    over lists."""
    per_item = Formation("per_item").add_function("double", multiply_by_two)
    maps = Formation("maps").add_map("each", formation=per_item)

    def lists(_: Any) -> list[list[int]]:
        return [[0, 1], [2]]

    job = Formation("job").add_function("emit", emit).add_formation("graph", maps).connect("emit", "graph")
    assert job.run(3).output == [0, 2, 4]
    over = Formation("over").add_function("lists", lists).add_map("graphs", formation=maps).connect("lists", "graphs")
    assert over.run(None).output == [[0, 2], [4]]

    def words(_: Any) -> list[str]:
        return ["a"]

    wrong = Formation("wrong").add_function("words", words).add_formation("graph", maps).connect("words", "graph")
    with pytest.raises(FormationSetupError, match=r"'words' outputs list\[str\] but .*whose source 'each' expects list\[int\]"):
        wrong.validate()


def test_mapping_collecting_and_mapping_again_chains_through_every_stage() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_fan_out_in_out_in."""
    twice = Formation("twice").add_function("double", multiply_by_two).add_function("echo", echo).connect("double", "echo")
    fan = (Formation("fan_repeat").add_function("emit", emit).add_map("one", multiply_by_two)
           .add_map("two", formation=twice).add_map("three", multiply_by_two).add_function("sum_numbers", sum_numbers)
           .connect("emit", "one", "two", "three", "sum_numbers"))
    assert fan.run(3).output == 24  # (0, 1, 2) x 2 x 2 x 2 = (0, 8, 16)
    assert fan.run(0).output == 0


def test_two_collected_lists_join_as_keyword_arguments_in_declared_order() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_multi_collect."""

    def fan_in(nums_1: list[int], nums_2: list[int]) -> list[int]:
        return nums_1 + nums_2

    f = (Formation("double").add_function("src", emit).add_map("nums_1", echo).add_map("nums_2", echo)
         .add_function("fan_in", fan_in).connect("src", "nums_1", "fan_in").connect("src", "nums_2", "fan_in"))
    assert f.run(3).output == [0, 1, 2, 0, 1, 2]


def test_an_optional_output_not_given_skips_its_map_and_the_grand_total_adds_the_rest() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_fan_in_skips.
    Dagster runs ``skip_total`` over an empty collect ("arguably should be skip"); ours
    skips the map and its total, and the grand total takes them as its defaults."""

    def fork_logic(_: Any) -> dict[str, list[int]]:
        return {"nums": [1, 2, 3], "empty": []}  # never "skip"

    def grand_total(nums_total: int = 0, empty_total: int = 0, skip_total: int = 0) -> int:
        return nums_total + empty_total + skip_total

    f = Formation("dyn_fork").add_function("fork_logic", fork_logic).add_function("grand_total", grand_total)
    for name in ("nums", "empty", "skip"):
        f.add_function(f"pick_{name}", lambda out, name=name: out[name]).add_map(f"echo_{name}", echo)
        f.add_function(f"{name}_total", sum_numbers)
        f.connect("fork_logic", f"pick_{name}", when=lambda out, name=name: name in out)
        f.connect(f"pick_{name}", f"echo_{name}", f"{name}_total", "grand_total")
    result = f.run(None)
    assert result.output == 6
    assert [result.nodes[f"{n}_total"].status for n in ("nums", "empty", "skip")] == ["succeeded", "succeeded", "skipped"]
    assert result.nodes["echo_skip"].status == "skipped"


def test_a_failing_emitter_fails_the_run_and_nothing_is_mapped() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_map_fail."""

    def failing_emit(_: int) -> list[int]:
        raise RuntimeError("FAILURE")

    f = dynamic_pipeline()
    f.graph.nodes["emit"]["fn"] = failing_emit
    with pytest.raises(FormationRuntimeError, match=r"node 'emit' failed.*RuntimeError: FAILURE") as caught:
        f.run(3)
    assert caught.value.node == "emit"
    assert {n: caught.value.nodes[n].status for n in ("emit", "each", "sum_numbers")} == {
        "emit": "failed", "each": "skipped", "sum_numbers": "skipped"}


def test_mapped_results_keep_item_order_when_later_items_finish_first() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_output.py
    (collected outputs come in the order they were emitted, not the order steps end)."""

    def slower_first(x: int) -> int:
        time.sleep(0.01 * (4 - x))
        return x

    assert Formation("order").add_map("each", slower_first, max_workers=5).run([0, 1, 2, 3, 4]).output == [0, 1, 2, 3, 4]


def test_a_dynamic_item_of_the_wrong_type_fails_the_map_naming_the_item_without_retrying() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_output.py
    (a ``DynamicOutput`` value that fails its type check fails the step)."""
    counter = Counter()

    def half(x: int) -> float:
        counter.hit(x)
        return x / 2

    with pytest.raises(FormationRuntimeError, match=r"map node 'each': 1 of 3 item\(s\) failed; first: item 1") as caught:
        Formation("typed").add_map("each", half, retries=3, backoff=0).run([2, "two", 4])
    err = caught.value.__cause__
    assert isinstance(err, MapItemsError) and isinstance(err.errors[1], PayloadError)
    assert caught.value.attempts == 1
    assert counter.calls == {2: 1, 4: 1}


def test_a_map_inside_a_mapped_graph_is_legal_and_answers_every_inner_item() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_not_allowed.py
    (Dagster refuses a dynamic output inside a mapped step; ours maps a formation that maps)."""
    inner = Formation("inner").add_function("emit", emit).add_map("double", multiply_by_two).connect("emit", "double")
    assert Formation("outer").add_map("each", formation=inner).run([1, 2, 3]).output == [[0], [0, 2], [0, 2, 4]]


def test_a_retry_of_a_map_reruns_only_the_items_that_failed() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_reexecute.py
    (re-executing a failed mapped step runs that mapping key alone); ours within one run,
    through ``retries``."""
    counter = Counter()

    def flaky(x: int) -> int:
        if counter.hit(x) == 1 and x == 1:
            raise ValueError("first time for item 1")
        return x * 10

    result = Formation("retry").add_map("each", flaky, retries=1, backoff=0).run([0, 1, 2])
    assert result.output == [0, 10, 20]
    assert counter.calls == {0: 1, 1: 2, 2: 1}
    assert result.nodes["each"].attempts == 2


# --- fan-in ---------------------------------------------------------------------------------


def test_a_fan_in_of_one_parameter_receives_a_dict_keyed_by_upstream_name() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/definitions_tests/test_composition.py::test_fan_in
    (a ``MultiDependencyDefinition`` input receives every upstream's value)."""
    f = (Formation("fan").add_function("src", echo).add_function("a", lambda x: x + 1).add_function("b", lambda x: x + 2)
         .add_function("c", lambda x: x + 3).add_function("collect", lambda values: dict(values))
         .connect("src", "a", "collect").connect("src", "b", "collect").connect("src", "c", "collect"))
    assert f.run(0).output == {"a": 1, "b": 2, "c": 3}


def test_a_fan_in_waits_for_its_slowest_upstream() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/definitions_tests/test_composition.py::test_fan_in
    (the collecting op runs once, after all of its upstreams)."""
    counter = Counter()

    def slow(x: int) -> int:
        time.sleep(0.05)
        return x

    def total(fast: int, slow: int) -> int:
        counter.hit("total")
        return fast + slow

    f = (Formation("wait").add_function("src", echo).add_function("fast", echo).add_function("slow", slow)
         .add_function("total", total).connect("src", "fast", "total").connect("src", "slow", "total"))
    assert f.run(4).output == 8
    assert counter.count("total") == 1


# --- optional outputs: skipped ops ----------------------------------------------------------


def test_an_output_not_yielded_skips_the_whole_chain_behind_it() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_retries
    (``will_be_skipped(will_be_skipped(start_skip))``: both STEP_SKIPPED)."""
    skipped: list[str | None] = []

    def listen(event: FormationEvent) -> None:
        if event.type == "node_skipped":
            skipped.append(event.node)

    f = (Formation("two_outputs").add_function("two_outputs", lambda _: {"start_fail": True})
         .add_function("downstream", lambda o: "ran").add_function("will_be_skipped", echo)
         .add_function("will_be_skipped_2", echo)
         .connect("two_outputs", "downstream", when=lambda o: "start_fail" in o)
         .connect("two_outputs", "will_be_skipped", when=lambda o: "start_skip" in o)
         .connect("will_be_skipped", "will_be_skipped_2"))
    result = f.run(None, on_event=listen)
    assert result.outputs == {"downstream": "ran"}
    assert sorted(n for n in skipped if n is not None) == ["will_be_skipped", "will_be_skipped_2"]


def test_an_output_no_edge_takes_fails_the_run_with_no_route_error() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_failure.py
    (a required output that is not yielded fails the step, naming it); ours is
    ``NoRouteError`` naming the node and a preview of its output."""
    f = (Formation("route").add_function("classify", echo).add_function("small", echo).add_function("big", echo)
         .connect("classify", "small", when=lambda x: x < 10).connect("classify", "big", when=lambda x: 10 <= x < 100))
    with pytest.raises(NoRouteError, match=r"node 'classify' output 500.*otherwise=True") as caught:
        f.run(500)
    assert (caught.value.node, caught.value.preview) == ("classify", "500")


def test_a_default_branch_takes_what_no_condition_covers() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_failure.py
    (conditional branching with a fallback output); ours ``otherwise=True``."""
    f = (Formation("route").add_function("classify", echo).add_function("small", lambda x: "small")
         .add_function("other", lambda x: "other")
         .connect("classify", "small", when=lambda x: x < 10).connect("classify", "other", otherwise=True))
    assert (f.run(3).outputs, f.run(300).outputs) == ({"small": "small"}, {"other": "other"})


def test_a_join_whose_upstream_was_skipped_fails_naming_the_parameter_to_default() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_fan_in_skips
    (a join behind a skipped branch); without a default for the skipped upstream's
    parameter ours fails, naming it and the fix."""

    def total(yes: int, no: int) -> int:
        return yes + no

    f = (Formation("join").add_function("src", echo).add_function("yes", echo).add_function("no", echo)
         .add_function("total", total).connect("src", "yes", when=lambda x: True).connect("src", "no", when=lambda x: False)
         .connect("yes", "total").connect("no", "total"))
    with pytest.raises(FormationRuntimeError, match=r"node 'total' got no value for parameter\(s\) no.*give those parameters defaults"):
        f.run(1)


# --- nested graphs --------------------------------------------------------------------------


def test_a_graph_used_as_an_op_outputs_its_inner_sinks_value() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/graph_tests/test_graph.py::test_composite_graph."""
    inner = Formation("add_then_double").add_function("add", lambda x: x + 1).add_function("double", multiply_by_two)
    outer = (Formation("job").add_function("src", echo).add_formation("graph", inner.connect("add", "double"))
             .add_function("out", echo).connect("src", "graph", "out"))
    result = outer.run(4)
    assert (result.output, result.nodes["graph"].output, result.nodes["graph/add"].output) == (10, 10, 5)


def test_a_graph_with_two_outputs_gives_a_dict_by_inner_sink() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/graph_tests/test_graph_ins_out.py::test_multi_out."""
    inner = (Formation("two_outs").add_function("split", echo).add_function("plus", lambda x: x + 1)
             .add_function("minus", lambda x: x - 1).connect("split", "plus").connect("split", "minus"))
    outer = Formation("job").add_formation("graph", inner).add_function("show", lambda d: f"{d['minus']}..{d['plus']}")
    assert outer.connect("graph", "show").run(5).output == "4..6"


def test_the_graph_input_reaches_every_inner_op_that_takes_it() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/graph_tests/test_graph_ins_out.py::test_graph_in
    (one graph input mapped to several ops)."""

    def both(left: int, right: int) -> tuple[int, int]:
        return (left, right)

    inner = (Formation("fan").add_function("left", lambda x: x * 10).add_function("right", lambda x: x * 100)
             .add_function("both", both).connect("left", "both").connect("right", "both"))
    assert Formation("job").add_formation("graph", inner).run(2).output == (20, 200)


def test_an_inner_op_failing_fails_the_job_naming_the_path_and_keeping_the_cause() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/graph_tests/test_graph.py::test_graph_failure
    (a failing op in a nested graph fails the job; the step is named by its handle
    ``graph.op``, ours by the path ``graph/op``)."""

    def broken(_: int) -> int:
        raise KeyError("inner trouble")

    inner = Formation("inner").add_function("ok", echo).add_function("broken", broken).connect("ok", "broken")
    outer = Formation("job").add_formation("graph", inner).add_function("after", echo).connect("graph", "after")
    with pytest.raises(FormationRuntimeError, match=r"nested formation 'inner' failed at node graph/broken") as caught:
        outer.run(1)
    nodes = caught.value.nodes
    assert (nodes["graph/ok"].status, nodes["graph/broken"].status, nodes["after"].status) == ("succeeded", "failed", "skipped")
    assert nodes["graph/broken"].error == "KeyError: 'inner trouble'"


def test_the_events_of_ops_in_a_graph_two_deep_carry_the_whole_path() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/definitions_tests/test_solid_handle.py
    (a nested op's handle is its path through the graphs)."""
    order = Order()
    inner = Formation("inner").add_function("leaf", echo)
    middle = Formation("middle").add_formation("inner", inner)
    Formation("job").add_formation("middle", middle).run(1, on_event=order)
    assert order.nodes == ["middle", "middle/inner", "middle/inner/leaf"]


def test_drawing_a_job_shows_the_nested_graph_as_a_subgraph_of_its_ops() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/graph_tests/test_graph.py
    (a graph's snapshot lists its nested ops); ours ``to_mermaid()``."""
    inner = Formation("inner").add_function("a", echo).add_function("b", echo).connect("a", "b")
    drawing = Formation("job").add_function("src", echo).add_formation("graph", inner).connect("src", "graph").to_mermaid()
    lines = [line.strip() for line in drawing.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("subgraph") and '["formation: graph"]' in line)
    body = lines[start + 1: lines.index("end", start)]
    assert [line.split("[")[1] for line in body if "[" in line] == ['"a"]', '"b"]']
    assert sum("-->" in line for line in body) == 1  # a --> b, inside the subgraph
    assert sum("-->" in line for line in lines) == 2  # and src --> the subgraph


def test_when_one_op_fails_the_others_in_flight_are_cancelled_and_finished_outputs_kept() -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_failure.py
    (Dagster runs the independent branch to its end after a failure; ours fails the run at
    once and cancels it, DESIGN "Supervision": partial outputs kept on the error)."""
    entered, release = threading.Event(), threading.Event()

    def slow(x: int) -> int:
        entered.set()
        release.wait(2)
        return x

    def broken(_: int) -> int:
        entered.wait(2)  # fail once the other branch is in flight
        raise ValueError("broken")

    f = (Formation("branches").add_function("src", echo).add_function("broken", broken).add_function("slow", slow)
         .connect("src", "broken").connect("src", "slow"))
    try:
        with pytest.raises(FormationRuntimeError) as caught:
            f.run(7)
    finally:
        release.set()
    assert caught.value.outputs == {"src": 7}
    assert (caught.value.nodes["broken"].status, caught.value.nodes["slow"].status) == ("failed", "cancelled")
