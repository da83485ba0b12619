"""The future ``RunningFormation.submit`` returns: a plain ``concurrent.futures.Future``
that knows its run.

``cancel()`` cancels the run itself, queued or in flight: it returns True, or False when
the run had already finished. Everything else is ``Future``'s own, through its public
methods only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._result import FormationResult  # noqa: F401  (named in a string: the base class below)

__all__ = ["Canceller", "RunFuture", "RunSink"]

log = logging.getLogger("wingman_actors.formation")


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


class RunFuture(Future["FormationResult"]):
    """A ``Future`` of one formation run (what ``submit()`` and ``resume()`` return: typed
    so, a type checker knows its ``run_id`` and that ``result()`` is a ``FormationResult``).

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

    def __init__(self, run_id: str, canceller: Canceller | None = None) -> None:
        Future.__init__(self)  # named: super() costs ~90 ns more, on every submit()
        self.run_id = run_id
        self._canceller = canceller

    def cancel(self) -> bool:
        """Cancel the run (queued or in flight); False when it had already finished."""
        canceller = self._canceller
        if canceller is not None:
            return canceller.cancel(self.run_id)
        return super().cancel()

    def add_done_callback(self, fn: Callable[[Future[Any]], object]) -> None:
        """As ``Future.add_done_callback``; a callback that raises ``SystemExit`` or
        ``KeyboardInterrupt`` on the formation's thread that resolves the run is logged, as
        ``Future`` logs an ``Exception``: let out there, it would end that thread (a node
        actor, and Pykka stops every actor with it), and every later run would wait for good.
        On an ended run the callback runs at once on the caller's thread, and what it raises
        is the caller's."""
        if self.done():
            Future.add_done_callback(self, fn)
            return

        def guarded(future: Future[Any]) -> None:
            try:
                fn(future)
            except Exception:
                raise  # Future logs it, as for any future
            except BaseException:
                log.exception("a done callback of run %s raised; the formation goes on", self.run_id)

        Future.add_done_callback(self, guarded)

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
