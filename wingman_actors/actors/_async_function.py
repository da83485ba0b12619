"""The visits an ``async def`` function node's replica has in flight, each a task on the
replica's event loop.

Inside a formation (threads backend) an async function node's actor thread does not
await: it checks a visit's input, makes its coroutine and hands it to :class:`AsyncVisits`,
then takes the next input at once. The coroutine runs as a task on the replica's loop
(:class:`~wingman_actors._event_loop.LoopThread`, started on first use), in a copy of the
actor thread's context (the run's board, trace and journalled visit reach it); when it
ends, the loop thread reports to the runtime (``completed``, ``failed`` or
``suspended``), exactly as the actor thread does for a plain function, so attempts,
timers, retries and error edges are the same. The task reports from its own last step
(it awaits the coroutine inside :meth:`AsyncVisits._visit`), not from a done callback:
asyncio runs each done callback as one more loop handle, and at a thousand visits that
was about a fifth of a burst's CPU. A task cancelled before its first step never runs the
wrapper: whoever cancelled it reports it.

Hand-offs to the loop are batched: the first visit into an empty batch schedules one
``call_soon_threadsafe``, and the loop starts every visit that arrived meanwhile (a
thread-safe call per visit costs the loop several times more at a thousand visits).

A replica has at most :data:`MAX_IN_FLIGHT` visits in flight; its actor thread waits for
one to end before it takes the next input, which then stays in the node's queue (for
another replica, when there are several). Cancelling a visit (its node's timeout, its
run's cancel or time limit, the formation's stop) cancels its task, so its ``finally``
runs; a visit whose task is stuck in blocking code (its step still running
:data:`STUCK_GRACE` after the cancel) cannot be cancelled, and is reported
so (:meth:`AsyncVisits.cancel`) for the backend to replace the replica: the replaced
replica takes no further input, and its other visits finish and report as usual
(:meth:`AsyncVisits.drain`) before its loop stops.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Container, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from .._event_loop import LoopThread
from .._interrupts import RunSuspended
from ..errors import AgentError, ErrorKind
from ._envelope import Work

if TYPE_CHECKING:
    from ._base import NodeActor

__all__ = ["MAX_IN_FLIGHT", "AsyncVisits"]

log = logging.getLogger("wingman_actors.actors")

MAX_IN_FLIGHT = 1_000
"""The most visits one replica of an async function node has in flight. High enough that
a thousand concurrent runs through a node of one replica all await at once (the bench's
``async_concurrency``), low enough that a flood of inputs waits in the node's queue as
small ``Work`` objects instead of as a thousand more coroutines holding their sockets."""

STUCK_GRACE = 0.05
"""Seconds a cancel waits for the step the loop is running to end before it calls the
task stuck (and the backend replaces the replica): a step caught mid-way on a busy
machine ends well within it, and a stuck one costs its run's end no more than this."""


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class _Visit:
    """One attempt in flight: its coroutine until the loop starts it, then its task."""

    __slots__ = ("announce", "attempt", "begun", "coro", "ctx", "ended", "reason", "started", "task", "work")

    def __init__(self, work: Work, attempt: int, started: float, coro: Coroutine[Any, Any, Any],
                 ctx: contextvars.Context, announce: bool) -> None:
        self.work = work
        self.attempt = attempt
        self.started = started
        self.coro = coro
        self.ctx = ctx
        self.announce = announce  # observer.started(work) when the task first runs
        self.task: asyncio.Task[Any] | None = None
        self.reason: str | None = None  # set when it was cancelled, and why
        self.begun = False  # its task took its first step
        self.ended = False  # reported


class AsyncVisits:
    """The visits of one async function node replica in flight on its event loop.

    Args:
        actor: the replica (its ``name``, ``replica`` and ``observer``).
        limit: the most visits in flight at once.
    """

    def __init__(self, actor: NodeActor, limit: int = MAX_IN_FLIGHT) -> None:
        self._actor = actor
        self._name = f"wingman-node-{actor.name}-loop-{actor.replica}"
        self._thread: LoopThread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._visits: dict[Work, _Visit] = {}  # the latest attempt of each work in flight
        self._cleaning: set[_Visit] = set()  # cancelled attempts whose task still runs (a finally that awaits)
        # journalled visits ended whose outcome is being handed to the runtime: a suspending
        # run still counts them at work (has_run; formation/_suspending.py)
        self._reporting: set[Work] = set()
        # places for visits in flight, as tokens in a queue: a C-level get and put per visit
        # (a threading.Semaphore costs several Python-level lock round trips)
        self._slots: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._limit = limit
        for _ in range(limit):
            self._slots.put(None)
        self._batch: deque[_Visit] = deque()
        self._lock = threading.Lock()
        self._scheduled = False

    # -- on the actor thread -------------------------------------------------------------

    def start(self, work: Work, attempt: int, started: float, coro: Coroutine[Any, Any, Any],
              ctx: contextvars.Context, announce: bool) -> None:
        """Hand the attempt's coroutine to the loop (``ctx``: the context it runs in).
        With ``announce``, the runtime hears that the attempt started (its event, its
        timer) from the task's first step: a cancel, which reaches the task through the
        loop, then finds the coroutine at its first ``await``, so its ``finally`` runs."""
        if self._loop is None:  # on first use: a node that never runs starts no thread
            self._thread = LoopThread(self._name)
            self._loop = self._thread.loop
        visit = _Visit(work, attempt, started, coro, ctx, announce)
        with self._lock:
            self._visits[work] = visit  # first: a cancel of the run from now on finds it
            self._batch.append(visit)
            if self._scheduled:
                return  # the drain already scheduled starts it
            self._scheduled = True
        try:
            self._loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # the loop is stopped (the formation is stopping)
            self._close_batch()

    def wait_for_slot(self) -> None:
        """Wait until fewer than the limit of visits are in flight, and take a place."""
        self._slots.get()

    def give_back_slot(self) -> None:
        """Give back a place taken for a visit that never reached the loop."""
        self._slots.put(None)

    # -- from any thread -----------------------------------------------------------------

    def holds(self, work: Work) -> bool:
        """Whether an attempt at ``work`` is in flight."""
        return work in self._visits

    def attempts_of(self, run: Any) -> list[tuple[Work, int, float]]:
        """The attempts of ``run`` in flight: the work, which attempt, when it started."""
        return [(v.work, v.attempt, v.started) for v in tuple(self._visits.values()) if v.work.run is run]

    def has_run(self, run: Any) -> bool:
        """Whether a visit of ``run`` is in flight (or ended, its outcome being reported)."""
        return (any(v.work.run is run for v in tuple(self._visits.values()))
                or any(w.run is run for w in tuple(self._reporting)))

    def only_ended(self, live: Container[str]) -> bool:
        """Whether tasks still run on the loop and none is a visit of a run whose id is in
        ``live``: what is left is the cleanup of cancelled attempts (a retried one's
        included) and visits of runs that have ended."""
        with self._lock:
            visits, cleaning = tuple(self._visits.values()), bool(self._cleaning)
        return (bool(visits) or cleaning) and not any(v.work.run_id in live for v in visits)

    def cancel(self, work: Work, reason: str) -> Work | None:
        """Cancel the attempt at ``work`` in flight (its ``finally`` runs). Returns ``work``
        when its task is stuck in blocking code on the loop (it cannot be cancelled:
        the caller replaces the replica), else None.

        Stuck means the loop is stepping that very task as the cancel comes, and still is
        :data:`STUCK_GRACE` later (a visit past its time limit that is still inside one step). A visit held up by *another*
        coroutine's blocking code is not seen as stuck: it is cancelled once the loop is
        free."""
        visit = self._visits.get(work)
        if visit is None:
            return None
        return self._cancel([visit], reason)

    def cancel_run(self, run: Any, reason: str) -> Work | None:
        """Cancel every visit of ``run`` in flight; as :meth:`cancel` for one stuck."""
        return self._cancel([v for v in tuple(self._visits.values()) if v.work.run is run], reason)

    def cancel_all(self, reason: str) -> None:
        """Cancel every visit in flight."""
        self._cancel(tuple(self._visits.values()), reason)

    def _cancel(self, visits: Iterable[_Visit], reason: str) -> Work | None:
        visits = list(visits)
        loop = self._loop
        if not visits or loop is None:
            return None
        running = asyncio.current_task(loop)  # a task the loop is stepping now, from another thread
        stuck = next((v.work for v in visits if v.task is not None and v.task is running), None)
        # Stepping it now is not yet stuck: a step caught mid-way (its thread descheduled on a
        # busy machine, a short blocking call) ends soon, and the loop then takes the cancel.
        # Only a step still running STUCK_GRACE later counts (not when called on the loop
        # itself, which cannot take the cancel while we wait).
        taken = threading.Event() if stuck is not None and not _on_loop(loop) else None
        try:
            loop.call_soon_threadsafe(self._cancel_on_loop, visits, reason, taken)
        except RuntimeError:  # the loop is stopped: its tasks were cancelled
            return None
        if taken is not None and taken.wait(STUCK_GRACE):
            return None
        return stuck

    def drain(self) -> None:
        """Wait until every visit in flight has ended (on the actor thread of a replica
        that was replaced: its visits finish and report as usual)."""
        for _ in range(self._limit):
            self._slots.get()
        for _ in range(self._limit):
            self._slots.put(None)

    def stop(self) -> None:
        """Stop the loop (the replica stops): its tasks are cancelled (their ``finally``
        runs, and each reports its attempt as cancelled), and the thread is joined."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop()
        self._close_batch()
        for visit in tuple(self._visits.values()):  # tasks cancelled before their first step
            self._ended(visit, None, None)

    # -- on the loop thread --------------------------------------------------------------

    def _drain(self) -> None:
        with self._lock:
            batch, self._batch = self._batch, deque()
            self._scheduled = False
        loop = self._loop
        assert loop is not None
        create_task = loop.create_task
        for visit in batch:
            if visit.reason is not None or visit.work.run.done:  # cancelled before it could start
                self._ended(visit, None, None)
                continue
            visit.task = create_task(self._visit(visit), context=visit.ctx)

    async def _visit(self, visit: _Visit) -> None:
        """A visit's task: awaits its coroutine and reports the outcome from its own last
        step (no done callback: one loop handle fewer per visit). With ``announce``, the
        runtime hears of the start from its first step."""
        visit.begun = True
        if visit.announce:
            observer = self._actor.observer
            assert observer is not None
            observer.started(visit.work)
        try:
            output = await visit.coro
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if visit.reason is None and task is not None and not task.cancelling():
                # nothing cancelled the task: the coroutine raised CancelledError itself (one let
                # out of a library's own cancelled wait), a failure to report as such
                error = RuntimeError(
                    f"function node {self._actor.name!r} raised asyncio.CancelledError though nothing cancelled it "
                    f"({exc or 'no message'}): an inner task or future it awaited was cancelled; catch that "
                    "CancelledError in the node, or raise another exception to fail the visit")
                error.__cause__ = exc
                self._ended(visit, None, error)
            else:
                self._ended(visit, None, None)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt too: let out of the task, they would end
            self._ended(visit, None, exc)  # the node's loop, and every later visit would wait for good
        else:
            self._ended(visit, (output,), None)

    def _cancel_on_loop(self, visits: list[_Visit], reason: str, taken: threading.Event | None = None) -> None:
        if taken is not None:  # the step that was running when the cancel came has ended
            taken.set()
        for visit in visits:
            if visit.reason is None:
                visit.reason = reason
            task = visit.task
            if task is not None:
                # once only: a second cancel (a timeout's, then its failed run's release) would cut
                # short the cleanup the first one started (a finally that awaits)
                if not task.cancelling():
                    task.cancel()
                if visit.begun and not visit.ended:
                    with self._lock:
                        self._cleaning.add(visit)
                if not visit.begun:  # its coroutine never runs: reported here
                    self._ended(visit, None, None)
            # not started yet: _drain sees the reason and does not start it

    def _ended(self, visit: _Visit, output: tuple[Any] | None, exc: BaseException | None) -> None:
        """Report the attempt's outcome to the runtime, as the sync path does: ``output``
        (a 1-tuple) when it returned, ``exc`` when it raised, neither when it was cancelled."""
        finished = time.perf_counter()
        work = visit.work
        with self._lock:
            if visit.ended:  # reported already (a stop reports those left from its own thread)
                return
            visit.ended = True
            if self._cleaning:  # (empty unless a cancel came)
                self._cleaning.discard(visit)
            if self._visits.get(work) is visit:  # a retry of the same work may have taken its place meanwhile
                del self._visits[work]
            journalled = work.scope is not None
            if journalled:
                self._reporting.add(work)
        self._slots.put(None)
        actor = self._actor
        observer = actor.observer
        assert observer is not None
        attempt = visit.attempt
        try:
            if output is not None:
                observer.completed(work, attempt, output[0], None, visit.started, finished)
                return
            visit.coro.close()  # a no-op once it ran; one that never ran (a cancel came first) warns unless closed
            if exc is None:
                reason = visit.reason or ("the run was cancelled" if work.run.done else "the node is stopping")
                exc = AgentError(f"function node {actor.name!r} was cancelled: {reason}", kind=ErrorKind.CANCELLED)
            if isinstance(exc, RunSuspended):
                observer.suspended(work, attempt, exc)
            else:
                observer.failed(work, attempt, exc, visit.started, finished, actor)
        except Exception as fault:  # a runtime hook raised (a bug): its run fails, saying so
            actor.report_fault(work, fault)
        finally:
            if journalled:
                with self._lock:
                    self._reporting.discard(work)

    def _close_batch(self) -> None:
        """Close the coroutines of visits that never reached a stopped loop (a coroutine
        never awaited warns when collected)."""
        with self._lock:
            batch, self._batch = self._batch, deque()
            self._scheduled = False
        for visit in batch:
            visit.coro.close()
            with self._lock:
                if self._visits.get(visit.work) is visit:
                    del self._visits[visit.work]
