"""Formation runs in flight on this server.

Every formation run over HTTP is journalled in the run journal (the server's
:class:`~wingman_actors.store.RunStore`, in the same database file), so its finished node
visits survive a crash and the run can be resumed. While it runs, a :class:`Flight` makes
it reachable by id (``POST /runs/{id}/cancel``) and writes its run record exactly once,
whoever gets there first: the request waiting for the run, a cancel, or the server stopping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING

from ..formation._result import FormationResult
from ..formation._runtime import RunningFormation
from ..formation.events import FormationEvent
from ..orchestration import Blackboard
from ._errors import ApiError
from ._live import RunLogs
from ._run_outcome import Tracker, cancelled, cut_times, failed, failure, out_of_time, run_error, settled
from ._schemas import RunOut
from ._started import Started

if TYPE_CHECKING:
    from ._context import ServerContext

EventListener = Callable[[FormationEvent], None]

__all__ = ["CLEAN", "Flight", "Flights", "answer", "flight", "outcome", "settle_wait"]

_SETTLE_WAIT_S = 5.0


class Flight:
    """One formation run in flight on this server.

    Args:
        ctx: the server.
        running: the started formation the run is on (it has it to itself while it runs;
            see :mod:`._started`).
        run: the run's record.
        tracker: builds node traces from the run's events.
        on_event: the run's own listener of its events (its log, which ``tracker`` reads).
    """

    def __init__(self, ctx: ServerContext, running: RunningFormation, run: RunOut, tracker: Tracker,
                 on_event: EventListener | None = None) -> None:
        self.ctx = ctx
        self.running = running
        self.record = run
        self.tracker = tracker
        self.on_event = on_event
        self.blackboard = Blackboard()
        """The run's own blackboard, shared by its nodes only."""
        self.started = time.perf_counter()
        self.stopping = False
        """Set when the server stops: the run ends ``interrupted``, resumable after a restart."""
        self.timed_out = False
        """Whether the run failed by its time limit (see :meth:`ending`)."""
        self.settled = threading.Event()
        """Set once the run's outcome is committed."""
        self.on_settled: Callable[[Flight], None] | None = None
        """Told (on the thread that saw the commit) once the run's outcome is committed."""
        self.error: BaseException | None = None
        """What failed the write of the run's outcome, if it failed."""
        self._claimed = False  # someone writes the outcome (maybe not committed yet)
        self._cancelling = False  # a cancel() is under way: it writes the outcome
        self._left = False  # ending() left the outcome to a cancel() under way
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return self.record.id

    def submit(self, input: object, timeout: float | None, also: EventListener | None = None) -> Future[FormationResult]:
        """Start the run on ``input`` (journalled when this returns), its events to the run's
        listener and ``also``."""
        return self.running.submit(input, timeout=timeout, on_event=self._listener(also), blackboard=self.blackboard,
                                   run_id=self.id)

    def resume(self, answer: object = None, timeout: float | None = None) -> Future[FormationResult]:
        """Continue the journalled run (with ``answer`` for its pending interrupt)."""
        return self.running.resume(self.id, answer, timeout=timeout, on_event=self.on_event,
                                   blackboard=self.blackboard)

    def _listener(self, also: EventListener | None) -> EventListener | None:
        first = self.on_event
        if also is None or first is None:
            return first if also is None else also

        def on_event(event: FormationEvent) -> None:
            first(event)
            also(event)

        return on_event

    def settle(self, build: Callable[[RunOut], RunOut]) -> RunOut:
        """Write the run's outcome ``build(record)``, unless someone did already, and wait
        until it is committed; the record."""
        with self._lock:
            first = not self._claimed
            if first:
                self._claimed = True
                try:
                    self.record = self.ctx.store.finish_run(build(self.record))
                except BaseException as exc:
                    self.error = exc
                    raise
                finally:
                    self.settled.set()
        if first:
            if self.on_settled is not None:
                self.on_settled(self)
        else:
            self.settled.wait()
        return self.record

    def settle_soon(self, build: Callable[[RunOut], RunOut]) -> None:
        """Write the run's outcome ``build(record)`` unless someone did already, without
        waiting: ``settled`` is set, and ``on_settled`` told, once it is committed."""
        with self._lock:
            if self._claimed:
                return
            self._claimed = True
            record = build(self.record)
        try:
            self.ctx.store.finish_run(record, wait=False, on_commit=self._committed)
        except BaseException as exc:  # (refused before it was queued)
            self._committed(record, exc)

    def _committed(self, record: RunOut, error: BaseException | None) -> None:
        self.record, self.error = record, error
        self.settled.set()
        if self.on_settled is not None:
            self.on_settled(self)

    def cancel(self, reason: str) -> RunOut | None:
        """Cancel the run (its work stops at the next boundary) and record it ``cancelled``;
        None when it had already finished."""
        self._cancelling = True  # the run's end, seen by ending(), is this call's to record
        if not self.running.cancel(self.id):
            with self._lock:
                self._cancelling = False
                left = self._left  # someone else cancelled it meanwhile, and ending() left it to this call
            if left:
                self.settle(lambda r: cancelled(r, self.tracker, self.started, "the run was cancelled"))
            return None
        return self.settle(lambda r: cancelled(r, self.tracker, self.started, reason))

    def ending(self, future: Future[FormationResult], timeout: float | None,
               entry: Collection[str]) -> Callable[[RunOut], RunOut] | None:
        """How to record the end of the run ``future`` (done), which had ``timeout``:
        succeeded or suspended, cancelled, failed, or interrupted (the server is stopping);
        None when a :meth:`cancel` under way records it. Sets :attr:`timed_out`."""
        if future.cancelled():
            with self._lock:
                self._left = self._cancelling
            if self._left:
                return None
            return partial(cancelled, tracker=self.tracker, started=self.started, reason="the run was cancelled")
        exc = future.exception()
        if exc is None:
            return partial(settled, result=future.result())
        self.timed_out = getattr(exc, "node", "") is None and out_of_time(self.started, timeout)
        return self.failure(exc, self.timed_out, entry)

    def failure(self, exc: BaseException, timed_out: bool, entry: Collection[str]) -> Callable[[RunOut], RunOut]:
        """How to record the run failing with ``exc``: ``interrupted`` when the server is
        stopping (so it resumes after the restart), else ``failed``."""
        if self.stopping:
            return partial(cancelled, tracker=self.tracker, started=self.started, status="interrupted",
                           cut_at=cut_times(exc),
                           reason=f"the server stopped before this run finished; continue it with "
                                  f"POST /runs/{self.id}/resume")
        return partial(failed, exc=exc, tracker=self.tracker, started=self.started, timed_out=timed_out, entry=entry)

    def interrupt(self) -> None:
        """The server is stopping: end the run ``interrupted`` (the journal marks it so too)."""
        self.stopping = True
        self.running.stop()


class Flights:
    """The formation runs in flight on this server, by run id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[str, Flight] = {}
        self.logs = RunLogs()
        """The events of the last runs, for the run viewer."""

    def get(self, run_id: str) -> Flight | None:
        with self._lock:
            return self._flights.get(run_id)

    def add(self, flight: Flight) -> None:
        with self._lock:
            self._flights[flight.id] = flight

    def remove(self, flight: Flight) -> None:
        with self._lock:
            if self._flights.get(flight.id) is flight:
                del self._flights[flight.id]

    def interrupt_all(self) -> int:
        """Stop every run in flight (the server is stopping); return how many."""
        with self._lock:
            flights = list(self._flights.values())
        for flight in flights:
            flight.interrupt()
        return len(flights)


CLEAN = ("succeeded", "suspended")
"""The statuses of a run that ended cleanly: its started formation may serve the next run."""


@contextmanager
def flight(ctx: ServerContext, started: Started, run: RunOut) -> Iterator[Flight]:
    """The one run ``run`` on ``started`` (journalled, with a fresh blackboard shared by its
    nodes only), registered as in flight until the block ends; ``started`` is marked
    reusable when the run ended cleanly."""
    log = ctx.flights.logs.start(run.id)
    current = Flight(ctx, started.running, run, Tracker(started.formation, log), log)
    ctx.flights.add(current)
    try:
        yield current
    finally:
        ctx.flights.remove(current)
        log.close()
        started.reusable = current.settled.is_set() and current.record.status in CLEAN and not current.stopping


def outcome(current: Flight, future: Future[FormationResult], timeout: float | None,
            entry: Collection[str] = ()) -> RunOut:
    """Wait for the run, record its outcome and return the record; or raise the error that
    answers it (see :func:`answer`)."""
    try:
        future.result()
    except BaseException:  # (answered below)
        pass
    build = current.ending(future, timeout, entry)
    if build is None:  # a cancel() under way writes it
        current.settled.wait()
    else:
        current.settle(build)
    return answer(current, future, entry)


def answer(current: Flight, future: Future[FormationResult], entry: Collection[str] = ()) -> RunOut:
    """The record of the ended run ``future`` (its outcome committed), or the error that
    answers it: 409 ``cancelled``, 503 when the server stopped, else as :func:`failure`
    says (400 ``input``, 500 ``runtime``, 502 provider, 504 ``timeout``)."""
    run_id, record = current.id, current.record
    if current.error is not None:
        raise current.error
    if future.cancelled():
        raise ApiError(409, f"formation run {run_id} was cancelled before it finished (POST /runs/{run_id}/cancel); "
                            f"continue it with POST /runs/{run_id}/resume",
                       kind="cancelled", run_id=run_id, run_status=record.status)
    exc = future.exception()
    if exc is None:
        return record
    if record.status == "interrupted":
        raise ApiError(503, f"the server is stopping: formation run {run_id} was interrupted; continue it with "
                            f"POST /runs/{run_id}/resume once the server is back",
                       kind="interrupted", run_id=run_id) from exc
    status, kind = failure(exc, current.timed_out, entry)
    raise run_error(record, status, kind) from exc


def settle_wait(current: Flight) -> bool:
    """Wait (a few seconds at most) until the run's record is written; whether it was."""
    return current.settled.wait(_SETTLE_WAIT_S)
