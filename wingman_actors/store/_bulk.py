"""Applying a run of journalling writes with one SQL statement.

A busy store's batches are mostly three kinds of write: new runs (``begin_run``), journal
entries (``record_*``) and status changes (``set_status``). Applied one statement per
write, each statement is a trip into SQLite during which the writer lets go of the GIL,
and must then queue to take it back behind the formation's threads: measured with eight
threads submitting runs, a commit of a few writes held the write lock for ~0.7 ms, most of
it waiting for the GIL, while every caller of ``begin_run`` waited for that commit.

So the writer's connection has a temporary view, ``temp.journal_ops``, whose ``INSTEAD OF
INSERT`` triggers apply one write per row (a shape, a run, a run's parent, an entry or a status, by
``kind``), and a run of writes is one ``INSERT INTO temp.journal_ops VALUES (...), ...``:
one trip into SQLite, rows applied in queue order, so the result is that of the writes
applied one by one. Outside a transaction that statement is its own (atomic) commit.

A write that breaks a rule (a duplicate run id, an unknown parent, an entry or status of an
unknown run)
aborts the statement, which then has changed nothing; the writes are then applied one by
one, each with its own checks and error, inside one transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._writer import Op

__all__ = ["ENTRY", "PARENT", "RUN", "SHAPE", "STATUS", "apply_group", "apply_rows", "install"]

SHAPE, RUN, ENTRY, STATUS, PARENT = 0, 1, 2, 3, 4
"""Row kinds: ``(kind, run, a, b, c, d, e, f, g)``; see :data:`_TRIGGERS` for the columns."""

_COLUMNS = 9
_CHUNK = 64  # rows per statement: 64 x 9 parameters stays under SQLite's oldest limit (999)

_VIEW = ("CREATE TEMP VIEW IF NOT EXISTS journal_ops AS SELECT NULL AS kind, NULL AS run, NULL AS a, NULL AS b, "
         "NULL AS c, NULL AS d, NULL AS e, NULL AS f, NULL AS g")
# One trigger per row kind, each guarded by WHEN: SQLite tests the WHEN before running a
# trigger's program, so a row runs only its own statement. (One trigger whose statements
# each filtered on NEW.kind cost ~30 % more SQLite time per batch: every statement of it
# ran, and opened its tables, for every row.)
_TRIGGERS = (
    f"""CREATE TEMP TRIGGER IF NOT EXISTS journal_ops_shape INSTEAD OF INSERT ON journal_ops
    WHEN NEW.kind = {SHAPE} BEGIN
    INSERT OR IGNORE INTO shapes (fingerprint, shape) VALUES (NEW.a, NEW.b);
END""",
    f"""CREATE TEMP TRIGGER IF NOT EXISTS journal_ops_run INSTEAD OF INSERT ON journal_ops
    WHEN NEW.kind = {RUN} BEGIN
    INSERT INTO runs (id, formation, fingerprint, source, input_codec, input, status, created, updated, owner)
        VALUES (NEW.run, NEW.a, NEW.b, NEW.c, NEW.d, NEW.e, 'running', NEW.f, NEW.f, NEW.g);
END""",
    f"""CREATE TEMP TRIGGER IF NOT EXISTS journal_ops_entry INSTEAD OF INSERT ON journal_ops
    WHEN NEW.kind = {ENTRY} BEGIN
    INSERT INTO journal (run, kind, node, visit, item, codec, value, at)
        VALUES ((SELECT key FROM main.runs WHERE id = NEW.run), NEW.a, NEW.b, NEW.c, NEW.d, NEW.e, NEW.f, NEW.g);
END""",
    f"""CREATE TEMP TRIGGER IF NOT EXISTS journal_ops_status INSTEAD OF INSERT ON journal_ops
    WHEN NEW.kind = {STATUS} BEGIN
    SELECT RAISE(ABORT, 'wingman-actors: status of an unknown run')
        WHERE NOT EXISTS (SELECT 1 FROM main.runs WHERE id = NEW.run);
    UPDATE runs SET status = NEW.a, error = NEW.b, expires = NEW.c, updated = NEW.d WHERE id = NEW.run;
END""",
    # An inner run's parent, right after its RUN row (a row of its own: a top-level run,
    # the common case, binds no more parameters). An unknown parent fails its foreign key.
    f"""CREATE TEMP TRIGGER IF NOT EXISTS journal_ops_parent INSTEAD OF INSERT ON journal_ops
    WHEN NEW.kind = {PARENT} BEGIN
    UPDATE runs SET parent = NEW.a WHERE id = NEW.run;
END""",
)
_SQL: dict[int, str] = {}


def install(conn: sqlite3.Connection) -> None:
    """Create the view and its trigger on ``conn`` (temporary: they live with the connection)."""
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute(_VIEW)
    for trigger in _TRIGGERS:
        conn.execute(trigger)


def _statement(rows: int) -> str:
    sql = _SQL.get(rows)
    if sql is None:
        one = "(" + ", ".join("?" * _COLUMNS) + ")"
        sql = _SQL[rows] = "INSERT INTO temp.journal_ops VALUES " + ", ".join([one] * rows)
    return sql


def apply_rows(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> bool:
    """Apply ``rows`` in order: one statement (outside a transaction, a commit of its own);
    beyond 64 rows, statements of at most 64 rows, atomic together.

    Returns:
        False if a write broke a rule: then nothing was applied.
    """
    if len(rows) <= _CHUNK:
        try:
            conn.execute(_statement(len(rows)), [v for row in rows for v in row])
        except sqlite3.IntegrityError:
            return False
        return True
    conn.execute("SAVEPOINT journal_ops")  # outside a transaction, this begins one
    done = 0
    try:
        while done < len(rows):
            k = min(_CHUNK, len(rows) - done)
            conn.execute(_statement(k), [v for row in rows[done:done + k] for v in row])
            done += k
    except sqlite3.IntegrityError:
        conn.execute("ROLLBACK TO journal_ops")
        conn.execute("RELEASE journal_ops")
        return False
    conn.execute("RELEASE journal_ops")
    return True


def apply_group(conn: sqlite3.Connection, ops: Sequence[Op]) -> None:
    """Apply journalling ops (``BeginRun``, ``Append``, ``SetStatus``, in queue order) as
    one statement, or, if one of them breaks a rule, one by one (in one transaction), each
    with its own result or error. Outside a transaction, what this applies is committed."""
    from ._ops import BeginRun, Journalling

    rows: list[tuple[Any, ...]] = []
    for op in ops:
        if not isinstance(op, Journalling):
            raise TypeError(f"the journal_ops statement cannot apply {op.describe()}")
        op.add_rows(rows)
    if apply_rows(conn, rows):
        for op in ops:
            if isinstance(op, BeginRun):
                op.shapes.add(op.shape[0])
                op.result = op.row[0]
        return
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN IMMEDIATE")
    try:
        for op in ops:
            op.result = op.apply(conn)
    except BaseException:
        if own:
            conn.execute("ROLLBACK")
        raise
    if own:
        conn.execute("COMMIT")
