"""The worker loops of a :class:`~wingman_actors.fleet.Fleet`: how task indices are
handed out to its workers, and how one worker loop reports how it ended."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future

__all__ = ["Dispatch", "run_loop"]


class Dispatch:
    """Hands out task indices to worker loops: each loop takes the next index as soon as it
    finishes one, so no coordinator sits between a finished task and the next start, and
    never more than ``cap`` sessions run at once."""

    def __init__(self, n: int) -> None:
        self._lock = threading.Lock()
        self._untaken = iter(range(n))
        self._taken: set[int] = set()
        self._stopped = False
        self.loops: list[Future[None]] = []

    def take(self, finished: int | None = None) -> int | None:
        """Mark ``finished`` (the caller's last index) done and hand out the next index,
        or None when there is none left or the dispatch was stopped."""
        with self._lock:
            if finished is not None:
                self._taken.discard(finished)
            if self._stopped:
                return None
            index = next(self._untaken, None)
            if index is not None:
                self._taken.add(index)
            return index

    def stop(self) -> None:
        with self._lock:
            self._stopped = True

    def missing(self) -> list[int]:
        """Indices taken by a loop that died, or never taken; clears them."""
        with self._lock:
            missing = sorted(self._taken | set(self._untaken))
            self._taken.clear()
        return missing


def run_loop(loop: Callable[[], None], fut: Future[None]) -> None:
    """Run one worker loop on its own thread, reporting how it ended on ``fut``."""
    if not fut.set_running_or_notify_cancel():
        return
    try:
        loop()
    except BaseException as exc:
        fut.set_exception(exc)
    else:
        fut.set_result(None)
