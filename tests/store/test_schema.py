"""The store file: a versioned schema that migrates older files, and clear errors for paths
that are not (and cannot become) a run store."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from wingman_actors.store import FormationShape, RunStore, StoreOpenError, StoreVersionError
from wingman_actors.store._schema import APPLICATION_ID, LATEST_VERSION, MIGRATIONS

from .conftest import chain_shape

# The layout of schema version 1, written out as that version wrote it (not taken from
# the migrations, so a change to them cannot hide a broken upgrade).
_V1 = [
    f"PRAGMA application_id = {APPLICATION_ID}",
    "CREATE TABLE shapes (fingerprint TEXT PRIMARY KEY, shape TEXT NOT NULL) WITHOUT ROWID",
    """CREATE TABLE runs (id TEXT PRIMARY KEY, formation TEXT NOT NULL,
        fingerprint TEXT NOT NULL REFERENCES shapes (fingerprint), source TEXT, input_codec INTEGER NOT NULL,
        input TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed',
        'cancelled', 'suspended', 'expired', 'interrupted')), created REAL NOT NULL, updated REAL NOT NULL,
        error TEXT) WITHOUT ROWID""",
    """CREATE TABLE journal (seq INTEGER PRIMARY KEY, run TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        kind INTEGER NOT NULL, node TEXT NOT NULL, visit INTEGER NOT NULL, item INTEGER, codec INTEGER NOT NULL,
        value TEXT NOT NULL)""",
    "CREATE INDEX journal_by_run ON journal (run, seq)",
    "PRAGMA user_version = 1",
]


def _write_v1(path: Path, shape: FormationShape) -> None:
    conn = sqlite3.connect(path)
    for statement in _V1:
        conn.execute(statement)
    now = time.time()
    with conn:
        conn.execute("INSERT INTO shapes VALUES (?, ?)", (shape.fingerprint, shape.to_json()))
        for run_id, status in (("old-done", "succeeded"), ("old-running", "running")):
            conn.execute("INSERT INTO runs VALUES (?, 'chain', ?, 'chain.py', 0, '7', ?, ?, ?, NULL)",
                         (run_id, shape.fingerprint, status, now - 60, now - 60))
        conn.execute("INSERT INTO journal (run, kind, node, visit, item, codec, value) "
                     "VALUES ('old-running', 1, 'a', 1, NULL, 1, '{\"__t\":\"tuple\",\"v\":[1,2]}')")
    conn.close()


def test_a_store_file_of_schema_version_1_is_migrated_and_keeps_its_runs(path: Path) -> None:
    shape = chain_shape()
    _write_v1(path, shape)
    with RunStore(path, suspend_ttl=0.01) as store:
        assert {r.id: r.status for r in store.runs()} == {"old-done": "succeeded", "old-running": "interrupted"}
        journal = store.claim_run("old-running", shape)
        assert journal.run.input == 7 and journal.run.source == "chain.py" and journal.visits == {"a": {1: (1, 2)}}
        store.record_visit("old-running", "b", 1, 3)
        store.set_status("old-running", "suspended")  # expiry needs the column version 2 added
        time.sleep(0.05)
        assert store.get("old-running").status == "expired"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION == 7
    assert conn.execute("SELECT typeof(run) FROM journal").fetchall() == [("integer",)] * 2
    conn.close()


def test_a_store_file_of_schema_version_6_is_migrated_and_takes_cancel_requests(path: Path) -> None:
    _write_v1(path, chain_shape())
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("BEGIN")
    for migration in MIGRATIONS[1:6]:  # versions 2 to 6, as released
        for statement in migration.statements:
            conn.execute(statement)
    conn.execute("PRAGMA user_version = 6")
    conn.execute("COMMIT")
    conn.close()
    with RunStore(path) as store:
        assert {r.id: r.status for r in store.runs()} == {"old-done": "succeeded", "old-running": "interrupted"}
        run_id = store.begin_run("chain", chain_shape(), 1)
        assert store.request_cancel(run_id) is True
        assert store.get(run_id).cancel_requested is not None
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION
    conn.close()


def test_a_new_store_file_gets_the_latest_schema(path: Path) -> None:
    RunStore(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_VERSION
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_a_newer_schema_version_is_refused_asking_for_an_upgrade(path: Path) -> None:
    RunStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(StoreVersionError, match=r"schema version 99.*up to 7.*pip install -U") as err:
        RunStore(path)
    assert (err.value.version, err.value.supported) == (99, LATEST_VERSION)


def test_a_missing_folder_is_named_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(StoreOpenError, match=r"folder .*nowhere does not exist; create it"):
        RunStore(tmp_path / "nowhere" / "runs.sqlite")


def test_a_directory_is_refused_with_a_file_path_suggestion(tmp_path: Path) -> None:
    with pytest.raises(StoreOpenError, match=r"is a directory; pass a file path such as .*runs.sqlite"):
        RunStore(tmp_path)


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    with pytest.raises(StoreOpenError, match="not an SQLite database"):
        RunStore(notes)
    assert notes.read_text() == "my notes\n"


def test_another_application_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    other = tmp_path / "app.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.close()
    with pytest.raises(StoreOpenError, match=r"another application.*users"):
        RunStore(other)
    conn = sqlite3.connect(other)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["users"]
    conn.close()


def test_an_in_memory_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreOpenError, match="database file"):
        RunStore(":memory:")
    with pytest.raises(StoreOpenError, match="database file"):
        RunStore("")


def test_a_bad_synchronous_level_is_refused(path: Path) -> None:
    with pytest.raises(ValueError, match="'NORMAL' or 'FULL'"):
        RunStore(path, synchronous="OFF")  # type: ignore[arg-type]


def test_open_errors_are_value_errors() -> None:
    assert issubclass(StoreOpenError, ValueError)


def test_a_corrupt_sqlite_file_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 16)
    with pytest.raises(StoreOpenError, match=r"RunStore cannot (open|prepare) .*broken.sqlite"):
        RunStore(broken)


def test_inner_runs_journalled_before_version_4_get_their_parent_and_are_hidden(path: Path) -> None:
    shape = chain_shape()
    _write_v1(path, shape)
    conn = sqlite3.connect(path)
    now = time.time()
    with conn:
        for run_id in ("old-done/sub/1", "old-done/sub/1/deeper/2", "old-done/each/12", "x/y/not-a-visit",
                       "gone/sub/1"):
            conn.execute("INSERT INTO runs VALUES (?, 'inner', ?, NULL, 0, '7', 'succeeded', ?, ?, NULL)",
                         (run_id, shape.fingerprint, now, now))
    conn.close()

    with RunStore(path) as store:
        assert sorted(r.id for r in store.runs()) == ["gone/sub/1", "old-done", "old-running", "x/y/not-a-visit"]
    conn = sqlite3.connect(path)
    parents = dict(conn.execute("SELECT id, parent FROM runs WHERE parent IS NOT NULL").fetchall())
    conn.close()
    assert parents == {"old-done/sub/1": "old-done", "old-done/sub/1/deeper/2": "old-done/sub/1",
                       "old-done/each/12": "old-done"}
