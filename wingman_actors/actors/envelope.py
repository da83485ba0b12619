"""Envelopes: the messages node actors exchange.

Every envelope has the contract fields ``id``, ``run_id``, ``sender``, ``type``,
``payload`` and ``timestamp``. The remaining fields are routing details the runtime uses
(which node it is for, which attempt, the run it belongs to); they are internal.
"""

from __future__ import annotations

import enum
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Envelope", "EnvelopeType", "new_envelope"]

_ids = itertools.count(1)


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


@dataclass(slots=True, eq=False)
class Envelope:
    """One message between actors.

    Attributes:
        id: unique within the process.
        run_id: the formation run it belongs to ("" outside formations).
        sender: the name of the node (or "input") that sent it.
        type: see :class:`EnvelopeType`.
        payload: the data (or the exception, for ``failure``).
        timestamp: wall-clock seconds (``time.time()``) when it was made.
    """

    id: int
    run_id: str
    sender: str
    type: str
    payload: Any
    timestamp: float
    target: str = ""
    attempt: int = 1
    run: Any = field(default=None, repr=False)
    cause: Envelope | None = field(default=None, repr=False)
    usage: Any = None
    started: float = 0.0
    finished: float = 0.0
    replica: int = 0
    settled: bool = False
    memo: dict[int, Any] | None = field(default=None, repr=False)
    timer: Any = field(default=None, repr=False)

    # A node's mailbox takes our envelope as it is, without Pykka's wrapper: the actor
    # loop reads ``.message`` and ``.reply_to`` from what it dequeues.
    @property
    def message(self) -> Envelope:
        return self

    @property
    def reply_to(self) -> None:
        return None


def new_envelope(
    type: str, payload: Any, *, run_id: str = "", sender: str = "", target: str = "", run: Any = None
) -> Envelope:
    """Build an envelope with a fresh id and the current timestamp."""
    return Envelope(next(_ids), run_id, sender, type, payload, time.time(), target=target, run=run)
