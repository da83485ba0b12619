"""Cancel requests across processes: ``RunStore.request_cancel(run_id)`` marks a running
run in the store (``runs.cancel_requested``); the store that owns the run, in whatever
process or machine runs it, finds the mark within :data:`CHECK_S` seconds and tells its
listeners (a formation started with the store cancels the run, as
``RunningFormation.cancel`` does).

The owner looks on its writer thread, between batches (a time check per batch), and only
while it is running runs and someone listens: then one indexed read every
:data:`CHECK_S` seconds (the partial index ``runs_cancel_requested`` holds only the runs
with a pending request, nearly always none). The marks it finds it clears, in one
transaction, and it tells its listeners on a short-lived thread of their own: a
formation's ending must not run on the writer thread (a listener that waited for the
store would wait for itself). A claim (a resume) clears a run's mark too, so a request
that found its owner gone never cancels the run's next owner.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from ._errors import StoreError, UnknownRunError
from ._listeners import Listeners
from ._ops import Claim
from ._writer import Op, Writer

__all__ = ["CHECK_S", "CancelListener", "CancelWatch", "RequestCancel"]

_log = logging.getLogger("wingman_actors.store")

CHECK_S = 0.25
"""How often (seconds) a store running runs looks for requests to cancel them."""

CancelListener = Callable[[str], None]
"""Told the id of a run whose cancel was requested; must return quickly."""

_FIND = "SELECT id FROM runs WHERE owner = ? AND cancel_requested IS NOT NULL"
_CLEAR = "UPDATE runs SET cancel_requested = NULL WHERE id = ?"


class RequestCancel(Op):
    """Mark a running run as asked to be cancelled; its result: whether it was running
    (False: finished, suspended, or its owner is gone: nothing to cancel).

    ``probe`` is the backend's claim of the run, used only for its
    :meth:`~wingman_actors.store._ops.Claim.fetch` (the run's status, parent, and whether
    a live owner runs it: a process check on SQLite, a lease on PostgreSQL).
    """

    __slots__ = ("now", "probe")
    wait = True

    def __init__(self, probe: Claim, now: float) -> None:
        super().__init__()
        self.probe, self.now = probe, now

    def apply(self, conn: Any) -> Any:
        run_id = self.probe.run_id
        row = self.probe.fetch(conn)
        if row is None:
            self.error = UnknownRunError(run_id, self.probe.store_path)
            return None
        status, _, parent, live = row
        if parent is not None:
            self.error = StoreError(
                f"run {run_id!r} is an inner run of run {parent!r} (a nested formation's run, which ends with its "
                f"outer run); request the cancel of the outer run: store.request_cancel({parent!r})")
            return None
        if status != "running" or not live:
            return False
        conn.execute("UPDATE runs SET cancel_requested = ? WHERE id = ?", (self.now, run_id))
        return True

    def describe(self) -> str:
        return f"request_cancel({self.probe.run_id!r})"


class CancelWatch:
    """The writer's tick that finds the requests to cancel the runs of one store.

    Args:
        owner: the store's owner id (its runs point at it).
        mine: the runs the store is running (began or claimed, no status set since),
            kept by the store; no look while it is empty.
    """

    __slots__ = ("_failing", "due", "listeners", "mine", "owner")

    def __init__(self, owner: int, mine: set[str]) -> None:
        self.owner = owner
        self.mine = mine
        self.due = 0.0  # when (time.monotonic()) to look next
        self.listeners: Listeners[str] = Listeners("cancel requests")
        self._failing = False

    def subscribe(self, listener: CancelListener) -> Callable[[], None]:
        """Tell ``listener`` of every request found from now on; returns the unsubscribe call."""
        return self.listeners.subscribe(listener)

    def started(self, run_id: str, writer: Writer) -> None:
        """``run_id`` is running in this store now (begun or claimed): it may be asked to
        cancel. The first one wakes the writer thread, which may wait with no look due."""
        idle = not self.mine
        self.mine.add(run_id)
        if idle:
            writer.wake()

    def wait(self) -> float | None:
        """Seconds until the next look (<= 0: due), or None while none is needed."""
        if not self.listeners.all or not self.mine:
            return None
        return self.due - time.monotonic()

    def __call__(self, conn: Any, begin: str, errors: tuple[type[BaseException], ...]) -> None:
        """Look, if a look is due (on the writer thread, the write lock held, outside a batch)."""
        now = time.monotonic()
        if now < self.due or not self.listeners.all or not self.mine:
            return
        self.due = now + CHECK_S
        try:
            found = [row[0] for row in conn.execute(_FIND, (self.owner,)).fetchall()]
            if found:
                conn.execute(begin)
                try:
                    for run_id in found:
                        conn.execute(_CLEAR, (run_id,))
                    conn.execute("COMMIT")
                except BaseException:
                    with contextlib.suppress(*errors):  # (a failed statement may have ended it)
                        conn.execute("ROLLBACK")
                    raise
        except errors as exc:
            if not self._failing:  # once per spell of failures
                _log.warning("run store: looking for requests to cancel runs failed (%s); retrying every %ss",
                             str(exc).strip(), CHECK_S)
            self._failing = True
            return
        self._failing = False
        self.listeners.tell(found, thread="wingman-store-cancel")
