"""A run's history: its node visits in the order they finished (``RunStore.history``),
read from the journal."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Literal

from ._records import RunJournal

__all__ = ["FAILURE_MARK", "Visit", "history"]

VisitStatus = Literal["succeeded", "failed", "skipped", "suspended"]

FAILURE_MARK = "node_failure"
"""The key of the progress value with which a run journals a visit that failed into its
node's error edges (before the visit's skip entry, whose reason says so): the formation
layer writes it, the history reads it."""


@dataclass(frozen=True)
class Visit:
    """One node visit of a run, as :meth:`RunStore.history` lists it.

    Attributes:
        node: the node.
        visit: the node's visit number (1 for its first).
        output: the visit's output (``succeeded``), its error (``failed``), the reason it
            was skipped (``skipped``), or the payload of the interrupt it waits at
            (``suspended``).
        status: ``succeeded`` (its output is journalled), ``failed`` (its retries were
            spent and its error edges took the failure: the output is the error, and the
            run went on from the handlers), ``skipped`` (its retries were spent,
            ``on_error="skip"``; or it asked a question that was withdrawn when its branch
            lost a ``join="any"``: the output is the reason) or ``suspended`` (at an
            interrupt not yet answered).
        started: when its input was ready: when the last visit of a predecessor before it
            was journalled (the run's creation for a source), or its first step inside the
            visit if earlier; None for entries of a store from before version 6, and for a
            source's visit a fork reused (it predates the fork's run). A fork's reused
            visits keep the times of the run they were reused from.
        finished: when the visit's output (or skip, or interrupt) was journalled.
    """

    node: str
    visit: int
    output: Any
    status: VisitStatus
    started: datetime.datetime | None
    finished: datetime.datetime | None


def _time(t: float | None) -> datetime.datetime | None:
    return None if t is None else datetime.datetime.fromtimestamp(t, datetime.UTC)


def history(journal: RunJournal) -> list[Visit]:
    """The visits of ``journal``'s run in the order they finished (see :class:`Visit`)."""
    preds: dict[str, set[str]] = {}
    for edge in journal.shape.edges:
        preds.setdefault(edge.target, set()).add(edge.source)
    created = journal.run.created.timestamp()
    last_done: dict[str, float | None] = {}  # node -> when its latest visit so far was journalled
    first_step: dict[tuple[str, int], float | None] = {}
    out: list[Visit] = []
    pending = -1  # the index of the unanswered last interrupt, if one
    if journal.pending_interrupt is not None:
        pending = max(i for i, e in enumerate(journal.entries) if e.kind == "interrupt")
    failed = {(e.node, e.visit) for e in journal.entries
              if e.kind == "progress" and e.item is None and isinstance(e.value, dict) and FAILURE_MARK in e.value}
    for i, e in enumerate(journal.entries):
        key = (e.node, e.visit)
        status: VisitStatus
        if e.kind == "visit":
            status = "succeeded"
        elif e.kind == "skip":
            status = "failed" if key in failed else "skipped"
        elif e.kind == "withdrawn":  # its question withdrawn: its branch lost a join="any"
            status = "skipped"
        elif i == pending:
            status = "suspended"
        else:  # a step inside a visit (progress, a fleet item, an answered interrupt)
            if e.kind not in ("answer", "input"):  # (an input is given before the visit: no step of it)
                first_step.setdefault(key, e.at)
            continue
        ready = [t for p in preds.get(e.node, ()) if (t := last_done.get(p)) is not None]
        # (a source's visit reused by a fork predates the fork's run: when it started is not known)
        started = max(ready) if ready else (created if e.at is not None and created <= e.at else None)
        step = first_step.get(key)
        if step is not None and (started is None or step < started):
            started = step
        out.append(Visit(e.node, e.visit, e.value, status, _time(started), _time(e.at)))
        if status != "suspended":
            last_done[e.node] = e.at
    return out
