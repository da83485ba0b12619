"""The traces of an inner run a resumed outer run took from its journal instead of running
it again: a formation node's visit, or an item of a map over a formation.

Such a run ran before the resume, in this process or another, so what the outer run's
traces show of it comes from its journal: its nodes' outputs by visit, and the traces it
journalled when it last ended (statuses, attempts, times, tokens). :func:`inner_traces`
builds them from a loaded journal; a :class:`JournalledItem` (one per map item) loads
its journal only when its traces are first read, and keeps them (a resumed run's end
reads them, to journal its own traces, while the store is still open).

Only a resumed (or forked) run reaches this module.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..core import Usage
from ._result import MapItems, NodeStatus, NodeTrace
from ._trace_journal import journalled_traces

if TYPE_CHECKING:
    from ..store import JournalStore, RunJournal

__all__ = ["JournalledItem", "inner_traces", "keep_journalled_items"]


def inner_traces(journal: RunJournal, order: Sequence[str]) -> dict[str, NodeTrace]:
    """The traces of the inner run ``journal`` of a formation whose nodes are ``order``,
    by inner node name (not yet by path: see ``nested_traces``)."""
    ended = journalled_traces(journal)
    traces: dict[str, NodeTrace] = {}
    for name in order:
        done = journal.visits.get(name, {})
        outputs = [done[v] for v in sorted(done)]
        t = ended.get(name, {})
        traces[name] = NodeTrace(
            name, status=NodeStatus(t.get("status") or ("succeeded" if outputs else "skipped")),
            attempts=t.get("attempts") or int(bool(outputs)), visits=max(len(outputs), t.get("visits") or 0),
            started_at=t.get("started_at"), finished_at=t.get("finished_at"), duration_s=t.get("duration_s") or 0.0,
            usage=Usage(input_tokens=t.get("input_tokens") or 0, output_tokens=t.get("output_tokens") or 0),
            error=t.get("error"), output=outputs[-1] if outputs else None, outputs=outputs)
    return traces


class JournalledItem:
    """The inner run of a map item a resumed run took from its journal (``run_id``, in
    ``store``), standing in for its result in :class:`~._result.MapItems`: ``nodes`` are
    its inner traces, loaded on first read and kept (no traces when the store has no such
    run: an item journalled before its inner run was, as a fork's replaced output)."""

    __slots__ = ("_nodes", "order", "run_id", "store")

    def __init__(self, store: JournalStore, run_id: str, order: Sequence[str]) -> None:
        self.store = store
        self.run_id = run_id
        self.order = order
        self._nodes: dict[str, NodeTrace] | None = None

    @property
    def nodes(self) -> dict[str, NodeTrace]:
        if self._nodes is None:
            from ..store import UnknownRunError  # loaded with the store (a resume has it loaded already)

            try:
                journal = self.store.load(self.run_id)
            except UnknownRunError:
                self._nodes = {}
            else:
                self._nodes = inner_traces(journal, self.order)
        return self._nodes

    def __repr__(self) -> str:
        return f"JournalledItem({self.run_id!r})"


def keep_journalled_items(run: Any, node: str, store: JournalStore, visit: int, items: Iterable[int],
                          order: Sequence[str]) -> None:
    """Keep, for the traces of ``run`` (a ``RunState``), a :class:`JournalledItem` for each
    of ``items`` of visit ``visit`` of map node ``node`` (a map over a formation whose
    nodes are ``order``) that has no inner run kept yet: items a resumed run took from
    its journal. Item ``i``'s inner run is ``"<run id>/<node>/<visit>/<i>"``."""
    prefix = f"{run.id}/{node}/{visit}"
    nested = run.own("nested")
    with run.lock:
        kept = nested.get(node)
        if not isinstance(kept, MapItems):
            kept = nested[node] = MapItems()
        for i in items:
            if (visit, i) not in kept.runs:
                kept.runs[(visit, i)] = JournalledItem(store, f"{prefix}/{i}", order)
