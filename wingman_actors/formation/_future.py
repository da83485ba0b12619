"""The future ``RunningFormation.submit`` returns: a plain ``concurrent.futures.Future``
that knows its run.

``cancel()`` cancels the run itself, queued or in flight: it returns True, or False when
the run had already finished. Everything else is ``Future``'s own, through its public
methods only.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["RunFuture"]


class RunFuture(Future[Any]):
    """A ``Future`` of one formation run.

    Args:
        run_id: the id of the run it resolves to (also the attribute ``run_id``).
        canceller: what ``cancel()`` calls with the run id to cancel the run (the
            runtime's ``cancel``); None: ``cancel()`` is ``Future.cancel``.

    Example:
        >>> future = running.submit(7)                                  # doctest: +SKIP
        >>> future.cancel()   # stops the run: result() raises CancelledError  # doctest: +SKIP
        True
    """

    def __init__(self, run_id: str, canceller: Callable[[str], bool] | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self._canceller = canceller

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
