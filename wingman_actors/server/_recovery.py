"""Run records and the run journal agree after a crash, and when a suspended run expires.

The journal (:class:`~wingman_actors.store.RunStore`) knows which runs were in flight in a
process that died: it marks them ``interrupted`` when it opens (by owner pid, boot id and
process start time). A run record still ``running`` at the server's start takes the
journal's status, so ``GET /runs/{id}`` says ``interrupted`` and the run can be resumed.

Other processes change the journal too, and a record waiting to be resumed follows them
when read (:func:`refreshed`): a suspended or interrupted run cancelled outside the server
(``wingman-actors runs cancel RUN_ID``) reads ``cancelled``.
"""

from __future__ import annotations

import logging

from .._launcher.run_show import waiting_at
from ..store import JournalStore, RunRecord, StoreError, UnknownRunError
from ._convert import jsonable
from ._run_records import RunRecords
from ._schemas import RunOut

log = logging.getLogger(__name__)

__all__ = ["BECOMES", "interrupt_of", "recover_runs", "refreshed"]

_STOPPED = "the server stopped before this run finished"
_CANCELLED_OUTSIDE = "cancelled through the run store, outside the server"

BECOMES: dict[str, tuple[str, ...]] = {"interrupted": ("running",), "expired": ("suspended",),
                                       "cancelled": ("suspended", "interrupted")}
"""The record statuses :func:`refreshed` can turn into each status (by what the journal says)."""


def interrupt_of(journal: JournalStore, record: RunRecord) -> dict[str, object] | None:
    """A journal record's pending interrupt as the API shows it: ``{"node", "payload"}``, the
    node by its path when the question came from inside a nested formation (``"sub/ask"``), as
    the live run's ``FormationResult.interrupt`` named it (the record names the outer node)."""
    pending = record.interrupt
    if pending is None:
        return None
    node = pending.node
    try:
        waiting, _ = waiting_at(journal, journal.load(record.id))
    except StoreError:  # a journal that cannot be read here: the record's node, as before
        log.debug("run %s: where its interrupt came from could not be read", record.id, exc_info=True)
    else:
        node = waiting[-1] if waiting else node
    return {"node": node, "payload": jsonable(pending.payload)}


def recover_runs(records: RunRecords, journal: JournalStore) -> int:
    """Give each run recorded ``running`` the status its journal has; return how many changed.

    A formation run whose journal says ``interrupted`` (its server died or stopped) becomes
    ``interrupted``, resumable with ``POST /runs/{id}/resume``; one the journal saw settle
    takes that status; one still ``running`` in the journal belongs to a live process (another
    server on this file) and is left alone. A fleet run, or a formation run the journal never
    saw, cannot be resumed: it is marked ``failed``, as before durable runs.
    """
    changed = 0
    for run_id, kind in records.running_ids():
        try:
            record = journal.get(run_id) if kind == "formation" else None
        except UnknownRunError:
            record = None
        if record is None:
            records.set_run_status(run_id, "failed", f"{_STOPPED} (it cannot be resumed)", error_kind="cancelled")
        elif record.status == "running":
            continue
        elif record.status == "interrupted":
            records.set_run_status(run_id, "interrupted", f"{_STOPPED}; continue it with POST /runs/{run_id}/resume")
        else:
            records.set_run_status(run_id, record.status, record.error, interrupt=interrupt_of(journal, record))
        changed += 1
    return changed


def refreshed(records: RunRecords, journal: JournalStore, run: RunOut) -> RunOut:
    """``run``, marked ``expired`` if it was suspended past the journal's ``suspend_ttl``,
    ``interrupted`` if it was running in a server that has died since (on a shared
    PostgreSQL run store: once that server's lease lapsed), so it can be resumed here, or
    ``cancelled`` if it waited to be resumed (suspended or interrupted) and another process
    cancelled it in the journal (``wingman-actors runs cancel``)."""
    if run.status not in ("suspended", "running", "interrupted") or run.kind != "formation":
        return run
    try:
        record = journal.get(run.id)
    except UnknownRunError:
        return run
    status = record.status
    if status == "cancelled" and run.status != "running":  # (a running one: its flight records its own end)
        return records.set_run_status(run.id, "cancelled", record.error or _CANCELLED_OUTSIDE,
                                      interrupt=run.interrupt, error_kind="cancelled")
    if run.status == "running":
        if status != "interrupted":
            return run
        return records.set_run_status(run.id, "interrupted", f"{_STOPPED}; continue it with POST /runs/{run.id}/resume")
    if run.status != "suspended" or status != "expired":
        return run
    return records.set_run_status(run.id, "expired", "it waited for an answer longer than the server's suspend "
                                                      "time; start a new run", interrupt=run.interrupt)
