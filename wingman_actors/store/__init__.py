"""The run journal: durable runs, resume and interrupts (SQLite, WAL).

``RunStore(path)`` records each run (formation, shape fingerprint, source, input, status)
and a journal of deltas: each finished node visit's output, each finished fleet item's
output, progress inside a visit, interrupts and their answers. See :class:`RunStore` for
write order and durability, and ``_codec`` for how values are stored (and why a store
refuses pickle unless told otherwise).

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
    RunNotResumableError,
    SerializationError,
    StoreClosedError,
    StoreError,
    StoreOpenError,
    StoreVersionError,
    StoreWriteError,
    UnknownRunError,
)
from ._protocol import JournalStore
from ._records import RUN_STATUSES, Interrupt, JournalEntry, RunJournal, RunRecord, RunStatus, RunSummary
from ._shape import EdgeShape, FormationShape, fingerprint
from ._sqlite import RunStore

__all__ = [
    "RUN_STATUSES",
    "Codec",
    "EdgeShape",
    "FormationMismatchError",
    "FormationShape",
    "Interrupt",
    "JournalEntry",
    "JournalStore",
    "RunJournal",
    "RunNotResumableError",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "RunSummary",
    "SerializationError",
    "StoreClosedError",
    "StoreError",
    "StoreOpenError",
    "StoreVersionError",
    "StoreWriteError",
    "UnknownRunError",
    "fingerprint",
]
