"""The base of node actors: a Pykka actor that takes work and reports what came of it.

A :class:`NodeActor` handles ``work`` deliveries one at a time and replies with a
``result`` or a ``failure`` envelope to its ``reply_to`` (another actor, anything with
``tell``, or a callable), or, inside a formation, calls its :class:`NodeObserver` (the
runtime's router) on its own thread, so a hop costs one queue put. Replicas of one node
share one queue (``inbox``): an idle replica pulls the next input.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pykka

from .._interrupts import RunSuspended, VisitScope
from ..core import StreamEvent, Usage
from ..integrations.otel import node_work
from ..orchestration._blackboard import Blackboard, use_blackboard
from ._envelope import Envelope, EnvelopeType, Work

__all__ = ["STOP", "NodeActor", "NodeObserver", "ReplyTo"]

log = logging.getLogger("wingman_actors.actors")

ReplyTo = Callable[[Envelope], Any] | pykka.ActorRef[Any] | Any


class _Stop:
    def __repr__(self) -> str:
        return "STOP"


STOP: Any = _Stop()
"""Put in a node's shared queue, stops the one replica that takes it."""


class NodeObserver(Protocol):
    """Hooks the formation runtime gives node actors (all optional for standalone use)."""

    def started(self, work: Work) -> None: ...

    def wants_events(self, work: Work) -> bool: ...

    def agent_event(self, work: Work, event: StreamEvent) -> None: ...

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

    def dropped(self, work: Work) -> None: ...


class NodeActor(pykka.ThreadingActor):
    """Base of the node actors: receive ``work``, call :meth:`process`, reply.

    Args:
        name: the node's name (the ``sender`` of its replies).
        reply_to: where replies go: an actor ref (or anything with ``tell``) or a callable.
        observer: runtime hooks (formations set it; standalone actors leave it None).
        replica: index of this replica when a node runs several.
        blackboard: the board active while this actor works (``current_blackboard()``)
            when the work belongs to no formation run; inside a formation, the run's board.
    """

    # Daemon threads: an attempt abandoned in stuck user code must not keep the
    # interpreter alive (Pykka documents this attribute for actor implementors).
    use_daemon_thread = True

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
    ) -> None:
        super().__init__()
        self.name = name
        self.blackboard = blackboard
        self.observer = observer
        self.replica = replica
        self.notify_start = notify_start
        # Replicas of one node share one queue: an idle replica pulls the next input,
        # so a replica stuck in user code holds only the input it is working on.
        self.shared_inbox = inbox is not None
        if inbox is not None:
            self.actor_inbox = inbox
        self.current: Work | None = None  # the work in progress, read by cancel and timeouts
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

    @staticmethod
    def _create_actor_inbox() -> Any:
        # A C-level queue: put/get cost a fraction of queue.Queue's Python code.
        return queue.SimpleQueue()

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        """Stop the work in progress at its next boundary (from another thread). Function
        actors cannot be interrupted: the runtime abandons their attempt instead."""

    @property
    def interruptible(self) -> bool:
        """Whether :meth:`interrupt` stops the work in progress."""
        return False

    def _start_actor_loop(self) -> None:
        # Pykka names threads after the class; name them after the node for debugging.
        thread = threading.Thread(target=self._actor_loop, name=f"wingman-node-{self.name}-{self.replica}")
        thread.daemon = self.use_daemon_thread
        self.thread = thread
        thread.start()

    def _actor_loop_running(self) -> None:
        # Pykka's loop, with a fast lane for work envelopes (no wrapper, no dispatch
        # chain, no reply future); every other message takes Pykka's own path.
        get = self.actor_inbox.get
        stopped = self.actor_stopped
        handle_work = self.handle_work
        if stopped.is_set():  # on_start failed
            return
        while True:
            item: Any = get()
            if type(item) is Work:
                try:
                    if not handle_work(item) and not self.abandoned:
                        continue  # the common case: on to the next input
                    # retired after a failure (the supervisor starts a fresh replica), or
                    # abandoned in a stuck attempt (a fresh replica already serves)
                    self._stop()
                except Exception:
                    self._crash()
                except BaseException:
                    self._halt_all()
            elif item is STOP:
                self._stop()
                return
            else:
                self._pykka_one(item)
            if stopped.is_set():
                return

    def _pykka_one(self, envelope: Any) -> None:
        # One iteration of pykka.Actor._actor_loop_running, for non-work messages.
        try:
            response = self._handle_receive(envelope.message)
            if envelope.reply_to is not None:
                envelope.reply_to.set(response)
        except Exception:
            if envelope.reply_to is not None:
                envelope.reply_to.set_exception()
            else:
                self._crash()
        except BaseException:
            self._halt_all()

    def _crash(self) -> None:
        # As Pykka does for an unhandled exception: log, stop this actor, call on_failure.
        self._handle_failure(*sys.exc_info())
        try:
            self.on_failure(*sys.exc_info())
        except Exception:
            self._handle_failure(*sys.exc_info())

    def _halt_all(self) -> None:
        # As Pykka does for KeyboardInterrupt/SystemExit: stop every actor.
        self._stop()
        pykka.ActorRegistry.stop_all()

    def on_receive(self, message: Any) -> Any:
        # An envelope told to a standalone actor (inside a formation, work arrives as
        # Work in the fast lane of the loop and never gets here).
        if type(message) is Envelope and message.type == EnvelopeType.WORK:
            self.handle_work(Work(message))
            return None
        log.warning("node %r ignored a message it does not understand: %r", self.name, message)
        return None

    def handle_work(self, work: Work) -> bool:
        """Process one delivery of a ``work`` envelope and reply. Returns True when this
        replica must retire (the runtime restarts a fresh one after a failure)."""
        env = work.envelope
        run = env.run
        self.current = work  # first: a cancel that misses the check below sees this
        if run is not None and run.done:
            self.current = None
            return False  # the run ended (failed, cancelled, timed out, stopped): drop its leftovers
        observer = self.observer
        dropped = getattr(run, "dropped", None)
        if dropped and env.target in dropped and observer is not None:
            self.current = None
            observer.dropped(work)  # a join="any" fired without this branch: its work is not wanted
            return False
        attempt = work.attempt  # the supervisor may bump it (after a timeout) while we work
        work.replica = self.replica
        if observer is not None and (self.notify_start or run.listeners):
            observer.started(work)
        started = time.perf_counter()
        board = self.blackboard if run is None else getattr(run, "blackboard", None)
        trace = getattr(run, "trace", None)  # the run's OpenTelemetry span (formations, when in use)
        try:
            scope = work.scope  # a journalled run: interrupt() finds its visit
            if board is None and trace is None:
                output, usage = self.process(work) if scope is None else scope.run(self.process, work)
            else:  # the run's board (blackboard_tools, delegates) and/or its trace context
                with _node_scope(board, trace, self.name, env.run_id, attempt):
                    output, usage = self.process(work) if scope is None else scope.run(self.process, work)
        except RunSuspended as signal:
            self.current = None
            if observer is not None:
                observer.suspended(work, attempt, signal)
                return False
            raise
        except Exception as exc:
            self.current = None
            if observer is not None:
                return observer.failed(work, attempt, exc, started, time.perf_counter(), self)
            reply = Envelope(
                0, env.run_id, self.name, EnvelopeType.FAILURE, exc, time.time(), env.target, run,
                attempt, env, None, started, time.perf_counter(), self.replica,
            )
        else:
            self.current = None
            if observer is not None:
                observer.completed(work, attempt, output, usage, started, time.perf_counter())
                return False
            reply = Envelope(
                0, env.run_id, self.name, EnvelopeType.RESULT, output, time.time(), env.target, run,
                attempt, env, usage, started, time.perf_counter(), self.replica,
            )
        if self._reply is not None:
            self._reply(reply)
        return False

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        """Compute the output of one work envelope. Subclasses implement it."""
        raise NotImplementedError

    def _actor_loop_teardown(self) -> None:
        # A shared queue belongs to the node, not to this replica: what waits in it is
        # for the replicas that stay (Pykka's teardown would answer it as dead letters).
        if not self.shared_inbox:
            super()._actor_loop_teardown()

    def _timeout(self, env: Work) -> float | None:
        return self.observer.attempt_timeout(env) if self.observer is not None else None


@contextlib.contextmanager
def _node_scope(board: Blackboard | None, trace: Any, node: str, run_id: str, attempt: int) -> Iterator[None]:
    """One node attempt inside its run's blackboard (``current_blackboard()``) and, when
    OpenTelemetry is in use, under the run's trace context."""
    with contextlib.ExitStack() as stack:
        if board is not None:
            stack.enter_context(use_blackboard(board))
        if trace is not None:
            stack.enter_context(node_work(trace.carrier, node, run_id, attempt))
        yield
