"""``asubmit`` in batches: runs submitted on an event loop are launched together, once
per loop iteration, not one by one as each call is made.

``RunningFormation.asubmit`` (without a store) checks its arguments and takes the run's
id at the call, as ``submit`` does, but only records the run (:func:`hold`); the first
run held on a loop schedules one ``call_soon`` there, and that flush launches every run
held meanwhile, in order. A burst of a thousand ``asubmit`` calls made in one loop step
(``asyncio.gather(*(running.asubmit(x) for x in xs))``) thus reaches the runtime in one
go after the step: the caller's step is not stretched by the first node's threads, which
start on the first inputs while the others are still being submitted and take the GIL
in turns with it.

A run held is known to its formation (:meth:`Holds.cancel`: ``running.cancel(run_id)``
cancels it before its launch) and counted in ``in_flight``. Cancelling its
:class:`~._aio.AsyncRun` before the flush cancels the run as soon as it is launched, as
for a journalled run whose start is still being written.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable

from ._aio import AsyncRun
from ._future import RunFuture

__all__ = ["Holds", "hold"]


class Holds:
    """The runs of one running formation that are held for their loop's next flush, by
    run id (read from any thread: dict operations are atomic)."""

    __slots__ = ("launched", "runs")

    def __init__(self, launched: Callable[[RunFuture], RunFuture]) -> None:
        self.runs: dict[str, AsyncRun] = {}
        self.launched = launched  # RunningFormation._launched: a run launched after a stop fails as stop fails runs

    def release(self) -> None:
        """Launch the runs held on the loop running in this thread now, rather than at its
        next flush (before the formation stops: they are its runs, failed as it stops)."""
        if not self.runs:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # another thread's loop: its flush launches them (and ``launched`` fails them)
        _flush(loop)

    def cancel(self, run_id: str) -> bool | None:
        """Cancel the held run ``run_id`` (from any thread): True, or None when no such run
        is held (it may be launched: cancel it there)."""
        run = self.runs.get(run_id)
        if run is None:
            return None
        loop = run.get_loop()
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            run.cancel()
        else:
            try:
                loop.call_soon_threadsafe(run.cancel)
            except RuntimeError:  # the loop is closed: nobody awaits the run
                return False
        return True


_Held = tuple[AsyncRun, Callable[[], RunFuture], Holds]
_batches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[_Held]] = weakref.WeakKeyDictionary()


def hold(holds: Holds, begin: Callable[[], RunFuture], run_id: str, loop: asyncio.AbstractEventLoop) -> AsyncRun:
    """The :class:`AsyncRun` of the run ``begin()`` launches (under ``run_id``), launched
    at ``loop``'s next flush (call on ``loop``'s thread)."""
    run = AsyncRun(run_id, loop)
    batch = _batches.get(loop)
    if batch is None:
        batch = _batches[loop] = []
        loop.call_soon(_flush, loop)
    batch.append((run, begin, holds))
    holds.runs[run_id] = run
    return run


def _flush(loop: asyncio.AbstractEventLoop) -> None:
    """Launch every run held on ``loop``, in the order they were submitted."""
    batch = _batches.pop(loop, None)
    if not batch:
        return
    for run, begin, holds in batch:
        future: RunFuture | None = None
        error: BaseException | None = None
        try:
            future = holds.launched(begin())
        except Exception as exc:  # raised where the run is awaited
            error = exc
        holds.runs.pop(run.run_id, None)  # after the launch: a cancel by id meanwhile finds it one way or the other
        run._begun(future, error)

