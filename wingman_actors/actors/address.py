"""A node's address: one or more actor replicas behind one name.

Senders ``tell`` the address; it forwards to the replica with the fewest envelopes in
flight, the least recently assigned among equals (``concurrency=k`` puts k replicas
behind one address). The supervisor swaps a
failed replica for a fresh actor without senders noticing.
"""

from __future__ import annotations

import threading
from typing import Any

import pykka

from .envelope import Envelope

__all__ = ["NodeAddress", "start_actor"]


def start_actor(cls: type[pykka.ThreadingActor], *args: Any, **kwargs: Any) -> Any:
    """Start an actor and return the actor object (its ref is ``.actor_ref``)."""
    ref = cls.start(*args, **kwargs)
    actor = ref._actor_weakref()
    if actor is None:  # pragma: no cover - the ref was just made from a live actor
        raise RuntimeError(f"actor {cls.__name__} vanished while starting")
    return actor


class NodeAddress:
    """Replicas of one node, with least-in-flight routing."""

    __slots__ = ("_lock", "_tick", "actors", "last", "load", "name", "refs")

    def __init__(self, name: str, actors: list[Any]) -> None:
        self.name = name
        self.actors = actors
        self.refs = [a.actor_ref for a in actors]
        self.load = [0] * len(actors)
        self.last = [0] * len(actors)
        self._tick = 0
        self._lock = threading.Lock()

    def tell(self, env: Envelope) -> None:
        """Deliver a work envelope to the least busy replica."""
        for _ in range(100):
            if len(self.actors) == 1:
                env.replica = 0
                actor = self.actors[0]
            else:
                with self._lock:
                    # Fewest envelopes in flight; among equals, the replica assigned to
                    # longest ago: it is the likeliest to finish first. (Plain least-loaded
                    # routing piles a second envelope on a replica that just started while
                    # a busy one is about to free up.)
                    load, last = self.load, self.last
                    i = 0
                    for j in range(1, len(load)):
                        if load[j] < load[i] or (load[j] == load[i] and last[j] < last[i]):
                            i = j
                    load[i] += 1
                    self._tick += 1
                    last[i] = self._tick
                    actor = self.actors[i]
                env.replica = i
            if actor.deliver(env):
                return
            # The supervisor swapped this replica a moment ago: read the new actor.
            self.done(env.replica)
        raise pykka.ActorDeadError(f"node {self.name!r} has no live actor to take the envelope")

    def done(self, replica: int) -> None:
        """A replica finished (or gave up) one envelope."""
        if len(self.refs) > 1:
            with self._lock:
                if self.load[replica] > 0:
                    self.load[replica] -= 1

    def swap(self, replica: int, actor: Any) -> Any:
        """Put ``actor`` in place of replica ``replica``; returns the old actor."""
        with self._lock:
            old = self.actors[replica]
            self.actors[replica] = actor
            self.refs[replica] = actor.actor_ref
        return old

    def drain(self, actor: Any) -> list[Envelope]:
        """Take the envelopes still waiting in ``actor``'s mailbox (to hand to a fresh one)."""
        taken: list[Envelope] = []
        inbox = actor.actor_inbox
        while True:
            try:
                item = inbox.get_nowait()
            except Exception:  # queue.Empty
                break
            message = getattr(item, "message", item)
            if type(message) is Envelope:
                taken.append(message)
            else:
                inbox.put(item)  # not ours (e.g. a stop request): leave it
                break
        with self._lock:
            for env in taken:
                if self.load[env.replica] > 0:
                    self.load[env.replica] -= 1
        return taken
