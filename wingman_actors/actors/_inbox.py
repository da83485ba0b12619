"""A node actor's inbox: its own queue, or its lane of the queue its node's replicas share.

Pykka lets an implementor of an actor type choose the inbox (``_create_actor_inbox``:
an object with ``put``, ``get`` and ``empty``). Node actors take a :class:`Lane`:

* alone, a lane is a ``queue.SimpleQueue`` (a C-level queue: a put or get costs a
  fraction of ``queue.Queue``'s Python code);
* as one of a node's replicas, every replica's lane puts to and gets from the node's one
  queue (:meth:`Lane.share`), so an idle replica pulls the next input and a replica stuck
  in user code holds only the input it works on. Whichever replica's ref a message is
  told through, any replica may take it: a ``ref.stop()`` stops one replica of the node.
  A shared lane is ``empty()`` to its own replica, always: Pykka drains a stopped actor's
  inbox (answering what waits with ``ActorDeadError``), and what waits in the node's
  queue belongs to the replicas that stay.
* a replica that must stop before the next input (it failed and the supervisor starts a
  fresh one, or it was abandoned in stuck code) cannot queue its own stop behind the
  inputs. So its stop request is made at birth (``Actor.stop()``, Pykka's public call:
  one told message, no reply future) and held in the lane (:meth:`Lane.hold_stop`);
  :meth:`Lane.release_stop` hands it to the replica's next ``get()``, and Pykka stops
  the actor as for any stop.

``put`` and ``get`` are the queue's own C methods (no Python frame on a hop); releasing
the held stop swaps ``get`` for one call. ``tests/actors/test_pykka_hooks.py`` fails if
Pykka stops reading an actor's inbox the way this relies on.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from typing import Any

import pykka

__all__ = ["Lane"]


class Lane:
    """One actor's inbox (see the module docstring)."""

    __slots__ = ("_held", "_queue", "get", "put", "shared")

    def __init__(self) -> None:
        q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._queue = q
        self.put: Callable[[Any], None] = q.put
        self.get: Callable[[], Any] = q.get
        self._held: Any = None
        self.shared = False

    def share(self, node_queue: queue.SimpleQueue[Any]) -> None:
        """Make this lane one of those of ``node_queue``, the queue a node's replicas share
        (before the actor starts)."""
        self._queue = node_queue
        self.put = node_queue.put
        self.get = node_queue.get
        self.shared = True

    def empty(self) -> bool:
        """Whether nothing waits for this actor (a shared lane: nothing of its own)."""
        return self.shared or self._queue.empty()

    def hold_stop(self, actor: pykka.Actor) -> None:
        """Ask ``actor`` (this lane's) to stop, and hold that request here until
        :meth:`release_stop` (call before the actor starts: nothing else is told it
        meanwhile). ``Actor.stop()`` tells the request (``ref.stop(block=False)`` would
        also make two reply futures that nobody reads)."""
        put = self.put
        self.put = self._hold
        try:
            actor.stop()
        finally:
            self.put = put

    @property
    def holds_stop(self) -> bool:
        """Whether the stop request of :meth:`hold_stop` is still held: the actor did not
        retire (a stopped actor whose lane holds it was stopped by someone else)."""
        return self._held is not None

    def _hold(self, envelope: Any) -> None:
        self._held = envelope

    def release_stop(self) -> bool:
        """Make the held stop request the next thing this lane's actor gets (from the
        actor's own thread). False when none is held."""
        if self._held is None:
            return False
        self.get = self._get_held
        return True

    def _get_held(self) -> Any:
        held, self._held = self._held, None
        self.get = self._queue.get
        return held
