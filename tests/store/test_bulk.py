"""Journalling writes applied as one statement leave the file as if applied one by one, in order."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.store.conftest import chain_shape
from wingman_actors.store._bulk import apply_group, install
from wingman_actors.store._ops import Append, BeginRun, SetStatus
from wingman_actors.store._schema import connect, migrate
from wingman_actors.store._writer import Op

_SHAPE = chain_shape()


def _database(path: Path) -> sqlite3.Connection:
    conn = connect(str(path), synchronous="NORMAL")
    migrate(conn, str(path))
    install(conn)
    return conn


def _ops(seed: int, count: int) -> list[Op]:
    """A random mix of new runs, entries and status changes, with the mistakes a caller can
    make: duplicate ids, entries and statuses of unknown runs, an entry before its run."""
    rng = random.Random(seed)
    begun: list[str] = []
    ops: list[Op] = []
    shapes: set[str] = set()
    for i in range(count):
        roll = rng.random()
        if roll < 0.3 or not begun:
            run_id = f"run-{i}" if rng.random() > 0.05 or not begun else rng.choice(begun)  # 5 %: a duplicate
            if rng.random() < 0.03:
                ops.append(Append((run_id, 1, "early", 1, None, 0, '"before its run"')))
            row = (run_id, "chain", _SHAPE.fingerprint, None, 0, str(i), float(i), float(i), None)
            ops.append(BeginRun(row, (_SHAPE.fingerprint, _SHAPE.json), "test.sqlite", shapes))
            begun.append(run_id)
        elif roll < 0.8:
            run_id = rng.choice(begun) if rng.random() > 0.03 else "no-such-run"
            ops.append(Append((run_id, rng.choice((1, 2, 3)), rng.choice("abc"), rng.randint(1, 3),
                               rng.choice((None, 0, 1)), 0, f'"value {i}"')))
        else:
            run_id = rng.choice(begun) if rng.random() > 0.05 else "no-such-run"
            status = rng.choice(("succeeded", "failed", "suspended", "cancelled"))
            ops.append(SetStatus(run_id, status, "boom" if status == "failed" else None,
                                 float(i) if status == "suspended" else None, float(i) + 0.5, "test.sqlite"))
    return ops


def _outcome(conn: sqlite3.Connection, ops: list[Op]) -> dict[str, Any]:
    return {
        "runs": conn.execute("SELECT id, formation, input, status, error, expires, created, updated FROM runs "
                             "ORDER BY key").fetchall(),
        "journal": conn.execute("SELECT r.id, j.kind, j.node, j.visit, j.item, j.value FROM journal j "
                                "JOIN runs r ON r.key = j.run ORDER BY j.seq").fetchall(),
        "ops": [(op.result, type(op.error).__name__ if op.error else None) for op in ops],
    }


def _apply(conn: sqlite3.Connection, ops: list[Op], *, together: bool, size: int = 400) -> None:
    """Apply ``ops`` one by one, or together in groups of ``size`` (outside a transaction:
    each group commits itself, as the writer applies a batch of journalling ops only)."""
    if together:
        for i in range(0, len(ops), size):
            apply_group(conn, ops[i:i + size])
        assert not conn.in_transaction
        return
    conn.execute("BEGIN IMMEDIATE")
    for op in ops:
        op.result = op.apply(conn)
    conn.execute("COMMIT")


@pytest.mark.parametrize("size", [400, 40, 3])  # beyond one statement's 64 rows; one statement; a few
def test_a_mixed_batch_applied_together_equals_it_applied_one_by_one(tmp_path: Path, size: int) -> None:
    for seed in range(5):
        one_by_one, together = _database(tmp_path / f"a{seed}.sqlite"), _database(tmp_path / f"b{seed}.sqlite")
        try:
            expected_ops, ops = _ops(seed, 400), _ops(seed, 400)
            _apply(one_by_one, expected_ops, together=False)
            _apply(together, ops, together=True, size=size)
            expected = _outcome(one_by_one, expected_ops)
            assert _outcome(together, ops) == expected
            # the mix did exercise every mistake
            errors = {error for _, error in expected["ops"]}
            assert {"RunExistsError", "KeyError", "UnknownRunError"} <= errors, errors
        finally:
            one_by_one.close()
            together.close()


def test_more_rows_than_one_statement_holds_are_all_written(tmp_path: Path) -> None:
    conn = _database(tmp_path / "runs.sqlite")
    try:
        shapes: set[str] = set()
        ops: list[Op] = [BeginRun((f"r{i}", "chain", _SHAPE.fingerprint, None, 0, str(i), 1.0, 1.0, None),
                                  (_SHAPE.fingerprint, _SHAPE.json), "test.sqlite", shapes) for i in range(203)]
        ops += [Append((f"r{i}", 1, "a", 1, None, 0, str(i))) for i in range(203)]
        ops += [SetStatus(f"r{i}", "succeeded", None, None, 2.0, "test.sqlite") for i in range(203)]
        _apply(conn, ops, together=True)
        assert conn.execute("SELECT count(*), min(status), max(status) FROM runs").fetchone() == (
            203, "succeeded", "succeeded")
        assert [r[0] for r in conn.execute("SELECT value FROM journal ORDER BY seq")] == [str(i) for i in range(203)]
        assert [op.result for op in ops[:203]] == [f"r{i}" for i in range(203)]
    finally:
        conn.close()


def test_of_several_statuses_of_one_run_the_last_wins(tmp_path: Path) -> None:
    conn = _database(tmp_path / "runs.sqlite")
    try:
        row = ("r", "chain", _SHAPE.fingerprint, None, 0, "1", 1.0, 1.0, None)
        ops: list[Op] = [BeginRun(row, (_SHAPE.fingerprint, _SHAPE.json), "test.sqlite"),
                         SetStatus("r", "suspended", None, 9.0, 2.0, "test.sqlite"),
                         SetStatus("r", "failed", "boom", None, 3.0, "test.sqlite")]
        _apply(conn, ops, together=True)
        assert conn.execute("SELECT status, error, expires, updated FROM runs").fetchone() == (
            "failed", "boom", None, 3.0)
    finally:
        conn.close()
