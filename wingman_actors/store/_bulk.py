"""Applying a run of journalling writes with a few multi-row statements.

A busy store's batches are mostly three kinds of write: new runs (``begin_run``), journal
entries (``record_*``) and status changes (``set_status``). Applied one statement per
write, every statement is a trip into SQLite during which the writer lets go of the GIL
and must queue to take it back behind the formation's threads; with many runs in flight
that waiting, not SQLite, is most of a write's cost. So the writer hands a run of such
writes to :func:`apply_segment`, which writes all the new runs with one ``INSERT ...
VALUES (...), (...)``, then all the entries with one, then all the status changes with
one ``UPDATE ... FROM (VALUES ...)`` (statements of at most :data:`_CHUNK` rows).

The result is the same as applying the writes one by one, in order, inside the batch's
transaction:

* entries and status changes only ever refer to runs begun before them, so writing the
  segment's runs first changes nothing; a ``begin_run`` of an id an earlier write of the
  segment refers to starts a new segment instead;
* of several status changes of one run the last one wins, as it would in order;
* a multi-row statement that fails (a duplicate run id, an entry of an unknown run) has
  changed nothing (SQLite undoes a failed statement, not the transaction): its writes
  and those after it are then applied one by one, each with its own checks and error.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._ops import Append, BeginRun, SetStatus
    from ._writer import Op

__all__ = ["apply_segment"]

_CHUNK = 64  # rows per statement: 64 x 9 parameters stays under SQLite's oldest limit (999)
_UPDATE_FROM = sqlite3.sqlite_version_info >= (3, 33, 0)  # UPDATE ... FROM

_RUN_ROW = "(?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)"
_ENTRY_ROW = "((SELECT key FROM runs WHERE id = ?), ?, ?, ?, ?, ?, ?)"
_SQL: dict[tuple[str, int], str] = {}


def _statement(kind: str, rows: int) -> str:
    sql = _SQL.get((kind, rows))
    if sql is None:
        if kind == "runs":
            sql = ("INSERT INTO runs (id, formation, fingerprint, source, input_codec, input, status, created, "
                   "updated, owner) VALUES " + ", ".join([_RUN_ROW] * rows))
        elif kind == "journal":
            sql = ("INSERT INTO journal (run, kind, node, visit, item, codec, value) VALUES "
                   + ", ".join([_ENTRY_ROW] * rows))
        else:
            sql = ("UPDATE runs SET status = v.column1, error = v.column2, expires = v.column3, updated = v.column4 "
                   "FROM (VALUES " + ", ".join(["(?, ?, ?, ?, ?)"] * rows) + ") AS v WHERE runs.id = v.column5")
        _SQL[(kind, rows)] = sql
    return sql


class _Failed(Exception):
    """A statement of :func:`_write` failed; the rows before it were written."""

    def __init__(self, written: int) -> None:
        super().__init__(written)
        self.written = written


def _write(conn: sqlite3.Connection, kind: str, rows: Sequence[tuple[Any, ...]]) -> int:
    """Write ``rows`` with statements of 64, 32, ... 1 rows (few distinct statements, so
    SQLite's statement cache keeps them prepared); the number of rows changed.

    Raises:
        _Failed: a statement broke a constraint (it wrote nothing; those before it did).
    """
    changed, i, n = 0, 0, len(rows)
    while i < n:
        k = _CHUNK
        while k > n - i:
            k //= 2
        params = [value for row in rows[i:i + k] for value in row]
        try:
            changed += conn.execute(_statement(kind, k), params).rowcount
        except sqlite3.IntegrityError:
            raise _Failed(i) from None
        i += k
    return changed


class _Segment:
    """The writes of one segment, sorted by kind (see the module docs)."""

    def __init__(self) -> None:
        self.begins: list[BeginRun] = []
        self.appends: list[Append] = []
        self.statuses: list[SetStatus] = []
        self.referred: set[str] = set()  # run ids the segment's appends and statuses refer to

    def apply(self, conn: sqlite3.Connection) -> None:
        if self.begins:
            self._begin(conn)
        if self.appends:
            if len(self.appends) == 1:
                self.appends[0].apply(conn)
            else:
                try:
                    _write(conn, "journal", [op.row for op in self.appends])
                except _Failed as failed:  # an entry of an unknown run: each with its own error
                    for op in self.appends[failed.written:]:
                        op.apply(conn)
        if self.statuses:
            self._set_statuses(conn)

    def _begin(self, conn: sqlite3.Connection) -> None:
        ops = self.begins
        if len(ops) == 1:
            ops[0].result = ops[0].apply(conn)
            return
        for op in ops:
            if op.shape[0] not in op.shapes:
                op.insert_shape(conn)
        written = len(ops)
        try:
            _write(conn, "runs", [op.row for op in ops])
        except _Failed as failed:  # a duplicate id, or a shape pruned by another process
            written = failed.written
            for op in ops[written:]:
                op.result = op.apply(conn)
        for op in ops[:written]:
            op.result = op.row[0]

    def _set_statuses(self, conn: sqlite3.Connection) -> None:
        ops = self.statuses
        if len(ops) == 1 or not _UPDATE_FROM:
            for op in ops:
                op.apply(conn)
            return
        last = {op.params[-1]: op.params for op in ops}  # the last change of each run wins
        if _write(conn, "status", list(last.values())) != len(last):  # (an UPDATE breaks no constraint)
            for op in ops:  # some run is unknown: each op again (idempotent) finds which
                op.apply(conn)


def apply_segment(conn: sqlite3.Connection, ops: Sequence[Op]) -> None:
    """Apply ``ops`` (``BeginRun``, ``Append`` and ``SetStatus`` ops, in queue order)
    inside the open transaction; see the module docs."""
    from ._ops import Append, BeginRun, SetStatus

    segment = _Segment()
    for op in ops:
        if isinstance(op, BeginRun):
            if op.row[0] in segment.referred:  # referred to before it begins: keep that order
                segment.apply(conn)
                segment = _Segment()
            segment.begins.append(op)
        elif isinstance(op, Append):
            segment.appends.append(op)
            segment.referred.add(op.row[0])
        elif isinstance(op, SetStatus):
            segment.statuses.append(op)
            segment.referred.add(op.params[-1])
        else:
            raise TypeError(f"apply_segment cannot apply {op.describe()}")
    segment.apply(conn)
