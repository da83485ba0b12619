"""The future ``RunningFormation.submit`` returns: a ``concurrent.futures.Future`` with a
leaner lock.

A standard ``Future`` builds a ``threading.Condition`` over an ``RLock`` and binds five of
the lock's methods onto it: eleven objects the garbage collector tracks, for every run a
pipeline submits (a finished run is otherwise three). A future's condition is never
re-entered (every ``Future`` method takes it once and calls back outside it), so a
``Condition`` over a plain ``Lock`` serves, using ``Condition``'s own wait and notify.

It is a real ``Future`` subclass: ``result``, ``exception``, ``add_done_callback``,
``concurrent.futures.wait`` / ``as_completed`` and ``asyncio.wrap_future`` all work as
usual. Should a Python release build its ``Future`` differently, :func:`new_run_future`
falls back to a plain ``Future``.
"""

from __future__ import annotations

import _thread
import threading
from collections import deque
from concurrent.futures import Future
from concurrent.futures._base import PENDING
from typing import Any

__all__ = ["new_run_future"]


class _LockCondition(threading.Condition):
    """``threading.Condition`` over a plain, non-reentrant lock, with its methods on the
    class rather than bound per instance."""

    def __init__(self) -> None:  # deliberately not Condition.__init__: nothing bound per instance
        self._lock = _thread.allocate_lock()
        self._waiters: deque[Any] = deque()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:  # type: ignore[override]
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:  # type: ignore[override]
        self._lock.release()


class RunFuture(Future[Any]):
    """A ``Future`` whose condition is a :class:`_LockCondition`."""

    def __init__(self) -> None:  # the fields of Future.__init__, checked by _LAYOUT below
        self._condition = _LockCondition()
        self._state = PENDING
        self._result = None
        self._exception = None
        self._waiters: list[Any] = []
        self._done_callbacks: list[Any] = []


# What Future.__init__ sets, in the Python releases this was written against (3.11-3.13).
_LAYOUT = ("threading", "Condition", "_condition", "PENDING", "_state", "_result", "_exception",
           "_waiters", "_done_callbacks")
_LEAN = Future.__init__.__code__.co_names == _LAYOUT


def new_run_future() -> Future[Any]:
    """A new pending future: the lean kind when this Python's ``Future`` is laid out as
    expected, else a standard one."""
    return RunFuture() if _LEAN else Future()
