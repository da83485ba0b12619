"""Calls handed from other threads to the server's event loop in batches (one wake of the
loop for all those made meanwhile): the runs answered on the loop (:mod:`._loop_runs`)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

__all__ = ["Landings"]

log = logging.getLogger("wingman_actors.server")


class Landings:
    """Calls to make on the event loop, handed over in batches: the first call added while
    none waits wakes the loop (``call_soon_threadsafe``); those added before it runs go
    with it.

    Args:
        loop: the server's event loop.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._lock = threading.Lock()
        self._calls: list[Callable[[], None]] = []

    def add(self, call: Callable[[], None]) -> None:
        """Have the loop make ``call()`` soon (from any thread)."""
        with self._lock:
            self._calls.append(call)
            if len(self._calls) > 1:
                return  # the loop is woken already
        try:
            self.loop.call_soon_threadsafe(self._land)
        except RuntimeError:  # the loop is closed: the server has stopped
            pass

    def _land(self) -> None:
        with self._lock:
            calls, self._calls = self._calls, []
        for call in calls:
            try:
                call()
            except Exception:  # a bug: the other calls of the batch are made all the same
                log.exception("a call handed to the event loop failed")
