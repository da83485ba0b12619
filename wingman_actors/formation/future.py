"""The future ``RunningFormation.submit`` returns: a standard ``concurrent.futures.Future``
that knows its run.

Only the public ``Future`` API is used (``cancel()`` is overridden and calls the base
method; nothing depends on how ``Future`` is laid out inside). ``cancel()`` cancels the
run itself, queued or in flight: it returns True, or False when the run had already
finished.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

__all__ = ["RunFuture"]


class RunFuture(Future[Any]):
    """A ``Future`` of one formation run.

    Attributes:
        run_id: the id of the run it resolves to.

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
        """Mark the future cancelled once the runtime has stopped the run (runtime use)."""
        self._canceller = None
        return super().cancel()

    def detach(self) -> None:
        """Forget the runtime once the run is resolved (no cycle keeps a formation alive)."""
        self._canceller = None
