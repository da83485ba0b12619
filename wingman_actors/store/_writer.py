"""The store's single writer: one connection, one ordered queue, group commit.

Every write is an :class:`Op` put on one queue. The writer takes everything queued (up
to a batch limit; the writer thread first lets writes gather for up to a millisecond,
unless a caller waits for one of them), applies it in queue order inside one transaction
and commits once:
concurrent callers share a commit (group commit), and because batches commit in queue
order and each batch is atomic, a write is never durable unless every write queued
before it is too. Consecutive journalling ops (new runs, entries, statuses) are applied
with one statement (``_bulk``). A caller that must know its write is durable (``wait=True``) blocks
until the batch holding it has committed.

Between batches, and when it has waited a while for one, the writer thread runs the
store's ``tick`` (if it has one): the look for requests to cancel the store's runs
(``_cancels``), which costs a batch a time check and runs only while it is due.

If a batch fails as a whole (a disk error, a bug), it is rolled back and replayed one op
per transaction, so one bad op fails alone: a waiting caller gets its error; the error
of an op nobody waits for is kept and reported by the next ``flush()`` or ``close()``.
"""

from __future__ import annotations

import collections
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Protocol

from ._errors import StoreClosedError, StoreError, StoreWriteError

__all__ = ["Op", "Tick", "Writer", "orphan_after_fork"]

_log = logging.getLogger("wingman_actors.store")
_MAX_BATCH = 2_000
_GATHER_S = 0.001
_GATHER_BELOW = 256
_REGROUP_MAX_S = 0.005
_LEADER_EXTRA = 2  # batches a caller that committed its own op also commits for waiting callers
_CLOSED = "the run store is closed; open a new RunStore(path)"
FORKED = ("this RunStore was opened before the process forked: its database connections belong to the parent "
          "process, and using them here could damage the store; open a new RunStore(path) in this process")
_orphans: weakref.WeakSet[Any] = weakref.WeakSet()


def orphan_after_fork(obj: Any) -> None:
    """Call ``obj.orphan()`` in a child process made by ``fork()`` (it then refuses to be
    used: SQLite connections must not cross a fork)."""
    _orphans.add(obj)


def _orphan_all() -> None:
    for obj in list(_orphans):
        obj.orphan()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_orphan_all)


class Tick(Protocol):
    """Work the writer thread does now and then between batches (see the module docs)."""

    def wait(self) -> float | None:
        """Seconds until it is due (<= 0: now), or None while it is not needed. Called with
        the writer's mutex held: quick, and no call into the writer."""

    def __call__(self, conn: Any, begin: str, errors: tuple[type[BaseException], ...]) -> None:
        """Do it, if due (the write lock held, no transaction open on ``conn``)."""


class Op:
    """One write. Subclasses set ``wait`` (class or instance) and implement :meth:`apply`.

    ``apply`` runs on the writer thread inside the batch's transaction. It returns the
    op's result, or sets ``error`` to refuse (having written nothing); it raises only on
    failures that must roll the batch back.
    """

    __slots__ = ("done", "error", "result", "seq")
    wait: ClassVar[bool] = False
    TOLD: ClassVar[bool] = False
    """Whether the op's caller is told when it is committed (or failed): :meth:`told`,
    called on the thread that committed its batch, once the batch's waiting callers are
    released. The error of a told op is its caller's (not kept for ``flush()``)."""
    GROUP: ClassVar[str | None] = None
    """Consecutive ops of one group are applied together, by :meth:`apply_group`; a batch
    of one group only is applied by it outside a transaction, and it commits."""

    def __init__(self) -> None:
        self.seq = 0
        self.result: Any = None
        self.error: BaseException | None = None
        self.done: threading.Lock | None = None

    def apply(self, conn: Any) -> Any:
        raise NotImplementedError

    @classmethod
    def apply_group(cls, conn: Any, ops: Sequence[Op]) -> None:
        """Apply consecutive ops of :attr:`GROUP` as if one by one, in order; outside a
        transaction, commit them (atomically). Ops that set a ``GROUP`` implement it."""
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__

    def belongs_to(self) -> str | None:
        """The run this write belongs to, if one (its failure is reported with that run)."""
        return None

    def told(self) -> None:
        """(:attr:`TOLD` ops) The batch holding this op has committed, or this op failed
        (``error`` set). Quick; it may queue ops (``submit``), never wait for one."""


class Stop(Op):
    """The last op: the writer commits it and exits. ``final`` runs inside its batch."""

    __slots__ = ("final",)
    wait = True

    def __init__(self, final: Op | None) -> None:
        super().__init__()
        self.final = final

    def apply(self, conn: Any) -> Any:
        return self.final.apply(conn) if self.final is not None else None


class Flush(Op):
    """Nothing: committed once every op queued before it has committed."""

    __slots__ = ()
    wait = True

    def apply(self, conn: Any) -> Any:
        return None


class Writer:
    """The single writer over ``conn`` (closed when the writer stops).

    Ops are applied by whoever holds the write lock, in queue order: the writer thread,
    or a caller waiting for its own op that finds the lock free (it then commits
    everything queued so far itself, saving two thread switches on the path where a
    caller waits, e.g. ``begin_run`` inside ``submit()``). Either way one batch, one
    commit, in queue order. A caller that committed its own op goes on to commit the ops
    other callers queued meanwhile and wait for (a bounded number of batches), so that
    they need not wait for the writer thread to wake up.
    """

    def __init__(self, conn: Any, name: str, *, begin: str = "BEGIN IMMEDIATE",
                 errors: tuple[type[BaseException], ...] = (sqlite3.Error,),
                 bulk: Callable[[Any, Sequence[Op]], None] | None = None,
                 refused: Callable[[BaseException], None] | None = None, regroup: float = 0.0,
                 tick: Tick | None = None, store: str | None = None) -> None:
        self._conn = conn
        self._store = store  # what its errors name the store by (a URL's password hidden)
        self._tick = tick
        # Before a batch that follows one whose callers waited, wait up to this fraction of
        # that batch's time (at most _REGROUP_MAX_S) for as many waiting callers to queue again
        # (0: never): see _regroup.
        self._regroup = regroup
        self._released = 0  # callers the last batch released (0 once the write lock is let go)
        self._last_run_s = 0.0  # how long the last batch took
        self._regrouping = False  # a holder of the write lock waits in _regroup_waiters
        self._refused = refused  # told the error of each failed op nobody waits for (after its batch)
        self._bulk = bulk  # applies a run of one group's ops (else the group's own apply_group)
        self._begin = begin  # how a batch's transaction begins
        self._errors = errors  # the database driver's own errors
        self._queue: collections.deque[Op] = collections.deque()
        # guards the queue, seq numbers, closed; entered as the bare lock (a C-level context
        # manager) where nobody waits or is notified, as Condition.__enter__ is Python code
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._more = threading.Condition(self._mutex)  # a waiting caller queued while one regroups
        self._write = threading.Lock()  # held while applying a batch
        self._seq = 0
        self._waiting = 0  # queued ops whose callers wait for them
        self._told = 0  # queued ops whose callers are told of their commit
        self._committed = 0
        self._closed = False
        self._stopped = False
        self._idle = False  # the writer thread waits for work
        self._untimed = False  # ... and for nothing else (its tick is not needed)
        self._failures: list[tuple[str | None, str]] = []  # (run id, what failed)
        self._why = _CLOSED
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        orphan_after_fork(self)
        self._thread.start()

    def orphan(self) -> None:
        """In a child process made by ``fork()``: refuse every op from now on, and never
        touch the parent's connection (fresh locks: the parent's may have been held)."""
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._more = threading.Condition(self._mutex)
        self._write = threading.Lock()
        self._queue.clear()
        self._closed = self._stopped = True
        self._why = FORKED

    @property
    def committed(self) -> int:
        """The sequence number of the last op committed (grows with every commit)."""
        return self._committed

    @property
    def pending(self) -> bool:
        """Whether some queued op has not committed yet."""
        return self._committed != self._seq

    @property
    def closed(self) -> bool:
        """Whether the writer takes no more ops (it was stopped)."""
        return self._closed

    def wake(self, *, due: bool = False) -> None:
        """Have the writer thread look at its tick again if it waits for work with no tick
        needed (the tick became needed; a wait for a tick due later ends by itself), or with
        ``due`` whatever it waits for (the tick became due now)."""
        with self._mutex:
            if self._idle and (due or self._untimed):
                self._cond.notify()

    def submit(self, op: Op, *, wake: bool = True) -> Op:
        """Queue ``op`` (it will be applied after every op queued before it)."""
        if op.wait:
            op.done = threading.Lock()
            op.done.acquire()
        with self._mutex:
            if self._closed:
                raise StoreClosedError(self._why)
            self._seq += 1
            op.seq = self._seq
            self._queue.append(op)
            if op.done is not None:
                self._waiting += 1
                if self._regrouping:
                    self._more.notify()
            elif op.TOLD:
                self._told += 1
            if isinstance(op, Stop):
                self._closed = True
            if wake and self._idle and not self._write.locked():
                # (a holder of the write lock wakes the writer thread as it lets go, see _release)
                self._cond.notify()
        return op

    def call(self, op: Op) -> Any:
        """Queue ``op``, wait until its batch has committed, and return its result.

        Raises:
            The op's error, if it failed or refused.
        """
        if not op.wait:
            raise TypeError(f"{op.describe()} is not an op to wait for")
        self.submit(op, wake=False)
        if self._write.acquire(blocking=False):
            try:
                while op.done is not None and op.done.locked() and self._drain_once():
                    pass
                extra = _LEADER_EXTRA
                while extra and self._waiting and self._drain_once():
                    extra -= 1
            finally:
                self._release()
        # else the holder of the write lock commits it, or wakes the writer thread to (_release)
        if op.done is not None:  # always, for an op that waits
            op.done.acquire()
        if op.error is not None:
            if isinstance(op.error, self._errors):  # the database's own error: say which write it failed
                raise StoreWriteError([f"{op.describe()}: {op.error}"], self._store) from op.error
            raise op.error
        return op.result

    def take_failures(self, run_id: str | None = None) -> StoreWriteError | None:
        """The failures of ops nobody waited for, since the last call (then forgotten);
        with ``run_id``, only that run's and its nested runs' (the others are kept)."""
        with self._mutex:
            if run_id is None:
                taken, self._failures = self._failures, []
            else:
                inner = run_id + "/"  # a nested formation's runs are "<run id>/<node>/<visit>"
                taken = [f for f in self._failures if f[0] is not None and (f[0] == run_id or f[0].startswith(inner))]
                if taken:
                    self._failures = [f for f in self._failures if f not in taken]
        return StoreWriteError([line for _, line in taken], self._store) if taken else None

    def stop(self, final: Op | None = None) -> None:
        """Apply everything queued, then ``final``, commit, close the connection and end
        the thread. Idempotent."""
        with self._mutex:
            closed = self._closed
        if not closed:
            try:
                self.call(Stop(final))
            except StoreClosedError:
                pass
        if threading.current_thread() is not self._thread:
            self._thread.join()

    # --- applying batches ----------------------------------------------------------------

    def _release(self) -> None:
        # Let go first, then look: an op queued by a caller that found the lock held is in
        # the queue by now, so the writer thread is woken for it (the caller does not wake it).
        self._released = 0  # the next holder's first batch does not regroup
        self._write.release()
        with self._mutex:
            if self._queue or self._stopped:
                self._cond.notify()  # work left (or the end): the writer thread takes over

    def _drain_once(self) -> bool:
        """Apply one batch of what is queued (the write lock held); False if nothing was."""
        with self._mutex:
            if not self._queue:
                return False
            if self._released and self._waiting < self._released and not self._closed:
                self._regroup_waiters()
            n = min(len(self._queue), _MAX_BATCH)
            batch = [self._queue.popleft() for _ in range(n)]
            self._released = sum(1 for op in batch if op.done is not None)
            self._waiting -= self._released
            if self._told:
                self._told -= sum(1 for op in batch if op.TOLD)
        try:
            t0 = time.perf_counter()
            self._run(batch)
            self._last_run_s = time.perf_counter() - t0
        except BaseException as exc:  # e.g. Ctrl-C in a caller applying the batch itself
            self._rollback()
            for op in batch:
                op.error = op.error or StoreError(f"{op.describe()} was not committed: interrupted by "
                                                  f"{type(exc).__name__}")
            self._finish(batch)
            raise
        self._finish(batch)
        return True

    def _regroup_waiters(self) -> None:
        """(The mutex held.) The callers released by the last batch queue their next
        waited write a moment later; sent at once, the next batch would carry only those
        that did not wait in the last one, so each commit would carry about half of them.
        Wait a fraction of the last batch's time for them to queue again, so that one commit
        carries them all (a server where a commit waits for a disk flush commits as fast,
        and twice the writes per commit)."""
        if not self._regroup:
            return
        deadline = time.perf_counter() + min(self._regroup * self._last_run_s, _REGROUP_MAX_S)
        self._regrouping = True
        try:
            while self._waiting < self._released and not self._closed:
                left = deadline - time.perf_counter()
                if left <= 0:
                    break
                self._more.wait(left)
        finally:
            self._regrouping = False

    def _finish(self, batch: list[Op]) -> None:
        failed = [(op.belongs_to(), f"{op.describe()}: {op.error}") for op in batch
                  if op.error is not None and op.done is None and not op.TOLD]
        if failed:
            # Nobody waits for these: logged once here, and kept for flush() or close() (kept
            # before the batch counts as committed, so a flush that sees it committed sees them).
            _log.error("run store: %d journal write(s) failed, e.g. %s; flush() or close() of the store raises "
                       "them", len(failed), failed[0][1])
            with self._mutex:
                self._failures.extend(failed)
            if self._refused is not None:
                for op in batch:
                    if op.error is not None and op.done is None and not op.TOLD:
                        self._refused(op.error)
        self._committed = batch[-1].seq
        told = False
        for op in batch:
            if op.done is not None:
                op.done.release()
            elif op.TOLD:
                told = True
        if told:
            for op in batch:
                if op.TOLD:
                    try:
                        op.told()
                    except Exception:  # the caller's own bug: the writer carries on
                        _log.exception("run store: telling %s of its commit failed", op.describe())
        if isinstance(batch[-1], Stop):
            with self._mutex:
                self._stopped = True

    def _loop(self) -> None:
        tick = self._tick
        try:
            while True:
                with self._mutex:
                    while not self._queue and not self._stopped:
                        wait = None if tick is None else tick.wait()
                        if wait is not None and wait <= 0:
                            break  # the tick is due
                        self._idle, self._untimed = True, wait is None
                        self._cond.wait(wait)
                        self._idle = self._untimed = False
                    if self._stopped:
                        return
                    gather = 0 < len(self._queue) < _GATHER_BELOW and not self._waiting and not self._told
                if gather:
                    # Nobody waits for these writes: let more arrive so that one commit
                    # carries many.
                    time.sleep(_GATHER_S)
                with self._write:
                    try:
                        while True:
                            drained = self._drain_once()
                            if tick is not None:
                                tick(self._conn, self._begin, self._errors)  # (returns at once unless due)
                            if not drained:
                                break
                    except Exception:  # the batch's ops have their error: keep serving the others
                        _log.exception("run store: the writer thread failed to apply a batch; carrying on")
        finally:
            with self._write:
                self._conn.close()

    def _run(self, batch: list[Op]) -> None:
        conn = self._conn
        try:
            group = batch[0].GROUP
            if group is not None and all(op.GROUP == group for op in batch):
                (self._bulk or batch[0].apply_group)(conn, batch)  # e.g. one statement: its own commit
                return
            conn.execute(self._begin)
            i, n = 0, len(batch)
            while i < n:
                group = batch[i].GROUP
                if group is None:
                    batch[i].result = batch[i].apply(conn)
                    i += 1
                    continue
                # A run of journalling ops (new runs, entries, statuses): one statement (see
                # _bulk). If it raises, the batch is replayed op by op below.
                j = i + 1
                while j < n and batch[j].GROUP == group:
                    j += 1
                (self._bulk or batch[i].apply_group)(conn, batch[i:j])
                i = j
            conn.execute("COMMIT")
            return
        except Exception as exc:
            _log.warning("run store%s: a batch of %d write(s) failed (%s); retrying them one by one",
                         "" if self._store is None else f" {self._store}", len(batch), exc)
            self._rollback()
        for op in batch:
            op.result, op.error = None, None
            try:
                conn.execute(self._begin)
                op.result = op.apply(conn)
                conn.execute("COMMIT")
            except Exception as exc:
                self._rollback()
                op.error = exc

    def _rollback(self) -> None:
        try:
            self._conn.execute("ROLLBACK")
        except self._errors:
            pass  # no transaction was open
