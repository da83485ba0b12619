"""The backend seam: where the node actors of a running formation live.

The runtime (routing, supervision, the public handle) talks to node replicas only through
:class:`Backend` and :class:`NodeGroup`; a backend decides where replicas run (threads in
this process today; Ray actors later) and how work reaches them. A node's replicas share
one queue of work: an idle replica pulls the next input, so a replica stuck in user code
holds only the input it is working on.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..actors._envelope import Work
from ..core import Usage

__all__ = ["Backend", "NodeGroup", "NodeRecipe"]


@dataclass(frozen=True, slots=True)
class NodeRecipe:
    """How to build one replica of a node actor: ``cls(*args, **kwargs)``; the backend
    adds the observer (the router, or a proxy of it where replicas live elsewhere), where
    the replica takes its work from, and its replica index. Everything in it is a plain
    declaration (function, agent, options), so another backend can ship it to where its
    replicas live.

    Attributes:
        name: the node's name.
        cls: the node actor class (a :class:`~wingman_actors.actors._nodes.NodeActor`).
        args: positional constructor arguments.
        kwargs: keyword constructor arguments.
    """

    name: str
    cls: type[Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


class NodeGroup(Protocol):
    """The replicas of one node and the queue they share."""

    name: str

    def tell(self, env: Work) -> None:
        """Queue a work envelope for the next idle replica."""
        ...

    def restart(self, replica: int, retired: Any) -> None:
        """Start a fresh actor in place of ``retired`` (replica number ``replica``), which
        retired after a failure; nothing when it was replaced already."""
        ...

    def abandon(self, env: Work, why: str) -> bool:
        """Give up on the attempt of ``env`` if a replica is still working on it: an
        interruptible replica is interrupted, and a fresh replica takes new work at once
        (the old one ends when its code returns). False when no replica was on it."""
        ...

    def working_on(self, run: Any) -> bool:
        """Whether a replica is working on an envelope of ``run`` now."""
        ...

    def attempts_of(self, run: Any) -> list[tuple[Work, int, float]]:
        """The attempts of ``run`` a replica is working on now: the work, which attempt,
        and when it started (``perf_counter``; 0.0 when unknown)."""
        ...

    def spent_on(self, env: Work) -> Usage | None:
        """What the attempt of ``env`` in progress has spent on model calls so far (an
        agent's session), or None when no replica is on it or it does not keep count.
        Read when the runtime cuts the attempt (a timeout, the run's end), before it is
        released."""
        ...

    def release(self, run: Any, reason: str, *, abandon: bool) -> list[str]:
        """Stop the attempts of ``run`` in progress: interrupt interruptible replicas and,
        with ``abandon``, give up on every attempt (as :meth:`abandon`). Returns the node
        names it stopped."""
        ...

    def actors(self) -> Iterable[Any]:
        """The replicas currently serving."""
        ...


class Backend(Protocol):
    """Where node actors live: start node groups, stop them all."""

    name: str

    def start_node(self, recipe: NodeRecipe, concurrency: int, observer: Any) -> NodeGroup:
        """Start ``concurrency`` replicas of a node from ``recipe``, reporting to
        ``observer`` (a :class:`~wingman_actors.actors._base.NodeObserver`)."""
        ...

    def map_width(self) -> int | None:
        """How many items a map over a formation runs at once when its ``max_workers`` is
        0 (each inner node gets that many replicas), or None for the runtime's default
        (up to 100, as a fleet)."""
        ...

    def stop(self, grace: float, in_flight: Container[str] | None = None) -> None:
        """Stop every replica; wait up to ``grace`` seconds for those still working, then
        leave them (logged) on threads that never block interpreter exit. With
        ``in_flight`` (the ids of the runs still going when the stop began), a replica
        still working for a run that had ended before is not waited for: nothing wants
        its result, so it is left to finish on its own at once (logged)."""
        ...
