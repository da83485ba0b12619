"""Behaviours ported from CPython's asyncio tests of futures and tasks (python/cpython
``Lib/test/test_asyncio/test_futures.py``: ``wrap_future``, cancellation both ways;
``test_tasks.py`` and ``test_waitfor.py``: ``wait_for``, ``shield``, ``gather``), mapped
onto a run's future bridged to asyncio and onto ``Formation.arun`` / ``asubmit``.

Deliberately different: none found. As in asyncio, ``gather()`` without
``return_exceptions`` does not cancel the other awaitables when one fails: their runs go
on; cancelling the gather (or the task awaiting it) cancels every run.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from tests.formation.test_peer_anyio import Sleeper  # the async node the two files share
from tests.support.peers import a_until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError


def test_wrap_future_awaits_a_runs_future_on_an_event_loop() -> None:
    """Ported from python/cpython Lib/test/test_asyncio/test_futures.py::test_wrap_future."""
    f = Formation("w").add_function("inc", lambda x: x + 1)

    async def main() -> int:
        with f.start() as running:
            result = await asyncio.wrap_future(running.submit(1))
        return int(result.output)

    assert asyncio.run(main()) == 2


def test_cancelling_the_wrapped_future_cancels_the_run_and_its_finally_runs() -> None:
    """Ported from python/cpython Lib/test/test_asyncio/test_futures.py::test_wrap_future_cancel."""
    node = Sleeper()

    async def main() -> None:
        with Formation("c").add_function("n", node).start() as running:
            future = running.submit(5)
            wrapped = asyncio.wrap_future(future)
            assert await a_until(lambda: node.started == [5])
            wrapped.cancel()
            with pytest.raises(asyncio.CancelledError):
                await wrapped
            assert await a_until(lambda: future.cancelled() and running.in_flight == 0)
            assert await a_until(lambda: node.finished == [5])

    asyncio.run(main())


def test_cancelling_the_runs_future_cancels_the_wrapped_one() -> None:
    """Ported from python/cpython Lib/test/test_asyncio/test_futures.py::test_wrap_future_cancel2."""
    node = Sleeper()

    async def main() -> None:
        with Formation("c2").add_function("n", node).start() as running:
            future = running.submit(5)
            wrapped = asyncio.wrap_future(future)
            assert future.cancel()
            with pytest.raises(asyncio.CancelledError):
                await wrapped

    asyncio.run(main())


def test_wait_for_timing_out_on_arun_cancels_the_run_and_its_finally_runs() -> None:
    """Ported from python/cpython Lib/test/test_asyncio/test_waitfor.py::test_wait_for (the timeout case)."""
    node = Sleeper()
    f = Formation("t").add_function("n", node)

    async def main() -> float:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(f.arun(5), 0.1)
        took = time.monotonic() - started
        assert await a_until(lambda: node.finished == [5])
        return took

    assert asyncio.run(main()) < 2


def test_wait_for_returns_arun_result_when_it_finishes_in_time() -> None:
    """Ported from python/cpython Lib/test/test_asyncio/test_waitfor.py::test_wait_for_with_global_loop."""
    f = Formation("ok").add_function("n", Sleeper())

    async def main() -> Any:
        return (await asyncio.wait_for(f.arun(0.01), 3)).output

    assert asyncio.run(main()) == 0.01


def test_a_shielded_arun_goes_on_when_the_outer_wait_times_out() -> None:
    """Ported from python/cpython Lib/test/test_asyncio/test_tasks.py::test_shield_cancel_outer."""
    node = Sleeper()
    f = Formation("s").add_function("n", node)

    async def main() -> Any:
        inner = asyncio.ensure_future(f.arun(0.2))
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.shield(inner), 0.02)
        return (await inner).output

    assert asyncio.run(main()) == 0.2 and node.finished == [0.2]


def test_gather_of_aruns_raises_the_first_failure_and_the_others_still_finish() -> None:
    """Ported from python/cpython Lib/test/test_asyncio/test_tasks.py::test_gather (one child
    fails): as with asyncio tasks, the other runs are not cancelled."""
    node = Sleeper()
    f = Formation("g").add_function("n", node)

    async def main() -> list[Any]:
        runs = [asyncio.ensure_future(f.arun(x)) for x in (0.1, "bad", 0.1)]
        with pytest.raises(FormationRuntimeError, match=r"ValueError: bad input"):
            await asyncio.gather(*runs)
        return [r.output for r in await asyncio.gather(runs[0], runs[2])]

    assert asyncio.run(main()) == [0.1, 0.1]


def test_gather_with_return_exceptions_gives_each_runs_result_or_error_in_order() -> None:
    """Ported from python/cpython Lib/test/test_asyncio/test_tasks.py::test_return_exceptions."""
    f = Formation("r").add_function("n", Sleeper())

    async def main() -> list[Any]:
        return await asyncio.gather(f.arun(0.02), f.arun("bad"), f.arun(0.01), return_exceptions=True)

    first, failed, last = asyncio.run(main())
    assert first.output == 0.02 and last.output == 0.01 and isinstance(failed, FormationRuntimeError)


def test_cancelling_a_gather_of_asubmits_cancels_every_run_and_their_finallys_run() -> None:
    """Ported from python/cpython Lib/test/test_asyncio/test_tasks.py::test_cancel_gather_1."""
    node = Sleeper()

    async def main() -> None:
        async with Formation("cg").add_function("n", node, concurrency=3).astart() as running:
            gathered = asyncio.gather(*(running.asubmit(5) for _ in range(3)))
            assert await a_until(lambda: len(node.started) == 3)
            gathered.cancel()
            with pytest.raises(asyncio.CancelledError):
                await gathered
            assert await a_until(lambda: running.in_flight == 0 and len(node.finished) == 3)
            assert (await running.asubmit(0.01)).output == 0.01  # the formation still serves

    asyncio.run(main())


def test_no_task_is_left_pending_after_aruns_end_every_way() -> None:
    """Ported from python/cpython Lib/test/test_asyncio/test_tasks.py::test_wait_for_cancellation_race_condition
    (no stray task): after runs that succeed, fail, time out and are cancelled, only the
    test's own task is left on the loop."""
    f = Formation("p").add_function("n", Sleeper())

    async def main() -> set[asyncio.Task[Any]]:
        await f.arun(0.01)
        await asyncio.gather(f.arun("bad"), return_exceptions=True)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(f.arun(5), 0.02)
        task = asyncio.ensure_future(f.arun(5))
        await asyncio.sleep(0.02)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.sleep(0.01)
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    assert asyncio.run(main()) == set()


def test_a_runs_future_resolved_on_a_node_thread_wakes_its_waiter_on_the_loops_thread() -> None:
    """Ported from python/cpython Lib/test/test_asyncio/test_futures.py::test_wrap_future_use_global_loop
    (the wrapped future is completed on its loop): a done callback added through
    wrap_future never runs loop code on the runtime's threads."""
    threads: list[threading.Thread] = []

    async def main() -> None:
        with Formation("l").add_function("n", lambda x: x).start() as running:
            wrapped = asyncio.wrap_future(running.submit(1))
            wrapped.add_done_callback(lambda _: threads.append(threading.current_thread()))
            await wrapped
            await asyncio.sleep(0)

    asyncio.run(main())
    assert threads == [threading.main_thread()]
