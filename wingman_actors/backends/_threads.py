"""The threads backend: every node replica is a Pykka actor on its own thread.

A node's replicas share one ``queue.SimpleQueue`` as their Pykka inbox (a C-level queue:
one put per hop). A replica that fails retires itself and the supervisor asks for a fresh
one (:meth:`ThreadNode.restart`); a replica stuck past a time limit or on a cancelled run
is abandoned: a fresh replica takes its place at once, and the old thread, a daemon,
ends whenever its code returns without blocking ``stop()`` or interpreter exit.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

import pykka

from ..actors._address import start_actor
from ..actors._base import STOP
from ..actors._envelope import Work
from ._base import NodeRecipe

__all__ = ["ThreadNode", "ThreadsBackend"]

log = logging.getLogger("wingman_actors.backends")


class ThreadNode:
    """One node's replicas (Pykka actors) and the queue they share."""

    __slots__ = ("_backend", "_lock", "_observer", "_recipe", "inbox", "name", "replicas", "tell")

    def __init__(self, backend: ThreadsBackend, recipe: NodeRecipe, concurrency: int, observer: Any) -> None:
        self._backend = backend
        self._recipe = recipe
        self._observer = observer
        self._lock = threading.Lock()
        self.name = recipe.name
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.tell: Callable[[Work], None] = self.inbox.put  # the hot path: one put
        self.replicas: list[Any] = [self._spawn(i) for i in range(concurrency)]

    def _spawn(self, replica: int) -> Any:
        r = self._recipe
        actor = start_actor(r.cls, *r.args, observer=self._observer, inbox=self.inbox, replica=replica, **r.kwargs)
        self._backend.remember(actor)
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
                return False
            self._abandon(actor, env, why)
        return True

    def working_on(self, run: Any) -> bool:
        for actor in self.replicas:
            env = actor.current
            if env is not None and env.run is run:
                return True
        return False

    def release(self, run: Any, reason: str, *, abandon: bool) -> list[str]:
        stopped: list[str] = []
        with self._lock:
            for actor in list(self.replicas):
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
        # taking inputs (and the STOP of stop()) meant for the fresh replica.
        actor.abandoned = True
        if actor.interruptible:
            actor.interrupt(why)
        pykka.ActorRegistry.unregister(actor.actor_ref)
        self._backend.abandoned.append(actor)
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
        """Interrupt work in progress and ask every live replica to stop."""
        with self._lock:
            live = [a for a in self.replicas if not a.abandoned and not a.actor_stopped.is_set()]
        for actor in live:
            if actor.current is not None and actor.interruptible:
                actor.interrupt(reason)
        for _ in live:
            self.inbox.put(STOP)


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

    def stop(self, grace: float) -> None:
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
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                log.warning(
                    "formation %r: node %r is still busy %.1fs after stop; its thread %s is left "
                    "to finish on its own (it does not block interpreter exit)",
                    self.formation, actor.name, grace, thread.name,
                )
        self.spawned = [a for a in self.spawned if a.thread.is_alive()]
        self.abandoned = [a for a in self.abandoned if a.thread.is_alive()]
