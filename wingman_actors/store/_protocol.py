"""The interface a run store implements (SQLite today; a Postgres store would follow it).

The runtime talks to a store only through these calls; see :class:`~wingman_actors.store.RunStore`
for the semantics of each (write order, durability, errors).
"""

from __future__ import annotations

import datetime
from typing import Any, Protocol, runtime_checkable

from ._records import RunJournal, RunRecord, RunStatus, RunSummary
from ._shape import FormationShape

__all__ = ["JournalStore"]


@runtime_checkable
class JournalStore(Protocol):
    """A journal of runs: records, deltas, statuses, and the reads a resume needs.

    Guarantees every implementation keeps:

    * ``begin_run``, ``claim_run`` and ``answer`` are durable when they return.
    * The ``record_*`` calls, ``withdraw_interrupt`` and ``set_status`` may return before they are durable, but
      they become durable in call order: nothing is durable unless everything recorded
      before it (by any thread of this store) is.
    * Reads see every write made through this store before the read began.
    """

    def begin_run(self, formation: str, shape: FormationShape, input: Any, *, run_id: str | None = None,
                  source: str | None = None, parent: str | None = None) -> str: ...

    def record_visit(self, run_id: str, node: str, visit: int, output: Any) -> None: ...

    def record_item(self, run_id: str, node: str, visit: int, index: int, output: Any) -> None: ...

    def record_progress(self, run_id: str, node: str, visit: int, value: Any, *, item: int | None = None) -> None: ...

    def record_skip(self, run_id: str, node: str, visit: int, reason: str) -> None: ...

    def record_interrupt(self, run_id: str, node: str, visit: int, payload: Any, *,
                         item: int | None = None) -> None: ...

    def withdraw_interrupt(self, run_id: str, node: str, visit: int, reason: str, *,
                           item: int | None = None) -> None: ...

    def answer(self, run_id: str, answer: Any) -> None: ...

    def set_status(self, run_id: str, status: RunStatus, *, error: str | None = None,
                   wait: bool = False) -> None: ...

    def claim_run(self, run_id: str, shape: FormationShape | None = None, *,
                  formation: str | None = None, parent: str | None = None) -> RunJournal: ...

    def load(self, run_id: str) -> RunJournal: ...

    def get(self, run_id: str) -> RunRecord: ...

    def runs(self, status: RunStatus | None = None, *, nested: bool = False) -> list[RunSummary]: ...

    def prune(self, older_than: datetime.timedelta | float) -> int: ...

    def flush(self, run_id: str | None = None) -> None: ...

    def close(self) -> None: ...
