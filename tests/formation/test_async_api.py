"""The async API of formations: ``await formation.arun(...)``, ``async for ... in
formation.astream(...)``, ``async with formation.astart() as running`` and ``await
running.asubmit(...)``; none blocks the caller's event loop, and cancelling the awaiting
task cancels the run. Also: the sync API called from inside a running loop."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import Any

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import RunOptions
from wingman_actors.orchestration import Blackboard


async def plus_one(x: int) -> int:
    await asyncio.sleep(0.01)
    return x + 1


def _pair() -> Formation:
    return Formation("pair").add_function("a", plus_one).add_function("b", plus_one).connect("a", "b")


def _hanging(started: threading.Event, unwound: threading.Event) -> Formation:
    async def hang(x: int) -> int:
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            unwound.set()
        return x

    return Formation("hang").add_function("hang", hang)


async def _when(event: threading.Event) -> None:
    while not event.is_set():
        await asyncio.sleep(0.005)


def test_arun_returns_the_result_of_a_formation_of_async_nodes() -> None:
    result = asyncio.run(_pair().arun(1))

    assert (result.status, result.output) == ("succeeded", 3)


def test_arun_takes_the_options_of_run_as_keywords_and_as_run_options() -> None:
    def read(x: int, *, blackboard: Blackboard) -> Any:
        return blackboard.get("k")

    f = Formation("board").add_function("read", read)
    board = Blackboard({"k": "v"})

    async def main() -> tuple[Any, Any]:
        by_keyword = await f.arun(1, blackboard=board, timeout=5)
        by_options = await f.arun(1, options=RunOptions(blackboard=board, timeout=5))
        return by_keyword.output, by_options.output

    assert asyncio.run(main()) == ("v", "v")


def test_concurrent_aruns_overlap_and_the_event_loop_keeps_ticking() -> None:
    async def slow(x: int) -> int:
        await asyncio.sleep(0.2)
        return x

    f = Formation("slow").add_function("slow", slow)
    ticks: list[float] = []

    async def heartbeat() -> None:
        while True:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.01)

    async def main() -> float:
        beat = asyncio.ensure_future(heartbeat())
        t0 = time.perf_counter()
        await asyncio.gather(*(f.arun(i) for i in range(5)))
        elapsed = time.perf_counter() - t0
        beat.cancel()
        return elapsed

    elapsed = asyncio.run(main())

    assert elapsed < 0.9  # five runs one after the other would take 1 s
    assert len(ticks) >= 10  # the loop ran its other task all along


def test_arun_awaits_an_async_map_function_over_every_item() -> None:
    f = Formation("map").add_function("items", lambda n: list(range(n))).add_map("each", plus_one, max_workers=4)
    f.connect("items", "each")

    assert asyncio.run(f.arun(5)).output == [1, 2, 3, 4, 5]


def test_a_failed_run_raises_formation_runtime_error_from_arun() -> None:
    async def boom(x: int) -> int:
        raise ValueError("no")

    with pytest.raises(FormationRuntimeError, match="boom"):
        asyncio.run(Formation("f").add_function("boom", boom).arun(1))


def test_a_node_timeout_cancels_an_async_node_awaited_through_arun() -> None:
    started, unwound = threading.Event(), threading.Event()
    f = _hanging(started, unwound)
    f.graph.nodes["hang"]["timeout"] = 0.1

    with pytest.raises(FormationRuntimeError, match="timed out"):
        asyncio.run(f.arun(1))
    assert unwound.wait(5)


def test_cancelling_the_task_awaiting_arun_cancels_the_async_node_and_its_finally_runs() -> None:
    started, unwound = threading.Event(), threading.Event()
    f = _hanging(started, unwound)

    async def main() -> None:
        task = asyncio.ensure_future(f.arun(1))
        await _when(started)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())

    assert unwound.wait(5)


def test_cancelling_arun_while_the_formation_starts_stops_it_before_the_cancel_goes_on() -> None:
    started, unwound = threading.Event(), threading.Event()
    f = _hanging(started, unwound)

    async def main() -> None:
        task = asyncio.ensure_future(f.arun(1))
        await asyncio.sleep(0)  # arun is starting the formation on a worker thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not started.is_set() or unwound.wait(5)  # what started was cancelled

    asyncio.run(main())  # the leak check: no actor or thread left running


def test_astream_yields_the_runs_events_in_order_ending_with_its_result() -> None:
    async def main() -> list[tuple[str, str | None]]:
        seen = []
        async for event in _pair().astream(1):
            seen.append((event.type.value, event.node))
            if event.type.value == "run_finished":
                assert event.data["result"].output == 3
        return seen

    assert asyncio.run(main()) == [
        ("run_started", None), ("node_started", "a"), ("node_finished", "a"),
        ("node_started", "b"), ("node_finished", "b"), ("run_finished", None),
    ]


def test_leaving_astream_early_stops_the_run_and_its_formation() -> None:
    started, unwound = threading.Event(), threading.Event()

    async def main() -> None:
        async for event in _hanging(started, unwound).astream(1):
            if event.type.value == "node_started":
                break

    asyncio.run(main())  # the async generator is closed when the loop shuts down

    assert unwound.wait(5)


def test_asubmit_returns_an_awaitable_with_the_run_id_of_its_result() -> None:
    async def main() -> tuple[str, str, int]:
        async with _pair().astart() as running:
            run = running.asubmit(1)
            result = await run
            return run.run_id, result.run_id, result.output

    run_id, result_id, output = asyncio.run(main())

    assert run_id == result_id and output == 3


def test_many_asubmits_on_one_started_formation_all_resolve() -> None:
    async def main() -> list[int]:
        async with _pair().astart() as running:
            results = await asyncio.gather(*(running.asubmit(i) for i in range(50)))
        return [r.output for r in results]

    assert asyncio.run(main()) == [i + 2 for i in range(50)]


def test_cancelling_the_task_awaiting_asubmit_cancels_the_run() -> None:
    started, unwound = threading.Event(), threading.Event()

    async def main() -> int:
        async with _hanging(started, unwound).astart() as running:
            task = asyncio.ensure_future(running.asubmit(1))
            await _when(started)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await _when(unwound)
            return running.in_flight

    assert asyncio.run(main()) == 0


def test_asubmit_outside_an_event_loop_says_it_needs_one() -> None:
    with _pair().start() as running, pytest.raises(RuntimeError, match="must be called from a coroutine"):
        running.asubmit(1)


def test_the_blocking_run_works_when_called_inside_a_running_event_loop() -> None:
    async def main() -> tuple[int, list[str]]:
        result = _pair().run(1)
        events = [e.type.value for e in _pair().run_stream(1)]
        return result.output, events

    output, events = asyncio.run(main())

    assert output == 3 and events[-1] == "run_finished"


def test_the_blocking_submit_works_when_called_inside_a_running_event_loop() -> None:
    async def main() -> int:
        with _pair().start() as running:
            return running.submit(1).result().output  # type: ignore[no-any-return]

    assert asyncio.run(main()) == 3


@pytest.mark.parametrize(("method", "twin"), [
    ("run", "arun"), ("run_stream", "astream"), ("resume", "aresume"),
    ("resume_stream", "aresume_stream"),
])
def test_the_docs_of_each_blocking_formation_call_say_it_blocks_and_name_its_awaitable_twin(
    method: str, twin: str
) -> None:
    # DESIGN, Async Python: the sync API works inside a running loop, "and its docs say it blocks"
    doc = " ".join((getattr(Formation, method).__doc__ or "").split())

    assert "blocks the calling thread" in doc.lower()
    assert re.search(rf"\b{twin}\b", doc)
