"""The writes of the SQLite run store, one typed op each (applied by the writer thread)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from . import _bulk
from ._errors import (
    NoPendingInterruptError,
    RunExistsError,
    RunNotResumableError,
    StoreError,
    UnknownRunError,
    inner_id_taken,
)
from ._owner import ProcessIdentity, is_alive
from ._writer import Op

__all__ = [
    "KINDS",
    "Append",
    "Answer",
    "Alongside",
    "AlongsideTold",
    "AlongsideWaited",
    "BeginRun",
    "BeginRunQueued",
    "Claim",
    "Expire",
    "MarkInterrupted",
    "Prune",
    "ReleaseOwn",
    "SetStatus",
    "SetStatusWaited",
    "inner_run_refused",
]

KINDS = {"visit": 1, "item": 2, "progress": 3, "interrupt": 4, "answer": 5, "skip": 6, "input": 7, "withdrawn": 8}
"""Journal entry kinds as stored (7, a visit's given input, came with forks at any node; 8,
an interrupt withdrawn because its branch lost a ``join="any"``, later still: a version
before one refuses a journal that holds it, naming the kind)."""


class Journalling(Op):
    """A write of the journalling group (new runs, entries, statuses): consecutive ones
    are applied as one statement (see ``_bulk``), each giving its rows."""

    __slots__ = ()
    GROUP = "journalling"

    def add_rows(self, rows: list[tuple[Any, ...]]) -> None:
        """Append this write's rows of ``temp.journal_ops`` to ``rows``."""
        raise NotImplementedError

    @classmethod
    def apply_group(cls, conn: Any, ops: Sequence[Op]) -> None:
        _bulk.apply_group(conn, ops)


class BeginRun(Journalling):
    """Insert a new run, status ``running``, owned by this store. Waited for (durable).

    ``shapes`` holds the fingerprints this writer knows are in the ``shapes`` table, so
    that a batch's bulk statement writes a formation's shape once, not with every run. If
    another process pruned a known shape meanwhile, the bulk statement fails the run's
    foreign key, and the batch is replayed op by op, where :meth:`apply` writes the shape.
    """

    __slots__ = ("parent", "row", "shape", "shapes", "store_path")
    wait = True

    def __init__(self, row: tuple[Any, ...], shape: tuple[str, str], store_path: str,
                 shapes: set[str] | None = None, parent: str | None = None) -> None:
        super().__init__()
        self.row, self.shape, self.store_path, self.parent = row, shape, store_path, parent
        self.shapes = set() if shapes is None else shapes

    def apply(self, conn: Any) -> Any:
        # Plain SQL both stores run (this is the path of a batch replayed op by op; a run
        # of journalling ops is applied by the backend's bulk statement).
        if self.parent is not None and conn.execute("SELECT 1 FROM runs WHERE id = ?", (self.parent,)).fetchone() is None:
            self.error = unknown_parent(self.row[0], self.parent, self.store_path)
            return None
        # Written even when this writer wrote it before: another process may have pruned it.
        conn.execute("INSERT INTO shapes (fingerprint, shape) VALUES (?, ?) ON CONFLICT DO NOTHING", self.shape)
        self.shapes.add(self.shape[0])  # forgotten by a Prune; a rolled-back batch is replayed
        if conn.execute(_INSERT_RUN, self.row).rowcount == 0:
            self.error = duplicate_run(self.row[0], self.store_path)
            return self.row[0]
        if self.parent is not None:
            conn.execute("UPDATE runs SET parent = ? WHERE id = ?", (self.parent, self.row[0]))
        return self.row[0]

    def add_rows(self, rows: list[tuple[Any, ...]]) -> None:
        if self.shape[0] not in self.shapes:  # (added to shapes once the rows are applied)
            rows.append((_bulk.SHAPE, None, *self.shape, None, None, None, None, None))
        run_id, formation, fingerprint, source, codec, text, created, _, owner = self.row
        rows.append((_bulk.RUN, run_id, formation, fingerprint, source, codec, text, created, owner))
        if self.parent is not None:
            rows.append((_bulk.PARENT, run_id, self.parent, None, None, None, None, None, None))

    def describe(self) -> str:
        return f"begin_run({self.row[0]!r})"


class BeginRunQueued(BeginRun):
    """``BeginRun`` nobody waits for (``begin_run(wait=False)``): committed in call order."""

    __slots__ = ()
    wait = False


_INSERT_RUN = ("INSERT INTO runs (id, formation, fingerprint, source, input_codec, input, status, created, updated, "
               "owner) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?) ON CONFLICT (id) DO NOTHING")


def unknown_parent(run_id: str, parent: str, store_path: str) -> StoreError:
    """The error of ``begin_run`` given a parent run the store does not have."""
    return StoreError(f"begin_run({run_id!r}): its parent run {parent!r} is not in the run store {store_path}; "
                      "begin the outer run first, or pass parent=None")


def duplicate_run(run_id: str, store_path: str) -> RunExistsError:
    """The error of ``begin_run`` given a run id the store has already."""
    return RunExistsError(run_id, store_path)


class Append(Journalling):
    """Append one journal entry. Not waited for: ordered by the queue."""

    __slots__ = ("at", "row")
    _INSERT: ClassVar[str] = ("INSERT INTO journal (run, kind, node, visit, item, codec, value, at) "
                              "SELECT key, ?, ?, ?, ?, ?, ?, ? FROM runs WHERE id = ?")

    def __init__(self, row: tuple[str, int, str, int, int | None, int, str], at: float | None = None) -> None:
        super().__init__()
        self.row = row
        self.at = at  # when it was recorded (seconds since the epoch)

    def add_rows(self, rows: list[tuple[Any, ...]]) -> None:
        run_id, kind, node, visit, item, codec, text = self.row
        rows.append((_bulk.ENTRY, run_id, kind, node, visit, item, codec, text, self.at))

    def apply(self, conn: Any) -> Any:
        if conn.execute(self._INSERT, (*self.row[1:], self.at, self.row[0])).rowcount == 0:
            self.error = KeyError(f"no run {self.row[0]!r} (begin_run it first)")

    def belongs_to(self) -> str | None:
        return str(self.row[0])

    def describe(self) -> str:
        kind = next(k for k, v in KINDS.items() if v == self.row[1])
        return f"record {kind} of node {self.row[2]!r} (visit {self.row[3]}) of run {self.row[0]!r}"


class SetStatus(Journalling):
    """Set a run's status (and error, expiry)."""

    __slots__ = ("params", "store_path")

    def __init__(self, run_id: str, status: str, error: str | None, expires: float | None, now: float,
                 store_path: str) -> None:
        super().__init__()
        self.params = (status, error, expires, now, run_id)
        self.store_path = store_path

    def add_rows(self, rows: list[tuple[Any, ...]]) -> None:
        status, error, expires, now, run_id = self.params
        rows.append((_bulk.STATUS, run_id, status, error, expires, now, None, None, None))

    def apply(self, conn: Any) -> Any:
        cur = conn.execute("UPDATE runs SET status = ?, error = ?, expires = ?, updated = ? WHERE id = ?", self.params)
        if cur.rowcount == 0:
            self.error = UnknownRunError(self.params[-1], self.store_path)

    def belongs_to(self) -> str | None:
        return str(self.params[-1])

    def describe(self) -> str:
        return f"set_status({self.params[-1]!r}, {self.params[0]!r})"


class SetStatusWaited(SetStatus):
    """``SetStatus`` whose caller waits until it is committed."""

    __slots__ = ()
    wait = True


class Claim(Op):
    """Make a run ``running`` and owned by this store, unless it cannot be resumed."""

    __slots__ = ("here", "now", "owner", "parent", "run_id", "store_path")
    wait = True

    def __init__(self, run_id: str, owner: int, here: ProcessIdentity, now: float, store_path: str,
                 parent: str | None = None) -> None:
        super().__init__()
        self.run_id, self.owner, self.here, self.now, self.store_path = run_id, owner, here, now, store_path
        self.parent = parent

    def fetch(self, conn: Any) -> tuple[str, float | None, str | None, bool] | None:
        """The run's status, expiry, parent, and whether a live owner other than this store
        runs it (this store's process check; the PostgreSQL store checks leases)."""
        row = conn.execute(
            "SELECT r.status, r.expires, o.host, o.boot, o.pid, o.started, r.owner, r.parent FROM runs r "
            "LEFT JOIN owners o ON o.id = r.owner WHERE r.id = ?", (self.run_id,)).fetchone()
        if row is None:
            return None
        live = row[6] == self.owner or (
            row[2] is not None and is_alive(ProcessIdentity(row[2], row[3], row[4], row[5]), self.here))
        return row[0], row[1], row[7], live

    def apply(self, conn: Any) -> Any:
        row = self.fetch(conn)
        if row is None:
            self.error = UnknownRunError(self.run_id, self.store_path)
            return None
        status, expires = row[0], row[1]
        if row[2] is not None and row[2] != self.parent:
            self.error = inner_run_refused(conn, self.run_id, row[2], status)
            return None
        if row[2] is None and self.parent is not None:  # a top-level run under the id of an inner run
            formation = conn.execute("SELECT formation FROM runs WHERE id = ?", (self.run_id,)).fetchone()[0]
            self.error = inner_id_taken(self.run_id, self.parent, formation=formation, status=status, taken_by=None)
            return None
        if status == "suspended" and expires is not None and expires <= self.now:
            conn.execute("UPDATE runs SET status = 'expired', updated = expires WHERE id = ?", (self.run_id,))
            status = "expired"
        refusal = None
        if status == "running" and row[3]:
            refusal = "is running (in this or another live process); wait for it or cancel it first"
        elif status == "succeeded":
            refusal = "already succeeded; read its outputs with store.load(run_id)"
        elif status == "expired" and self.parent is None:  # an inner run's wait is its outer run's, claimed first
            refusal = "expired: it was suspended longer than the store's suspend_ttl; start a new run"
        if refusal is not None:
            self.error = RunNotResumableError(f"run {self.run_id!r} cannot be resumed: it {refusal}",
                                              run_id=self.run_id, status=status)
            return None
        # (a cancel request the run still carries was for its last owner: see _cancels)
        conn.execute("UPDATE runs SET status = 'running', owner = ?, error = NULL, expires = NULL, "
                     "cancel_requested = NULL, updated = ? WHERE id = ?", (self.owner, self.now, self.run_id))
        return status

    def describe(self) -> str:
        return f"claim_run({self.run_id!r})"


def inner_run_refused(conn: Any, run_id: str, parent: str, status: str) -> RunNotResumableError:
    """The error refusing to resume the inner run ``run_id`` of ``parent`` on its own
    (naming the top-level run it belongs to)."""
    top = parent
    for _ in range(1000):  # (a cycle cannot be made: a parent exists before its inner runs)
        row = conn.execute("SELECT parent FROM runs WHERE id = ?", (top,)).fetchone()
        if row is None or row[0] is None:
            break
        top = row[0]
    within = "" if top == parent else f" (itself inside run {top!r})"
    return RunNotResumableError(
        f"run {run_id!r} cannot be resumed on its own: it is an inner run of run {parent!r}{within}, a nested "
        f"formation's run journalled with its outer run; resume run {top!r} instead (formation.resume({top!r}, "
        f"store=...) or `wingman-actors resume {top}`), which resumes this one", run_id=run_id, status=status)


class Alongside(Op):
    """A write of the store's user on the store's connection (``RunStore.write_alongside``),
    committed with the journal's writes around it. Not waited for: ordered by the queue."""

    __slots__ = ("change",)

    def __init__(self, change: Any) -> None:
        super().__init__()
        self.change = change

    def apply(self, conn: Any) -> Any:
        return self.change(conn)


class AlongsideWaited(Alongside):
    """``Alongside`` whose caller waits until it is committed, for its result."""

    __slots__ = ()
    wait = True


class AlongsideTold(Alongside):
    """``Alongside`` whose caller is told when it is committed: ``on_commit(error)``, on
    the thread that committed it (``error``: None, or what failed it)."""

    __slots__ = ("on_commit",)
    TOLD = True

    def __init__(self, change: Any, on_commit: Callable[[BaseException | None], None]) -> None:
        super().__init__(change)
        self.on_commit = on_commit

    def told(self) -> None:
        self.on_commit(self.error)


class Answer(Op):
    """Record the answer to a run's pending interrupt."""

    __slots__ = ("codec", "now", "run_id", "store_path", "text")
    wait = True

    def __init__(self, run_id: str, codec: int, text: str, now: float, store_path: str) -> None:
        super().__init__()
        self.run_id, self.codec, self.text, self.now, self.store_path = run_id, codec, text, now, store_path

    def apply(self, conn: Any) -> Any:
        run = conn.execute("SELECT status, expires, key FROM runs WHERE id = ?", (self.run_id,)).fetchone()
        if run is None:
            self.error = UnknownRunError(self.run_id, self.store_path)
            return None
        if run[0] == "expired" or (run[0] == "suspended" and run[1] is not None and run[1] <= self.now):
            conn.execute("UPDATE runs SET status = 'expired', updated = COALESCE(expires, updated) WHERE id = ?",
                         (self.run_id,))
            self.error = RunNotResumableError(
                f"run {self.run_id!r} expired: it was suspended longer than the store's suspend_ttl, so it "
                "takes no answer; start a new run", run_id=self.run_id, status="expired")
            return None
        last = conn.execute("SELECT kind, node, visit, item FROM journal WHERE run = ? AND kind IN (4, 5, 8) "
                            "ORDER BY seq DESC LIMIT 1", (run[2],)).fetchone()
        if last is None or last[0] != KINDS["interrupt"]:
            self.error = NoPendingInterruptError(f"run {self.run_id!r} has no pending interrupt to answer; "
                                                 "resume it without an answer", run_id=self.run_id, status=run[0])
            return None
        conn.execute("INSERT INTO journal (run, kind, node, visit, item, codec, value, at) "
                     "VALUES (?, 5, ?, ?, ?, ?, ?, ?)", (run[2], last[1], last[2], last[3], self.codec, self.text, self.now))
        return None


class Prune(Op):
    """Delete top-level runs (and their journals, and their inner runs) that are finished (not running, and not suspended
    and still waiting for their answer) and not updated since ``cutoff``, and the shapes
    no run uses (forgetting them from ``shapes``, see :class:`BeginRun`). Suspended runs
    past their expiry are marked expired first (updated when they expired)."""

    __slots__ = ("cutoff", "now", "shapes")
    wait = True

    def __init__(self, cutoff: float, now: float, shapes: set[str] | None = None) -> None:
        super().__init__()
        self.cutoff, self.now = cutoff, now
        self.shapes = set() if shapes is None else shapes

    def apply(self, conn: Any) -> Any:
        Expire(self.now).apply(conn)
        # Top-level runs only: their inner runs go with them (the foreign key cascades).
        count = conn.execute("DELETE FROM runs WHERE parent IS NULL AND status NOT IN ('running', 'suspended') "
                             "AND updated < ?", (self.cutoff,)).rowcount
        conn.execute("DELETE FROM shapes WHERE fingerprint NOT IN (SELECT fingerprint FROM runs)")
        self.shapes.clear()
        return count


class Expire(Op):
    """Mark suspended runs past their expiry ``expired``, updated when they expired (so a
    prune counts their age from then, whenever they were marked)."""

    __slots__ = ("now",)
    wait = True

    def __init__(self, now: float) -> None:
        super().__init__()
        self.now = now

    def apply(self, conn: Any) -> Any:
        return conn.execute("UPDATE runs SET status = 'expired', updated = expires WHERE status = 'suspended' "
                            "AND expires IS NOT NULL AND expires <= ?", (self.now,)).rowcount


class MarkInterrupted(Op):
    """Mark ``interrupted`` the running runs whose owning process is gone (see ``_owner``)."""

    __slots__ = ("here", "now", "owner")
    wait = True

    def __init__(self, owner: int, here: ProcessIdentity, now: float) -> None:
        super().__init__()
        self.owner, self.here, self.now = owner, here, now

    def apply(self, conn: Any) -> Any:
        rows = conn.execute("SELECT r.id, o.host, o.boot, o.pid, o.started, r.owner FROM runs r "
                            "LEFT JOIN owners o ON o.id = r.owner WHERE r.status = 'running'").fetchall()
        dead = [(self.now, r[0]) for r in rows if r[5] != self.owner and (
            r[1] is None or not is_alive(ProcessIdentity(r[1], r[2], r[3], r[4]), self.here))]
        conn.executemany("UPDATE runs SET status = 'interrupted', updated = ? WHERE id = ?", dead)
        # Forget owners that are gone and own nothing (a live one may begin a run any time).
        idle = conn.execute("SELECT id, host, boot, pid, started FROM owners WHERE id NOT IN "
                            "(SELECT owner FROM runs WHERE owner IS NOT NULL)").fetchall()
        gone = [(r[0],) for r in idle if not is_alive(ProcessIdentity(r[1], r[2], r[3], r[4]), self.here)]
        conn.executemany("DELETE FROM owners WHERE id = ?", gone)
        return len(dead)


class ReleaseOwn(Op):
    """On close: the runs this store still has ``running`` become ``interrupted``."""

    __slots__ = ("now", "owner")

    def __init__(self, owner: int, now: float) -> None:
        super().__init__()
        self.owner, self.now = owner, now

    def apply(self, conn: Any) -> Any:
        return conn.execute("UPDATE runs SET status = 'interrupted', updated = ? WHERE status = 'running' "
                            "AND owner = ?", (self.now, self.owner)).rowcount
