"""The future ``RunningFormation.submit`` returns: a ``concurrent.futures.Future`` that
knows its run, with a leaner lock.

``cancel()`` cancels the run itself, queued or in flight: it returns True, or False when
the run had already finished.

Lean lock: a standard ``Future`` builds a ``threading.Condition`` over an ``RLock`` and
binds five of the lock's methods onto it, eleven objects the garbage collector tracks
for every run a pipeline submits. A one-run A/B of ``pipeline_throughput`` (16 paired
repetitions on a shared 2-CPU machine) measured the lean kind ~13 % faster (median of
paired ratios; medians 17.5k vs 14.8k inputs/s), so it stays, with two guards: it sets
``Future.__init__``'s fields itself only when this Python's ``Future.__init__`` is laid
out as expected (``_LAYOUT``; else it is a standard ``Future``, and
``tests/formation/test_future.py`` fails so the layout gets checked), and its condition
is re-entrant, as a standard one is (``Future.__repr__`` takes the condition and is
called from inside it when raising ``InvalidStateError``).

Lazy condition: a run's future is mostly resolved before anyone looks at it (a pipeline
collects its results later), so the condition, its lock and the lists of waiters and
callbacks are made on the first use that needs them; a run kept with its result then
costs the garbage collector 4 tracked objects instead of 9, and a kept run's objects
are what its full collections go through again and again.
"""

from __future__ import annotations

import _thread
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures._base import CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED, PENDING
from typing import Any

__all__ = ["RunFuture"]


class _LockCondition(threading.Condition):
    """``threading.Condition`` over a re-entrant lock, with its methods on the class
    rather than bound per instance."""

    def __init__(self) -> None:  # deliberately not Condition.__init__: nothing bound per instance
        self._lock = _thread.RLock()
        self._waiters: deque[Any] = deque()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:  # type: ignore[override]
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:  # type: ignore[override]
        self._lock.release()

    def _is_owned(self) -> bool:
        return self._lock._is_owned()  # type: ignore[attr-defined,no-any-return]


# What Future.__init__ sets, in the Python releases this was written against (3.11-3.13).
_LAYOUT = ("threading", "Condition", "_condition", "PENDING", "_state", "_result", "_exception",
           "_waiters", "_done_callbacks")
LEAN = Future.__init__.__code__.co_names == _LAYOUT

_DONE = frozenset({CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED})
_MAKING = _thread.allocate_lock()  # taken to make a future's condition, and to resolve one that has none


class RunFuture(Future[Any]):
    """A ``Future`` of one formation run.

    Attributes:
        run_id: the id of the run it resolves to.

    Example:
        >>> future = running.submit(7)                                  # doctest: +SKIP
        >>> future.cancel()   # stops the run: result() raises CancelledError  # doctest: +SKIP
        True
    """

    _cond: threading.Condition | None = None  # made on first use (see _condition)

    def __init__(self, run_id: str, canceller: Callable[[str], bool] | None = None) -> None:
        if LEAN:  # the fields of Future.__init__ (checked against _LAYOUT) but the three made lazily
            self._state = PENDING
            self._result = None
            self._exception = None
        else:
            super().__init__()
        self.run_id = run_id
        self._canceller = canceller

    # A future nobody waits on, adds a callback to or looks into before it resolves (a
    # pipeline's runs, collected later) never makes its condition, its lock and its lists
    # of waiters and callbacks: five objects fewer for the garbage collector per run kept.
    # Every Future method that waits or registers goes through ``_condition``, which makes
    # them (under _MAKING); set_result/set_exception resolve a future that has none under
    # _MAKING too, so a waiter arriving at the same time finds it either resolved or with
    # its condition made, never in between.

    @property
    def _condition(self) -> threading.Condition:
        cond = self._cond
        if cond is None:
            with _MAKING:
                cond = self._cond
                if cond is None:
                    self._waiters = []
                    self._done_callbacks: list[Any] = []
                    cond = self._cond = _LockCondition()
        return cond

    @_condition.setter
    def _condition(self, cond: threading.Condition) -> None:  # Future.__init__ (not LEAN)
        self._cond = cond

    def set_result(self, result: Any) -> None:
        if not self._settle_unwatched(result, None):
            super().set_result(result)

    def set_exception(self, exception: BaseException | None) -> None:
        if not self._settle_unwatched(None, exception):
            super().set_exception(exception)

    def _settle_unwatched(self, result: Any, exception: BaseException | None) -> bool:
        """Resolve a future that has no condition yet (nobody to wake or call back), under
        _MAKING; False if it has one, or is resolved already (then Future's own method
        does the rest, or raises InvalidStateError, outside _MAKING)."""
        if self._cond is None:
            with _MAKING:
                if self._cond is None and self._state not in _DONE:
                    self._result, self._exception = result, exception
                    self._state = FINISHED
                    return True
        return False

    def result(self, timeout: float | None = None) -> Any:
        if self._state == FINISHED and self._exception is None:  # (set before _state)
            return self._result
        return super().result(timeout)

    def done(self) -> bool:
        return self._state in _DONE

    def cancel(self) -> bool:
        """Cancel the run (queued or in flight); False when it had already finished."""
        canceller = self._canceller
        if canceller is not None:
            return canceller(self.run_id)
        return super().cancel()

    def settle_cancelled(self) -> bool:
        """Mark the future cancelled once the runtime has stopped the run (runtime use),
        and wake ``concurrent.futures.wait()`` / ``as_completed()`` callers, which only
        see a cancelled future once it is notified."""
        self._canceller = None
        if not super().cancel():
            return False
        self.set_running_or_notify_cancel()
        return True

    def detach(self) -> None:
        """Forget the runtime once the run is resolved (no cycle keeps a formation alive)."""
        self._canceller = None
