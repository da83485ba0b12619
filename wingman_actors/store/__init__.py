"""The run journal: durable runs, resume and interrupts (SQLite, WAL).

``RunStore(path)`` records each run (formation, shape fingerprint, source, input, status)
and a journal of deltas: each finished node visit's output, each finished fleet item's
output, progress inside a visit, interrupts and their answers. See :class:`RunStore` for
write order and durability, and ``_codec`` for how values are stored (and why a store
refuses pickle unless told otherwise).

How a runtime uses it (the calls, and when):

* once per formation: ``shape = FormationShape.of(formation.graph)``; open the store
  (``RunStore(path)``, closed when the formation stops) or use the one given.
* ``submit(input)``: ``run_id = store.begin_run(name, shape, input, run_id=..., source=...)``
  before returning the future: the run is durable when it returns.
* a node visit finished: ``store.record_visit(run_id, node, visit, output)`` *before* its
  output is sent downstream (so nothing downstream is journalled without it). A fleet
  item finished: ``store.record_item(run_id, node, visit, index, output)``. A step inside
  a visit worth keeping (an agent's new messages): ``store.record_progress(...)``. A
  visit skipped by ``on_error="skip"``: ``store.record_skip(run_id, node, visit, reason)``.
* ``interrupt(payload)`` raised: ``store.record_interrupt(run_id, node, visit, payload)``;
  once the run has stopped: ``store.set_status(run_id, "suspended")``.
* the run ended: ``store.set_status(run_id, "succeeded" | "failed" | "cancelled", error=...)``.
* resume: ``journal = store.claim_run(run_id, shape, formation=name)`` (refuses another
  formation, a run running elsewhere, a finished or expired run); with an answer,
  ``store.answer(run_id, value)`` then read ``journal.answers(node, visit)`` again via
  ``store.load(run_id)``. Feed ``journal.visits`` to the successors instead of running
  those visits, run only the fleet items missing from ``journal.items``, and make the
  i-th ``interrupt()`` call of a visit return ``journal.answers(node, visit)[i]``.

Example:
    >>> import os, tempfile, networkx as nx
    >>> from wingman_actors.store import FormationShape, RunStore
    >>> g = nx.DiGraph([("a", "b")]); nx.set_node_attributes(g, "function", "kind")
    >>> with RunStore(os.path.join(tempfile.mkdtemp(), "runs.sqlite")) as store:
    ...     run_id = store.begin_run("demo", FormationShape.of(g), {"x": 1})
    ...     store.record_visit(run_id, "a", 1, (1, 2))
    ...     store.set_status(run_id, "succeeded")
    ...     [(r.formation, r.status) for r in store.runs()], store.load(run_id).visits["a"][1]
    ([('demo', 'succeeded')], (1, 2))
"""

from ._codec import Codec
from ._errors import (
    FormationMismatchError,
    NoPendingInterruptError,
    RunExistsError,
    RunNotResumableError,
    RunTakenOverError,
    SerializationError,
    StoreClosedError,
    StoreError,
    StoreOpenError,
    StoreVersionError,
    StoreWriteError,
    UnknownRunError,
)
from ._history import Visit
from ._protocol import JournalStore
from ._records import (
    RUN_STATUSES,
    SERVER_SOURCE,
    Interrupt,
    JournalEntry,
    RunJournal,
    RunRecord,
    RunStatus,
    RunSummary,
)
from ._shape import EdgeShape, FormationShape, fingerprint
from ._sqlite import RunStore

__all__ = [
    "RUN_STATUSES",
    "SERVER_SOURCE",
    "Codec",
    "EdgeShape",
    "FormationMismatchError",
    "FormationShape",
    "Interrupt",
    "JournalEntry",
    "JournalStore",
    "NoPendingInterruptError",
    "RunExistsError",
    "RunJournal",
    "RunNotResumableError",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "RunSummary",
    "RunTakenOverError",
    "SerializationError",
    "StoreClosedError",
    "StoreError",
    "StoreOpenError",
    "StoreVersionError",
    "StoreWriteError",
    "UnknownRunError",
    "Visit",
    "fingerprint",
]
