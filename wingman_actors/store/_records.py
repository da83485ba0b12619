"""What the run store gives back: run summaries and records, and a run's journal."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ._shape import FormationShape

__all__ = [
    "FINISHED",
    "RUN_STATUSES",
    "SERVER_SOURCE",
    "Interrupt",
    "JournalEntry",
    "RunJournal",
    "RunRecord",
    "RunStatus",
    "RunSummary",
]

RunStatus = Literal["running", "succeeded", "failed", "cancelled", "suspended", "expired", "interrupted"]
"""A run's status. ``running``: a live process owns it. ``suspended``: stopped at an
interrupt, waiting for an answer (until the store's ``suspend_ttl``, then ``expired``).
``interrupted``: its process died (or closed the store) while it was running."""

RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)

SERVER_SOURCE = "wingman-actors serve: formation "
"""How the HTTP server records where a run came from (then the formation's id): a run
resumed over ``POST /runs/{id}/resume``, not from a file."""

FINISHED: frozenset[RunStatus] = frozenset({"succeeded", "expired"})
"""Statuses a run is never resumed from."""


@dataclass(frozen=True)
class RunSummary:
    """One line of :meth:`RunStore.runs`.

    Attributes:
        id: the run id.
        formation: the formation's name.
        status: the run's status.
        created: when the run was accepted (UTC).
        updated: when its status last changed or it was last claimed (UTC).
        parent: for the inner run of a nested formation (journalled with its outer run,
            as ``"<outer run id>/<node>/<visit>"``), the outer run's id; None for a
            top-level run. :meth:`RunStore.runs` lists inner runs only with ``nested=True``.
    """

    id: str
    formation: str
    status: RunStatus
    created: datetime.datetime
    updated: datetime.datetime
    parent: str | None = None


@dataclass(frozen=True)
class Interrupt:
    """An interrupt raised in a run, and its answer once given.

    Attributes:
        node: the node of this run that interrupted; for a question asked inside a nested
            formation (or a map over one), that formation (or map) node, where ``resume``
            answers it: ``FormationResult.interrupt``, ``runs show`` and the HTTP API name the
            inner node by its path (``"sub/ask"``), and the inner run's own record
            (``runs(nested=True)``) names the inner node.
        visit: that node's visit number (1 for the first visit).
        item: the fleet or map item index, or None outside an item.
        payload: what ``interrupt(payload)`` was called with.
        answered: whether an answer was recorded.
        answer: the answer (None until answered).
        withdrawn: the question was withdrawn before the run suspended: its node was in a
            branch a ``join="any"`` fired without (another branch finished while the run
            waited for its work in flight), so the run went on and no answer is wanted.
    """

    node: str
    visit: int
    item: int | None
    payload: Any
    answered: bool = False
    answer: Any = None
    withdrawn: bool = False


@dataclass(frozen=True)
class RunRecord(RunSummary):
    """A run as :meth:`RunStore.get` returns it.

    Attributes:
        fingerprint: the fingerprint of the formation's shape when the run started.
        source: where the formation came from (e.g. its file), as given at begin_run;
            :data:`SERVER_SOURCE` and the formation's id for a run of the HTTP server.
        input: the run's input, as the same type.
        error: the error text of a failed run, or None.
        expires: when a suspended run expires (UTC), or None.
        interrupt: the pending (unanswered) interrupt, or None.
        cancel_requested: when a cancel of the running run was requested
            (``RunStore.request_cancel``) and its process has not acted on it yet (UTC);
            None otherwise.
    """

    fingerprint: str = ""
    source: str | None = None
    input: Any = None
    error: str | None = None
    expires: datetime.datetime | None = None
    interrupt: Interrupt | None = None
    cancel_requested: datetime.datetime | None = None


@dataclass(frozen=True)
class JournalEntry:
    """One delta of a run's journal, in write order.

    Attributes:
        kind: ``"visit"`` (a node visit finished), ``"item"`` (a fleet item finished),
            ``"progress"`` (a step inside an unfinished visit, e.g. an agent's messages),
            ``"skip"`` (the visit was skipped after its retries were spent, ``on_error="skip"``),
            ``"interrupt"``, ``"answer"``, ``"withdrawn"`` (the last interrupt's question
            was withdrawn: its branch lost a ``join="any"``; the value says why), or
            ``"input"`` (the input a visit not yet made runs with instead of what its
            predecessors deliver: a fork's ``input=``).
        node: the node.
        visit: the node's visit number.
        item: the fleet item index (items, and progress/interrupts inside an item).
        value: the output, progress value, skip reason, interrupt payload, answer or input.
        at: when it was recorded (seconds since the epoch; None for entries written
            before version 0.2 of the store kept it).
    """

    kind: Literal["visit", "item", "progress", "skip", "interrupt", "answer", "withdrawn", "input"]
    node: str
    visit: int
    item: int | None
    value: Any
    at: float | None = None


@dataclass(frozen=True)
class RunJournal:
    """Everything needed to resume a run, read in one call (:meth:`RunStore.load`).

    Attributes:
        run: the run record.
        shape: the formation's shape when the run started (compare with
            :meth:`FormationShape.diff`, or let :meth:`RunStore.claim_run` do it).
        entries: every journal entry in write order.
        visits: the outputs of the finished visits of each node by visit number, in
            visit order (``visits["b"][1]`` is visit 1's output).
        items: the outputs of finished fleet items, by ``(node, visit)`` then item index.
        progress: progress values by ``(node, visit, item)``, in write order.
        skipped: the skipped visits, ``(node, visit)`` → the reason given.
        interrupts: every interrupt in order, with its answer when given.
        notes: what the runtime journals about the run itself rather than a node (a
            progress value of node ``""``), by visit number, in write order: the run's
            breakpoints (visit 0) and its node traces when it ended (visit -1, what
            ``wingman-actors runs show`` prints). Not in ``entries`` nor ``progress``.
        inputs: the inputs given to visits (a fork's ``input=``), ``(node, visit)`` →
            the input: a resume runs that visit with it, whatever its predecessors deliver.
    """

    run: RunRecord
    shape: FormationShape
    entries: tuple[JournalEntry, ...]
    visits: Mapping[str, Mapping[int, Any]] = field(default_factory=dict)
    items: Mapping[tuple[str, int], Mapping[int, Any]] = field(default_factory=dict)
    progress: Mapping[tuple[str, int, int | None], list[Any]] = field(default_factory=dict)
    skipped: Mapping[tuple[str, int], Any] = field(default_factory=dict)
    interrupts: tuple[Interrupt, ...] = ()
    notes: Mapping[int, list[Any]] = field(default_factory=dict)
    inputs: Mapping[tuple[str, int], Any] = field(default_factory=dict)

    @property
    def pending_interrupt(self) -> Interrupt | None:
        """The last interrupt if it has no answer yet, else None."""
        if self.interrupts and not self.interrupts[-1].answered and not self.interrupts[-1].withdrawn:
            return self.interrupts[-1]
        return None

    def answers(self, node: str, visit: int, item: int | None = None) -> list[Any]:
        """The answers given to the interrupts of one visit (or fleet item), in order: the
        values its ``interrupt()`` calls return when it runs again."""
        return [i.answer for i in self.interrupts
                if i.answered and (i.node, i.visit, i.item) == (node, visit, item)]

    @classmethod
    def build(cls, run: RunRecord, shape: FormationShape, entries: tuple[JournalEntry, ...]) -> RunJournal:
        """Index ``entries`` into visits, items, progress, skips and interrupts."""
        visits: dict[str, dict[int, Any]] = {}
        items: dict[tuple[str, int], dict[int, Any]] = {}
        progress: dict[tuple[str, int, int | None], list[Any]] = {}
        skipped: dict[tuple[str, int], Any] = {}
        interrupts: list[Interrupt] = []
        notes: dict[int, list[Any]] = {}
        inputs: dict[tuple[str, int], Any] = {}
        kept: list[JournalEntry] = []
        for e in entries:
            if e.kind == "progress" and not e.node:
                notes.setdefault(e.visit, []).append(e.value)
                continue
            kept.append(e)
            if e.kind == "visit":
                visits.setdefault(e.node, {})[e.visit] = e.value
            elif e.kind == "item" and e.item is not None:
                items.setdefault((e.node, e.visit), {})[e.item] = e.value
            elif e.kind == "progress":
                progress.setdefault((e.node, e.visit, e.item), []).append(e.value)
            elif e.kind == "skip":
                skipped[(e.node, e.visit)] = e.value
            elif e.kind == "interrupt":
                interrupts.append(Interrupt(e.node, e.visit, e.item, e.value))
            elif e.kind == "answer" and interrupts and not interrupts[-1].answered:
                last = interrupts[-1]
                interrupts[-1] = Interrupt(last.node, last.visit, last.item, last.payload, True, e.value)
            elif e.kind == "withdrawn" and interrupts and not interrupts[-1].answered:
                last = interrupts[-1]
                interrupts[-1] = Interrupt(last.node, last.visit, last.item, last.payload, withdrawn=True)
            elif e.kind == "input":
                inputs[(e.node, e.visit)] = e.value
        ordered = {node: dict(sorted(outputs.items())) for node, outputs in visits.items()}
        return cls(run, shape, tuple(kept), ordered, items, progress, skipped, tuple(interrupts), notes, inputs)
