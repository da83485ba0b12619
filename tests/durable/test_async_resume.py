"""Durable runs awaited on an event loop: ``await formation.aresume(...)``,
``formation.aresume_stream(...)`` and ``await running.aresume(...)`` continue a journalled
run (an interrupt answered included); cancelling the awaiting task cancels the resumed run.
``running.asubmit`` on a formation with a store writes the run's start off the loop."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from tests.support.sched import cpu_wait
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, FormationSetupError
from wingman_actors.store import RunStore, StoreError, UnknownRunError


def approve(draft: str) -> str:
    verdict = interrupt({"approve?": draft})
    return f"{draft}: {verdict}"


def approval() -> Formation:
    return (Formation("approval").add_function("draft", lambda x: x.upper()).add_function("approve", approve)
            .connect("draft", "approve"))


def _gated(asked: threading.Event, unwound: threading.Event) -> Formation:
    """A node that asks first, then (resumed) awaits a long time: cancel it there."""

    async def gate(x: int) -> str:
        answer = interrupt("go?")
        asked.set()
        try:
            await asyncio.sleep(30)
        finally:
            unwound.set()
        return str(answer)

    return Formation("gated").add_function("gate", gate)


async def _when(event: threading.Event) -> None:
    while not event.is_set():
        await asyncio.sleep(0.005)


def test_aresume_answers_the_interrupt_of_a_run_suspended_by_arun(store: RunStore) -> None:
    f = approval()

    async def main() -> tuple[str, str, object]:
        first = await f.arun("memo", store=store)
        assert first.status == "suspended"
        resumed = await f.aresume(first.run_id, store=store, answer="yes")
        return first.run_id, resumed.status, resumed.output

    run_id, status, output = asyncio.run(main())

    assert (status, output) == ("succeeded", "MEMO: yes")
    assert store.get(run_id).status == "succeeded"


def test_aresume_takes_the_store_by_path(path: Path) -> None:
    f = approval()

    async def main() -> object:
        first = await f.arun("memo", store=path)
        return (await f.aresume(first.run_id, store=path, answer="ok")).output

    assert asyncio.run(main()) == "MEMO: ok"


def test_cancelling_the_task_awaiting_aresume_cancels_the_resumed_run(store: RunStore) -> None:
    asked, unwound = threading.Event(), threading.Event()
    f = _gated(asked, unwound)

    async def main() -> str:
        first = await f.arun(1, store=store)
        task = asyncio.ensure_future(f.aresume(first.run_id, store=store, answer="go"))
        await _when(asked)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return first.run_id

    run_id = asyncio.run(main())

    assert unwound.wait(5)  # the node's coroutine was cancelled: its finally ran
    assert store.get(run_id).status == "cancelled"


def test_a_run_whose_aresume_was_cancelled_resumes_again_with_the_answer_it_was_given(store: RunStore) -> None:
    asked = threading.Event()
    attempts: list[str] = []

    async def gate(x: int) -> str:
        answer = str(interrupt("go?"))
        attempts.append(answer)
        asked.set()
        if len(attempts) == 1:
            await asyncio.sleep(30)  # the first resumed attempt hangs: it is cancelled there
        return answer

    f = Formation("gated").add_function("gate", gate)

    async def main() -> object:
        first = await f.arun(1, store=store)
        task = asyncio.ensure_future(f.aresume(first.run_id, store=store, answer="yes"))
        await _when(asked)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert store.get(first.run_id).status == "cancelled"
        return (await f.aresume(first.run_id, store=store)).output

    assert asyncio.run(main()) == "yes"
    assert attempts == ["yes", "yes"]


def test_aresume_stream_yields_the_resumed_runs_events_ending_with_its_result(store: RunStore) -> None:
    f = approval()

    async def main() -> list[tuple[str, str | None, object]]:
        first = await f.arun("memo", store=store)
        seen = []
        async for event in f.aresume_stream(first.run_id, store=store, answer="yes"):
            result = event.data.get("result") if event.type.value == "run_finished" else None
            seen.append((event.type.value, event.node, result.output if result is not None else None))
        return seen

    seen = asyncio.run(main())

    assert seen[0][0] == "run_started" and seen[-1] == ("run_finished", None, "MEMO: yes")
    assert ("node_started", "approve", None) in seen


def test_running_aresume_returns_an_awaitable_with_the_run_id(store: RunStore) -> None:
    async def main() -> tuple[str, str, object]:
        async with approval().astart(store=store) as running:
            first = await running.asubmit("memo")
            resumed = running.aresume(first.run_id, answer="yes")
            return resumed.run_id, first.run_id, (await resumed).output

    resumed_id, run_id, output = asyncio.run(main())

    assert resumed_id == run_id and output == "MEMO: yes"


def test_cancelling_the_task_awaiting_running_aresume_cancels_the_run(store: RunStore) -> None:
    asked, unwound = threading.Event(), threading.Event()

    async def main() -> tuple[str, int]:
        async with _gated(asked, unwound).astart(store=store) as running:
            first = await running.asubmit(1)
            task = asyncio.ensure_future(running.aresume(first.run_id, answer="go"))
            await _when(asked)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await _when(unwound)
            return first.run_id, running.in_flight

    run_id, in_flight = asyncio.run(main())

    assert in_flight == 0
    assert store.get(run_id).status == "cancelled"


def test_running_aresume_of_an_unknown_run_raises_the_stores_error_when_awaited(store: RunStore) -> None:
    async def main() -> None:
        async with approval().astart(store=store) as running:
            run = running.aresume("no-such-run")
            with pytest.raises(UnknownRunError):
                await run

    asyncio.run(main())


def test_a_journalled_asubmit_left_unawaited_when_the_formation_stops_fails_with_a_clear_error(
    store: RunStore,
) -> None:
    async def hang(x: int) -> int:
        await asyncio.sleep(30)
        return x

    async def main() -> asyncio.Future[object]:
        async with Formation("hang").add_function("hang", hang).astart(store=store) as running:
            run = running.asubmit(1)
        return run

    async def outcome() -> BaseException | None:
        run = await main()
        try:
            await run
        except (RuntimeError, FormationRuntimeError) as exc:
            return exc
        return None

    error = asyncio.run(outcome())

    assert error is not None and ("not running" in str(error) or "stopped before run" in str(error))


def test_running_aresume_without_a_store_says_to_start_with_one() -> None:
    async def main() -> None:
        async with approval().astart() as running:
            with pytest.raises(ValueError, match="needs the run's store"):
                running.aresume("some-run")

    asyncio.run(main())


def test_a_journalled_asubmit_knows_its_run_id_before_the_run_is_written(store: RunStore) -> None:
    async def main() -> tuple[str, str]:
        async with approval().astart(store=store) as running:
            run = running.asubmit("memo")
            return run.run_id, (await run).run_id

    given, result_id = asyncio.run(main())

    assert given == result_id and store.get(given).status == "suspended"


def test_a_journalled_asubmit_under_a_taken_run_id_raises_the_stores_error_when_awaited(store: RunStore) -> None:
    async def main() -> None:
        async with approval().astart(store=store) as running:
            await running.asubmit("memo", run_id="r1")
            with pytest.raises(StoreError):
                await running.asubmit("memo", run_id="r1")

    asyncio.run(main())


def test_a_journalled_asubmit_raises_a_bad_argument_at_the_call(store: RunStore) -> None:
    async def main() -> None:
        async with approval().astart(store=store) as running:
            with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
                running.asubmit("memo", timeout=0)
            with pytest.raises(FormationSetupError, match="nope"):
                running.asubmit("memo", break_before=["nope"])

    asyncio.run(main())
    assert store.runs() == []


def test_cancelling_a_journalled_asubmit_at_once_cancels_its_run(store: RunStore) -> None:
    async def hang(x: int) -> int:
        await asyncio.sleep(30)
        return x

    async def main() -> tuple[str, int]:
        async with Formation("hang").add_function("hang", hang).astart(store=store) as running:
            run = running.asubmit(1)
            run.cancel()  # before its start is written: it is cancelled as soon as it starts
            with pytest.raises(asyncio.CancelledError):
                await run
            for _ in range(1000):  # until the run's start is written and its cancel journalled
                await asyncio.sleep(0.005)
                if run.run_id in {r.id for r in store.runs(status="cancelled")}:
                    break
            return run.run_id, running.in_flight

    run_id, in_flight = asyncio.run(main())

    assert in_flight == 0 and store.get(run_id).status == "cancelled"


def test_journalled_asubmits_do_not_stall_the_event_loop(tmp_path: Path) -> None:
    async def plus(x: int) -> int:
        await asyncio.sleep(0.01)
        return x + 1

    f = Formation("beat").add_function("plus", plus)
    stalls: list[float] = []

    async def heartbeat() -> None:
        # A beat's lateness less the time the process's threads waited for a CPU: on a
        # loaded machine the OS alone delays a beat by more than 50 ms, a stall not ours.
        last, waited = time.perf_counter(), cpu_wait()
        while True:
            await asyncio.sleep(0.01)
            now, now_waited = time.perf_counter(), cpu_wait()
            stalls.append(now - last - 0.01 - (now_waited - waited))
            last, waited = now, now_waited

    async def main(store: RunStore) -> list[int]:
        async with f.astart(store=store) as running:
            beat = asyncio.ensure_future(heartbeat())
            await asyncio.sleep(0.03)
            results = await asyncio.gather(*(running.asubmit(i) for i in range(200)))
            await asyncio.sleep(0.03)
            beat.cancel()
        return [r.output for r in results]

    # synchronous="FULL": each begin's commit waits for the disk, as a cautious deployment's does
    with RunStore(tmp_path / "runs.sqlite", synchronous="FULL") as store:
        outputs = asyncio.run(main(store))

    assert outputs == [i + 1 for i in range(200)]
    assert max(stalls) < 0.05, f"the loop stalled {max(stalls) * 1000:.0f} ms"
