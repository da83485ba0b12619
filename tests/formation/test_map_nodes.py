"""Map nodes: a function applied to every item of a list input, concurrently up to
``max_workers``, results in item order; ``async def`` functions awaited; per-item
retries; timeouts and cancellation. (Journalling and resume: tests/durable/test_map_resume.py;
validation and drawing: tests/formation/test_map_declaration.py.)"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from concurrent.futures import CancelledError
from typing import Any

import networkx as nx
import pytest

from tests.support.peers import InFlight
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, MapItemsError, NodeTimeoutError, PayloadError
from wingman_actors.formation import NodeFailure
from wingman_actors.testing import run_node


class Counted:
    """A map function that counts its calls per item and fails the items in ``failing``
    (each as many times as its count there)."""

    def __init__(self, failing: dict[int, int] | None = None) -> None:
        self.calls: Counter[int] = Counter()
        self.failing = dict(failing or {})
        self.lock = threading.Lock()

    def __call__(self, x: int) -> int:
        with self.lock:
            self.calls[x] += 1
            fail = self.failing.get(x, 0) >= self.calls[x]
        if fail:
            raise ValueError(f"item {x} is broken")
        return x * 10


def test_a_map_node_outputs_the_results_in_item_order() -> None:
    def slow_first(x: int) -> int:
        time.sleep(0.05 if x == 0 else 0.0)  # the first item finishes last
        return x * x

    result = Formation("m").add_map("square", slow_first, max_workers=4).run([0, 1, 2, 3, 4])

    assert result.output == [0, 1, 4, 9, 16]


def test_a_map_node_runs_at_most_max_workers_items_at_once() -> None:
    flight = InFlight()

    def work(x: int) -> int:
        with flight:
            time.sleep(0.02)
        return x

    result = Formation("m").add_map("work", work, max_workers=3).run(list(range(12)))

    assert result.output == list(range(12))
    assert flight.peak == 3


def test_max_workers_zero_runs_every_item_at_once_as_a_fleet_node_does() -> None:
    barrier = threading.Barrier(8, timeout=5)  # breaks unless all 8 items run at once

    def meet(x: int) -> int:
        barrier.wait()
        return x

    assert Formation("m").add_map("meet", meet).run(list(range(8))).output == list(range(8))


def test_an_async_function_is_awaited_concurrently_on_a_loop_the_runtime_owns() -> None:
    caller = threading.current_thread()
    threads: set[str] = set()

    async def fetch(x: int) -> str:
        asyncio.get_running_loop()  # raises outside a running loop
        threads.add(threading.current_thread().name)
        await asyncio.sleep(0.2)
        return f"page {x}"

    t0 = time.perf_counter()
    result = Formation("m").add_map("fetch", fetch, max_workers=10).run(list(range(10)))

    assert result.output == [f"page {i}" for i in range(10)]
    assert time.perf_counter() - t0 < 1.5  # 10 x 0.2 s one after another would take 2 s
    assert len(threads) == 1 and caller.name not in threads


def test_an_async_function_runs_at_most_max_workers_items_at_once() -> None:
    flight = InFlight()

    async def work(x: int) -> int:
        with flight:
            await asyncio.sleep(0.01)
        return x

    assert Formation("m").add_map("work", work, max_workers=2).run(list(range(9))).output == list(range(9))
    assert flight.peak == 2


def test_an_empty_list_gives_an_empty_list() -> None:
    assert Formation("m").add_map("work", Counted()).run([]).output == []


def test_a_retry_reruns_only_the_items_that_failed() -> None:
    fn = Counted(failing={2: 1, 5: 2})

    result = Formation("m").add_map("work", fn, retries=2, backoff=0).run(list(range(7)))

    assert result.output == [x * 10 for x in range(7)]
    assert fn.calls == Counter({0: 1, 1: 1, 2: 2, 3: 1, 4: 1, 5: 3, 6: 1})
    assert result.nodes["work"].attempts == 3


def test_an_item_that_still_fails_after_the_retries_fails_the_run_naming_the_node_and_item() -> None:
    fn = Counted(failing={3: 99})
    f = Formation("m").add_map("work", fn, retries=1, backoff=0)

    with pytest.raises(FormationRuntimeError, match=r"'work' failed after 2 attempt") as info:
        f.run(list(range(5)))

    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError)
    assert list(cause.errors) == [3] and cause.total == 5 and cause.node == "work"
    assert "map node 'work': 1 of 5 item(s) failed; first: item 3: ValueError: item 3 is broken" in str(cause)
    assert fn.calls[3] == 2 and fn.calls[0] == 1


def test_on_error_skip_skips_a_map_node_whose_item_keeps_failing() -> None:
    f = Formation("m").add_map("work", Counted(failing={1: 99}), on_error="skip")

    result = f.run([0, 1])

    assert result.nodes["work"].status == "skipped"
    assert "MapItemsError" in (result.nodes["work"].error or "")


def test_a_map_that_fails_hands_its_error_edge_a_node_failure_naming_the_items() -> None:
    def handle(failure: NodeFailure) -> str:
        assert isinstance(failure.error, MapItemsError)
        return f"{failure.node} failed on items {sorted(failure.error.errors)} of {failure.input}"

    f = (Formation("m").add_map("work", Counted(failing={1: 99, 3: 99})).add_function("handle", handle)
         .connect("work", "handle", on_error=True))

    result = f.run([0, 1, 2, 3])

    assert result.outputs["handle"] == "work failed on items [1, 3] of [0, 1, 2, 3]"
    assert result.nodes["work"].status == "failed"


def test_retry_on_retries_only_the_failed_items_whose_errors_it_names() -> None:
    class Flaky(Counted):
        def __call__(self, x: int) -> int:
            if x == 1 and self.calls[x] == 0:
                self.calls[x] += 1
                raise ConnectionError("dropped")
            return super().__call__(x)

    retried = Flaky()
    assert Formation("m").add_map("w", retried, retries=1, backoff=0, retry_on=ConnectionError).run([0, 1]).output == [0, 10]
    assert retried.calls == Counter({0: 1, 1: 2})

    refused = Flaky(failing={0: 1})  # item 0 raises ValueError, which retry_on does not name
    with pytest.raises(FormationRuntimeError, match="after 2 attempt") as info:
        Formation("m").add_map("w", refused, retries=1, backoff=0, retry_on=ConnectionError).run([0, 1])
    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError) and list(cause.errors) == [0]  # item 1 succeeded on its retry
    assert refused.calls == Counter({0: 1, 1: 2})  # item 0 is not run again


def test_an_item_that_does_not_fit_the_parameter_fails_the_node_without_retrying() -> None:
    fn = Counted()
    f = Formation("m").add_map("work", fn, retries=3, backoff=0)

    with pytest.raises(FormationRuntimeError) as info:
        f.run([1, "two", 3])

    cause = info.value.__cause__
    assert isinstance(cause, MapItemsError) and isinstance(cause.errors[1], PayloadError)
    assert "item 1" in str(cause.errors[1]) and "int" in str(cause.errors[1])
    assert info.value.attempts == 1  # a payload that does not fit would fail again
    assert fn.calls == Counter({1: 1, 3: 1})


def test_items_are_validated_and_converted_to_the_parameter_type() -> None:
    def twice(x: float) -> float:
        return x * 2

    assert Formation("m").add_map("twice", twice).run([1, "2.5"]).output == [2.0, 5.0]


def test_a_map_node_timeout_bounds_the_whole_visit() -> None:
    def step(x: int) -> int:
        time.sleep(0.05)
        return x

    f = Formation("m").add_map("slow", step, max_workers=1, timeout=0.3)
    t0 = time.perf_counter()
    with pytest.raises(FormationRuntimeError) as info:
        f.run(list(range(40)))  # 2 s of items one at a time

    assert time.perf_counter() - t0 < 0.3 + 0.3
    assert isinstance(info.value.__cause__, NodeTimeoutError)


def test_a_timeout_cancels_the_coroutines_of_an_async_map() -> None:
    cancelled: list[int] = []

    async def stuck(x: int) -> int:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(x)
            raise
        return x

    f = Formation("m").add_map("stuck", stuck, timeout=0.2)
    with pytest.raises(FormationRuntimeError) as info:
        f.run([1, 2, 3])

    assert isinstance(info.value.__cause__, NodeTimeoutError)
    deadline = time.monotonic() + 5
    while len(cancelled) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(cancelled) == [1, 2, 3]


def test_a_timed_out_visit_retried_keeps_the_items_it_finished() -> None:
    calls: Counter[int] = Counter()
    gate = threading.Event()

    def work(x: int) -> int:
        calls[x] += 1
        if x == 3 and calls[x] == 1:
            gate.wait(3)  # stuck past the timeout on the first attempt only
        return x

    # a timeout the other items finish well within, even on a loaded machine (0.3 s was not, at load 10)
    result = Formation("m").add_map("work", work, max_workers=4, timeout=1.0, retries=1, backoff=0).run([0, 1, 2, 3])
    gate.set()

    assert result.output == [0, 1, 2, 3]
    assert calls == Counter({0: 1, 1: 1, 2: 1, 3: 2})


def test_cancelling_a_run_starts_no_further_item() -> None:
    started: list[int] = []
    first = threading.Event()

    def step(x: int) -> int:
        started.append(x)
        first.set()
        time.sleep(0.02)
        return x

    with Formation("m").add_map("step", step, max_workers=1).start() as running:
        future = running.submit(list(range(200)))  # 4 s of items one at a time
        assert first.wait(5)
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result(1)
        count = len(started)
        time.sleep(0.2)
        assert len(started) <= count + 1  # the item in flight may finish; none starts after it
    assert len(started) < 20


def test_cancelling_a_run_cancels_the_coroutines_of_an_async_map() -> None:
    cancelled: list[int] = []
    waiting = threading.Semaphore(0)

    async def stuck(x: int) -> int:
        waiting.release()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(x)
            raise
        return x

    with Formation("m").add_map("stuck", stuck).start() as running:
        future = running.submit([1, 2])
        assert waiting.acquire(timeout=5) and waiting.acquire(timeout=5)
        assert future.cancel()
        deadline = time.monotonic() + 5
        while len(cancelled) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert sorted(cancelled) == [1, 2]


def test_a_map_node_of_a_hand_built_graph_is_the_same_as_the_builders() -> None:
    def double(x: int) -> int:
        return 2 * x

    built = Formation("m").add_map("double", double, max_workers=2)
    graph = nx.DiGraph()
    graph.add_node("double", kind="map", fn=double, max_workers=2)

    assert dict(built.graph.nodes["double"]) == dict(graph.nodes["double"])
    assert Formation("m", graph).run([1, 2]).output == [2, 4]


def test_a_map_node_runs_alone_with_run_node() -> None:
    f = Formation("m").add_map("double", lambda x: 2 * x)

    assert run_node(f, "double", [1, 2, 3]).output == [2, 4, 6]


def test_map_nodes_work_in_a_pipeline_of_many_runs_in_flight() -> None:
    def split(text: str) -> list[str]:
        return text.split()

    async def shout(word: str) -> str:
        await asyncio.sleep(0.001)
        return word.upper()

    def join(words: list[str]) -> str:
        return " ".join(words)

    f = (Formation("m").add_function("split", split).add_map("shout", shout, max_workers=2)
         .add_function("join", join).connect("split", "shout", "join"))
    with f.start() as running:
        futures = [running.submit(f"run {i} of many") for i in range(20)]
        outputs: list[Any] = [fut.result(10).output for fut in futures]
    assert outputs == [f"RUN {i} OF MANY" for i in range(20)]
