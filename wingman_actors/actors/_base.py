"""The base of node actors: a Pykka actor that takes work and reports what came of it.

A :class:`NodeActor` handles ``work`` deliveries one at a time and replies with a
``result`` or a ``failure`` envelope to its ``reply_to`` (another actor, anything with
``tell``, or a callable), or, inside a formation, calls its :class:`NodeObserver` (the
runtime's router) on its own thread, so a hop costs one ``ActorRef.tell``. Replicas of
one node share one queue (``inbox``, see :mod:`._inbox`): an idle replica pulls the next
input, and a replica that must stop before the next one (retired after a failure,
abandoned in stuck code, or told :data:`LEAVE`) stops through the stop request it holds.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pykka

from .._interrupts import RunSuspended, VisitScope
from ..agents._result import SpentOnFailure
from ..core import StreamEvent, Usage
from ..integrations.otel import node_work
from ..orchestration._blackboard import Blackboard, use_blackboard
from ._address import RuntimeActor
from ._envelope import Envelope, EnvelopeType, Work, next_id
from ._inbox import Lane

__all__ = ["LEAVE", "NodeActor", "NodeObserver", "ReplyTo", "node_scope", "report_fault"]

log = logging.getLogger("wingman_actors.actors")

ReplyTo = Callable[[Envelope], Any] | pykka.ActorRef[Any] | Any


class _Leave:
    def __repr__(self) -> str:
        return "LEAVE"


LEAVE: Any = _Leave()
"""Told to one of a node's replicas (through any replica's ref): the replica that takes
it from the shared queue stops. Stopping ``k`` replicas is telling ``k`` of them, each
through any ref that is still alive."""


class NodeObserver(Protocol):
    """Hooks the formation runtime gives node actors (all optional for standalone use)."""

    def started(self, work: Work) -> None: ...

    def wants_events(self, work: Work) -> bool: ...

    def agent_event(self, work: Work, event: StreamEvent, item: int | None = None) -> None:
        """An agent's stream event; ``item``: the index of the fleet item whose session it
        comes from (None for an agent node). Called only when :meth:`wants_events`."""
        ...

    def attempt_timeout(self, work: Work) -> float | None: ...

    def completed(
        self, work: Work, attempt: int, output: Any, usage: Usage | None, started: float, finished: float
    ) -> None: ...

    def failed(
        self, work: Work, attempt: int, exc: BaseException, started: float, finished: float, actor: Any
    ) -> bool: ...

    def suspended(self, work: Work, attempt: int, signal: RunSuspended) -> None: ...

    def item_scope(self, work: Work, index: int) -> VisitScope | None: ...

    def item_finished(self, work: Work, index: int, output: Any) -> None: ...

    def dropped(self, work: Work) -> bool:
        """Called when ``work`` of a branch a ``join="any"`` fired without reaches its node:
        True when it was cancelled (it belongs to that round), False when it runs."""
        ...

    def broken(self, work: Work, fault: Exception) -> None:
        """Called when one of these hooks raised while handling ``work``'s outcome (a bug of
        the runtime's, logged already): the run must fail, saying so, not stay unresolved."""
        ...


class NodeActor(RuntimeActor):
    """Base of the node actors: receive ``work``, call :meth:`process`, reply.

    A Pykka ``ThreadingActor`` through Pykka's public API: work arrives as a told
    message (``ref.tell``) and is handled in :meth:`on_receive`; the one seam used is
    ``_create_actor_inbox`` (a :class:`~._inbox.Lane`: a node's replicas share a queue).

    Args:
        name: the node's name (the ``sender`` of its replies).
        reply_to: where replies go: an actor ref (or anything with ``tell``) or a callable.
        observer: runtime hooks (formations set it; standalone actors leave it None).
        replica: index of this replica when a node runs several.
        inbox: the queue the node's replicas share (None: the actor's own queue).
        blackboard: the board active while this actor works (``current_blackboard()``)
            when the work belongs to no formation run; inside a formation, the run's board.
        on_stopped: called with the actor when it stops (on its thread, from
            :meth:`on_stop`): the backend learns of a replica stopped from outside.
    """

    def __init__(
        self,
        name: str,
        *,
        reply_to: ReplyTo = None,
        observer: NodeObserver | None = None,
        replica: int = 0,
        notify_start: bool = False,
        inbox: queue.SimpleQueue[Any] | None = None,
        blackboard: Blackboard | None = None,
        on_stopped: Callable[[NodeActor], None] | None = None,
    ) -> None:
        super().__init__()
        self.name = name
        self._on_stopped = on_stopped
        self.thread_name = f"wingman-node-{name}-{replica}"
        self.blackboard = blackboard
        self.observer = observer
        self.replica = replica
        self.notify_start = notify_start
        lane = self.actor_inbox
        assert isinstance(lane, Lane)
        self._lane = lane
        if inbox is not None:
            # Replicas of one node share one queue: an idle replica pulls the next input,
            # so a replica stuck in user code holds only the input it is working on.
            lane.share(inbox)
            lane.hold_stop(self)  # released when this replica must retire
        self.current: Work | None = None  # the work in progress, read by cancel and timeouts
        # a journalled visit's work whose outcome is being handed to the runtime (current is
        # None by then): a suspending run still counts it at work (formation/_suspending.py)
        self.reporting: Work | None = None
        self.abandoned = False  # set when the runtime gave up on the attempt in progress
        self._reply: Callable[[Envelope], Any] | None
        if reply_to is None:
            self._reply = None
        elif hasattr(reply_to, "tell"):
            self._reply = reply_to.tell
        elif callable(reply_to):
            self._reply = reply_to
        else:
            raise TypeError(f"reply_to must be an actor ref or a callable, got {type(reply_to).__name__}")

    failed_spent: Usage | None = None
    """What the attempt that failed last spent on model calls, when its error cannot say
    (an exception the library does not own: see
    :class:`~wingman_actors.agents._result.SpentOnFailure`); read by the observer's
    ``failed``."""

    retires_on_failure = True
    """Whether a failed attempt retires this replica (the supervisor starts a fresh one);
    a replica with other visits in flight (an async function node's) serves on."""

    in_flight: Any = None
    """The visits this replica has in flight besides :attr:`current` (an async function
    node's :class:`~._async_function.AsyncVisits`), or None: one attempt at a time."""

    @staticmethod
    def _create_actor_inbox() -> Lane:
        return Lane()

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        """Stop the work in progress at its next boundary (from another thread). Function
        actors cannot be interrupted: the runtime abandons their attempt instead."""

    @property
    def interruptible(self) -> bool:
        """Whether :meth:`interrupt` stops the work in progress."""
        return False

    def on_stop(self) -> None:
        """Pykka's hook, on the actor's thread as it stops: tell ``on_stopped``.
        Subclasses that override it call ``super().on_stop()`` last."""
        if self._on_stopped is not None:
            self._on_stopped(self)

    @property
    def stopped_from_outside(self) -> bool:
        """Whether this replica stopped without the runtime asking it to (no retirement, no
        ``LEAVE``, not abandoned): ``ActorRef.stop()`` or ``ActorRegistry.stop_all()`` of a
        user's. The runtime starts no successor for it."""
        return self.actor_stopped.is_set() and self._lane.holds_stop and not self.abandoned

    def spent_so_far(self) -> Usage | None:
        """What the attempt in progress has spent on model calls so far (read from another
        thread when the runtime cuts it: a timeout, a cancel), or None when unknown: only
        an agent's session keeps count as it goes."""
        return None

    def on_receive(self, message: Any) -> Any:
        """Handle a delivery: :class:`Work` (inside a formation) or a ``work``
        :class:`Envelope` (told to a standalone actor)."""
        if type(message) is Work:
            try:
                retire = self.handle_work(message)
            except Exception as fault:  # a runtime hook raised (a bug): its run fails, saying so
                retire = self.report_fault(message, fault)
            if retire or self.abandoned:
                # retired after a failure (the supervisor starts a fresh replica), or
                # abandoned in a stuck attempt (a fresh replica already serves): stop
                # before taking another input
                self._retire()
            return None
        if message is LEAVE:
            self._retire()
            return None
        if type(message) is Envelope and message.type == EnvelopeType.WORK:
            self.handle_work(Work.of(message))
            return None
        log.warning("node %r ignored a message it does not understand: %r", self.name, message)
        return None

    def report_fault(self, work: Work, fault: Exception) -> bool:
        """A hook of the runtime's raised while handling ``work``'s outcome (a bug): see
        :func:`report_fault`; a standalone actor (no runtime) raises it. Returns False: the
        replica serves on (the fault was not its node's)."""
        self.current = None
        if self.observer is None:
            raise fault
        report_fault(self.observer, self.name, work, fault)
        return False

    def _retire(self) -> None:
        # Stop before the next input: a replica releases the stop it holds (queued behind
        # the node's inputs, a stop would come too late); a standalone actor has nothing
        # queued for others and stops as Pykka's actors do. A replica leaves the registry
        # first: ActorRegistry.stop_all() from now on skips it (its stop, queued behind the
        # node's inputs, would outlive the replica it was told to).
        if self._lane.shared:
            pykka.ActorRegistry.unregister(self.actor_ref)
        if not self._lane.release_stop():
            self.stop()

    def handle_work(self, work: Work) -> bool:
        """Process one delivery of a ``work`` envelope and reply. Returns True when this
        replica must retire (the runtime restarts a fresh one after a failure)."""
        run = work.run
        self.current = work  # first: a cancel that misses the check below sees this
        if run is not None and run.done:
            self.current = None
            return False  # the run ended (failed, cancelled, timed out, stopped): drop its leftovers
        observer = self.observer
        if run is None:  # a standalone actor's work
            board, trace = self.blackboard, None
        else:  # the run's board, and its OpenTelemetry span when in use
            board, trace = run.blackboard, run.trace
            if run.dropped and work.target in run.dropped and observer is not None and observer.dropped(work):
                self.current = None  # a join="any" fired without this branch: its work is not wanted
                return False
        attempt = work.attempt  # the supervisor may bump it (after a timeout) while we work
        work.replica = self.replica
        if observer is not None and (self.notify_start or run.listeners):
            observer.started(work)
        # on the Work too: a cancel or a run timeout that cuts the attempt shows its time so far
        started = work.started = time.perf_counter()
        scope = work.scope  # a journalled run: interrupt() finds its visit
        try:
            if board is None and trace is None:
                output, usage = self.process(work) if scope is None else scope.run(self.process, work)
            else:  # the run's board (blackboard_tools, delegates) and/or its trace context
                with node_scope(board, trace, self.name, work.run_id, attempt):
                    output, usage = self.process(work) if scope is None else scope.run(self.process, work)
        except RunSuspended as signal:
            self.reporting, self.current = work, None
            if observer is not None:
                try:
                    observer.suspended(work, attempt, signal)
                finally:
                    self.reporting = None
                return False
            self.reporting = None
            raise
        except BaseException as exc:  # SystemExit, KeyboardInterrupt too: out of here they would end the actor
            # (and Pykka stops every actor with it), leaving the run unresolved; they fail the attempt instead
            if scope is not None:
                self.reporting = work
            self.current = None
            spent: Usage | None = None
            if isinstance(exc, SpentOnFailure):  # an agent's or fleet's attempt: its error, what it spent beside it
                spent = exc.usage
                exc = exc.error
            if observer is not None:
                self.failed_spent = spent
                try:
                    return observer.failed(work, attempt, exc, started, time.perf_counter(), self)
                finally:
                    self.reporting = None
            self.reporting = None
            reply = Envelope(
                next_id(), work.run_id, self.name, EnvelopeType.FAILURE, exc, time.time(), work.target, run,
                attempt, work.envelope, spent, started, time.perf_counter(), self.replica,
            )
        else:
            if scope is None:
                self.current = None
                if observer is not None:
                    observer.completed(work, attempt, output, usage, started, time.perf_counter())
                    return False
            elif observer is not None:  # journalled: a suspension waits for this report (formation/_suspending.py)
                self.reporting, self.current = work, None
                try:
                    observer.completed(work, attempt, output, usage, started, time.perf_counter())
                finally:
                    self.reporting = None
                return False
            self.current = None
            reply = Envelope(
                next_id(), work.run_id, self.name, EnvelopeType.RESULT, output, time.time(), work.target, run,
                attempt, work.envelope, usage, started, time.perf_counter(), self.replica,
            )
        if self._reply is not None:
            self._reply(reply)
        return False

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        """Compute the output of one work envelope. Subclasses implement it."""
        raise NotImplementedError

    def _timeout(self, env: Work) -> float | None:
        return self.observer.attempt_timeout(env) if self.observer is not None else None


def report_fault(observer: NodeObserver, node: str, work: Work, fault: Exception) -> None:
    """One of ``observer``'s hooks raised while handling the outcome of ``work`` at ``node``
    (a bug of the runtime's): log it and have the runtime fail the run, rather than leave
    its future unresolved."""
    log.error("node %r: the runtime failed handling the outcome of run %s's work", node, work.run_id, exc_info=fault)
    observer.broken(work, fault)


@contextlib.contextmanager
def node_scope(board: Blackboard | None, trace: Any, node: str, run_id: str, attempt: int) -> Iterator[None]:
    """One node attempt inside its run's blackboard (``current_blackboard()``) and, when
    OpenTelemetry is in use, under the run's trace context."""
    with contextlib.ExitStack() as stack:
        if board is not None:
            stack.enter_context(use_blackboard(board))
        if trace is not None:
            stack.enter_context(node_work(trace.carrier, node, run_id, attempt))
        yield
