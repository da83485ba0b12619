"""A running formation's stop, done once: ``stop()`` called again while that stop is at work
waits for it, so every caller returns with the formation stopped (as CPython's
``Executor.shutdown(wait=True)`` does)."""

from __future__ import annotations

import threading
from collections.abc import Callable


class StopOnce:
    """Who stops a formation, and when that stop has ended."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopper: threading.Thread | None = None
        self._done = threading.Event()

    def run(self, stop: Callable[[], None], wait_s: float) -> None:
        """Call ``stop`` in the first caller. A later caller returns once that call has ended
        (waiting at most ``wait_s``: each of its steps is bounded), and at once in the
        stopping thread itself (a listener called as the stop fails the runs)."""
        with self._lock:
            stopper = self._stopper
            if stopper is None:
                self._stopper = threading.current_thread()
        if stopper is None:
            try:
                stop()
            finally:
                self._done.set()
        elif stopper is not threading.current_thread():
            self._done.wait(wait_s)
