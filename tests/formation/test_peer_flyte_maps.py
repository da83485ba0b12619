"""Map tasks, ported from Flyte's Python SDK's own tests (flyteorg/flytekit,
``tests/flytekit/unit/core/test_map_task.py`` and ``test_array_node_map_task.py``): a
``map_task(t)(xs=...)`` is a map node (``add_map``) over a list, its results in item
order; a mapped sub-workflow (an array node over a launch plan) is ``add_map(formation=)``.

Deliberately different (DESIGN.md "Map nodes" documents ours):
- ``map_task(..., min_success_ratio=r)`` lets a share of the items fail and outputs
  ``None`` for them; ours has no such ratio: an item that still fails after the node's
  retries fails the node (``MapItemsError``, its errors by item index), and an error edge
  receives that failure. A map function that catches its own error and returns ``None``
  gives Flyte's output.
- ``map_task(t, concurrency=k)`` is ``max_workers=k``.
- A map task of several inputs maps over several lists (zipped); ours maps one list, and
  bound inputs are a ``functools.partial``, as in Flyte.
- ``map_task(wf)`` of a workflow is refused (``test_map_task.py::test_map_tasks_only``: only
  tasks and, in array nodes, launch plans map); ours maps a whole formation,
  ``add_map(name, formation=sub)``.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, NamedTuple

import pytest

from tests.support.peers import Counter, InFlight, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError, MapItemsError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore


def say_hello(name: str) -> str:
    return f"hello {name}!"


def many_inputs(a: int, b: str, c: float) -> str:
    return f"{a} - {b} - {c}"


def test_a_mapped_task_says_hello_to_every_name() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_map."""
    f = Formation("wf").add_map("say_hello", say_hello)
    assert f.run(["abc", "def"]).output == ["hello abc!", "hello def!"]


def test_a_map_feeds_a_second_map_of_the_same_function() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_execution
    (a task builds the list; two map tasks of ``say_hello`` in a row)."""
    f = (Formation("wf").add_function("create_input_list", lambda _: ["earth", "mars"])
         .add_map("first", say_hello).add_map("second", say_hello)
         .connect("create_input_list", "first", "second"))
    assert f.run(None).output == ["hello hello earth!!", "hello hello mars!!"]


def test_a_partial_with_bound_inputs_maps_over_the_one_unbound_input() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_inputs_outputs_length
    (``map_task(functools.partial(many_inputs, c=1.0))``, ``b`` bound too)."""
    f = Formation("wf").add_map("m", functools.partial(many_inputs, b="hello", c=1.0))
    assert f.run([1, 2]).output == ["1 - hello - 1.0", "2 - hello - 1.0"]


def test_a_partial_whose_unbound_input_does_not_take_the_items_type_is_refused_at_validation() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_inputs_outputs_length
    (the mapped interface is ``a: List[int]`` once ``b`` and ``c`` are bound; a list of str does not fit)."""
    f = (Formation("wf").add_function("names", _names)
         .add_map("m", functools.partial(many_inputs, b="hello", c=1.0)).connect("names", "m"))
    with pytest.raises(FormationSetupError, match=r"'m'") as info:
        f.validate()
    assert "int" in str(info.value) and "str" in str(info.value)


def _names(_: Any) -> list[str]:
    return ["a", "b"]


def test_a_partial_with_every_input_bound_cannot_take_an_item_and_is_refused() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_inputs_outputs_length
    (``functools.partial(p2, a=1)`` maps nothing: calling it with ``a=[...]`` is a ``TypeError``).
    Ours refuses the map at validation, naming the node."""
    f = Formation("wf").add_map("m", functools.partial(many_inputs, a=1, b="hello", c=1.0))
    with pytest.raises(FormationSetupError, match=r"'m'"):
        f.validate()


def test_a_failing_item_fails_the_map_naming_the_item_and_its_error() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_raw_execute_with_min_success_ratio
    (``min_success_ratio`` None or 1: one failed item fails the workflow)."""

    def some_task1(inputs: int) -> int:
        if inputs == 2:
            raise ValueError("Unexpected inputs: 2")
        return inputs

    with pytest.raises(FormationRuntimeError) as info:
        Formation("my_wf1").add_map("some_task1", some_task1).run([1, 2, 3, 4])
    cause = info.value.__cause__
    assert info.value.node == "some_task1" and isinstance(cause, MapItemsError)
    assert list(cause.errors) == [1] and "Unexpected inputs: 2" in str(cause.errors[1])
    assert cause.total == 4 and "1 of 4 item(s) failed" in str(cause)


def test_items_that_may_fail_return_none_themselves_for_a_partial_result() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_raw_execute_with_min_success_ratio
    (``min_success_ratio=0.5`` gives ``[1, None, 3, 4]``). Deliberately different: ours has no
    success ratio; the map function that may fail catches its error and returns None."""

    def some_task1(inputs: int) -> int | None:
        try:
            if inputs == 2:
                raise ValueError("Unexpected inputs: 2")
            return inputs
        except ValueError:
            return None

    assert Formation("my_wf1").add_map("some_task1", some_task1).run([1, 2, 3, 4]).output == [1, None, 3, 4]


def test_an_error_edge_after_a_map_gets_every_failed_item_by_index() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_raw_execute_with_min_success_ratio
    (what ``min_success_ratio`` leaves to the workflow: which items failed). Ours routes the
    map's failure to an error edge, whose handler sees each failed item's error."""

    def some_task1(inputs: int) -> int:
        if inputs % 2 == 0:
            raise ValueError(f"Unexpected inputs: {inputs}")
        return inputs

    def report(failure: NodeFailure) -> dict[int, str]:
        assert isinstance(failure.error, MapItemsError)
        return {i: str(e) for i, e in failure.error.errors.items()}

    f = (Formation("wf").add_map("some_task1", some_task1).add_function("report", report)
         .connect("some_task1", "report", on_error=True))
    result = f.run([1, 2, 3, 4])
    assert result.outputs == {"report": {1: "Unexpected inputs: 2", 3: "Unexpected inputs: 4"}}
    assert result.nodes["some_task1"].status == "failed"


def test_retries_of_a_map_rerun_only_the_failed_items() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_serialization
    (``map_task(t1, metadata=TaskMetadata(retries=2))``: the retries belong to each subtask)."""
    calls = Counter()

    def t1(a: int) -> int:
        if calls.hit(a) == 1 and a == 3:
            raise RuntimeError("transient")
        return a + 1

    result = Formation("wf").add_map("t1", t1, retries=2, backoff=0).run([1, 2, 3])
    assert result.output == [2, 3, 4]
    assert [calls.count(a) for a in (1, 2, 3)] == [1, 1, 2]


def test_concurrency_bounds_how_many_items_run_at_once() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node_map_task.py::test_metadata_in_task_name
    (``concurrency=2``)."""
    flight = InFlight()
    release = threading.Event()

    def slow(x: int) -> int:
        with flight:
            release.wait(5)
        return x

    f = Formation("wf").add_map("slow", slow, max_workers=2)
    with f.start() as running:
        future = running.submit([1, 2, 3, 4, 5])
        assert until(lambda: flight.now == 2)
        release.set()
        assert future.result(timeout=10).output == [1, 2, 3, 4, 5]
    assert flight.peak == 2


def test_an_empty_list_maps_to_an_empty_list_without_calling_the_task() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_map_task.py::test_map_docs
    (``my_wf(x=[1, 2, 3])``), with an empty list: an empty output list."""
    calls = Counter()

    def t(x: int) -> int:
        calls.hit("t")
        return x

    assert Formation("wf").add_map("t", t).run([]).output == []
    assert calls.count("t") == 0


def test_a_mapped_task_returning_a_named_tuple_gives_a_list_of_them() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_map_task.py::test_inputs_outputs_length
    (a task of several outputs cannot be mapped; a NamedTuple is one value here)."""

    class Out(NamedTuple):
        doubled: int
        text: str

    def t(x: int) -> Out:
        return Out(2 * x, str(x))

    def first(outs: list[Out]) -> int:
        return outs[0].doubled

    f = Formation("wf").add_map("t", t).add_function("first", first).connect("t", "first")
    result = f.run([3, 4])
    assert result.nodes["t"].output == [Out(6, "3"), Out(8, "4")] and result.output == 6


def test_a_list_of_lists_maps_through_a_map_of_formations_of_maps() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node.py::test_map_task_wrapper
    (``map_task(lp)``: a launch plan mapped as a task is), with a launch plan that itself maps: a map
    of formations whose inner node is a map."""

    def square(x: int) -> int:
        return x * x

    inner = Formation("inner").add_map("square", square).add_function("total", sum).connect("square", "total")
    f = Formation("outer").add_map("each", formation=inner, max_workers=2)
    assert f.run([[1, 2], [3], []]).output == [5, 9, 0]


def test_an_item_that_fails_inside_a_mapped_formation_names_the_item_and_the_inner_node() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_array_node.py::test_local_exec_lp_min_successes
    (a launch plan mapped over inputs, one execution failing, no ``min_successes``)."""

    def check(x: int) -> int:
        if x < 0:
            raise ValueError(f"negative: {x}")
        return x

    inner = Formation("inner").add_function("check", check)
    with pytest.raises(FormationRuntimeError) as info:
        Formation("outer").add_map("each", formation=inner).run([1, -2, 3])
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError) and list(cause.errors) == [1]
    assert "check" in str(cause.errors[1]) and "negative: -2" in str(cause.errors[1])


def test_a_map_whose_items_are_the_wrong_type_at_run_time_fails_naming_the_item() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_map_task.py::test_map_task_types
    (a mapped task's input type is checked per item)."""

    def t(x: int) -> int:
        return x

    with pytest.raises(FormationRuntimeError) as info:
        Formation("wf").add_map("t", t).run([1, "not a number", 3])
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError) and list(cause.errors) == [1]
    assert info.value.node == "t"


def test_a_map_after_a_task_returning_a_single_value_is_refused_at_validation() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_map_task.py::test_map_task_types
    (``map_task(t1)(a=1)``: mapping over something that is not a list is a ``TypeError``); ours is
    refused at validation."""

    def one(_: Any) -> int:
        return 1

    f = Formation("wf").add_function("one", one).add_map("say", say_hello).connect("one", "say")
    with pytest.raises(FormationSetupError, match=r"'one'.*'say'|'say'"):
        f.validate()


def test_every_item_of_a_map_runs_once_when_nothing_fails() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_map_task.py::test_map_docs (each item
    runs once)."""
    calls = Counter()

    def t(x: int) -> int:
        calls.hit(x)
        return x

    assert Formation("wf").add_map("t", t, max_workers=3).run(list(range(10))).output == list(range(10))
    assert all(calls.count(x) == 1 for x in range(10))


# --- dynamic workflows: a graph that depends on the input ---------------------------------


def fast(a: int) -> str:
    return "fast-" + str(a + 2)


def ranged_int_to_str() -> Formation:
    """Flyte's ``@dynamic ranged_int_to_str``: one ``t1`` per ``i in range(a)``."""
    return (Formation("ranged_int_to_str").add_function("range", lambda a: list(range(a)))
            .add_map("t1", fast).connect("range", "t1"))


def test_a_dynamic_loop_over_a_range_is_a_map_over_the_list_it_builds() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_dynamic.py::test_dynamic_local."""
    assert ranged_int_to_str().run(5).output == ["fast-2", "fast-3", "fast-4", "fast-5", "fast-6"]


def test_a_dynamic_calling_a_dynamic_is_a_sub_workflow_holding_the_map() -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_dynamic.py::test_nested_dynamic_local
    (``add_and_range(a=2, b=3)`` calls ``ranged_int_to_str(a=a + b)``, in a workflow too)."""

    def add(ab: tuple[int, int]) -> int:
        return ab[0] + ab[1]

    add_and_range = (Formation("add_and_range").add_function("add", add)
                     .add_formation("ranged_int_to_str", ranged_int_to_str()).connect("add", "ranged_int_to_str"))
    assert add_and_range.run((2, 3)).output == ["fast-2", "fast-3", "fast-4", "fast-5", "fast-6"]
    wf = Formation("wf").add_formation("add_and_range", add_and_range)
    result = wf.run((2, 3))
    assert result.output == ["fast-2", "fast-3", "fast-4", "fast-5", "fast-6"]
    assert result.nodes["add_and_range/ranged_int_to_str/t1"].output == result.output


def test_a_resumed_run_of_dynamic_maps_two_deep_reruns_only_the_failed_inner_item(tmp_path: Any) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_dynamic.py::test_nested_dynamic_local (dynamic
    inside dynamic), failing at one item two maps deep; ours resumed from its journal (Flyte
    recovers an execution by reusing the nodes that succeeded)."""
    calls = Counter()
    broken = {"on": True}

    def leaf(x: int) -> int:
        calls.hit(x)
        if x == 12 and broken["on"]:
            raise ValueError("deep boom")
        return x

    spread = (Formation("spread").add_function("spread", lambda x: [10 * x + i for i in range(3)])
              .add_map("inner", formation=Formation("leaf").add_function("leaf", leaf))
              .add_function("sum", sum).connect("spread", "inner", "sum"))
    f = Formation("top").add_map("outer", formation=spread, max_workers=2)
    with RunStore(tmp_path / "runs.db") as store:
        with pytest.raises(FormationRuntimeError, match="deep boom"):
            f.run([0, 1, 2], store=store, run_id="deep")
        broken["on"] = False
        assert f.resume("deep", store=store).output == [3, 33, 63]
    assert calls.count(12) == 2
    assert all(calls.count(x) == 1 for x in (0, 1, 2, 10, 11, 20, 21, 22))


class Point:
    """A plain class: neither JSON data nor a type the run store knows."""

    def __init__(self, x: int) -> None:
        self.x = x


def test_a_journalled_map_whose_items_give_what_the_store_cannot_keep_names_the_map_node(tmp_path: Any) -> None:
    """From flyteorg/flytekit tests/flytekit/unit/core/test_map_task.py::test_serialization (a mapped
    task's outputs are serialised to be kept); a journalled map refuses what its store cannot keep,
    naming the item, the node and what to return instead."""

    def mk(x: int) -> Point:
        return Point(x)

    with RunStore(tmp_path / "runs.db") as store, pytest.raises(FormationRuntimeError) as info:
        Formation("wf").add_map("mk", mk).run([1, 2], store=store)
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError) and sorted(cause.errors) == [0, 1]
    message = str(cause.errors[0])
    assert "the output of item 0 of node 'mk'" in message and "fleet" not in message
    assert "cannot journal" in message and "a dataclass" in message
