"""The future ``RunningFormation.submit`` returns: a plain ``concurrent.futures.Future``
that knows its run.

``cancel()`` cancels the run itself, queued or in flight: it returns True, or False when
the run had already finished. Done callbacks added while the run is unfinished are called,
in order, on a thread of their own when the runtime ends the run (a node's or a timer's
thread would otherwise run them, and a callback that waits on another run of the formation
would wait for ever on the thread that has to run it); ended by ``cancel()`` or ``stop()``,
or added once it is done, they are called at once on the caller's thread, as a ``Future``
calls them. Everything else is ``Future``'s own, through its public methods only.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar

__all__ = ["Canceller", "RunFuture", "RunSink", "callbacks_here", "on_resolved"]

_F = TypeVar("_F", bound=Future[Any])
_log = logging.getLogger("concurrent.futures")  # where a Future logs a failing callback
_callbacks_lock = threading.Lock()  # RunFuture's callback lists (only futures that have some)
_here = threading.local()  # .depth > 0: callbacks fired on this thread are called at once
_FIRED: list[Any] = []  # a RunFuture's callbacks once handed on: later ones run at once


@contextlib.contextmanager
def callbacks_here() -> Iterator[None]:
    """Within it, :class:`RunFuture` callbacks fired on this thread are called at once,
    here (``cancel()`` and ``stop()``: the caller's own thread, as ``Future.cancel`` does)."""
    _here.depth = getattr(_here, "depth", 0) + 1
    try:
        yield
    finally:
        _here.depth -= 1


def on_resolved(future: _F, fn: Callable[[_F], object]) -> None:
    """Runtime use: ``fn(future)`` on the thread that resolves ``future`` (any ``Future``),
    without the hand-off :meth:`RunFuture.add_done_callback` makes for users' callbacks."""
    Future.add_done_callback(future, fn)  # type: ignore[arg-type]


class Canceller(Protocol):
    """What cancels a run by id (the running formation)."""

    def cancel(self, run_id: str) -> bool: ...


class RunSink(Protocol):
    """What the runtime resolves a run through, on whichever thread ends it: a
    :class:`RunFuture`, or (a run awaited on an event loop) the loop's
    :class:`~._aio.LoopSettler`."""

    def set_result(self, result: Any) -> None: ...

    def set_exception(self, exception: BaseException | None) -> None: ...

    def cancel(self) -> bool: ...


class RunFuture(Future[Any]):
    """A ``Future`` of one formation run.

    Args:
        run_id: the id of the run it resolves to (also the attribute ``run_id``).
        canceller: whose ``cancel(run_id)`` ``cancel()`` calls to cancel the run (the
            running formation: an object, not a bound method, which would be one more
            object per run for the collector); None: ``cancel()`` is ``Future.cancel``.

    Example:
        >>> future = running.submit(7)                                  # doctest: +SKIP
        >>> future.cancel()   # stops the run: result() raises CancelledError  # doctest: +SKIP
        True
    """

    _callbacks: list[Callable[[Future[Any]], object]] | None = None  # users' callbacks, until fired

    def __init__(self, run_id: str, canceller: Canceller | None = None) -> None:
        Future.__init__(self)  # named: super() costs ~90 ns more, on every submit()
        self.run_id = run_id
        self._canceller = canceller

    def cancel(self) -> bool:
        """Cancel the run (queued or in flight); False when it had already finished."""
        canceller = self._canceller
        with callbacks_here():
            if canceller is not None:
                return canceller.cancel(self.run_id)
            return super().cancel()

    def add_done_callback(self, fn: Callable[[Future[Any]], object]) -> None:
        """Call ``fn(future)`` once the run ends: at once, here, if it has ended (or when
        ``cancel()`` or ``stop()`` ends it, on their caller's thread); else on a thread of
        its own, after the callbacks added before it. A callback that raises is logged
        (logger ``concurrent.futures``), as a ``Future`` does, and the next one is called."""
        with _callbacks_lock:
            pending = self._callbacks
            if pending is None:
                self._callbacks = [fn]
            elif pending is not _FIRED:
                pending.append(fn)
                return
        if pending is _FIRED:
            Future.add_done_callback(self, fn)  # done: at once
            return
        with callbacks_here():  # done already: _fire at once, here
            Future.add_done_callback(self, self._fire)

    def _fire(self, _: Future[Any]) -> None:
        with _callbacks_lock:
            fns, self._callbacks = self._callbacks or [], _FIRED
        if getattr(_here, "depth", 0):
            self._call(fns)
        else:
            threading.Thread(target=self._call, args=(fns,), name=f"wingman-callbacks-{self.run_id}",
                             daemon=True).start()

    def _call(self, fns: list[Callable[[Future[Any]], object]]) -> None:
        for fn in fns:
            try:
                fn(self)
            except Exception:
                _log.exception("exception calling callback for %r", self)

    def settle_cancelled(self) -> bool:
        """Mark the future cancelled once the runtime has stopped the run (runtime use),
        and wake ``concurrent.futures.wait()`` / ``as_completed()`` callers, which only
        see a cancelled future once it is notified."""
        self._canceller = None
        if not super().cancel():
            return False
        Future.set_running_or_notify_cancel(self)
        return True

    def set_running_or_notify_cancel(self) -> bool:
        """Refused: a run's future is resolved by its formation, which never marks it running
        (so that ``cancel()`` can stop the run in flight). This is an executor's hook; marked
        running by hand, a later ``cancel()`` would cancel the run and leave the future
        pending for ever.

        Raises:
            RuntimeError: always, naming ``cancel()`` and ``done()``.
        """
        raise RuntimeError(f"set_running_or_notify_cancel() is an executor's hook: run {self.run_id}'s future is "
                           "resolved by its formation; use cancel() to stop the run and done() to see if it ended")

    def detach(self) -> None:
        """Forget the runtime once the run is resolved (no cycle keeps a formation alive)."""
        self._canceller = None
