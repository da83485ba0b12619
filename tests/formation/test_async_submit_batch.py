"""Many ``asubmit`` calls made in one loop step (as ``asyncio.gather`` of them does): every
run starts, each call checks its own arguments and returns its run id at once, and each run
stays its own (its errors, its cancel). (Holding them for one launch per loop iteration was
measured and not kept: see docs/benchmarks.md, "Async concurrency".)"""

from __future__ import annotations

import asyncio
import threading

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError


async def plus_one(x: int) -> int:
    await asyncio.sleep(0.01)
    return x + 1


def _pair() -> Formation:
    return Formation("pair").add_function("a", plus_one).add_function("b", plus_one).connect("a", "b")


def test_every_run_submitted_in_one_loop_step_starts_and_resolves() -> None:
    seen: list[int] = []
    lock = threading.Lock()

    async def record(x: int) -> int:
        with lock:
            seen.append(x)
        await asyncio.sleep(0.01)
        return x

    async def main() -> list[int]:
        async with Formation("rec").add_function("rec", record).astart() as running:
            runs = [running.asubmit(i) for i in range(200)]  # one loop step
            results = await asyncio.gather(*runs)
        return [r.output for r in results]

    assert asyncio.run(main()) == list(range(200))
    assert sorted(seen) == list(range(200))


def test_each_asubmit_of_one_loop_step_returns_its_own_run_id_at_once() -> None:
    async def main() -> tuple[list[str], list[str]]:
        async with _pair().astart() as running:
            runs = [running.asubmit(i) for i in range(5)]
            ids = [run.run_id for run in runs]
            results = await asyncio.gather(*runs)
        return ids, [r.run_id for r in results]

    ids, result_ids = asyncio.run(main())

    assert len(set(ids)) == 5 and ids == result_ids


def test_a_bad_argument_among_a_batch_raises_at_its_own_call_and_the_others_resolve() -> None:
    async def main() -> list[int]:
        async with _pair().astart() as running:
            first = running.asubmit(1)
            with pytest.raises(ValueError, match="timeout must be a number of seconds > 0"):
                running.asubmit(2, timeout=-1)
            last = running.asubmit(3)
            return [r.output for r in await asyncio.gather(first, last)]

    assert asyncio.run(main()) == [3, 5]


def test_an_input_the_first_node_refuses_fails_only_its_own_run_in_a_batch() -> None:
    async def main() -> list[object]:
        async with _pair().astart() as running:
            runs = [running.asubmit(1), running.asubmit("not a number"), running.asubmit(3)]
            return await asyncio.gather(*runs, return_exceptions=True)

    good, bad, other = asyncio.run(main())

    assert isinstance(bad, FormationRuntimeError)
    assert [getattr(good, "output", None), getattr(other, "output", None)] == [3, 5]


def test_cancelling_one_run_of_a_batch_in_the_step_it_was_submitted_cancels_only_that_run() -> None:
    async def main() -> tuple[bool, list[int], int]:
        async with _pair().astart() as running:
            runs = [running.asubmit(i) for i in range(4)]
            runs[1].cancel()  # in the step it was submitted in
            outcomes = await asyncio.gather(*runs, return_exceptions=True)
            return (isinstance(outcomes[1], asyncio.CancelledError),
                    [o.output for i, o in enumerate(outcomes) if i != 1],  # type: ignore[union-attr]
                    running.in_flight)

    cancelled, outputs, in_flight = asyncio.run(main())

    assert cancelled and outputs == [2, 4, 5] and in_flight == 0


def test_cancel_by_run_id_right_after_asubmit_cancels_that_run() -> None:
    async def main() -> tuple[bool, int, bool]:
        async with _pair().astart() as running:
            run = running.asubmit(1)
            counted = running.in_flight
            told = running.cancel(run.run_id)
            with pytest.raises(asyncio.CancelledError):
                await run
            return told, counted, (await running.asubmit(2)).output == 4

    told, counted, others_run = asyncio.run(main())

    assert told and counted == 1 and others_run


def test_leaving_astart_in_the_step_of_an_asubmit_fails_that_run_as_a_stop_does() -> None:
    async def main() -> asyncio.Future[object]:
        async with _pair().astart() as running:
            run = running.asubmit(1)
        return run

    async def outcome() -> BaseException | None:
        run = await main()
        try:
            await run
        except BaseException as exc:
            return exc
        return None

    error = asyncio.run(outcome())

    assert isinstance(error, FormationRuntimeError) and "stopped before run" in str(error)


def test_a_blocking_stop_on_the_loop_right_after_asubmit_fails_that_run_as_a_stop_does() -> None:
    async def main() -> BaseException | None:
        running = _pair().start()
        run = running.asubmit(1)
        running.stop()
        try:
            await run
        except BaseException as exc:
            return exc
        return None

    error = asyncio.run(main())

    assert isinstance(error, FormationRuntimeError) and "stopped before run" in str(error)
