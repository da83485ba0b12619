"""``add_map(name, formation=sub)``: a formation run once per item of a list."""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError
from typing import Any

import pytest

from tests.support.peers import InFlight
from wingman_actors import Formation
from wingman_actors.errors import FleetItemsError, FormationRuntimeError, FormationSetupError, MapItemsError
from wingman_actors.formation import to_mermaid
from wingman_actors.formation.events import FormationEvent, FormationEventType


def square(x: int) -> int:
    return x * x


def show(x: int) -> str:
    return f"<{x}>"


def items(n: int) -> list[int]:
    return list(range(n))


def per_item(*fns: Any) -> Formation:
    inner = Formation("per-item")
    for fn in fns:
        inner.add_function(fn.__name__, fn)
    if len(fns) > 1:
        inner.connect(*(fn.__name__ for fn in fns))
    return inner


def mapped(inner: Formation, **kwargs: Any) -> Formation:
    return Formation("outer").add_function("items", items).add_map("each", formation=inner, **kwargs) \
        .connect("items", "each")


def test_add_map_over_a_formation_writes_the_documented_attributes() -> None:
    inner = per_item(square)
    f = Formation("outer").add_map("each", formation=inner, max_workers=3, retries=1)
    assert dict(f.graph.nodes["each"]) == {"kind": "map", "formation": inner, "max_workers": 3, "retries": 1}


def test_the_map_outputs_the_inner_outputs_in_item_order() -> None:
    assert mapped(per_item(square, show), max_workers=3).run(5).output == ["<0>", "<1>", "<4>", "<9>", "<16>"]


def test_an_empty_list_gives_an_empty_list() -> None:
    assert mapped(per_item(square)).run(0).output == []


def test_at_most_max_workers_items_run_at_once() -> None:
    flight = InFlight()

    def slow(x: int) -> int:
        with flight:
            time.sleep(0.02)
        return x

    assert mapped(per_item(slow), max_workers=3).run(12).output == list(range(12))
    assert flight.peak == 3


def test_inner_events_are_named_by_item_and_path() -> None:
    events: list[FormationEvent] = []
    mapped(per_item(square), max_workers=1).run(2, on_event=events.append)
    finished = [e.node for e in events if e.type is FormationEventType.NODE_FINISHED]
    assert finished == ["items", "each/0/square", "each/1/square", "each"]


def test_a_failing_item_fails_the_node_naming_the_item() -> None:
    def picky(x: int) -> int:
        if x == 2:
            raise ValueError("not two")
        return x

    with pytest.raises(FormationRuntimeError) as caught:
        mapped(per_item(picky)).run(4)
    error = caught.value.__cause__
    assert isinstance(error, FleetItemsError) and list(error.errors) == [2]
    assert "not two" in str(error)


def test_a_failing_item_fails_the_node_with_a_map_items_error_naming_the_map_node() -> None:
    def picky(x: int) -> int:
        if x == 1:
            raise ValueError("not one")
        return x

    with pytest.raises(FormationRuntimeError) as caught:
        Formation("outer").add_map("each", formation=per_item(picky)).run([0, 1])
    error = caught.value.__cause__
    assert isinstance(error, MapItemsError) and (error.node, error.total, list(error.errors)) == ("each", 2, [1])
    assert str(error).startswith("map node 'each': 1 of 2 item(s) failed; first: item 1: NestedRunError: ")


def test_a_retry_reruns_only_the_items_that_failed() -> None:
    calls: list[int] = []

    def flaky(x: int) -> int:
        calls.append(x)
        if x == 1 and calls.count(1) == 1:
            raise ValueError("first time")
        return x

    assert mapped(per_item(flaky), retries=1, backoff=0, max_workers=1).run(3).output == [0, 1, 2]
    assert sorted(calls) == [0, 1, 1, 2]


def test_retry_on_naming_the_inner_nodes_error_reruns_the_items_that_failed() -> None:
    calls: list[int] = []

    def flaky(x: int) -> int:
        calls.append(x)
        if x == 1 and calls.count(1) == 1:
            raise ConnectionError("blip")
        return x

    result = mapped(per_item(flaky), retries=1, retry_on=ConnectionError, backoff=0, max_workers=1).run(3)
    assert result.output == [0, 1, 2]
    assert sorted(calls) == [0, 1, 1, 2]


def test_cancelling_the_run_cancels_the_items_in_flight() -> None:
    entered, release = threading.Event(), threading.Event()

    def wait(x: int) -> int:
        entered.set()
        release.wait(4)
        return x

    try:
        with mapped(per_item(wait), max_workers=2).start() as running:
            future = running.submit(4)
            assert entered.wait(3)
            assert future.cancel() is True
            with pytest.raises(CancelledError):
                future.result(timeout=1)
    finally:
        release.set()


def test_a_map_needs_a_list_input() -> None:
    f = Formation("outer").add_function("one", square).add_map("each", formation=per_item(square)).connect("one", "each")
    with pytest.raises(FormationSetupError, match=r"map node 'each' needs a list .* but 'one' outputs int"):
        f.validate()


def test_each_item_is_checked_against_the_inner_sources() -> None:
    def words(n: int) -> list[str]:
        return ["a"] * n

    f = Formation("outer").add_function("words", words).add_map("each", formation=per_item(square))
    with pytest.raises(FormationSetupError, match="'words' outputs items of type str but map node 'each' runs"):
        f.connect("words", "each").validate()


def test_the_map_outputs_a_list_of_the_inner_output_type() -> None:
    assert mapped(per_item(square, show)).validate().nodes["each"].output_type == list[str]


def test_mermaid_draws_the_mapped_formation_as_a_subgraph() -> None:
    lines = to_mermaid(mapped(per_item(square), max_workers=4)).splitlines()
    assert '    subgraph each ["map: each \u00d74"]' in lines and '        each_square["square"]' in lines
