"""Envelopes: the messages node actors exchange, and the bookkeeping of delivering them.

An :class:`Envelope` is immutable: the contract fields ``id``, ``run_id``, ``sender``,
``type``, ``payload`` and ``timestamp``, where it is going (``target``, and the ``run``
it belongs to), and, on a node's reply, the facts of the attempt that made it. What
changes while a node works on its input — which attempt this is, when it started,
whether a timer or the node settled it first, which replica has it, a fleet's finished
items — lives in a :class:`Work`, which carries the work envelope's fields itself and is
mutated under the run's lock. A node's queue carries ``Work``; a standalone actor told an
``Envelope`` makes one of it.
"""

from __future__ import annotations

import enum
import itertools
import time
from typing import Any, NamedTuple

__all__ = ["Envelope", "EnvelopeType", "HeldItem", "Work", "held_errors", "new_envelope", "next_id"]

_ids = itertools.count(1)
next_id = _ids.__next__
"""A fresh envelope id (unique within the process)."""


class EnvelopeType(enum.StrEnum):
    """What an envelope carries.

    * ``work``: input for a node to process.
    * ``result``: a node's output.
    * ``failure``: a node's error (the payload is the exception).
    * ``skip``: a node was skipped (no incoming edge fired, or ``on_error="skip"``).
    """

    WORK = "work"
    RESULT = "result"
    FAILURE = "failure"
    SKIP = "skip"


class Envelope(NamedTuple):
    """One message between actors (immutable; a tuple, so cheap to make on every hop).

    Attributes:
        id: unique within the process.
        run_id: the formation run it belongs to ("" outside formations).
        sender: the name of the node (or "input") that sent it.
        type: see :class:`EnvelopeType`.
        payload: the data (or the exception, for ``failure``).
        timestamp: wall-clock seconds (``time.time()``) when it was made.
        target: the node it is for.
        run: the run's bookkeeping (internal; None outside formations).
        attempt: on a reply, the attempt that made it (1-based).
        cause: on a reply, the work envelope it answers.
        usage: on a reply, the tokens the attempt used.
        started: on a reply, ``perf_counter`` when the attempt began.
        finished: on a reply, ``perf_counter`` when it ended.
        replica: on a reply, the replica that ran it.
    """

    id: int
    run_id: str
    sender: str
    type: str
    payload: Any
    timestamp: float
    target: str = ""
    run: Any = None
    attempt: int = 1
    cause: Any = None
    usage: Any = None
    started: float = 0.0
    finished: float = 0.0
    replica: int = 0


class Work:
    """One delivery of work to a node: the message (the fields of a ``work`` envelope)
    and its per-attempt bookkeeping, in one object (a queued visit is one object for the
    collector to count, not a wrapper around an envelope).

    Attributes:
        id, run_id, sender, payload, timestamp, target, run: as on :class:`Envelope`
            (``type`` is always ``work``).
        attempt: the attempt in progress (1-based); the supervisor bumps it on a retry.
        started: ``perf_counter`` when the current attempt began (0 before).
        settled: whether the attempt's outcome was claimed (by the node or its timer).
        timer: the attempt's timeout timer, if its node has a ``timeout``.
        replica: the replica working on it.
        memo: a fleet or map node's finished items by index, kept across retries; an item
            whose error a retry would not help while others' would is held there as a
            :class:`HeldItem` (the retry reruns only the others, and fails with its error too).
        visit: the node's visit number in its run (1 unless a loop visits it again).
        scope: the durable-run context of the work (journalled runs only; None otherwise).
        tag: in a formation with a ``join="any"`` in a loop, ``(join, k)`` when the work
            descends from that join's output of its round ``k`` (carried from node to node:
            formation/_join.py's ``RaceJoin``); None otherwise.
    """

    __slots__ = ("_envelope", "attempt", "id", "memo", "payload", "replica", "run", "run_id", "scope", "sender",
                 "settled", "started", "tag", "target", "timer", "timestamp", "visit")

    type = EnvelopeType.WORK
    cause = None
    """Always None: work answers nothing (a reply's ``cause`` is its work envelope)."""

    def __init__(
        self, id: int, run_id: str, sender: str, payload: Any, timestamp: float, target: str = "",
        run: Any = None, visit: int = 1, tag: tuple[str, int] | None = None,
    ) -> None:
        self.id = id
        self.run_id = run_id
        self.sender = sender
        self.payload = payload
        self.timestamp = timestamp
        self.target = target
        self.run = run
        self.visit = visit
        self.tag = tag
        self.attempt = 1
        self.started = 0.0
        self.settled = False
        self.timer: Any = None
        self.replica = 0
        self.memo: dict[int, Any] | None = None
        self.scope: Any = None
        self._envelope: Envelope | None = None

    @classmethod
    def of(cls, envelope: Envelope, visit: int = 1) -> Work:
        """The delivery of a ``work`` envelope (told to a standalone actor)."""
        work = cls(envelope.id, envelope.run_id, envelope.sender, envelope.payload, envelope.timestamp,
                   envelope.target, envelope.run, visit)
        work._envelope = envelope
        return work

    @property
    def envelope(self) -> Envelope:
        """The work as an :class:`Envelope` (the one told, for a standalone actor)."""
        env = self._envelope
        if env is None:
            env = self._envelope = Envelope(self.id, self.run_id, self.sender, EnvelopeType.WORK, self.payload,
                                            self.timestamp, self.target, self.run)
        return env

    def __repr__(self) -> str:
        return f"Work({self.target!r}, run_id={self.run_id!r}, attempt={self.attempt})"


def new_envelope(
    type: str, payload: Any, *, run_id: str = "", sender: str = "", target: str = "", run: Any = None
) -> Envelope:
    """Build an envelope with a fresh id and the current timestamp."""
    return Envelope(next_id(), run_id, sender, type, payload, time.time(), target=target, run=run)


class HeldItem:
    """A fleet or map item's error that a retry of its node would not help (not
    ``retryable``, or not named by the node's ``retry_on``), kept in :attr:`Work.memo` while
    a retry reruns the items whose errors might go away: the item is not run again, and the
    node fails with this error among the others' (see
    :func:`~wingman_actors.formation._supervision.held_items`)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __reduce__(self) -> tuple[Any, ...]:
        from ..errors import shippable_error  # the memo goes to a Ray actor with a fleet's or map's call

        return (HeldItem, (shippable_error(self.error),))


def held_errors(memo: dict[int, Any] | None) -> dict[int, BaseException]:
    """The errors of the items ``memo`` holds (:class:`HeldItem`), by index; read when an
    attempt starts (the memo is empty on a first attempt: nothing to scan)."""
    if not memo:
        return {}
    return {i: m.error for i, m in memo.items() if type(m) is HeldItem}
