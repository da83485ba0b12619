"""Calls at a run's deadline: what closes a blocking HTTP request still in flight then.

A request's timeout (cut to the run's remaining time, :func:`~._abort.request_timeout`)
bounds each wait for bytes, not the whole answer: an answer whose bytes keep trickling in
would outlast the run's deadline. So a blocking request of a run with a deadline is also
registered here, and one daemon thread shuts its socket down when the deadline passes, as
a cancel does. The thread serves every request in flight at once and ends as soon as none
is registered, so no thread is left behind between runs.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

__all__ = ["at_deadline"]


class _Deadlines:
    """Functions to call at given ``time.monotonic()`` instants, on one daemon thread."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._live: set[int] = set()
        self._keys = itertools.count()
        self._running = False

    def at(self, when: float, fn: Callable[[], None]) -> Callable[[], None]:
        """Call ``fn`` at ``when`` unless the returned function is called first."""
        with self._cond:
            key = next(self._keys)
            if len(self._heap) > 2 * len(self._live) + 64:  # many forgotten entries: drop them
                self._heap = [entry for entry in self._heap if entry[1] in self._live]
                heapq.heapify(self._heap)
            heapq.heappush(self._heap, (when, key, fn))
            self._live.add(key)
            if not self._running:
                self._running = True
                threading.Thread(target=self._serve, name="wingman-deadlines", daemon=True).start()
            elif self._heap[0][1] == key:  # sooner than what the thread waits for
                self._cond.notify()

        def forget() -> None:
            with self._cond:
                self._live.discard(key)
                if not self._live:  # let the thread end now
                    self._cond.notify()

        return forget

    def _serve(self) -> None:
        live = self._live
        with self._cond:
            while True:
                heap = self._heap
                while heap and heap[0][1] not in live:
                    heapq.heappop(heap)
                if not heap:
                    self._running = False
                    return
                when, key, fn = heap[0]
                delay = when - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                heapq.heappop(heap)
                live.discard(key)
                self._cond.release()
                try:
                    fn()
                finally:
                    self._cond.acquire()


_deadlines = _Deadlines()


def at_deadline(when: float, fn: Callable[[], None]) -> Callable[[], None]:
    """Call ``fn`` (quick, never raising) at ``when`` (``time.monotonic()`` seconds) on the
    deadline thread, unless the returned function is called before."""
    return _deadlines.at(when, fn)
