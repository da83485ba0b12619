"""``RunStore("postgresql://...")``: the run journal on a PostgreSQL server, shared by
processes on any number of machines.

Same API, semantics and journal format as the SQLite store (a subclass of it: the public
methods, the ops and the reads are shared): one writer thread and connection per store,
applying writes in call order and committing in groups (a run of journalling writes is one
call of a server-side function, so one round trip); reads on their own connections, in
one snapshot where they need one.

Ownership is by lease instead of a process check: each open store registers an owner row
whose ``lease_until`` (the server's clock) a renewal thread pushes forward every third of
the lease. A running run whose owner's lease has lapsed (its process froze, or lost the
network), or whose owner's writer connection closed (its process died: the server sees
that at once), reads as ``interrupted`` and can be claimed by any store, on any machine; a
lapsed owner that comes back cannot write into the journal of a run claimed meanwhile.
"""

from __future__ import annotations

import datetime
import functools
import json
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Literal

import psycopg

from . import _bulk
from ._cancels import CancelWatch
from ._codec import Codec
from ._errors import RunTakenOverError, UnknownRunError
from ._lease import Lease, Ownership
from ._ops import Append, BeginRun, Claim, Journalling, MarkInterrupted, ReleaseOwn, SetStatus
from ._owner import ProcessIdentity
from ._pg_schema import LIVE, NOW, PgConnection, connect, masked, migrate
from ._reads import STATUS, ReaderPool
from ._records import RunJournal
from ._sqlite import RunStore
from ._values import duration
from ._writer import Flush, Op, Writer

__all__ = ["DEFAULT_LEASE_S", "PostgresRunStore"]

_log = logging.getLogger("wingman_actors.store")
DEFAULT_LEASE_S = 15.0
_REGROUP = 0.5  # see Writer._regroup_waiters: measured 4 -> 5.5-7 runs per commit, 8 submitters

# Forget the server processes a statement of this transaction saw (PostgreSQL keeps the first
# look at them until the transaction ends): an owner whose writer connected since is live.
_FRESH = "SELECT pg_stat_clear_snapshot()"

# A running run whose owner's lease lapsed reads as interrupted (as a suspended run past its
# expiry reads as expired).
_STATUS = (STATUS.replace(" ELSE status END", "") + " WHEN status = 'running' AND NOT EXISTS (SELECT 1 FROM owners o "
           f"WHERE o.id = owner AND {LIVE}) THEN 'interrupted' ELSE status END")


class PgAppend(Append):
    """``Append``, writing only into the journal of a run this store owns."""

    __slots__ = ()
    _INSERT = ("INSERT INTO journal (run, kind, node, visit, item, codec, value, at) "
               "SELECT key, ?, ?, ?, ?, ?, ?, ? FROM runs WHERE id = ? AND owner + 0 = ?")  # (by id: see _pg_schema)

    def apply(self, conn: Any) -> Any:
        if conn.execute(self._INSERT, (*self.row[1:], self.at, self.row[0], conn.owner)).rowcount:
            return
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (self.row[0],)).fetchone() is None:
            self.error = KeyError(f"no run {self.row[0]!r} (begin_run it first)")
        else:
            self.error = RunTakenOverError(self.row[0], masked(conn.url or ""))


class PgSetStatus(SetStatus):
    """``SetStatus``; with ``owner`` (the store is running the run), only while the run is
    still this store's (not taken over by another)."""

    __slots__ = ("owner",)

    def __init__(self, run_id: str, status: str, error: str | None, expires: float | None, now: float,
                 store_path: str, owner: int | None = None) -> None:
        super().__init__(run_id, status, error, expires, now, store_path)
        self.owner = owner

    def add_rows(self, rows: list[tuple[Any, ...]]) -> None:
        status, error, expires, now, run_id = self.params
        rows.append((_bulk.STATUS, run_id, status, error, expires, now, self.owner, None, None))

    def apply(self, conn: Any) -> Any:
        if self.owner is None:
            return super().apply(conn)
        cur = conn.execute("UPDATE runs SET status = ?, error = ?, expires = ?, updated = ? WHERE id = ? AND owner + 0 = ?",
                           (*self.params, self.owner))
        if cur.rowcount == 0:
            run_id = self.params[-1]
            gone = conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None
            self.error = UnknownRunError(run_id, self.store_path) if gone else RunTakenOverError(run_id, self.store_path)
        return None


class PgSetStatusWaited(PgSetStatus):
    """``PgSetStatus`` whose caller waits until it is committed."""

    __slots__ = ()
    wait = True


class PgClaim(Claim):
    """``Claim``, where a run's owner is live while its lease holds (the row locked meanwhile).

    The row is locked by a statement of its own, and read by the next one: a claim that waited
    for another store's claim of the run then reads the run's new owner with that owner's row.
    (Locked and read by one ``SELECT ... FOR UPDATE OF r``, the waiting claim rechecked only
    the run's row: it joined the new owner with the owners row of the old one, found no match,
    read the run as ownerless, and took it over from the store that had just claimed it.)"""

    __slots__ = ()

    def fetch(self, conn: Any) -> tuple[str, float | None, str | None, bool] | None:
        conn.execute("SELECT 1 FROM runs WHERE id = ? FOR UPDATE", (self.run_id,))
        conn.execute(_FRESH)
        row = conn.execute(
            f"SELECT r.status, r.expires, r.parent, r.owner = ? OR COALESCE({LIVE}, FALSE) "
            "FROM runs r LEFT JOIN owners o ON o.id = r.owner WHERE r.id = ?",
            (self.owner, self.run_id)).fetchone()
        return None if row is None else (row[0], row[1], row[2], bool(row[3]))


class PgMarkInterrupted(MarkInterrupted):
    """Mark ``interrupted`` the running runs whose owner's lease lapsed; forget owners
    lapsed for a day that own no run.

    As a claim does (see :class:`PgClaim`), it locks them first and checks their owners
    again in the next statement: an update that waited for a store's claim of one of them
    judged the claimer by the update's own snapshot, in which a store opened meanwhile had
    no owner row, and marked interrupted (claimable by any store) the run it had just claimed."""

    __slots__ = ()
    _DEAD = f"status = 'running' AND owner IS DISTINCT FROM ? AND NOT EXISTS (SELECT 1 FROM owners o WHERE o.id = runs.owner AND {LIVE})"

    def apply(self, conn: Any) -> Any:
        count = 0
        dead = [row[0] for row in conn.execute(f"SELECT id FROM runs WHERE {self._DEAD} FOR UPDATE", (self.owner,))]
        if dead:
            conn.execute(_FRESH)
            count = conn.execute(f"UPDATE runs SET status = 'interrupted', updated = ? WHERE id = ANY(?) AND {self._DEAD}",
                                 (self.now, dead, self.owner)).rowcount
        conn.execute(f"DELETE FROM owners o WHERE o.lease_until < {NOW} - 86400 AND o.id <> ? "
                     "AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.owner = o.id)", (self.owner,))
        return count


def apply_group(conn: PgConnection, ops: Sequence[Op], *, full: bool = False) -> None:
    """Apply a run of journalling ops with one call of ``wingman_journal_ops`` (their rows
    as JSON, applied in order); if one breaks a rule, apply them one by one (outside a
    transaction: in one of their own), each with its own result or error.

    Outside a transaction, a call whose ops nobody waits for commits without waiting for
    the server's WAL flush (``synchronous_commit`` off for it), unless ``full``: the
    server has it (a client killed loses nothing), and the next commit that waits flushes
    it first (the WAL is one sequence), so writes still become durable in call order."""
    rows: list[tuple[Any, ...]] = []
    for op in ops:
        if not isinstance(op, Journalling):
            raise TypeError(f"the journal_ops statement cannot apply {op.describe()}")
        op.add_rows(rows)
    conn.ensure()
    raw = conn.raw
    own = raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    try:
        sync = full or not own or any(op.done is not None for op in ops)
        raw.execute("SELECT wingman_journal_ops(%s, %s, %s)", (json.dumps(rows), conn.owner, sync))
    except psycopg.Error:
        if not own:
            raise  # the writer rolls the batch back and replays it op by op
    else:
        for op in ops:
            if isinstance(op, BeginRun):
                op.shapes.add(op.shape[0])
                op.result = op.row[0]
        return
    raw.execute("BEGIN")
    try:
        for op in ops:
            op.result = op.apply(conn)
    except BaseException:
        raw.execute("ROLLBACK")
        raise
    raw.execute("COMMIT")


def _shutdown(writer: Writer, lease: Lease, readers: ReaderPool, owner: int) -> None:
    lease.stop()
    try:
        writer.stop(ReleaseOwn(owner, time.time()))
    finally:
        readers.close()


class PostgresRunStore(RunStore):
    """The run journal on PostgreSQL: ``RunStore("postgresql://user:password@host/db")``
    returns one (see :class:`RunStore` for the API; ``lease`` is how long a store's runs
    stay ``running`` without a renewal, default 15 s)."""

    _Append = PgAppend
    _Claim = PgClaim
    _MarkInterrupted = PgMarkInterrupted
    _STATUS_SQL = _STATUS
    _SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"
    _dead_owners = None  # (reads compute a run's status from its owner's lease: nothing to mark on read)

    def __init__(self, path: str | os.PathLike[str], *,
                 suspend_ttl: datetime.timedelta | float | None = datetime.timedelta(days=7),
                 allow_pickle: bool = False, synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
                 recover: bool = True, lease: datetime.timedelta | float | None = None) -> None:
        self._ttl = duration(suspend_ttl, "suspend_ttl", allow_none=True)
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"RunStore: synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        try:
            seconds = duration(DEFAULT_LEASE_S if lease is None else lease, "lease", allow_none=False) or 0.0
        except ValueError:
            seconds = 0.0  # a negative number or not a duration: refused below, saying what a lease takes
        if not seconds > 0 or math.isinf(seconds):
            raise ValueError(f"RunStore: lease must be more than 0 seconds (a datetime.timedelta or a number), "
                             f"got {lease!r}")
        self._lease_s = seconds
        url = os.fspath(path)
        self._url, self._path = url, masked(url)
        self._codec = Codec(allow_pickle=allow_pickle)
        self._here = ProcessIdentity.current()
        shown = self._path
        self._own = own = Ownership(shown, seconds)  # (the lease holds from before it is taken)
        conn = connect(url, shown)
        try:
            migrate(conn, shown)
            row = conn.execute(f"INSERT INTO owners (host, pid, opened, lease_until, backend) VALUES (?, ?, ?, {NOW} + ?, "
                               "pg_backend_pid()) RETURNING id, backend",
                               (self._here.host, self._here.pid, time.time(), seconds)).fetchone()
        except BaseException:
            conn.close()
            raise
        assert row is not None
        self._owner = conn.owner = int(row[0])
        conn.url = url  # the writer's connection reconnects
        self._shapes: set[str] = set()
        self._cancels = CancelWatch(self._owner, own.mine)  # (the runs it is running: one set)
        self._writer = writer = Writer(conn, "wingman-store-writer", begin="BEGIN", errors=(psycopg.Error,),
                                       bulk=functools.partial(apply_group, full=synchronous == "FULL"),
                                       refused=own.refused, regroup=_REGROUP, tick=self._cancels, store=shown)
        self._submit = self._submit_owned
        self._readers = ReaderPool(lambda: connect(url, shown), shown, errors=(psycopg.Error,),
                                   check="check that the PostgreSQL server is up")
        lease_ = Lease(lambda: connect(url, shown), self._owner, self._here, int(row[1]), seconds, "wingman-store-lease",
                       own)
        self._finalizer = weakref.finalize(self, _shutdown, writer, lease_, self._readers, self._owner)
        self._close_lock = threading.Lock()
        if recover:
            try:
                self.mark_interrupted()
                self.expire()
            except BaseException:
                self._finalizer()
                raise

    def __repr__(self) -> str:
        return f"RunStore({self._path!r})"

    @property
    def path(self) -> str:
        """The store's URL (its password hidden)."""
        return self._path

    @property
    def lease(self) -> datetime.timedelta:
        """How long this store's runs stay ``running`` after its last lease renewal."""
        return datetime.timedelta(seconds=self._lease_s)

    def mark_interrupted(self) -> int:
        """Mark ``interrupted`` the running runs whose owner's lease has lapsed (done on
        open; reads already show them interrupted). Returns how many."""
        return super().mark_interrupted()

    def write_alongside(self, change: Any, *, wait: bool = True, on_commit: Any = None) -> Any:
        """Not on PostgreSQL: the writes of :meth:`RunStore.write_alongside` are SQLite's."""
        raise NotImplementedError("write_alongside applies SQLite writes to a SQLite run store's file; this store is "
                                  "on PostgreSQL: commit your own tables' writes on a connection of your own")

    # --- the runs this store is running (see _lease) ------------------------------------------

    def begin_run(self, formation: str, shape: Any, input: Any, *, run_id: str | None = None,
                  source: str | None = None, parent: str | None = None, wait: bool = True) -> str:
        run_id = super().begin_run(formation, shape, input, run_id=run_id, source=source, parent=parent, wait=wait)
        self._own.claimed(run_id)
        return run_id

    def claim_run(self, run_id: str, shape: Any = None, *, formation: str | None = None,
                  parent: str | None = None) -> RunJournal:
        journal = super().claim_run(run_id, shape, formation=formation, parent=parent)
        self._own.claimed(run_id)
        return journal

    def _status_op(self, run_id: str, status: str, error: str | None, expires: float | None, now: float,
                   wait: bool) -> SetStatus:
        # The end of a run this store is running: written only while the run is its own.
        owner = self._owner if run_id in self._own.mine else None  # (set_status then forgets it)
        return (PgSetStatusWaited if wait else PgSetStatus)(run_id, status, error, expires, now, self._path, owner)

    def _submit_owned(self, op: Op) -> Op:
        """Queue a journal write; while the lease is not known to hold (no renewal within
        it, e.g. the process was frozen), wait for its commit: a run taken over meanwhile
        is then known lost (and its listeners told, on this thread) before the caller goes on."""
        self._writer.submit(op)
        if time.monotonic() >= self._own.fresh_until:
            self._writer.call(Flush())
            lost = self._own.lost.get(op.belongs_to() or "")
            if lost is not None:
                self._own.tell(lost)
        return op

    def on_run_lost(self, listener: Callable[[RunTakenOverError], None]) -> Callable[[], None]:
        return self._own.subscribe(listener)
