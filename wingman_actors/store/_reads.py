"""The reads of the run store: a pool of read connections and the queries (shared by the
SQLite and PostgreSQL stores: the queries are plain SQL, with the backend's expression of a
run's status and the statement that begins a consistent read passed in)."""

from __future__ import annotations

import datetime
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ._codec import Codec
from ._errors import StoreClosedError, StoreError, UnknownRunError
from ._history import Visit, history
from ._ops import KINDS
from ._records import RUN_STATUSES, Interrupt, JournalEntry, RunJournal, RunRecord, RunStatus, RunSummary
from ._shape import FormationShape
from ._writer import FORKED, Flush, Writer, orphan_after_fork

__all__ = ["ReaderPool", "Reads", "get_run", "list_runs", "load_journal"]

_KIND_NAMES = {v: k for k, v in KINDS.items()}
_MAX_IDLE = 8
# A suspended run past its expiry reads as expired even before the writer marks it.
STATUS = "CASE WHEN status = 'suspended' AND expires IS NOT NULL AND expires <= :now THEN 'expired' ELSE status END"
# ... and was updated then (as once marked: see _ops.Expire).
UPDATED = "CASE WHEN status = 'suspended' AND expires IS NOT NULL AND expires <= :now THEN expires ELSE updated END"


class ReaderPool:
    """Read-only connections, one per concurrent reader, reused (at most a few kept idle)."""

    def __init__(self, connect: Callable[[], Any], path: str, *,
                 errors: tuple[type[BaseException], ...] = (sqlite3.Error,), check: str | None = None) -> None:
        self._connect = connect
        self._path = path
        self._errors = errors
        self._check = check or f"check the file (sqlite3 {path} 'PRAGMA integrity_check')"
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._closed = False
        self._why = "the run store is closed; open a new RunStore(path)"
        orphan_after_fork(self)

    def orphan(self) -> None:
        """In a child process made by ``fork()``: refuse reads; the parent's connections are
        kept (never used, nor closed here)."""
        self._lock = threading.Lock()
        self._closed = True
        self._why = FORKED
        self._inherited, self._idle = self._idle, []

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A connection for one read; the database's errors come out as :class:`StoreError`."""
        with self._lock:
            if self._closed:
                raise StoreClosedError(self._why)
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = self._connect()
        keep = True
        try:
            yield conn
        except self._errors as exc:
            keep = False  # not reused after a failure
            raise StoreError(f"run store {self._path}: a read failed: {exc}; try again, and if it fails again "
                             f"{self._check}") from exc
        finally:
            with self._lock:
                keep = keep and not self._closed and len(self._idle) < _MAX_IDLE
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _time(t: float | None) -> datetime.datetime | None:
    return None if t is None else datetime.datetime.fromtimestamp(t, datetime.UTC)


def _utc(t: float) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(t, datetime.UTC)


def list_runs(conn: Any, status: RunStatus | None, now: float, nested: bool = False, status_sql: str = STATUS,
              ) -> list[RunSummary]:
    sql = f"SELECT id, formation, {status_sql}, created, {UPDATED}, parent FROM runs"
    where = [] if nested else ["parent IS NULL"]
    params: dict[str, Any] = {"now": now}
    if status is not None:
        where.append(f"{status_sql} = :status")
        params["status"] = status
    if where:
        sql += " WHERE " + " AND ".join(where)
    rows = conn.execute(sql + " ORDER BY created, id", params).fetchall()
    return [RunSummary(r[0], r[1], r[2], _utc(r[3]), _utc(r[4]), r[5]) for r in rows]


def _entry(codec: Codec, run_id: str, row: tuple[Any, ...]) -> JournalEntry:
    kind = _KIND_NAMES.get(row[0])
    if kind is None:
        raise StoreError(f"run {run_id!r} has a journal entry of kind {row[0]}, unknown to this wingman-actors "
                         "(written by a newer version?); upgrade wingman-actors")
    where = f"the {kind} of node {row[1]!r} (visit {row[2]}{'' if row[3] is None else f', item {row[3]}'}) " \
            f"in run {run_id!r}"
    return JournalEntry(kind, row[1], row[2], row[3], codec.decode(row[4], row[5], where),  # type: ignore[arg-type]
                        row[6] if len(row) > 6 else None)


def get_run(conn: Any, codec: Codec, run_id: str, now: float, path: str, status_sql: str = STATUS,
            ) -> tuple[RunRecord, str, int]:
    """The run record (with its pending interrupt), its stored shape JSON and its key."""
    if not isinstance(run_id, str):  # (PostgreSQL would refuse to compare it with the text ids)
        raise UnknownRunError(run_id, path)
    row = conn.execute(
        f"SELECT r.id, r.formation, {status_sql}, r.created, {UPDATED}, r.fingerprint, r.source, r.input_codec, "
        "r.input, r.error, r.expires, s.shape, r.key, r.parent, r.cancel_requested FROM runs r JOIN shapes s ON s.fingerprint = r.fingerprint "
        "WHERE r.id = :id", {"now": now, "id": run_id}).fetchone()
    if row is None:
        raise UnknownRunError(run_id, path)
    last = conn.execute("SELECT kind, node, visit, item, codec, value FROM journal WHERE run = ? AND kind IN (4, 5, 8) "
                        "ORDER BY seq DESC LIMIT 1", (row[12],)).fetchone()
    pending = None
    if last is not None and last[0] == KINDS["interrupt"]:
        e = _entry(codec, run_id, last)
        pending = Interrupt(e.node, e.visit, e.item, e.value)
    value = codec.decode(row[7], row[8], f"the input of run {run_id!r}")
    record = RunRecord(row[0], row[1], row[2], _utc(row[3]), _utc(row[4]), parent=row[13], fingerprint=row[5],
                       source=row[6], input=value, error=row[9], expires=_time(row[10]), interrupt=pending,
                       cancel_requested=_time(row[14]) if row[2] == "running" else None)
    return record, row[11], row[12]


def load_journal(conn: Any, codec: Codec, run_id: str, now: float, path: str, status_sql: str = STATUS,
                 begin: str = "BEGIN") -> RunJournal:
    """The run and its whole journal, read in one transaction (a consistent snapshot)."""
    conn.execute(begin)
    try:
        record, shape, key = get_run(conn, codec, run_id, now, path, status_sql)
        rows = conn.execute("SELECT kind, node, visit, item, codec, value, at FROM journal WHERE run = ? ORDER BY seq",
                            (key,)).fetchall()
    finally:
        conn.execute("COMMIT")
    entries = tuple(_entry(codec, run_id, r) for r in rows)
    return RunJournal.build(record, FormationShape.from_json(shape), entries)


class Reads:
    """The reads of a run store (``RunStore`` and its PostgreSQL subclass): each first
    waits for the writes made before it and, on SQLite, for a look at dead processes'
    runs (at most once a second)."""

    _writer: Writer
    _dead_owners: Callable[[], Any] | None
    _readers: ReaderPool
    _codec: Codec
    _path: str
    _STATUS_SQL: str  # a run's status as a read shows it
    _SNAPSHOT: str  # begins a read of one consistent snapshot

    def _sync(self) -> None:
        if self._writer.pending:  # reads see every write made before them
            self._writer.call(Flush())
        if self._dead_owners is not None:  # ... and a process that died since is seen dead
            self._dead_owners()

    def get(self, run_id: str) -> RunRecord:
        """The run's record (status, input, error, pending interrupt...).

        Raises:
            UnknownRunError: no such run (a ``KeyError``).
        """
        self._sync()
        with self._readers.connection() as conn:
            return get_run(conn, self._codec, run_id, time.time(), self._path, self._STATUS_SQL)[0]

    def load(self, run_id: str) -> RunJournal:
        """The run and its whole journal in one consistent read: what a resume needs.

        Raises:
            UnknownRunError: no such run.
            SerializationError: a value cannot be loaded (its class cannot be imported,
                or it is pickled and the store does not allow pickle).
        """
        self._sync()
        with self._readers.connection() as conn:
            return load_journal(conn, self._codec, run_id, time.time(), self._path, self._STATUS_SQL, self._SNAPSHOT)

    def history(self, run_id: str) -> list[Visit]:
        """The run's node visits in the order they finished: each one's node, visit number,
        output, status (``succeeded``; ``failed`` into the node's error edges, its output the
        error; ``skipped``; or ``suspended`` at an unanswered interrupt) and times (see :class:`~wingman_actors.store.Visit`). Fork the run at one of them with
        ``Formation.fork(run_id, store=..., at=node)``.

        Raises:
            UnknownRunError: no such run.
        """
        return history(self.load(run_id))

    def runs(self, status: RunStatus | None = None, *, nested: bool = False) -> list[RunSummary]:
        """The top-level runs (oldest first), or those with ``status``. A suspended run
        past its expiry is listed as ``expired``.

        Args:
            status: only runs with this status.
            nested: list the inner runs of nested formations too (each with its
                ``parent``); they are journalled with their outer run, and resumed and
                pruned with it.
        """
        if status is not None and status not in RUN_STATUSES:
            raise ValueError(f"runs: status must be one of {', '.join(RUN_STATUSES)} or None, got {status!r}")
        self._sync()
        with self._readers.connection() as conn:
            return list_runs(conn, status, time.time(), bool(nested), self._STATUS_SQL)
