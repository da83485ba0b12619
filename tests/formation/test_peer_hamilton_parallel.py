"""``Parallelizable``/``Collect`` and subdag behaviours ported from Hamilton's own test suite
(DAGWorks-Inc/hamilton, ``tests/execution/test_executors.py`` with the modules of
``tests/resources/dynamic_parallelism/``, ``tests/function_modifiers/test_recursive.py``):
a function returning ``Parallelizable[T]`` feeds a block run once per item, and a
``Collect[T]`` parameter takes the list of the block's results. Here the block is a map
node (``add_map(name, fn)``, or ``add_map(name, formation=block)`` for several functions
per item) and the collecting function takes the map's output list; a subdag is
``add_formation``. (``test_peer_hamilton.py``'s module docstring maps the rest.)

Deliberately different (DESIGN.md "Map nodes" documents ours; each test that touches one says so):
- A Hamilton block may read values computed outside it; a mapped formation takes only its
  item, so outside values travel with each item (zipped in before the map).
- A failing item fails Hamilton's whole execution with that item's exception; here it
  fails the map node with a ``MapItemsError`` listing the failed items by index, after the
  node's ``retries`` (which rerun only the failed items), and an error edge may take it.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.support.peers import Counter, InFlight, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, MapItemsError
from wingman_actors.formation import NodeFailure


def steps(number_of_steps: int) -> list[int]:
    return list(range(number_of_steps))


def double(step: int) -> int:
    return step * 2


def linear_basic() -> Formation:
    """Hamilton's parallel_linear_basic, in short: ``steps`` → each step doubled → summed → ``final``."""
    return (Formation("linear").add_function("steps", steps).add_map("double", double)
            .add_function("summed", sum).add_function("final", lambda total: total + 1)
            .connect("steps", "double", "summed", "final"))


def test_each_item_of_a_parallelizable_output_runs_the_block_and_the_collect_takes_them_in_order() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py::test_end_to_end_parallel_execute_group_by_repeatable_blocks."""
    result = linear_basic().run(5)
    assert result.nodes["double"].output == [0, 2, 4, 6, 8]
    assert result.output == 21


def test_an_empty_parallelizable_output_collects_an_empty_list() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py::test_parallel_end_to_end_with_empty_list."""
    result = linear_basic().run(0)
    assert result.nodes["double"].output == []
    assert result.nodes["double"].status == "succeeded"
    assert result.output == 1


def test_an_empty_list_into_a_mapped_block_runs_none_of_it_and_goes_on() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py::test_parallel_end_to_end_with_empty_list
    (a block of several functions)."""
    counter = Counter()
    block = (Formation("block").add_function("first", lambda s: counter.hit("first") and s)
             .add_function("second", lambda s: s).connect("first", "second"))
    f = (Formation("empty").add_function("steps", steps).add_map("block", formation=block)
         .add_function("collect", len).connect("steps", "block", "collect"))
    assert f.run(0).output == 0
    assert counter.count("first") == 0


def test_a_collect_with_other_dependencies_runs_them_once_and_the_block_once_per_item() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py::test_parallel_end_to_end_with_collect_multiple_inputs."""
    counter = Counter()

    def counted(name: str, fn: Any) -> Any:
        def node(x: Any) -> Any:
            counter.hit(name)
            return fn(x)

        return node

    def summed(double: list[int], not_to_repeat: int, something_else_not_to_repeat: int) -> int:
        counter.hit("summed")
        return sum(double) + not_to_repeat + something_else_not_to_repeat

    iters = 100
    f = (Formation("multiple").add_function("iterations", lambda x: x)
         .add_function("not_to_repeat", counted("not_to_repeat", lambda _: -1))
         .add_function("something_else_not_to_repeat", counted("something_else_not_to_repeat", lambda _: -2))
         .add_function("number_to_repeat", counted("number_to_repeat", steps))
         .add_map("double", counted("double", double)).add_function("summed", summed)
         .connect("iterations", "number_to_repeat", "double", "summed")
         .connect("iterations", "not_to_repeat", "summed").connect("iterations", "something_else_not_to_repeat", "summed"))
    assert f.run(iters).output == ((iters**2 - iters) / 2) * 2 - 2 - 1
    assert counter.calls == {"not_to_repeat": 1, "number_to_repeat": 1, "something_else_not_to_repeat": 1,
                             "double": iters, "summed": 1}


def complex_block() -> Formation:
    """Hamilton's parallel_complex block: the item carries the two outside values (the difference)."""

    def step_modified(item: dict[str, int]) -> int:
        return item["step"] + item["second_param_external_to_block"]

    def double_plus_triple_step(double_step: int, triple_step: int) -> int:
        return double_step + triple_step

    def plus_external(double_plus_triple_step: int, item: dict[str, int]) -> int:
        return double_plus_triple_step + item["param_external_to_block"]

    return (Formation("block").add_function("item", lambda item: item).add_function("step_modified", step_modified)
            .add_function("double_step", lambda x: x * 2).add_function("triple_step", lambda x: x * 3)
            .add_function("double_plus_triple_step", double_plus_triple_step).add_function("plus_external", plus_external)
            .connect("item", "step_modified").connect("step_modified", "double_step").connect("step_modified", "triple_step")
            .connect("double_step", "double_plus_triple_step").connect("triple_step", "double_plus_triple_step")
            .connect("double_plus_triple_step", "plus_external").connect("item", "plus_external"))


def parallel_complex() -> Formation:
    def zipped(config: dict[str, int]) -> list[dict[str, int]]:
        return [{"step": s, "second_param_external_to_block": config["second_param_external_to_block"],
                 "param_external_to_block": config["param_external_to_block"]} for s in range(config["number_of_steps"])]

    return (Formation("complex").add_function("steps", zipped).add_map("block", formation=complex_block())
            .add_function("final", sum).connect("steps", "block", "final"))


def test_a_block_of_several_functions_with_a_fan_in_runs_per_item_with_outside_values_carried_in() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py::test_end_to_end_block_has_external_dependencies.

    Hamilton differs: its block reads the outside values directly; ours carries them in each item."""
    config = {"number_of_steps": 5, "param_external_to_block": 3, "second_param_external_to_block": 4}
    assert parallel_complex().run(config).output == 165


def test_other_inputs_change_the_collected_result() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py::test_end_to_end_with_overrides."""
    config = {"number_of_steps": 2, "param_external_to_block": 0, "second_param_external_to_block": 0}
    assert parallel_complex().run(config).output == 5


def test_items_run_concurrently_up_to_max_workers() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py::test_parallelism_would_take_too_long_with_no_parallelism
    (measured by calls in flight, not by time)."""
    flight = InFlight()
    two_in = threading.Barrier(2, timeout=5)

    def slow(step: int) -> int:
        with flight:
            if step < 2:
                two_in.wait()  # the first two items are in flight together
            return step

    f = Formation("wide").add_function("steps", steps).add_map("slow", slow, max_workers=2).connect("steps", "slow")
    assert f.run(6, timeout=10).output == [0, 1, 2, 3, 4, 5]
    assert flight.peak == 2


def test_an_async_function_in_a_block_is_awaited_for_each_item() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_async_driver.py::test_driver_end_to_end (async functions, per item)."""

    async def fetch(step: int) -> str:
        return f"page-{step}"

    f = (Formation("async_map").add_function("steps", steps).add_map("fetch", fetch)
         .add_function("joined", ",".join).connect("steps", "fetch", "joined"))
    assert f.run(3).output == "page-0,page-1,page-2"



def test_an_async_item_that_raises_fails_the_map_naming_the_item_and_an_empty_list_awaits_nothing() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/test_async_driver.py::test_driver_end_to_end with
    tests/execution/test_executors.py::test_parallel_end_to_end_with_empty_list (async functions per item)."""
    counter = Counter()

    async def fetch(step: int) -> int:
        counter.hit(step)
        if step == 2:
            raise KeyError("page 2 is gone")
        return step

    f = Formation("async_map").add_function("steps", steps).add_map("fetch", fetch).connect("steps", "fetch")
    assert f.run(0).output == []
    assert counter.calls == {}
    with pytest.raises(FormationRuntimeError, match=r"map node 'fetch': 1 of 4 item\(s\) failed; first: item 2: "
                                                    r"KeyError: 'page 2 is gone'"):
        f.run(4)
    assert counter.calls == {0: 1, 1: 1, 2: 1, 3: 1}


def failing_on(bad: int, counter: Counter | None = None) -> Any:
    def step(item: int) -> int:
        if counter is not None:
            counter.hit(item)
        if item == bad:
            raise ValueError(f"item {item} is bad")
        return item * 2

    return step


def test_an_item_that_raises_fails_the_run_naming_the_node_and_the_item() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py::test_end_to_end_parallel_execute_group_by_repeatable_blocks
    (with a failing item).

    Hamilton differs: it raises the item's exception itself; ours raises a FormationRuntimeError caused by a MapItemsError."""
    f = (Formation("failing").add_function("steps", steps).add_map("double", failing_on(3))
         .add_function("summed", sum).connect("steps", "double", "summed"))
    with pytest.raises(FormationRuntimeError, match=r"node 'double' failed") as info:
        f.run(5)
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError)
    assert list(cause.errors) == [3]
    assert "item 3: ValueError: item 3 is bad" in str(cause)
    assert info.value.nodes["summed"].status != "succeeded"


def test_a_retry_of_a_map_reruns_only_the_failed_item() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py::test_parallel_end_to_end_with_collect_multiple_inputs
    (call counts), with a flaky item."""
    counter = Counter()

    def flaky(item: int) -> int:
        if counter.hit(item) == 1 and item == 2:
            raise ConnectionError("flaky")
        return item

    f = (Formation("retry").add_function("steps", steps).add_map("each", flaky, retries=1, backoff=0.01)
         .connect("steps", "each"))
    assert f.run(4).output == [0, 1, 2, 3]
    assert counter.calls == {0: 1, 1: 1, 2: 2, 3: 1}


def test_an_error_edge_from_the_map_hands_the_failed_items_to_a_handler() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py::test_end_to_end_parallel_execute_group_individually
    (a failing block, caught)."""

    def handler(failure: NodeFailure) -> str:
        assert isinstance(failure.error, MapItemsError)
        return f"{failure.node} failed items {sorted(failure.error.errors)}"

    f = (Formation("caught").add_function("steps", steps).add_map("double", failing_on(1))
         .add_function("handler", handler).connect("steps", "double").connect("double", "handler", on_error=True))
    result = f.run(3)
    assert result.outputs == {"handler": "double failed items [1]"}
    assert result.nodes["double"].status == "failed"


def test_a_block_output_that_cannot_be_collected_into_the_parameter_type_is_refused() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py (Collect[int] takes the block's int outputs)."""

    def summed(values: list[str]) -> str:
        return "".join(values)

    f = (Formation("typed").add_function("steps", steps).add_map("double", double)
         .add_function("summed", summed).connect("steps", "double", "summed"))
    with pytest.raises(FormationSetupError, match=r"'double' outputs list\[int\] but parameter 'values' of 'summed' "
                                                   r"expects list\[str\]"):
        f.validate()


def test_a_parallelizable_of_one_type_into_a_block_taking_another_is_refused() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py (Parallelizable[int] into the block's int)."""

    def names(n: int) -> list[str]:
        return [str(i) for i in range(n)]

    f = Formation("typed").add_function("names", names).add_map("double", double).connect("names", "double")
    with pytest.raises(FormationSetupError, match=r"whose items are str, but parameter 'step' of map node 'double' "
                                                   r"expects int"):
        f.validate()


# --- subdags: tests/function_modifiers/test_recursive.py --------------------------------------


def subdag_body() -> Formation:
    return (Formation("body").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 10)
            .add_function("sum_a_b", lambda a, b: a + b).connect("a", "sum_a_b").connect("b", "sum_a_b"))


def test_a_subdag_runs_as_one_node_and_its_sink_is_the_node_output() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/function_modifiers/test_recursive.py::test_subdag_with_external_nodes_input."""
    f = (Formation("outer").add_function("start", lambda x: x).add_formation("sub", subdag_body())
         .add_function("after", lambda x: x - 1).connect("start", "sub", "after"))
    result = f.run(2)
    assert result.nodes["sub"].output == 23
    assert result.output == 22


def test_one_subdag_used_twice_gives_each_use_its_own_result() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/function_modifiers/test_recursive.py::test_reuse_subdag_end_to_end."""

    def both(sub_1: int, sub_2: int) -> tuple[int, int]:
        return sub_1, sub_2

    body = subdag_body()
    f = (Formation("reuse").add_function("one", lambda x: 1).add_function("two", lambda x: 2)
         .add_formation("sub_1", body).add_formation("sub_2", body).add_function("both", both)
         .connect("one", "sub_1", "both").connect("two", "sub_2", "both"))
    assert f.run(None).output == (12, 23)


def test_a_subdag_whose_input_type_does_not_fit_is_refused_at_the_boundary() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/function_modifiers/test_recursive.py (typed subdag inputs)."""

    def inner(x: int) -> int:
        return x

    def text(x: Any) -> str:
        return "t"

    f = (Formation("outer").add_function("text", text).add_formation("sub", Formation("inner").add_function("inner", inner))
         .connect("text", "sub"))
    with pytest.raises(FormationSetupError, match=r"'text' outputs str") as info:
        f.validate()
    assert "'inner'" in str(info.value)


# --- backend="ray" ----------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_parallelizable_on_ray_collects_every_item_in_order() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py::test_end_to_end_parallel_execute_group_by_repeatable_blocks
    (MultiProcessingExecutor) on backend="ray"."""
    result = linear_basic().run(4, backend="ray", timeout=120)
    assert result.nodes["double"].output == [0, 2, 4, 6]
    assert result.output == 13


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_empty_parallelizable_on_ray_collects_an_empty_list() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py::test_parallel_end_to_end_with_empty_list on backend="ray"."""
    assert linear_basic().run(0, backend="ray", timeout=120).output == 1


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_failing_item_on_ray_fails_the_run_naming_the_item() -> None:
    """Ported from DAGWorks-Inc/hamilton tests/execution/test_executors.py (MultiProcessingExecutor, a failing item) on backend="ray"."""
    f = Formation("failing").add_function("steps", steps).add_map("double", failing_on(2)).connect("steps", "double")
    with pytest.raises(FormationRuntimeError, match=r"node 'double' failed") as info:
        f.run(4, backend="ray", timeout=120)
    assert isinstance(info.value.__cause__, MapItemsError)
    assert list(info.value.__cause__.errors) == [2]
