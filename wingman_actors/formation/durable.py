"""Durable runs: what a running formation with a store journals, and what a resume replays.

:class:`Journal` is the runtime's side of a :class:`~wingman_actors.store.RunStore`: one
per started formation with ``store=``. The router calls it at the points the store's
contract names (a run accepted, a visit or fleet item finished, a skip, an interrupt,
the end of a run). Without a store the router holds None and pays nothing.

:class:`Replay` is what a resumed run knows from its journal: the outputs of the visits
that finished (fed downstream instead of running the node again), the finished fleet
items, the skips, and the answers to interrupts.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..interrupts import VisitScope
from ..store import FormationShape, JournalStore, RunJournal, RunStore

__all__ = ["Journal", "Replay", "StoreArg", "open_store"]

StoreArg = JournalStore | str | os.PathLike[str]
"""What ``store=`` takes: a store, or the path of a SQLite file (a ``RunStore`` is opened)."""


def open_store(store: StoreArg) -> tuple[JournalStore, bool]:
    """The store for ``store=``, and whether the caller opened it (and must close it)."""
    if isinstance(store, str | os.PathLike):
        return RunStore(store), True
    if isinstance(store, JournalStore):
        return store, False
    raise TypeError(
        f"store must be a RunStore (wingman_actors.store.RunStore(path)) or the path of its SQLite file, "
        f"got {type(store).__name__}"
    )


@dataclass(frozen=True, slots=True)
class Replay:
    """What a resumed run already has (read from its journal once, at resume).

    Attributes:
        visits: finished visits' outputs, ``node -> {visit: output}``.
        items: finished fleet items, ``(node, visit) -> {index: output}``.
        skipped: skipped visits, ``(node, visit) -> reason``.
        journal: the whole journal (answers to interrupts, progress).
    """

    visits: Mapping[str, Mapping[int, Any]]
    items: Mapping[tuple[str, int], Mapping[int, Any]]
    skipped: Mapping[tuple[str, int], Any]
    journal: RunJournal

    @classmethod
    def of(cls, journal: RunJournal) -> Replay:
        return cls(journal.visits, journal.items, journal.skipped, journal)


class Journal:
    """The journalling side of one running formation.

    Args:
        store: where runs are journalled.
        owned: close the store when the formation stops (it was opened from a path).
        name: the formation's name.
        shape: ``FormationShape.of(formation.graph)``.
        source: where the formation came from (e.g. its file), recorded on each run.
    """

    def __init__(self, store: JournalStore, owned: bool, name: str, shape: FormationShape,
                 source: str | None = None) -> None:
        self.store = store
        self.owned = owned
        self.name = name
        self.shape = shape
        self.source = source

    def begin(self, input: Any, run_id: str | None) -> str:
        """Record a new run (durable on return) and give its id."""
        return self.store.begin_run(self.name, self.shape, input, run_id=run_id, source=self.source)

    def claim(self, run_id: str) -> RunJournal:
        """Take a run over for resuming (refuses another formation's shape)."""
        return self.store.claim_run(run_id, self.shape, formation=self.name)

    def scope(self, run_id: str, node: str, visit: int, replay: Replay | None, item: int | None = None) -> VisitScope:
        """The context ``interrupt()`` and agent sessions find while this visit (or this
        fleet item of it) runs."""
        progress = functools.partial(self.store.record_progress, run_id, node, visit, item=item)
        if replay is None:  # a new run (the common case): nothing journalled to replay
            return VisitScope(run_id, node, visit, (), progress, None, item)
        journal = replay.journal
        answers = journal.answers(node, visit, item)
        # An agent suspended in a tool call continues from its journalled model
        # responses. A visit that failed or crashed starts its session afresh (a
        # bad answer replayed would fail it again).
        replies: list[Any] = []
        if any((i.node, i.visit, i.item) == (node, visit, item) for i in journal.interrupts):
            replies = list(journal.progress.get((node, visit, item), ()))
        return VisitScope(run_id, node, visit, answers, progress, replies, item)

    def close(self) -> None:
        if self.owned:
            self.store.close()
