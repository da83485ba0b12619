"""An ``async def`` node's visit reports its outcome from its task's own last step
(actors/_async_function.py); a visit whose task is cancelled before its first step never
runs its coroutine and is reported by whoever cancelled it (the cancel, or the stop)."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError


def test_a_run_cancelled_before_its_visits_task_first_steps_is_cancelled_and_its_coroutine_never_runs() -> None:
    blocking = threading.Event()
    ran: list[int] = []

    async def node(x: int) -> int:
        ran.append(x)
        if x == 0:
            blocking.set()
            time.sleep(0.5)  # holds the replica's loop: the next visit's task waits for its first step
        return x

    with Formation("early").add_function("node", node).start() as running:
        first = running.submit(0)
        assert blocking.wait(5)
        second = running.submit(1)
        time.sleep(0.1)  # its input is handed to the (busy) loop
        assert second.cancel()
        with pytest.raises(CancelledError):
            second.result(5)
        assert first.result(5).output == 0
        assert running.submit(2).result(5).output == 2

    assert ran == [0, 2]


def test_stopping_while_a_visits_task_has_not_stepped_yet_fails_its_run_and_leaves_nothing_running() -> None:
    blocking = threading.Event()

    async def node(x: int) -> int:
        if x == 0:
            blocking.set()
            time.sleep(0.3)
        await asyncio.sleep(30)
        return x

    running = Formation("stopping").add_function("node", node).start()
    futures = [running.submit(0)]
    assert blocking.wait(5)
    futures.append(running.submit(1))
    time.sleep(0.05)
    running.stop()

    for future in futures:
        with pytest.raises(FormationRuntimeError):
            future.result(5)
    assert not [t for t in threading.enumerate() if t.name.startswith("wingman-node-node")]
