"""Behaviours ported from Haystack's own test suite (deepset-ai/haystack,
``test/core/pipeline/features/test_run.py`` and its ``pipeline_run.feature`` scenarios,
and the pipeline tests beside it), translated to formations.

Haystack components have named output sockets; a router component sends its value out
of one socket or another. Ours: a node's conditional edges (``when=``) are its sockets.
Haystack's pipeline takes an input per component; ours gives the run's input to every
source. Each test names the scenario or test it comes from; where DESIGN deliberately
differs, a comment says so."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support.peers import Accumulate, Order
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NoRouteError


def add(n: int) -> Any:
    return lambda x: x + n


def double(x: int) -> int:
    return 2 * x


def test_a_linear_pipeline_runs_each_node_once_in_order() -> None:
    """haystack features: 'a pipeline that is linear'."""
    order = Order()
    f = (Formation("linear").add_function("first_addition", add(2)).add_function("double", double)
         .add_function("second_addition", add(1)).connect("first_addition", "double", "second_addition"))
    assert f.run(1, on_event=order).output == 7
    assert order.nodes == ["first_addition", "double", "second_addition"]


def remainder_loop(second_loop: list[str]) -> Formation:
    """multiplexer → remainder; a remainder of 1 goes round ``second_loop``, 2 through
    add_one, 0 out to ``remainder_is_0``."""
    f = (Formation("loops").add_function("entry", lambda x: x).add_function("multiplexer", lambda x: x)
         .add_function("remainder", lambda x: x).add_function("add_one", add(1))
         .add_function("remainder_is_0", lambda x: x)
         .connect("entry", "multiplexer", "remainder")
         .connect("remainder", "remainder_is_0", when=lambda x: x % 3 == 0)
         .connect("remainder", "add_one", when=lambda x: x % 3 == 2)
         .connect("add_one", "multiplexer"))
    for node in second_loop:
        f.add_function(node, add(2 // len(second_loop)))
    f.connect("remainder", second_loop[0], when=lambda x: x % 3 == 1)
    return f.connect(*second_loop, "multiplexer")


@pytest.mark.parametrize(
    ("second_loop", "long_path"),
    [(["add_two"], ["add_two"]), (["add_two_1", "add_two_2"], ["add_two_1", "add_two_2"])],
    ids=["two loops of identical lengths", "two loops of different lengths"],
)
@pytest.mark.parametrize(
    ("value", "expected", "path"),
    [(0, 0, []), (3, 3, []), (4, 6, ["long"]), (5, 6, ["add_one"]), (6, 6, [])],
)
def test_two_loops_through_one_node_take_the_loop_the_remainder_picks(
    second_loop: list[str], long_path: list[str], value: int, expected: int, path: list[str]
) -> None:
    """haystack features: 'a pipeline that has two loops of identical lengths' and 'a
    pipeline that has two loops of different lengths' (the entry node stands for the
    input Haystack gives the multiplexer)."""
    order = Order()
    result = remainder_loop(second_loop).run(value, on_event=order)
    assert result.output == expected
    loop = [n for step in path for n in (long_path if step == "long" else [step])]
    expected_order = ["entry", "multiplexer", "remainder"]
    if loop:
        expected_order += [*loop, "multiplexer", "remainder"]
    assert order.nodes == [*expected_order, "remainder_is_0"]


def test_a_loop_with_two_conditional_branches_goes_round_until_the_threshold() -> None:
    """haystack features: 'a pipeline that has a single loop with two conditional branches'."""
    order = Order()
    f = (Formation("thresholds").add_function("add_one", add(1)).add_function("multiplexer", lambda x: x)
         .add_function("below_10", lambda x: x).add_function("accumulator", Accumulate())
         .add_function("below_5", lambda x: x).add_function("add_three", add(3)).add_function("add_two", add(2))
         .connect("add_one", "multiplexer", "below_10")
         .connect("below_10", "accumulator", when=lambda x: x < 10).connect("below_10", "add_two", otherwise=True)
         .connect("accumulator", "below_5")
         .connect("below_5", "multiplexer", when=lambda x: x < 5).connect("below_5", "add_three", otherwise=True)
         .connect("add_three", "multiplexer"))
    assert f.run(3, on_event=order).output == 13
    assert order.nodes == [
        "add_one", "multiplexer", "below_10", "accumulator", "below_5",
        "multiplexer", "below_10", "accumulator", "below_5", "add_three",
        "multiplexer", "below_10", "add_two",
    ]


def test_two_branches_that_do_not_merge_give_the_output_of_the_branch_taken() -> None:
    """haystack features: 'a pipeline that has two branches that don't merge'."""
    f = (Formation("parity").add_function("add_one", add(1)).add_function("parity", lambda x: x)
         .add_function("add_ten", add(10)).add_function("add_three", add(3)).add_function("double", double)
         .connect("add_one", "parity")
         .connect("parity", "add_ten", when=lambda x: x % 2 == 0).connect("add_ten", "add_three")
         .connect("parity", "double", when=lambda x: x % 2 == 1))
    assert f.run(1).outputs == {"add_three": 15}
    assert f.run(2).outputs == {"double": 6}


def test_three_branches_that_do_not_merge_give_three_outputs() -> None:
    """haystack features: 'a pipeline that has three branches that don't merge'."""
    f = (Formation("three").add_function("add_one", add(1)).add_function("repeat", lambda x: x)
         .add_function("add_ten", add(10)).add_function("double", double).add_function("add_three", add(3))
         .add_function("add_one_again", add(1))
         .connect("add_one", "repeat", "add_ten").connect("repeat", "double")
         .connect("repeat", "add_three", "add_one_again"))
    assert f.run(1).outputs == {"add_one_again": 6, "add_ten": 12, "double": 4}


def test_two_branches_that_merge_meet_in_one_node() -> None:
    """haystack features: 'a pipeline that has two branches that merge' (both sources get
    the run's input, as Haystack gives both the value 1)."""
    order = Order()
    f = (Formation("merge").add_function("first_addition", add(2)).add_function("second_addition", add(2))
         .add_function("third_addition", add(2))
         .add_function("diff", lambda second_addition, third_addition: second_addition - third_addition)
         .add_function("fourth_addition", add(1))
         .connect("first_addition", "second_addition", "diff").connect("third_addition", "diff", "fourth_addition"))
    assert f.run(1, on_event=order).output == 3
    assert order.nodes.index("diff") > max(order.nodes.index("second_addition"), order.nodes.index("third_addition"))
    assert order.nodes[-1] == "fourth_addition"


def combinations() -> Formation:
    """add_one → parity; even → add_four → (add_two, add_two_as_well); odd → double and
    add_ten, which merge in diff."""
    return (Formation("combinations").add_function("add_one", add(1)).add_function("parity", lambda x: x)
            .add_function("add_four", add(4)).add_function("add_two", add(2)).add_function("add_two_as_well", add(2))
            .add_function("add_ten", add(10)).add_function("double", double)
            .add_function("diff", lambda add_ten, double: add_ten - double)
            .connect("add_one", "parity")
            .connect("parity", "add_four", when=lambda x: x % 2 == 0)
            .connect("add_four", "add_two").connect("add_four", "add_two_as_well")
            .connect("parity", "double", when=lambda x: x % 2 == 1)
            .connect("parity", "add_ten", when=lambda x: x % 2 == 1)
            .connect("add_ten", "diff").connect("double", "diff"))


def test_branches_that_merge_and_branches_that_do_not_give_the_outputs_of_the_path_taken() -> None:
    """haystack features: 'a pipeline that has different combinations of branches that
    merge and do not merge'."""
    even = combinations().run(1)
    assert even.outputs == {"add_two": 8, "add_two_as_well": 8}
    assert even.nodes["diff"].status == "skipped"
    odd = combinations().run(2)
    assert odd.outputs == {"diff": 7}
    assert odd.nodes["add_two"].status == "skipped"


def test_two_branches_one_of_which_loops_back() -> None:
    """haystack features: 'a pipeline that has two branches, one of which loops back' (the
    2 Haystack gives ``sum`` directly is added by ``sum`` here)."""
    order = Order()
    f = (Formation("loop_back").add_function("add_zero", add(0)).add_function("multiplexer", lambda x: x)
         .add_function("below_10", lambda x: x).add_function("add_one", add(1)).add_function("counter", Accumulate())
         .add_function("add_two", add(2)).add_function("sum", add(2))
         .connect("add_zero", "multiplexer", "below_10")
         .connect("below_10", "add_one", when=lambda x: x < 10).connect("add_one", "counter", "multiplexer")
         .connect("below_10", "add_two", otherwise=True).connect("add_two", "sum"))
    assert f.run(8, on_event=order).output == 23
    assert order.nodes == [
        "add_zero", "multiplexer", "below_10", "add_one", "counter",
        "multiplexer", "below_10", "add_one", "counter",
        "multiplexer", "below_10", "add_two", "sum",
    ]


def test_components_that_mutate_their_shared_input_each_get_their_own_copy() -> None:
    """haystack features: 'a pipeline that has a component with mutable input'."""

    def mangle(items: list[str]) -> list[str]:
        items.append("extra_item")
        return items

    f = (Formation("mangle").add_function("mangler1", mangle).add_function("mangler2", mangle)
         .add_function("concat1", lambda xs: xs).add_function("concat2", lambda xs: xs)
         .connect("mangler1", "concat1").connect("mangler2", "concat2"))
    given = ["foo", "bar"]
    assert f.run(given).outputs == {"concat1": ["foo", "bar", "extra_item"], "concat2": ["foo", "bar", "extra_item"]}
    assert given == ["foo", "bar"]


def test_a_mutable_output_sent_to_several_inputs_is_not_shared_between_them() -> None:
    """haystack features: 'a pipeline that has a component with mutable output sent to
    multiple inputs' (here the llm stand-in mutates the prompt it received)."""

    def llm(messages: list[dict[str, str]]) -> list[dict[str, str]]:
        messages.append({"role": "assistant", "content": "Fake message"})
        messages[0]["content"] = "changed"
        return messages[-1:]

    def merge(messages: list[dict[str, str]]) -> str:
        time.sleep(0.02)  # lets the llm mutate first, were the list shared
        return "\n".join(m["content"] for m in messages)

    f = (Formation("prompt").add_function("prompt_builder", lambda m: m).add_function("llm", llm)
         .add_function("mm1", merge).add_function("mm2", merge)
         .connect("prompt_builder", "llm", "mm2").connect("prompt_builder", "mm1"))
    messages = [{"role": "system", "content": "Always respond in English."},
                {"role": "user", "content": "Tell me about Berlin"}]
    result = f.run(messages)
    assert result.outputs == {"mm1": "Always respond in English.\nTell me about Berlin", "mm2": "Fake message"}
    assert result.nodes["prompt_builder"].output == messages


def test_an_infinite_loop_fails_at_the_visit_limit() -> None:
    """haystack features: 'a pipeline that has an infinite loop' (PipelineMaxLoops, or
    PipelineMaxComponentRuns in later versions): ours max_visits per node."""
    f = (Formation("infinite").add_function("entry", lambda x: x).add_function("first", lambda x: x, max_visits=1)
         .add_function("second", lambda x: x).connect("entry", "first", "second")
         .connect("second", "first", when=lambda x: True))
    with pytest.raises(FormationRuntimeError, match=r"max_visits=1") as info:
        f.run(1)
    assert info.value.node == "first"


def test_a_single_component_with_a_default_input_uses_the_default() -> None:
    """haystack features: 'a pipeline that has a single component with a default input'."""

    def with_defaults(a: int, b: int = 2) -> int:
        return a + b

    assert Formation("defaults").add_function("with_defaults", with_defaults).run(40).output == 42


def test_an_empty_pipeline_is_refused_before_it_runs() -> None:
    """haystack features: 'a pipeline that has no components' runs to an empty result;
    DESIGN differs on purpose: a formation without nodes has no sink, so validation
    refuses it with a setup error (a run needs an output)."""
    from wingman_actors.errors import FormationSetupError

    with pytest.raises(FormationSetupError, match=r"no nodes|empty|node"):
        Formation("empty").run(1)


def test_a_variadic_component_receives_the_partial_inputs_of_the_branches_that_ran() -> None:
    """haystack features: 'a pipeline that has a variadic component that receives partial
    inputs': a joiner fed by three branches of which one is not taken runs with the two."""
    f = (Formation("partial").add_function("route", lambda x: x)
         .add_function("a", lambda x: f"a{x}").add_function("b", lambda x: f"b{x}").add_function("c", lambda x: f"c{x}")
         .add_function("joiner", lambda d: sorted(d.values()))
         .connect("route", "a", "joiner").connect("route", "b", "joiner")
         .connect("route", "c", when=lambda x: x > 10).connect("c", "joiner"))
    result = f.run(1)
    assert result.output == ["a1", "b1"]
    assert result.nodes["c"].status == "skipped"


def test_a_greedy_variadic_joiner_runs_with_the_first_value_it_receives() -> None:
    """haystack features: 'a pipeline that has a greedy and variadic component after a
    component with default input' (BranchJoiner is greedy: it runs as soon as one input
    arrives); ours: ``join="any"``."""
    f = (Formation("greedy").add_function("start", lambda x: x)
         .add_function("fast", lambda x: f"fast {x}").add_function("slow", lambda x: (time.sleep(0.3), f"slow {x}")[1])
         .add_function("branch_joiner", lambda d: next(iter(d.values())), join="any")
         .connect("start", "fast", "branch_joiner").connect("start", "slow", "branch_joiner"))
    assert f.run(1).output == "fast 1"


def test_intermediate_outputs_are_kept_beside_the_final_one() -> None:
    """haystack test_intermediate_outputs.py (run(include_outputs_from=...)): every node's
    output is on its trace."""
    f = (Formation("chain").add_function("first_addition", add(2)).add_function("double", double)
         .add_function("second_addition", add(1)).connect("first_addition", "double", "second_addition"))
    result = f.run(1)
    assert {n: t.output for n, t in result.nodes.items()} == {"first_addition": 3, "double": 6, "second_addition": 7}


def test_a_router_whose_conditions_all_fail_raises_no_route_error() -> None:
    """haystack test/components/routers/test_conditional_router.py (no route's condition
    holds: NoRouteSelectedException); DESIGN: NoRouteError naming the node with a preview."""
    f = (Formation("router").add_function("router", lambda x: x)
         .add_function("streams", lambda x: x).add_function("query", lambda x: x)
         .connect("router", "streams", when=lambda x: isinstance(x, dict) and len(x.get("streams", [])) > 2)
         .connect("router", "query", when=lambda x: isinstance(x, dict) and "query" in x))
    with pytest.raises(NoRouteError) as info:
        f.run({"streams": [1]})
    assert info.value.node == "router"
    assert "streams" in str(info.value)


def test_a_component_runs_once_per_run_and_runs_again_in_the_next_run() -> None:
    """haystack test_pipeline_runs_once.py / test_pipeline.py: running a pipeline twice
    gives two independent runs (no state carried in the pipeline itself)."""
    order = Order()
    f = Formation("twice").add_function("a", add(1)).add_function("b", double).connect("a", "b")
    assert [f.run(1, on_event=order).output, f.run(2, on_event=order).output] == [4, 6]
    assert order.nodes == ["a", "b", "a", "b"]


def test_branches_that_do_not_depend_on_each_other_run_at_the_same_time() -> None:
    """haystack test_async_pipeline.py (AsyncPipeline runs the components whose inputs are
    ready concurrently): each of two independent branches waits until the other runs too,
    which only ends if they run at the same time."""
    both = threading.Barrier(2, timeout=5)

    def branch(x: int) -> int:
        both.wait()  # returns only once the other branch is running too
        time.sleep(0.05)
        return x

    f = (Formation("parallel").add_function("start", lambda x: x).add_function("left", branch)
         .add_function("right", branch).add_function("join", lambda left, right: left + right)
         .connect("start", "left", "join").connect("start", "right", "join"))
    assert f.run(2).output == 4
