"""``RunStore``: the run journal in one SQLite file (WAL), one writer thread, many readers."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Literal, TypeVar

import networkx as nx  # type: ignore[import-untyped]

from .._extras import require
from . import _bulk
from ._cancels import CancelListener, CancelWatch, RequestCancel
from ._checkpoint import Checkpointer
from ._codec import Codec
from ._errors import FormationMismatchError, RunTakenOverError, StoreError, inner_id_taken
from ._ops import (
    KINDS,
    Alongside,
    AlongsideTold,
    AlongsideWaited,
    Answer,
    Append,
    BeginRun,
    BeginRunQueued,
    Claim,
    Expire,
    MarkInterrupted,
    Prune,
    ReleaseOwn,
    SetStatus,
    SetStatusWaited,
    inner_run_refused,
)
from ._owner import DeadOwnerCheck, ProcessIdentity
from ._reads import STATUS, ReaderPool, Reads, get_run
from ._records import RUN_STATUSES, JournalEntry, RunJournal, RunStatus
from ._schema import check_path, connect, damaged, migrate, preparing
from ._shape import FormationShape
from ._values import POSTGRES_SCHEMES, duration, new_run_id
from ._writer import Flush, Op, Writer

__all__ = ["RunStore"]

_T = TypeVar("_T")

_VISIT, _ITEM, _PROGRESS, _INTERRUPT, _SKIP, _INPUT, _WITHDRAWN = (
    KINDS[k] for k in ("visit", "item", "progress", "interrupt", "skip", "input", "withdrawn"))
_GIVEN = ("interrupt", "answer", "input")  # entry kinds whose values the user gives, not a node returns


def _shutdown(writer: Writer, checkpointer: Checkpointer, readers: ReaderPool, owner: int) -> None:
    checkpointer.stop()
    try:
        writer.stop(ReleaseOwn(owner, time.time()))
    finally:
        readers.close()


class RunStore(Reads):
    """The run journal in one SQLite file, or on a PostgreSQL server: run records, and the
    deltas a resume needs.

    ``RunStore(path)`` opens a SQLite file; ``RunStore("postgresql://user:password@host/db")``
    (the ``postgres`` extra, psycopg 3) opens a store on PostgreSQL that processes on any
    number of machines share, with the same API, semantics and journal format. There a
    run's owner is recognised by a lease its store renews rather than by its process: a
    running run whose store stopped renewing (its process died or froze) reads as
    ``interrupted`` once the lease lapses, and any process may resume it.

    One writer applies every write in call order and commits in groups (one commit for
    everything queued meanwhile, shared by concurrent callers); readers use their own
    connections (WAL: they never block the writer) and see every write made through this
    store before the read. Any number of stores, in any number of threads and processes,
    may open, use and close one file at once, a file that does not exist yet included
    (SQLite's lock orders their writers; a busy file is waited for up to 30 s, never
    "database is locked" at once). A store never opens the file other than through SQLite:
    closing a descriptor of it would drop the process's locks on it, SQLite's included.

    Durability: ``begin_run``, ``claim_run`` and ``answer`` return once committed. The
    ``record_*`` calls and ``set_status`` return at once and commit in call order (what
    was recorded after something is never durable without it), within about a
    millisecond or with the next call that waits; ``flush()`` waits for them. With
    ``synchronous="NORMAL"`` (the default) a commit survives the process being killed, and
    SQLite syncs the file to disk at checkpoints (run by a background thread, off the
    commit path): a power loss or OS crash may lose the last commits, never corrupt the
    file. ``synchronous="FULL"`` syncs at every commit (slower). On PostgreSQL a commit
    that someone waits for waits for the server's WAL flush; with ``"NORMAL"`` a commit of
    writes nobody waits for does not (the server has it; the next commit that waits
    flushes it first), with ``"FULL"`` every commit does.

    Args:
        path: the database file (created with its schema if missing; a file from an
            older version of this store is migrated), or a ``postgresql://`` URL (the schema
            is created in the connection's schema if missing).
        suspend_ttl: how long a suspended run waits for its answer before it expires
            (timedelta or seconds; None: never). Default 7 days.
        allow_pickle: journal values of types the store does not support with pickle,
            and load them. Only for files you trust: loading a pickle can run any code.
        synchronous: ``"NORMAL"`` or ``"FULL"`` (see above).
        recover: on open, mark ``interrupted`` the running runs whose process has died
            (on PostgreSQL: whose owner's lease lapsed), and ``expired`` the suspended runs
            past their expiry.
        lease: PostgreSQL only: how long a store's runs stay ``running`` after its last
            lease renewal (timedelta or seconds; default 15 s). The store renews it every
            third of that on a thread of its own, stopped by ``close()``.

    Raises:
        StoreOpenError: the path is not usable (missing folder, a directory, not SQLite,
            another application's database; a PostgreSQL server that cannot be reached);
            ``StoreVersionError`` if it is newer.
        MissingExtraError: a ``postgresql://`` URL without the ``postgres`` extra.
        TypeError: ``path`` is neither a str nor an ``os.PathLike``.

    Example:
        >>> import tempfile, os, networkx as nx
        >>> from wingman_actors.store import RunStore, FormationShape
        >>> g = nx.DiGraph([("a", "b")]); nx.set_node_attributes(g, "function", "kind")
        >>> with RunStore(os.path.join(tempfile.mkdtemp(), "runs.sqlite")) as store:
        ...     run_id = store.begin_run("demo", FormationShape.of(g), 1)
        ...     store.record_visit(run_id, "a", 1, 2)
        ...     store.load(run_id).visits
        {'a': {1: 2}}
    """

    # The backend's pieces (the PostgreSQL store, a subclass, replaces them).
    _BeginRun: type[BeginRun] = BeginRun
    _Append: type[Append] = Append
    _Claim: type[Claim] = Claim
    _MarkInterrupted: type[MarkInterrupted] = MarkInterrupted
    _STATUS_SQL = STATUS  # a run's status as a read shows it
    _SNAPSHOT = "BEGIN"  # begins a read of one consistent snapshot

    def __new__(cls, path: str | os.PathLike[str], *args: Any, **kwargs: Any) -> RunStore:
        if cls is RunStore and isinstance(path, str) and path.startswith(POSTGRES_SCHEMES):
            with require("postgres", "a run store on PostgreSQL"):
                from ._postgres import PostgresRunStore
            return super().__new__(PostgresRunStore)
        return super().__new__(cls)

    def __init__(self, path: str | os.PathLike[str], *,
                 suspend_ttl: datetime.timedelta | float | None = datetime.timedelta(days=7),
                 allow_pickle: bool = False, synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
                 recover: bool = True, lease: datetime.timedelta | float | None = None) -> None:
        if lease is not None:
            raise ValueError("RunStore: lease applies to a PostgreSQL store (RunStore('postgresql://...', lease=...)); "
                             "a SQLite store checks whether a run's process is alive instead; drop lease=")
        self._ttl = duration(suspend_ttl, "suspend_ttl", allow_none=True)
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"RunStore: synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        self._path = check_path(path)
        self._codec = Codec(allow_pickle=allow_pickle)
        self._here = ProcessIdentity.current()
        conn = connect(self._path, synchronous=synchronous)
        with preparing(conn, self._path):  # (closes conn if it fails; a damaged file says so)
            migrate(conn, self._path)
            conn.execute("PRAGMA wal_autocheckpoint = 0")  # checkpoints run on their own thread (see _checkpoint)
            _bulk.install(conn)  # the journal_ops view the writer applies runs of writes through
            conn.execute("BEGIN IMMEDIATE")
            h = self._here
            self._owner = int(conn.execute("INSERT INTO owners (host, boot, pid, started, opened) VALUES (?, ?, ?, ?, ?)",
                                           (h.host, h.boot, h.pid, h.started, time.time())).lastrowid or 0)
            conn.execute("COMMIT")
        self._shapes: set[str] = set()  # fingerprints known stored; used by ops, under the write lock
        self._cancels = CancelWatch(self._owner, set())
        self._writer = writer = Writer(conn, "wingman-store-writer", tick=self._cancels, store=self._path)
        self._submit: Callable[[Op], Op] = writer.submit  # how a journal write is queued
        path_ = self._path
        checkpointer = Checkpointer(lambda: connect(path_, synchronous=synchronous), lambda: writer.committed,
                                    "wingman-store-checkpoint")
        self._readers = ReaderPool(lambda: connect(path_, synchronous=synchronous, read_only=True), path_)
        # Closes the store at interpreter exit (flushing pending writes) if close() was not called.
        self._finalizer: weakref.finalize[..., Any] = weakref.finalize(
            self, _shutdown, writer, checkpointer, self._readers, self._owner)
        self._close_lock = threading.Lock()
        self._lost_listeners: list[Callable[[RunTakenOverError], None]] = []  # never told: see on_run_lost
        self._dead_owners = DeadOwnerCheck(self.mark_interrupted) if recover else None  # (reads look: see _sync)
        if recover:
            try:
                self.mark_interrupted()
                self.expire()
            except BaseException as exc:
                with contextlib.suppress(StoreError):
                    self._finalizer()  # the threads end with the failed open
                refused = damaged(self._path, exc)  # (a damaged file may show only in the recovery's reads)
                if refused is None:
                    raise
                raise refused from exc

    def __repr__(self) -> str:
        return f"RunStore({self._path!r})"

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def path(self) -> str:
        """The database file."""
        return self._path

    @property
    def suspend_ttl(self) -> datetime.timedelta | None:
        """How long a suspended run waits before it expires (None: forever)."""
        return None if self._ttl is None else datetime.timedelta(seconds=self._ttl)

    # --- writes the runtime makes ----------------------------------------------------------

    def begin_run(self, formation: str, shape: FormationShape | nx.DiGraph, input: Any, *,
                  run_id: str | None = None, source: str | None = None, parent: str | None = None,
                  wait: bool = True) -> str:
        """Record a new run (status ``running``, owned by this store); durable on return.

        Args:
            formation: the formation's name.
            shape: ``FormationShape.of(formation.graph)`` (compute it once per formation),
                or the graph itself.
            input: the run's input (any value the store can journal).
            run_id: the run's id; a new one (32 hex digits, sorting by creation time) when None.
            source: where the formation came from (e.g. its file), for ``resume``.
            parent: the outer run this run is an inner run of (a nested formation's run,
                begun by the runtime): it is listed, resumed and pruned with that run.
            wait: False: return at once, the run committed in call order as the
                ``record_*`` calls are (before any write made after this call); a
                ``run_id`` or ``parent`` the store refuses is then reported by the next
                ``flush()`` or ``close()``, and the run's later writes fail with it.

        Returns:
            The run id.

        Raises:
            SerializationError: the input cannot be journalled.
            StoreError: ``run_id`` already exists, or ``parent`` does not.
        """
        if not isinstance(shape, FormationShape):
            if not isinstance(shape, nx.DiGraph):
                raise TypeError(f"begin_run: shape must be a FormationShape (FormationShape.of(formation.graph)), "
                                f"got {type(shape).__name__}")
            shape = FormationShape.of(shape)
        if run_id is None:
            run_id = new_run_id()
        elif not isinstance(run_id, str) or not run_id:
            raise ValueError(f"begin_run: run_id must be a non-empty str or None, got {run_id!r}")
        codec, text = self._codec.encode(input, "the input of run %r", run_id, given=True)
        now = time.time()
        row = (run_id, formation, shape.fingerprint, source, codec, text, now, now, self._owner)
        if parent is not None and (not isinstance(parent, str) or not parent):
            raise ValueError(f"begin_run: parent must be a non-empty str (the outer run's id) or None, got {parent!r}")
        if wait:
            result: str = self._writer.call(self._BeginRun(row, (shape.fingerprint, shape.json), self._path,
                                                         self._shapes, parent))
        else:
            self._submit(BeginRunQueued(row, (shape.fingerprint, shape.json), self._path, self._shapes, parent))
            result = run_id
        self._cancels.started(result, self._writer)
        return result

    def record_visit(self, run_id: str, node: str, visit: int, output: Any) -> None:
        """Journal a finished node visit's output (visit numbers start at 1). Returns at
        once; durable in call order (see the class docs).

        Raises:
            SerializationError: the output cannot be journalled (raised here, at once).
        """
        codec, text = self._codec.encode(output, "the output of node %r (visit %s) of run %r", node, visit, run_id,
                                         given=False)
        self._submit(self._Append((run_id, _VISIT, node, visit, None, codec, text), time.time()))

    def record_item(self, run_id: str, node: str, visit: int, index: int, output: Any) -> None:
        """Journal a finished fleet or map item's output (item ``index`` of the node's visit)."""
        codec, text = self._codec.encode(
            output, "the output of item %s of node %r (visit %s) of run %r", index, node, visit, run_id, given=False)
        self._submit(self._Append((run_id, _ITEM, node, visit, index, codec, text), time.time()))

    def record_progress(self, run_id: str, node: str, visit: int, value: Any, *, item: int | None = None) -> None:
        """Journal a step inside an unfinished visit (e.g. the messages an agent session
        added), so a resumed visit can continue instead of starting over."""
        codec, text = self._codec.encode(value, "a progress value of node %r (visit %s) of run %r", node, visit, run_id,
                                         given=False)
        self._submit(self._Append((run_id, _PROGRESS, node, visit, item, codec, text), time.time()))

    def record_skip(self, run_id: str, node: str, visit: int, reason: str) -> None:
        """Journal that a node visit was skipped after its retries were spent
        (``on_error="skip"``), so a resume skips it again instead of retrying it."""
        self._submit(self._Append((run_id, _SKIP, node, visit, None, 0, json.dumps(str(reason))), time.time()))

    def record_interrupt(self, run_id: str, node: str, visit: int, payload: Any, *, item: int | None = None) -> None:
        """Journal an ``interrupt(payload)`` raised by a node's visit (or a fleet item)."""
        codec, text = self._codec.encode(payload, "the interrupt payload of node %r of run %r", node, run_id,
                                         given=True)
        self._submit(self._Append((run_id, _INTERRUPT, node, visit, item, codec, text), time.time()))

    def withdraw_interrupt(self, run_id: str, node: str, visit: int, reason: str, *, item: int | None = None) -> None:
        """Journal that the run's last interrupt (``node``'s visit ``visit``, or its fleet
        or map item) was withdrawn before the run suspended, saying why: it is no longer
        pending, takes no answer, and its visit asks again if a resume runs it. Returns at
        once; durable in call order."""
        self._submit(self._Append((run_id, _WITHDRAWN, node, visit, item, 0, json.dumps(str(reason))), time.time()))

    def record_input(self, run_id: str, node: str, visit: int, value: Any) -> None:
        """Journal the input a visit not yet made runs with (a fork's ``input=``): a
        resume runs it with ``value`` instead of what its predecessors deliver
        (``RunJournal.inputs``). Returns at once; durable in call order.

        Raises:
            SerializationError: the input cannot be journalled (raised here, at once).
        """
        codec, text = self._codec.encode(value, "the input given to node %r (visit %s) of run %r", node, visit, run_id,
                                         given=True)
        self._submit(self._Append((run_id, _INPUT, node, visit, None, codec, text), time.time()))

    def record_entries(self, run_id: str, entries: Iterable[JournalEntry]) -> None:
        """Journal entries of another run (``store.load(other).entries``) into ``run_id``,
        in order, each keeping its recorded time (``at``): a fork's reused visits show
        their original times in :meth:`history`. Returns at once; durable in call order.

        Raises:
            SerializationError: a value cannot be journalled (raised here, at once).
        """
        for e in entries:
            codec, text = self._codec.encode(e.value, "the %s of node %r (visit %s) copied into run %r", e.kind,
                                             e.node, e.visit, run_id, given=e.kind in _GIVEN)
            self._submit(self._Append((run_id, KINDS[e.kind], e.node, e.visit, e.item, codec, text), e.at))

    def answer(self, run_id: str, answer: Any) -> None:
        """Record the answer to the run's pending interrupt; durable on return.

        Raises:
            UnknownRunError: no such run.
            RunNotResumableError: the run expired (then it is marked so).
            NoPendingInterruptError: the run has no pending interrupt (also a ValueError).
        """
        codec, text = self._codec.encode(answer, "the answer to run %r", run_id, given=True)
        self._writer.call(Answer(run_id, codec, text, time.time(), self._path))

    def set_status(self, run_id: str, status: RunStatus, *, error: str | None = None, wait: bool = False) -> None:
        """Set a run's status (``succeeded``, ``failed``, ``cancelled``, ``suspended``,
        ``interrupted``...), with the error text of a failure. A suspended run gets its
        expiry from ``suspend_ttl``. Returns at once unless ``wait``.

        Raises:
            ValueError: an unknown status, or ``running`` (use begin_run / claim_run).
        """
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(f"set_status: status must be one of {', '.join(s for s in RUN_STATUSES if s != 'running')}"
                             f" (a run becomes running through begin_run or claim_run), got {status!r}")
        if error is not None and not error.isascii():
            # a lone surrogate (a file name decoded with surrogateescape) cannot be stored as
            # UTF-8: escape it, or the write fails and the run stays 'running'
            error = error.encode("utf-8", "backslashreplace").decode("utf-8")
        now = time.time()
        expires = now + self._ttl if status == "suspended" and self._ttl is not None else None
        op = self._status_op(run_id, status, error, expires, now, wait)
        self._cancels.mine.discard(run_id)
        if wait:
            self._writer.call(op)
        else:
            self._submit(op)

    def _status_op(self, run_id: str, status: str, error: str | None, expires: float | None, now: float,
                   wait: bool) -> SetStatus:
        return (SetStatusWaited if wait else SetStatus)(run_id, status, error, expires, now, self._path)

    def claim_run(self, run_id: str, shape: FormationShape | None = None, *,
                  formation: str | None = None, parent: str | None = None) -> RunJournal:
        """Take a run over for resuming: check the formation's shape, make the run
        ``running`` and owned by this store (durable), and return its journal.

        Args:
            run_id: the run.
            shape: the shape of the formation that will resume it; refused if it differs.
            formation: the formation's name, for the mismatch error.
            parent: the outer run resuming this inner run (the runtime passes it); an
                inner run is resumed only through its outer run.

        Raises:
            UnknownRunError: no such run.
            FormationMismatchError: ``shape`` differs from the run's (says what differs).
            RunNotResumableError: the run is running in a live process, succeeded or
                expired, or is an inner run of another run than ``parent`` (the message
                names the outer run to resume instead).
        """
        if shape is not None:
            self._sync()
            with self._readers.connection() as conn:
                record, recorded, _ = get_run(conn, self._codec, run_id, time.time(), self._path, self._STATUS_SQL)
                if record.parent is not None and record.parent != parent:
                    raise inner_run_refused(conn, run_id, record.parent, record.status)
            if record.parent is None and parent is not None:  # (before the shape: a top-level run's may differ)
                raise inner_id_taken(run_id, parent, formation=record.formation, status=record.status, taken_by=None)
            if record.fingerprint != shape.fingerprint:
                diff = FormationShape.from_json(recorded).diff(shape) or ["the fingerprints differ"]
                raise FormationMismatchError(formation or record.formation, run_id, diff)
        self._writer.call(self._Claim(run_id, self._owner, self._here, time.time(), self._path, parent))
        self._cancels.started(run_id, self._writer)
        return self.load(run_id)

    def write_alongside(self, change: Callable[[sqlite3.Connection], _T], *, wait: bool = True,
                        on_commit: Callable[[BaseException | None], None] | None = None) -> _T | None:
        """Apply ``change(conn)`` on the store's writer connection, in call order with the
        journal's writes, committed together with them: tables of the caller's own in the
        store's file (the server's run records) gain the journal's group commits. ``change``
        runs on the writer thread inside a transaction; what it raises fails it alone (the
        batch is replayed write by write). SQLite stores only.

        Args:
            change: the write; it must not commit nor roll back.
            wait: return once committed, with ``change``'s result (else return None at
                once: committed with the next commit, e.g. a ``begin_run`` that follows;
                a failure is reported by the next ``flush()`` or ``close()``).
            on_commit: (``wait=False``) called once ``change`` is committed, with None, or
                with what failed it (then not reported by ``flush()``): on the store's
                writer thread (or the thread that led the commit), after the callers
                waiting for that commit are released. It must return quickly and wait
                for no write of this store (it may queue some: ``record_*``,
                ``begin_run(wait=False)``). The writer thread is woken for ``change`` at once.

        Raises:
            StoreClosedError: the store is closed.
            StoreWriteError: (``wait``) ``change`` raised a database error.
        """
        if not wait:
            if on_commit is None:
                self._writer.submit(Alongside(change), wake=False)
            else:
                self._writer.submit(AlongsideTold(change, on_commit))
            return None
        if on_commit is not None:
            raise ValueError("write_alongside: on_commit is for wait=False (a waited write has committed on return)")
        result: _T = self._writer.call(AlongsideWaited(change))
        return result

    def flush(self, run_id: str | None = None) -> None:
        """Wait until every write made so far is committed.

        Args:
            run_id: report only this run's failed writes (the others are kept for the next flush or close).

        Raises:
            StoreWriteError: writes that returned at once (record_*, set_status) failed since the last
                flush; one line each.
        """
        if self._writer.pending or self._writer.closed:  # (a closed store raises StoreClosedError)
            self._writer.call(Flush())
        failures = self._writer.take_failures(run_id)
        if failures is not None:
            raise failures

    def on_run_lost(self, listener: Callable[[RunTakenOverError], None]) -> Callable[[], None]:
        """Call ``listener(error)`` when another store takes over a run this store is running (a
        formation started with this store ends the run with ``error``). Only a PostgreSQL store loses
        runs: one whose lease lapsed (its process froze, or lost the server) finds them claimed by
        another process when it comes back, at its first refused write or lease renewal. A SQLite
        store never does (a run of a live process is not taken over), so its listeners are never called.

        ``listener`` runs on one of the store's threads (or the thread whose write found the loss) and
        must return quickly; it may be told of a run more than once.

        Returns:
            A call that stops telling ``listener``.
        """
        self._lost_listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._lost_listeners.remove(listener)

        return unsubscribe

    def request_cancel(self, run_id: str) -> bool:
        """Ask the process running ``run_id`` to cancel it, wherever it runs (another process; on
        PostgreSQL, another machine): durable on return. The store running the run finds the request
        within a quarter of a second and tells its :meth:`on_cancel_requested` listeners; a formation
        started with that store cancels the run as ``RunningFormation.cancel(run_id)`` does
        (``run_cancelled``, its future raises ``CancelledError``, the run journalled ``cancelled`` and
        resumable, its other runs untouched). Poll :meth:`get` to see it end. A run whose process runs
        no formation with its store keeps the request (``RunRecord.cancel_requested``) until it ends;
        resuming a run clears a request it still carries.

        Returns:
            True once requested; False when the run is not running (finished, suspended, or its
            process died: it reads ``interrupted``), so there is nothing to cancel
            (``set_status(run_id, "cancelled")`` ends a suspended or interrupted run).

        Raises:
            UnknownRunError: no such run.
            StoreError: ``run_id`` is an inner run of a nested formation (the message names its
                outer run, whose cancel to request).
        """
        probe = self._Claim(run_id, self._owner, self._here, time.time(), self._path)
        requested: bool = self._writer.call(RequestCancel(probe, time.time()))
        if requested and run_id in self._cancels.mine:  # a run of this very store: look at once
            self._cancels.due = 0.0
            self._writer.wake(due=True)
        return requested

    def on_cancel_requested(self, listener: CancelListener) -> Callable[[], None]:
        """Call ``listener(run_id)`` when a cancel of a run this store is running is
        requested (:meth:`request_cancel`, from any process); a formation started with the
        store listens. While someone listens and the store runs runs, it looks every
        quarter of a second (one indexed read, on its writer thread). ``listener`` runs on a
        short-lived thread of the store's, should return quickly, and may be told of a run
        that has finished meanwhile.

        Returns:
            A call that stops telling ``listener``.
        """
        unsubscribe = self._cancels.subscribe(listener)
        self._writer.wake()  # (a look may be needed now)
        return unsubscribe

    # --- housekeeping ----------------------------------------------------------------------

    def prune(self, older_than: datetime.timedelta | float) -> int:
        """Delete the finished runs (and their journals) not updated for ``older_than``
        (timedelta or seconds): every status but ``running``, and ``suspended`` while the
        run still waits for its answer. A suspended run past its expiry is marked
        ``expired``, updated when it expired: it goes once that is ``older_than`` ago. A deleted run's
        inner runs (nested formations) are deleted with it, whatever their status; an inner
        run is never deleted on its own. Returns how many top-level runs were deleted."""
        seconds = duration(older_than, "prune(older_than=...)", allow_none=False) or 0.0
        now = time.time()
        count: int = self._writer.call(Prune(now - seconds, now, self._shapes))
        return count

    def expire(self) -> int:
        """Mark ``expired`` the suspended runs past their expiry (done on open; reads
        already show them expired). Returns how many."""
        count: int = self._writer.call(Expire(time.time()))
        return count

    def mark_interrupted(self) -> int:
        """Mark ``interrupted`` the running runs whose process has died (done on open, and by reads
        at most once a second). Runs of live processes, and of other hosts, are left alone. Returns how many."""
        count: int = self._writer.call(self._MarkInterrupted(self._owner, self._here, time.time()))
        return count

    def close(self) -> None:
        """Commit pending writes, mark the runs this store still has running
        ``interrupted``, stop the writer thread and close every connection. Idempotent.

        Raises:
            StoreWriteError: writes that returned at once failed since the last flush.
        """
        with self._close_lock:
            self._finalizer()
        failures = self._writer.take_failures()
        if failures is not None:
            raise failures
