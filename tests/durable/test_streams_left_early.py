"""A consumer that leaves ``run_stream`` or ``astream`` of a journalled run early stops
the formation: the run is interrupted, not cancelled, and resumes from its journal (the
visits it finished are not run again). Sync and async streams agree."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from wingman_actors import Formation
from wingman_actors.store import RunStore


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Holds ``second`` until the test releases it, or ends (its abandoned attempt then
    ends before the leak check)."""
    event = threading.Event()
    yield event
    event.set()


def _two_steps(calls: list[int], release: threading.Event) -> Formation:
    """``first`` counts its calls; ``second`` waits for ``release`` (bounded, so a test
    that fails cannot hang its worker)."""

    def first(x: int) -> int:
        calls.append(x)
        return x + 1

    def second(x: int) -> int:
        release.wait(10)
        return x * 10

    return Formation("two-steps").add_function("first", first).add_function("second", second).connect("first", "second")


def test_leaving_run_stream_of_a_journalled_run_early_leaves_it_interrupted_and_resumable(
    store: RunStore, release: threading.Event
) -> None:
    calls: list[int] = []
    formation = _two_steps(calls, release)
    run_id = None
    stream = formation.run_stream(1, store=store)
    for event in stream:
        run_id = event.run_id
        if event.type.value == "node_finished" and event.node == "first":
            break
    stream.close()  # `second` is still waiting: the stop leaves it behind

    assert run_id is not None and store.get(run_id).status == "interrupted"
    release.set()
    resumed = formation.resume(run_id, store=store)
    assert (resumed.status, resumed.output, calls) == ("succeeded", 20, [1])


def test_leaving_astream_of_a_journalled_run_early_leaves_it_interrupted_and_resumable(
    store: RunStore, release: threading.Event
) -> None:
    calls: list[int] = []
    formation = _two_steps(calls, release)

    async def main() -> str | None:
        run_id = None
        stream = formation.astream(1, store=store)
        async for event in stream:
            run_id = event.run_id
            if event.type.value == "node_finished" and event.node == "first":
                break
        await stream.aclose()  # type: ignore[attr-defined]  # `second` still waits: the stop leaves it behind
        return run_id

    run_id = asyncio.run(main())

    assert run_id is not None and store.get(run_id).status == "interrupted"
    release.set()
    resumed = formation.resume(run_id, store=store)
    assert (resumed.status, resumed.output, calls) == ("succeeded", 20, [1])


def test_cancelling_the_task_iterating_astream_of_a_journalled_run_cancels_the_run(
    store: RunStore, release: threading.Event
) -> None:
    formation = _two_steps([], release)
    seen: list[str] = []

    async def consume() -> None:
        async for event in formation.astream(1, store=store):
            seen.append(event.run_id)

    async def main() -> None:
        task = asyncio.ensure_future(consume())
        while not seen:
            await asyncio.sleep(0.005)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    asyncio.run(main())

    assert store.get(seen[0]).status == "cancelled"
