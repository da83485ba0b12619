"""The threads backend: every node replica is a Pykka actor on its own thread.

A node's replicas share one ``queue.SimpleQueue``: each replica's Pykka inbox is a lane
of it (:mod:`wingman_actors.actors._inbox`), and work is told through a live replica's
ref (``ActorRef.tell``: one put per hop). A replica that fails retires itself and the
supervisor asks for a fresh one (:meth:`ThreadNode.restart`); a replica stuck past a
time limit or on a cancelled run is abandoned: a fresh replica takes its place at once,
and the old thread, a daemon, ends whenever its code returns without blocking ``stop()``
or interpreter exit. ``stop()`` tells one ``LEAVE`` per replica: each replica takes one
from the shared queue, after the inputs queued before it, and stops.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Container, Iterable
from typing import Any

import pykka

from ..actors._address import start_actor
from ..actors._base import LEAVE
from ..actors._envelope import Work
from ..core import Usage
from ..errors import FormationRuntimeError
from ._base import NodeRecipe

__all__ = ["ThreadNode", "ThreadsBackend", "tell_through_any"]

log = logging.getLogger("wingman_actors.backends")


class ThreadNode:
    """One node's replicas (Pykka actors) and the queue they share."""

    __slots__ = (
        "_abandoned", "_backend", "_lock", "_observer", "_pending", "_recipe", "_tell", "inbox", "name", "replicas",
    )

    def __init__(self, backend: ThreadsBackend, recipe: NodeRecipe, concurrency: int, observer: Any) -> None:
        self._backend = backend
        self._recipe = recipe
        self._observer = observer
        self._lock = threading.Lock()
        self.name = recipe.name
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._pending: list[Work] = []  # told while no replica was alive: for the next one
        self._abandoned: list[Any] = []  # replaced replicas, until they stop
        self.replicas: list[Any] = [self._spawn(i) for i in range(concurrency)]
        self._tell: Callable[[Any], None] = self.replicas[0].actor_ref.tell

    def tell(self, work: Work) -> None:
        """Queue ``work`` for whichever replica is free first (the hot path: one
        ``ActorRef.tell``, through the ref of a live replica)."""
        try:
            self._tell(work)
        except pykka.ActorDeadError:  # that replica stopped (retired, abandoned): another
            self._tell_live(work)

    def _tell_live(self, work: Work) -> None:
        with self._lock:
            for actor in self.replicas:
                ref = actor.actor_ref
                if not actor.abandoned and ref.is_alive():
                    try:
                        ref.tell(work)
                    except pykka.ActorDeadError:
                        continue  # it stopped meanwhile
                    self._tell = ref.tell
                    return
            # none alive: the supervisor is starting a fresh one (or the node is closing)
            if self._backend.closing:
                return
            if not all(actor.stopped_from_outside for actor in self.replicas):
                self._pending.append(work)
                return
            # every replica was stopped by a user's ActorRef.stop() or ActorRegistry.stop_all():
            # no successor is coming, so this work and what waits in the queue would wait forever
            lost = [work, *self._drain()]
        for each in lost:  # outside the lock: failing a run releases its work on every node
            self._fail_lost(each)

    def _stopped(self, actor: Any) -> None:
        """A replica stopped (on its thread). When every replica was stopped from outside,
        no successor is coming: the work waiting in the node's queue fails its runs. When
        the last live replica retired or left, what waits for a reply is answered."""
        if not actor.stopped_from_outside:
            # retired (a successor may come), left, or abandoned: the runtime's own doing
            self._answer_orphans()
            return
        with self._lock:
            if self._backend.closing or not all(a.stopped_from_outside for a in self.replicas):
                return
            lost = self._drain()
        for work in lost:
            self._fail_lost(work)

    def _answer_orphans(self) -> None:
        """With no live replica left, answer what waits in the node's queue for a reply.

        A stop told through a replica's ref (``ActorRef.stop()``, ``stop_all()``) while it
        worked is queued behind the node's inputs; a replica that then retires stops
        through the stop it holds, ahead of it. With no replica left to take it (the
        supervisor that starts successors was stopped too, or the formation is closing)
        the stop's caller waited forever. Pykka's own teardown answers what waits in a
        stopped actor's inbox with ``ActorDeadError``; this does the same for the queue of
        a node that has no actor left (a stop answered so returns False); the inputs stay
        in the queue for the successor."""
        with self._lock:
            if any(not a.abandoned and not a.actor_stopped.is_set() for a in self.replicas):
                return  # a live replica takes what waits (a successor, or another replica)
            waiting: list[Any] = []
            while True:
                try:
                    waiting.append(self.inbox.get_nowait())
                except queue.Empty:
                    break
            answer: list[pykka.Future[Any]] = []
            for envelope in waiting:
                if getattr(envelope, "reply_to", None) is None:
                    self.inbox.put(envelope)  # inputs and LEAVEs stay, in their order, for a successor
                else:
                    answer.append(envelope.reply_to)
        for reply_to in answer:
            reply_to.set_exception(exc_info=(pykka.ActorDeadError, pykka.ActorDeadError(
                f"node {self.name!r} has no actor left to handle the message"), None))

    def _drain(self) -> list[Work]:
        """Take the work left in the node's queue (the lock held, every replica stopped)."""
        left, self._pending = self._pending, []
        while True:
            try:
                envelope = self.inbox.get_nowait()
            except queue.Empty:
                return left
            message = getattr(envelope, "message", envelope)  # told through a ref: in Pykka's envelope
            if type(message) is Work:
                left.append(message)

    def _fail_lost(self, work: Work) -> None:
        run = work.run
        if run is None or run.done:
            return
        log.warning("node %r of formation %r: its actors were stopped from outside the formation; run %s fails",
                    self.name, self._backend.formation, work.run_id)
        self._observer.fail_run(run, FormationRuntimeError(
            f"node {self.name!r} of formation {self._backend.formation!r} has no actor left to run run {run.id}: "
            "its actors were stopped from outside the formation (pykka.ActorRegistry.stop_all(), or "
            "ActorRef.stop() on a node actor); stop a formation with running.stop() (or by leaving its "
            "`with` block), and start it again to run more",
            node=self.name, attempts=work.attempt, run_id=run.id, outputs=run.outputs,
        ))

    def _spawn(self, replica: int) -> Any:
        r = self._recipe
        actor = start_actor(r.cls, *r.args, observer=self._observer, inbox=self.inbox, replica=replica,
                            on_stopped=self._stopped, **r.kwargs)
        self._backend.remember(actor)
        if self._pending:  # called with the lock held (restart, abandon)
            pending, self._pending = self._pending, []
            for i, work in enumerate(pending):
                try:
                    actor.actor_ref.tell(work)
                except pykka.ActorDeadError:
                    # the fresh replica took a failing input from the shared queue and
                    # retired already: the rest waits for the replica its restart starts
                    self._pending = pending[i:]
                    break
            self._tell = actor.actor_ref.tell
        return actor

    def restart(self, replica: int, retired: Any) -> None:
        with self._lock:  # closing is read under the lock close() takes: no spawn after close
            if self._backend.closing or self.replicas[replica] is not retired:
                return  # replaced already (it was abandoned meanwhile)
            self.replicas[replica] = self._spawn(replica)

    def abandon(self, env: Work, why: str) -> bool:
        with self._lock:
            actor = next((a for a in self.replicas if a.current is env), None)
            if actor is None:
                # a replica with many visits in flight cancels that visit's task, and is
                # replaced only when the task is stuck in blocking code on its loop
                actor = next((a for a in self.replicas if a.in_flight is not None and a.in_flight.holds(env)), None)
                if actor is None:
                    return False
                if actor.in_flight.cancel(env, why) is None or actor.abandoned:
                    return True
            self._abandon(actor, env, why)
        return True

    def working_on(self, run: Any) -> bool:
        for actor in self.replicas:
            env = actor.current
            if env is not None and env.run is run:
                return True
            env = actor.reporting  # ended, its outcome being handed to the runtime
            if env is not None and env.run is run:
                return True
            if actor.in_flight is not None and actor.in_flight.has_run(run):
                return True
        return False

    def attempts_of(self, run: Any) -> list[tuple[Work, int, float]]:
        found: list[tuple[Work, int, float]] = []
        for actor in list(self.replicas):
            env = actor.current
            if env is not None and env.run is run:
                found.append((env, env.attempt, env.started))
            if actor.in_flight is not None:
                found += actor.in_flight.attempts_of(run)
        return found

    def spent_on(self, env: Work) -> Usage | None:
        for actor in list(self.replicas):
            if actor.current is env:
                spent: Usage | None = actor.spent_so_far()
                return spent
        return None

    def release(self, run: Any, reason: str, *, abandon: bool) -> list[str]:
        stopped: list[str] = []
        with self._lock:
            for actor in list(self.replicas):
                visits = actor.in_flight
                if visits is not None:  # many visits in flight: the run's tasks are cancelled
                    stuck = visits.cancel_run(run, reason)
                    if stuck is not None and abandon and not actor.abandoned:
                        self._abandon(actor, stuck, reason)
                    if stuck is not None or visits.has_run(run):
                        stopped.append(self.name)
                    continue
                env = actor.current
                if env is None or env.run is not run:
                    continue
                if abandon:
                    self._abandon(actor, env, reason)
                elif actor.interruptible:
                    actor.interrupt(reason)  # it unwinds and serves on
                else:
                    continue
                stopped.append(self.name)
        return stopped

    def _abandon(self, actor: Any, env: Work, why: str) -> None:
        # called with the lock held. Abandoned first: interrupted work may return at once,
        # and a replica that found itself not abandoned would go back to the shared queue,
        # taking inputs (and a stop of stop()) meant for the fresh replica.
        actor.abandoned = True
        if actor.interruptible and actor.in_flight is None:  # many in flight: the stuck one is cancelled already
            actor.interrupt(why)
        pykka.ActorRegistry.unregister(actor.actor_ref)
        self._backend.abandoned.append(actor)
        self._abandoned = [a for a in self._abandoned if not a.actor_stopped.is_set()]
        self._abandoned.append(actor)
        if not actor.interruptible:
            log.warning(
                "node %r: abandoned attempt %d of run %s (%s); its thread %s runs on until the "
                "code returns, and a fresh replica takes new work",
                self.name, env.attempt, env.run_id, why, actor.thread.name,
            )
        if not self._backend.closing:
            self.replicas[actor.replica] = self._spawn(actor.replica)

    def actors(self) -> Iterable[Any]:
        return list(self.replicas)

    def close(self, reason: str) -> None:
        """Interrupt work in progress and ask every replica to stop.

        A replica takes one :data:`LEAVE` from the shared queue, whichever replica's ref
        it was told through, and stops; so one is told for every replica that may still
        take from the queue: the live ones, and the abandoned ones not stopped yet (one
        abandoned just as its attempt returned may have gone back to the queue; one still
        stuck stops on its own when it returns, leaving its LEAVE over, which is harmless).
        Each is told through a ref that is still alive: a replica that took one is gone."""
        with self._lock:
            live = [a for a in self.replicas if not a.abandoned and not a.actor_stopped.is_set()]
            gone = [a for a in self._abandoned if not a.actor_stopped.is_set()]
        for actor in live:
            if (actor.current is not None or actor.in_flight is not None) and actor.interruptible:
                actor.interrupt(reason)
        for actor in gone:
            if actor.in_flight is not None:  # replaced, its visits still finishing: cancel them
                actor.interrupt(reason)
        actors = live + gone
        tell_through_any([a.actor_ref for a in actors], LEAVE, len(actors))


def tell_through_any(refs: list[pykka.ActorRef[Any]], message: Any, count: int) -> int:
    """Tell ``message`` ``count`` times, each time through one of ``refs`` that is still
    alive (the refs of actors sharing one queue: any of them may take it). Returns how
    many were told: fewer when every actor had stopped."""
    refs = list(refs)
    told = 0
    while told < count and refs:
        try:
            refs[-1].tell(message)
        except pykka.ActorDeadError:
            refs.pop()  # stopped: tell through the next one
        else:
            told += 1
    return told


class ThreadsBackend:
    """Node replicas as Pykka actors on threads of this process (the default backend)."""

    name = "threads"

    def __init__(self, formation: str = "") -> None:
        self.formation = formation
        self.closing = False
        self.nodes: list[ThreadNode] = []
        self.spawned: list[Any] = []
        self.abandoned: list[Any] = []
        self._prune_at = 256
        self._spawn_lock = threading.Lock()

    def remember(self, actor: Any) -> None:
        """Keep ``actor`` for :meth:`stop` to join. Restarts add actors, so those that have
        ended are forgotten whenever the list has doubled since it was last pruned: the
        pruning costs O(1) per actor (amortised), however many nodes start."""
        with self._spawn_lock:  # restarts of different nodes may come at once
            spawned = self.spawned
            spawned.append(actor)
            if len(spawned) > self._prune_at:
                self.spawned = spawned = [a for a in spawned if a.thread.is_alive()]
                self._prune_at = max(256, 2 * len(spawned))

    def start_node(self, recipe: NodeRecipe, concurrency: int, observer: Any) -> ThreadNode:
        node = ThreadNode(self, recipe, concurrency, observer)
        self.nodes.append(node)
        return node

    def map_width(self) -> int | None:
        return None  # threads are cheap: the runtime's default (up to 100 items at once)

    def stop(self, grace: float, in_flight: Container[str] | None = None) -> None:
        self.closing = True
        for node in reversed(self.nodes):
            node.close("the formation is stopping")
        deadline = time.monotonic() + grace
        me = threading.current_thread()
        abandoned = set(map(id, self.abandoned))
        for actor in self.spawned:
            thread = getattr(actor, "thread", None)
            if thread is None or thread is me or id(actor) in abandoned:
                continue
            env = actor.current
            if in_flight is not None and env is not None and env.run_id not in in_flight:
                # its run ended before the stop (a failed run's sibling, a join="any" loser)
                log.info("formation %r: node %r is still working for run %s, which has ended; its thread %s is "
                         "left to finish on its own", self.formation, actor.name, env.run_id, thread.name)
                continue
            visits = actor.in_flight
            if in_flight is not None and visits is not None and visits.only_ended(in_flight):
                # an async replica whose cancelled visits of ended runs still clean up (a finally
                # that awaits): its loop gives them their time, the caller does not wait for it
                log.info("formation %r: node %r is still cleaning up visits of runs that have ended; its thread %s "
                         "is left to finish on its own", self.formation, actor.name, thread.name)
                continue
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                log.warning(
                    "formation %r: node %r is still busy %.1fs after stop; its thread %s is left "
                    "to finish on its own (it does not block interpreter exit)",
                    self.formation, actor.name, grace, thread.name,
                )
        self.spawned = [a for a in self.spawned if a.thread.is_alive()]
        self.abandoned = [a for a in self.abandoned if a.thread.is_alive()]
