"""A timer thread for delayed work (retry backoff, attempt and run timeouts).

One per running formation, started on first use. Callbacks run on the timer thread and
must be short (they usually just tell an actor). No polling: the thread sleeps on a
condition until the next deadline or a new, earlier one.

A cancelled timer lets go of its callback at once (a run's timeout refers to the run's
state, and most runs end long before their timeout), and the cancelled timers left in the
heap are cleared away whenever it has doubled since the last clearing, so they never
outnumber the live ones for long.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

__all__ = ["Scheduler", "TimerHandle"]

log = logging.getLogger("wingman_actors.actors")


class TimerHandle:
    """A scheduled callback; :meth:`cancel` prevents it from running."""

    __slots__ = ("callback", "cancelled", "when")

    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.callback = _nothing  # (what it refers to need not live until its time)


def _nothing() -> None:
    pass


_LONGEST_WAIT = 86_400.0  # seconds: the longest single wait (threading.TIMEOUT_MAX may be less than a time_t)
_COMPACT_AT = 1024  # the fewest timers in the heap before cancelled ones are cleared away


class Scheduler:
    """Runs callbacks after delays, on one lazily started thread."""

    def __init__(self, name: str = "wingman-scheduler") -> None:
        self._name = name
        self._heap: list[tuple[float, int, TimerHandle]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._compact_at = _COMPACT_AT

    @property
    def pending(self) -> int:
        """How many timers the heap holds (cancelled ones not cleared away yet included)."""
        return len(self._heap)

    def call_later(self, delay: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` after ``delay`` seconds (on the scheduler thread)."""
        handle = TimerHandle(time.monotonic() + max(0.0, delay), callback)
        with self._cond:
            if self._stopped:
                raise RuntimeError("scheduler is stopped")
            heap = self._heap
            if len(heap) >= self._compact_at:  # clear cancelled timers away: amortised O(1) a call
                heap[:] = [entry for entry in heap if not entry[2].cancelled]
                heapq.heapify(heap)
                self._compact_at = max(_COMPACT_AT, 2 * len(heap))
            heapq.heappush(heap, (handle.when, next(self._seq), handle))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            elif self._heap[0][2] is handle:
                self._cond.notify()
        return handle

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    if not self._heap:
                        self._cond.wait()
                        continue
                    wait = self._heap[0][0] - time.monotonic()
                    if wait <= 0:
                        break
                    # a deadline past what a thread can wait for (a timeout of 1e12 s, or
                    # inf) is waited for in slices: the wait itself would raise OverflowError
                    self._cond.wait(min(wait, _LONGEST_WAIT))
                if self._stopped:
                    return
                _, _, handle = heapq.heappop(self._heap)
            if handle.cancelled:
                continue
            try:
                handle.callback()
            except Exception:
                log.exception("scheduled callback failed")

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread; pending callbacks are dropped."""
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
