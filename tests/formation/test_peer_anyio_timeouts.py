"""Behaviours ported from CPython's ``asyncio.timeout`` tests
(``Lib/test/test_asyncio/test_timeouts.py``) and Trio's timeout tests
(python-trio/trio ``src/trio/_tests/test_timeouts.py``), mapped onto a run awaited with
``Formation.arun`` / ``astream`` / ``astart`` under a timeout of the caller's loop, and onto
the run's and the node's own ``timeout``.

Deliberately different: in CPython, an exception raised by the awaited code while it is
being cancelled (a ``finally`` that fails) replaces the ``TimeoutError``
(``test_foreign_exception_on_timeout``); a node's ``finally`` runs on the node's own loop,
after the run was cancelled, so its error cannot reach the caller: ``arun`` raises the
``TimeoutError`` (pinned below). As Trio accepts an infinite deadline everywhere,
``timeout=math.inf`` means no limit for a run and for a node alike.
"""

from __future__ import annotations

import asyncio
import math
import threading
from typing import Any

import anyio
import pytest

from tests.formation.test_peer_anyio import (  # the node and the fixture the two files share (slow_stops: conftest.py)
    Sleeper,
    _threads_before,  # noqa: F401  (an autouse fixture)
)
from tests.support.peers import a_until, node_threads, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, FormationSetupError


def napper(node: Sleeper, concurrency: int = 1) -> Formation:
    return Formation("napper").add_function("nap", node, concurrency=concurrency)


def test_asyncio_timeout_around_arun_raises_timeout_error_once_the_run_is_cancelled_and_stopped() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_timeout_basic and ::test_waiter_cancelled."""
    node = Sleeper()

    async def main() -> tuple[bool, list[Any], list[str]]:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3) as cm:
                await napper(node).arun(30)
        return cm.expired(), list(node.finished), node_threads()

    assert asyncio.run(main()) == (True, [30], [])


def test_a_run_that_ends_within_its_asyncio_timeout_returns_and_the_timeout_has_not_expired() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_timeout_not_called."""
    node = Sleeper()

    async def main() -> tuple[Any, bool]:
        async with asyncio.timeout(20) as cm:
            result = await napper(node).arun(0.01)
        return result.output, cm.expired()

    assert asyncio.run(main()) == (0.01, False)


def test_nested_timeouts_raise_timeout_error_from_the_outer_one_only() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_nested_timeouts."""
    node = Sleeper()

    async def main() -> tuple[bool, bool, bool]:
        seen_cancel = False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 0.3
        with pytest.raises(TimeoutError):
            async with asyncio.timeout_at(deadline) as outer:
                try:
                    async with asyncio.timeout_at(deadline) as inner:
                        await napper(node).arun(30)
                except asyncio.CancelledError:
                    seen_cancel = True
                    raise
        return seen_cancel, outer.expired(), inner.expired()

    assert asyncio.run(main()) == (True, True, True)
    assert node.finished == [30]


def test_a_timeout_already_expired_cancels_arun_before_its_run_and_leaves_nothing_running() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_timeout_zero_sleep_zero and
    ::test_timeout_in_the_past_sleep_zero."""
    node = Sleeper()

    async def main(delay: float) -> list[str]:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(delay):
                await napper(node).arun(30)
        return node_threads()

    assert asyncio.run(main(0)) == []
    assert asyncio.run(main(-11)) == []
    assert node.finished == node.started  # whatever started was cancelled


def test_a_node_finally_that_fails_on_the_cancel_does_not_replace_the_timeout_error() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_foreign_exception_on_timeout
    (deliberately different: CPython raises the finally's ZeroDivisionError; see the module docstring)."""
    unwound = threading.Event()

    async def crash(_: Any) -> None:
        try:
            await asyncio.sleep(30)
        finally:
            unwound.set()
            1 / 0  # noqa: B018

    async def main() -> BaseException | None:
        with pytest.raises(TimeoutError) as caught:
            async with asyncio.timeout(0.3):
                await Formation("c").add_function("crash", crash).arun(1)
        return caught.value.__cause__

    cause = asyncio.run(main())
    assert isinstance(cause, asyncio.CancelledError)  # test_timeout_exception_cause
    assert unwound.is_set()


def test_a_foreign_cancel_inside_an_unexpired_timeout_stays_a_cancel() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_foreign_cancel_doesnt_timeout_if_not_expired."""
    node = Sleeper()

    async def main() -> bool:
        task = asyncio.current_task()
        assert task is not None
        with pytest.raises(asyncio.CancelledError):
            async with asyncio.timeout(20) as cm:
                asyncio.get_running_loop().call_later(0.3, task.cancel)
                await napper(node).arun(30)
        task.uncancel()
        return cm.expired()

    assert asyncio.run(main()) is False
    # its finally ran (arun waits STUCK_GRACE for it; on a loaded machine the loop thread may take longer)
    until(lambda: node.finished == [30], within=5)


def test_a_task_whose_timeout_caught_arun_ends_neither_cancelled_nor_cancelling() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_outer_task_is_not_cancelled."""
    node = Sleeper()

    async def outer() -> int:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await napper(node).arun(30)
        task = asyncio.current_task()
        assert task is not None
        return task.cancelling()

    async def main() -> tuple[bool, int, Any]:
        task = asyncio.create_task(outer())
        cancelling = await task
        after = await napper(node).arun(0.01)  # the loop and the caller go on as usual
        return task.cancelled(), cancelling, after.output

    assert asyncio.run(main()) == (False, 0, 0.01)


def test_a_timeout_rescheduled_away_lets_arun_finish() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_reschedule."""
    node = Sleeper()

    async def main() -> tuple[Any, bool]:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout_at(loop.time() + 2.0) as cm:
            run = asyncio.ensure_future(napper(node).arun(2.5))
            assert await a_until(lambda: node.started == [2.5], within=1.5)
            cm.reschedule(None)
            result = await run
        return result.output, cm.expired()

    assert asyncio.run(main()) == (2.5, False)


def test_an_arun_under_a_timeout_in_a_finally_after_a_timeout_is_cut_by_its_own_timeout() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_nested_timeout_in_finally."""
    node = Sleeper()

    async def main() -> list[str]:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                try:
                    await napper(node).arun(30)
                finally:
                    with pytest.raises(TimeoutError):
                        async with asyncio.timeout(0.2):
                            await napper(node).arun(31)
        return node_threads()

    assert asyncio.run(main()) == []
    assert sorted(node.finished) == [30, 31]


def test_a_cancelled_and_uncancelled_task_awaits_a_new_arun_to_its_end() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_timeout_after_cancellation
    (cleanup work after a caught cancel runs as usual)."""
    node = Sleeper()

    async def main() -> Any:
        task = asyncio.current_task()
        assert task is not None
        try:
            asyncio.get_running_loop().call_later(0.2, task.cancel)
            await napper(node).arun(30)
        except asyncio.CancelledError:
            task.uncancel()
        async with asyncio.timeout(20):
            return (await napper(node).arun(0.01)).output

    assert asyncio.run(main()) == 0.01
    assert node.finished == [30, 0.01]


def test_the_runs_own_timeout_inside_a_longer_asyncio_timeout_fails_the_run_not_the_timeout() -> None:
    """From python-trio/trio src/trio/_tests/test_timeouts.py::test_move_on_after (the innermost deadline wins)."""
    node = Sleeper()

    async def main() -> bool:
        async with asyncio.timeout(20) as cm:
            with pytest.raises(FormationRuntimeError, match="timed out"):
                await napper(node).arun(30, timeout=0.3)
        return cm.expired()

    assert asyncio.run(main()) is False
    # its finally ran (arun waits STUCK_GRACE for it; on a loaded machine the loop thread may take longer)
    until(lambda: node.finished == [30], within=5)


@pytest.mark.parametrize("bad", [-1, 0, math.nan])
def test_a_run_timeout_that_is_not_a_positive_number_is_refused_by_arun(bad: float) -> None:
    """From python-trio/trio src/trio/_tests/test_timeouts.py::test_timeouts_raise_value_error."""
    with pytest.raises(ValueError, match=f"timeout must be a number of seconds > 0, or None or math.inf for no limit, got {bad}"):
        asyncio.run(napper(Sleeper()).arun(0.01, timeout=bad))


def test_an_infinite_run_timeout_and_an_infinite_node_timeout_both_mean_no_limit() -> None:
    """From python-trio/trio src/trio/_tests/test_timeouts.py::test_timeouts_raise_value_error (inf is
    allowed there, and NaN refused)."""
    assert asyncio.run(napper(Sleeper()).arun(0.01, timeout=math.inf)).output == 0.01
    node = Formation("f").add_function("nap", Sleeper(), timeout=math.inf)
    assert asyncio.run(node.arun(0.01)).output == 0.01
    with pytest.raises(FormationSetupError, match=r"or None or math\.inf for no limit, got nan"):
        Formation("f").add_function("nap", Sleeper(), timeout=math.nan).validate()


def test_a_node_that_swallows_its_timeouts_cancel_still_fails_its_run_as_timed_out() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_waiter_cancelled (the awaited code
    sees the CancelledError); a node that returns a value instead cannot turn its timeout into a success."""
    async def swallow(_: Any) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "late"
        return "on time"

    with pytest.raises(FormationRuntimeError, match=r"timed out after 0\.2s"):
        asyncio.run(Formation("w").add_function("swallow", swallow, timeout=0.2).arun(1))


def test_asyncio_timeout_around_astream_cancels_the_run_and_stops_its_formation() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_timeout_basic, over a stream."""
    node = Sleeper()

    async def main() -> tuple[list[str], list[str]]:
        kinds: list[str] = []
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                async for event in napper(node).astream(30):
                    kinds.append(event.type.value)
        return kinds, node_threads()

    kinds, threads = asyncio.run(main())
    assert kinds[:2] == ["run_started", "node_started"] and "run_finished" not in kinds
    assert threads == [] and node.finished == [30]


def test_move_on_after_around_astream_stops_its_formation_before_going_on(slow_stops: list[str]) -> None:
    """From agronholm/anyio tests/test_taskgroups.py::test_move_on_after, over a stream."""
    node = Sleeper()

    async def main() -> tuple[bool, list[str]]:
        with anyio.move_on_after(0.3) as scope:
            async for _ in napper(node).astream(30):
                pass
        return scope.cancelled_caught, list(slow_stops)

    assert asyncio.run(main()) == (True, ["napper"])
    assert node.finished == [30] and node_threads() == []


def test_fail_after_around_astart_cancels_its_runs_and_stops_the_formation_before_going_on(
    slow_stops: list[str],
) -> None:
    """From agronholm/anyio tests/test_taskgroups.py::test_fail_after, around a started formation."""
    node = Sleeper()

    async def main() -> list[str]:
        with pytest.raises(TimeoutError), anyio.fail_after(0.5):
            async with napper(node, concurrency=2).astart() as running:
                await asyncio.gather(running.asubmit(30), running.asubmit(31))
        return list(slow_stops)

    assert asyncio.run(main()) == ["napper"]
    assert sorted(node.finished) == [30, 31] and node_threads() == []


def test_a_timeout_around_arun_of_an_async_map_cancels_every_items_coroutine() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_timeout_basic, over a map's items."""
    node = Sleeper()
    f = Formation("m").add_map("each", node)

    async def main() -> list[str]:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await f.arun([30, 31, 32])
        return node_threads()

    assert asyncio.run(main()) == []
    assert sorted(node.finished) == sorted(node.started)
    assert node.started  # the items had begun before the timeout
