"""A run's history: its node visits in the order they finished (``RunStore.history``),
read from the journal."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any, Literal

from ._records import RunJournal

__all__ = ["FAILURE_MARK", "RUN_FAILURE", "Visit", "history"]

VisitStatus = Literal["succeeded", "failed", "skipped", "suspended"]

FAILURE_MARK = "node_failure"
"""The key of the progress value with which a run journals a visit that failed into its
node's error edges (before the visit's skip entry, whose reason says so): the formation
layer writes it, the history reads it."""

RUN_FAILURE = "failed_run"
"""The key, beside :data:`FAILURE_MARK`, of the progress value with which a run journals
the visit that failed the run (its retries spent, no error edge or skip to take it): what
the history shows as its output (``"failed after 2 attempt(s), which failed the run:
ValueError: ..."``). No skip follows it: a resume runs the visit again (under the same
visit number)."""


@dataclass(frozen=True)
class Visit:
    """One node visit of a run, as :meth:`RunStore.history` lists it.

    Attributes:
        node: the node.
        visit: the node's visit number (1 for its first).
        output: the visit's output (``succeeded``), why it failed (``failed``: ``"failed
            after 2 attempt(s) into its error edges: ValueError: ..."``, or ``..., which
            failed the run: ...``), the reason it was skipped (``skipped``), or the payload
            of the interrupt it waits at (``suspended``).
        status: ``succeeded`` (its output is journalled), ``failed`` (its retries were
            spent, and either its error edges took the failure and the run went on from
            the handlers, or it failed the run: a resume runs it again, and the history
            lists that visit after this one), ``skipped`` (its retries were spent,
            ``on_error="skip"``; or it asked a question that was withdrawn when its branch
            lost a ``join="any"``: the output is the reason) or ``suspended`` (at an
            interrupt not yet answered).
        started: when its input was ready: when the last visit of a predecessor before it
            was journalled (the run's creation for a source), or its first step inside the
            visit if earlier; None for entries of a store from before version 6, and for a
            source's visit a fork reused (it predates the fork's run). A fork's reused
            visits keep the times of the run they were reused from. A visit a resume runs
            again after it failed the run started no earlier than that failure.
        finished: when the visit's output (or skip, failure, or interrupt) was journalled.
        error: the node's error (``"ValueError: ..."``) for a visit that failed (and one
            skipped after its retries, ``on_error="skip"``); None for the others.
        attempts: how many attempts a ``failed`` visit made (its retries and the first);
            None for the others.
    """

    node: str
    visit: int
    output: Any
    status: VisitStatus
    started: datetime.datetime | None
    finished: datetime.datetime | None
    error: str | None = None
    attempts: int | None = None


def _time(t: float | None) -> datetime.datetime | None:
    return None if t is None else datetime.datetime.fromtimestamp(t, datetime.UTC)


def _failure(value: Any) -> dict[str, Any] | None:
    """``value`` if it is a journalled failure (see :data:`FAILURE_MARK`), else None."""
    return value if isinstance(value, dict) and FAILURE_MARK in value else None


def _error(record: dict[str, Any]) -> str:
    """The node's error as a failure ``record`` has it: ``"Type: message"`` (the type alone
    without a message, as :func:`~wingman_actors.errors.error_text` names it)."""
    name = str(record[FAILURE_MARK]).partition(":")[2].rpartition(".")[2]
    message = record.get("message")
    return f"{name}: {message}" if message else name


def _attempts(record: dict[str, Any]) -> int | None:
    attempts = record.get("attempts")
    return attempts if isinstance(attempts, int) else None


def history(journal: RunJournal) -> list[Visit]:
    """The visits of ``journal``'s run in the order they finished (see :class:`Visit`)."""
    preds: dict[str, set[str]] = {}
    for edge in journal.shape.edges:
        preds.setdefault(edge.target, set()).add(edge.source)
    created = journal.run.created.timestamp()
    last_done: dict[str, float | None] = {}  # node -> when its latest visit so far was journalled
    first_step: dict[tuple[str, int], float | None] = {}
    failed_at: dict[tuple[str, int], float | None] = {}  # visits that failed the run -> when
    out: list[Visit] = []
    pending = -1  # the index of the unanswered last interrupt, if one
    if journal.pending_interrupt is not None:
        pending = max(i for i, e in enumerate(journal.entries) if e.kind == "interrupt")
    records: dict[tuple[str, int], dict[str, Any]] = {}  # failures into error edges (a skip follows)
    for i, e in enumerate(journal.entries):
        key = (e.node, e.visit)
        status: VisitStatus
        error: str | None = None
        attempts: int | None = None
        output = e.value
        record = _failure(e.value) if e.kind == "progress" and e.item is None else None
        if record is not None and RUN_FAILURE in record:  # the visit failed the run
            status, output, error, attempts = "failed", record[RUN_FAILURE], _error(record), _attempts(record)
        elif e.kind == "visit":
            status = "succeeded"
        elif e.kind == "skip":
            record = records.pop(key, None)
            status = "failed" if record is not None else "skipped"
            error = str(e.value) if record is None else _error(record)
            attempts = None if record is None else _attempts(record)
        elif e.kind == "withdrawn":  # its question withdrawn: its branch lost a join="any"
            status = "skipped"
        elif i == pending:
            status = "suspended"
        else:  # a step inside a visit (progress, a fleet item, an answered interrupt)
            if record is not None:
                records[key] = record
            if e.kind not in ("answer", "input"):  # (an input is given before the visit: no step of it)
                first_step.setdefault(key, e.at)
            continue
        ready = [t for p in preds.get(e.node, ()) if (t := last_done.get(p)) is not None]
        # (a source's visit reused by a fork predates the fork's run: when it started is not known)
        started = max(ready) if ready else (created if e.at is not None and created <= e.at else None)
        # (the steps of a visit that failed the run are not those of the one a resume runs again)
        step = first_step.pop(key, None) if e.kind == "progress" else first_step.get(key)
        if step is not None and (started is None or step < started):
            started = step
        again = failed_at.pop(key, None)  # run again (by a resume) after it failed the run: not before that
        if again is not None and started is not None and started < again:
            started = again
        out.append(Visit(e.node, e.visit, output, status, _time(started), _time(e.at), error, attempts))
        if e.kind == "progress":
            failed_at[key] = e.at  # its successors have nothing from it
        elif status != "suspended":
            last_done[e.node] = e.at
    return out
