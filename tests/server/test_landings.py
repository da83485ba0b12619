"""Calls handed to the server's event loop in batches (``server._landings``)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from wingman_actors.server._landings import Landings


def _loop_counting_wakes() -> tuple[asyncio.AbstractEventLoop, list[int]]:
    loop = asyncio.new_event_loop()
    wakes: list[int] = []
    call_soon_threadsafe = loop.call_soon_threadsafe

    def counted(*args: Any) -> Any:
        wakes.append(1)
        return call_soon_threadsafe(*args)

    loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
    return loop, wakes


def test_calls_added_from_other_threads_before_the_loop_runs_share_one_wake() -> None:
    loop, wakes = _loop_counting_wakes()
    try:
        landings = Landings(loop)
        made: list[int] = []
        threads = [threading.Thread(target=landings.add, args=(lambda n=n: made.append(n),)) for n in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        loop.run_until_complete(asyncio.sleep(0.01))
        assert sorted(made) == list(range(10))
        assert len(wakes) == 1
    finally:
        loop.close()


def test_a_failing_call_does_not_keep_the_others_of_its_batch_from_being_made(
        caplog: pytest.LogCaptureFixture) -> None:
    loop, _ = _loop_counting_wakes()
    try:
        landings = Landings(loop)
        made: list[str] = []
        landings.add(lambda: made.append("first"))
        landings.add(lambda: 1 / 0)  # type: ignore[func-returns-value]
        landings.add(lambda: made.append("last"))
        loop.run_until_complete(asyncio.sleep(0.01))
        assert made == ["first", "last"]
        assert "a call handed to the event loop failed" in caplog.text
    finally:
        loop.close()

