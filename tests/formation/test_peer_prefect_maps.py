"""``task.map`` behaviours ported from Prefect's own test suite (PrefectHQ/prefect,
``tests/test_tasks.py::TestTaskMap``, ``TestTaskSubmit`` and ``TestNestedTasks``): a
mapped task is a map node (``add_map``) over a list, its results in item order.
(``test_peer_prefect.py``'s module docstring maps the rest of Prefect onto formations.)

Deliberately different (DESIGN.md "Map nodes" documents ours):
- ``task.map(a, b)`` zips several iterables; a map function takes one item. Several
  lists are zipped by an upstream node; an ``unmapped(value)`` is a
  ``functools.partial`` of the function.
- Prefect maps over any iterable (a generator included); ours takes a list or a tuple,
  and anything else fails the node with a ``PayloadError`` naming it.
- A failed item is a failed state among the others in Prefect; here an item that still
  fails after the retries fails the node (``MapItemsError``, the errors by item index),
  and ``allow_failure`` downstream is an error edge receiving that failure.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, MapItemsError, PayloadError
from wingman_actors.formation import NodeFailure


async def add_one(x: int) -> int:
    return x + 1


def add_together(x: Any, y: Any) -> Any:
    return x + y


def test_a_map_outputs_one_result_per_item_in_item_order() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_simple_map (an async task)."""
    assert Formation("my_flow").add_map("add_one", add_one).run([1, 2, 3]).output == [2, 3, 4]


def test_results_keep_item_order_when_later_items_finish_first() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_simple_map (futures in order,
    whatever the order the items finish in)."""

    def slower_first(x: int) -> int:
        time.sleep(0.01 * (4 - x))
        return x * 10

    assert Formation("f").add_map("m", slower_first).run([1, 2, 3]).output == [10, 20, 30]


def test_a_map_takes_a_tuple_as_its_list() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_map_can_take_tuple_as_input."""
    assert Formation("my_flow").add_map("add_one", add_one).run((1, 2, 3)).output == [2, 3, 4]


def test_a_generator_meant_for_a_map_is_refused_at_the_node_that_returned_it() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_map_can_take_generator_as_input.
    Prefect maps over a generator; ours takes a list (DESIGN "Map nodes"), and the node that
    returned the generator fails at once, named, saying to return a list (a generator would be
    used up by the first node that reads it)."""

    def generate_numbers(n: int) -> Any:
        return (i for i in range(1, n + 1))

    f = (Formation("my_flow").add_function("numbers", generate_numbers).add_map("add_one", add_one)
         .connect("numbers", "add_one"))
    with pytest.raises(FormationRuntimeError, match=r"function node 'numbers' returned a generator.*list\(") as info:
        f.run(3)
    assert isinstance(info.value.__cause__, PayloadError) and info.value.node == "numbers"
    assert info.value.nodes["add_one"].status == "skipped"  # the map never got it


def test_a_map_given_a_single_value_fails_naming_the_node() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_missing_iterable_argument
    (MappingMissingIterable); ours a PayloadError, never retried."""
    f = Formation("my_flow").add_map("add_together", add_one, retries=2)
    with pytest.raises(FormationRuntimeError, match=r"map node 'add_together' needs a list input.*got int") as info:
        f.run(5)
    assert isinstance(info.value.__cause__, PayloadError) and info.value.attempts == 1


def test_a_map_takes_its_list_from_an_upstream_node() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_map_can_take_future_as_input."""
    f = (Formation("my_flow").add_function("some_numbers", lambda _: [1, 2, 3]).add_map("add_one", add_one)
         .connect("some_numbers", "add_one"))
    assert f.run(None).output == [2, 3, 4]


def test_several_lists_zipped_upstream_map_pairwise() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_multiple_inputs
    (``add_together.map(numbers, others)``): ours maps one list; a node zips the two."""

    def pairs(v: dict[str, list[int]]) -> list[tuple[int, int]]:
        return list(zip(v["numbers"], v["others"], strict=True))

    f = (Formation("my_flow").add_function("zip", pairs).add_map("add_together", lambda p: add_together(*p))
         .connect("zip", "add_together"))
    assert f.run({"numbers": [1, 2, 3], "others": [4, 5, 6]}).output == [5, 7, 9]


@pytest.mark.parametrize(("items", "other", "expected"), [
    ([1, 2, 3], 5, [6, 7, 8]),
    (["a", "b", "c"], "test", ["atest", "btest", "ctest"]),
])
def test_an_unmapped_argument_is_bound_with_a_partial(items: list[Any], other: Any, expected: list[Any]) -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_unmapped_int and ::test_unmapped_str."""
    f = Formation("my_flow").add_map("add_together", functools.partial(add_together, y=other))
    assert f.run(items).output == expected


def test_an_unmapped_list_reaches_every_item_whole() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_unmapped_iterable."""
    others = [4, 5, 6, 7]
    f = Formation("my_flow").add_map("add_together", functools.partial(add_together, y=others))
    assert f.run([[], [], []]).output == [others, others, others]


def test_a_parameter_with_a_default_keeps_it_for_every_item() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_with_keyword_with_default
    and ::test_with_keyword_with_iterable_default."""

    def add_some(x: int, y: list[int] = [1, 4]) -> int:  # noqa: B006 (Prefect's own sample)
        return x + sum(y)

    assert Formation("my_flow").add_map("add_some", add_some).run([1, 2, 3]).output == [6, 7, 8]


def test_an_empty_list_gives_an_empty_list_without_calling_the_function() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_simple_map over an empty list
    (Prefect returns no futures)."""
    counter = Counter()

    def never(x: int) -> int:
        counter.hit("calls")
        return x

    result = Formation("f").add_map("m", never).run([])
    assert (result.output, counter.count("calls"), result.nodes["m"].status) == ([], 0, "succeeded")


def test_a_failing_item_fails_the_node_naming_the_item_and_its_error() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskSubmit::test_allow_failure_chained_mapped_tasks
    (``fails_on_two.map([1, 2, 3])``, without allow_failure): Prefect's second state is
    failed and the flow fails; ours fails the node with MapItemsError, item 1's ValueError
    in ``errors``."""

    def fails_on_two(x: int) -> int:
        if x == 2:
            raise ValueError("Fail task")
        return x

    with pytest.raises(FormationRuntimeError, match=r"1 of 3 item\(s\) failed; first: item 1: ValueError: Fail task") as info:
        Formation("test_flow").add_map("fails_on_two", fails_on_two).run([1, 2, 3])
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError) and list(cause.errors) == [1]
    assert isinstance(cause.errors[1], ValueError) and cause.total == 3


def test_a_map_failure_reaches_an_error_edge_with_every_failed_item() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskSubmit::test_allow_failure_chained_mapped_tasks
    (``identity.map(allow_failure(f))``): the handler of the map's error edge gets a
    NodeFailure whose error lists the failed items; the map's input rides along, so the
    handler can rebuild what the others gave."""

    def fails_on_two(x: int) -> int:
        if x == 2:
            raise ValueError("Fail task")
        return x

    def identity(failure: NodeFailure) -> list[Any]:
        assert isinstance(failure.error, MapItemsError)
        return [failure.error.errors.get(i, x) for i, x in enumerate(failure.input)]

    f = (Formation("test_flow").add_map("fails_on_two", fails_on_two).add_function("identity", identity)
         .connect("fails_on_two", "identity", on_error=True))
    out = f.run([1, 2, 3]).outputs["identity"]
    assert out[0] == 1 and out[2] == 3 and isinstance(out[1], ValueError) and str(out[1]) == "Fail task"


def test_map_retries_rerun_only_the_items_that_failed() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskRetries::test_task_only_uses_necessary_retries
    over a map (each mapped task run retries on its own; the others are not rerun)."""
    counter = Counter()

    def flaky(x: int) -> int:
        if counter.hit(x) == 1 and x % 2 == 0:
            raise ConnectionError("flaky")
        return x * 10

    result = Formation("f").add_map("m", flaky, retries=1, backoff=0).run([1, 2, 3, 4])
    assert result.output == [10, 20, 30, 40]
    assert counter.calls == {1: 1, 2: 2, 3: 1, 4: 2}


def test_a_map_runs_at_most_max_workers_items_at_once() -> None:
    """Ported from PrefectHQ/prefect tests/test_task_runners.py (``ThreadPoolTaskRunner(max_workers=...)``
    bounds the mapped task runs in flight): at most two items run at once, and two do."""
    lock = threading.Lock()
    running = [0, 0]  # now, peak

    def item(x: int) -> int:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        time.sleep(0.1)
        with lock:
            running[0] -= 1
        return x

    assert Formation("f").add_map("m", item, max_workers=2).run(list(range(6))).output == list(range(6))
    assert running[1] == 2


def test_an_async_map_is_awaited_from_an_async_caller() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_async_flow_with_async_map
    and ::test_async_flow_with_sync_map."""

    def subtract_them(p: tuple[int, int]) -> int:
        return p[0] - p[1]

    async def main() -> tuple[Any, Any]:
        a = await Formation("my_flow").add_map("add_one", add_one).arun([1, 2, 3])
        b = await Formation("my_flow").add_map("subtract_them", subtract_them).arun([(4, 1), (5, 2), (6, 3)])
        return a.output, b.output

    assert asyncio.run(main()) == ([2, 3, 4], [3, 3, 3])


def test_a_map_inside_a_nested_formation_feeds_a_node_after_it() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestNestedTasks::test_nested_map
    (``outer_task`` maps ``inner_task`` and sums): the outer task is a formation node
    holding the map and the sum."""
    inner = (Formation("outer_task").add_map("inner_task", lambda x: x * 2).add_function("total", sum)
             .connect("inner_task", "total"))
    assert Formation("my_flow").add_formation("outer_task", inner).run([1, 2, 3]).output == 12


def test_a_map_takes_the_output_of_a_nested_formation() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestTaskMap::test_map_can_take_flow_state_as_input."""
    child = Formation("child_flow").add_function("numbers", lambda _: [1, 2, 3])
    f = (Formation("my_flow").add_formation("child_flow", child).add_map("add_one", add_one)
         .connect("child_flow", "add_one"))
    assert f.run(None).output == [2, 3, 4]


def test_a_map_over_a_formation_runs_the_whole_formation_per_item() -> None:
    """Ported from PrefectHQ/prefect tests/test_tasks.py::TestNestedTasks::test_nested_submitted_task_that_also_is_submitted
    (each mapped run does a chain of its own): a map of a formation, one inner run per item."""
    inner = Formation("each").add_function("double", lambda x: x * 2).add_function("inc", lambda x: x + 1)
    inner.connect("double", "inc")
    assert Formation("f").add_map("each", formation=inner, max_workers=2).run([1, 2, 3]).output == [3, 5, 7]
