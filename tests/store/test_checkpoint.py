"""The WAL is copied into the database file by the store's checkpoint thread, not by commits."""

from __future__ import annotations

import os
import time

from wingman_actors.store import FormationShape, RunStore


def test_commits_reach_the_database_file_while_the_store_is_open(sqlite_store: RunStore, shape: FormationShape) -> None:
    # ~2 MB of journal: under SQLite's own autocheckpoint threshold (1,000 pages), so only
    # the checkpoint thread copies it into the file before the store closes.
    before = os.path.getsize(sqlite_store.path)
    for i in range(200):
        run_id = sqlite_store.begin_run("chain", shape, i)
        sqlite_store.record_visit(run_id, "a", 1, "x" * 10_000)
    sqlite_store.flush()
    deadline = time.monotonic() + 10
    while os.path.getsize(sqlite_store.path) < before + 1_500_000 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert os.path.getsize(sqlite_store.path) >= before + 1_500_000
    assert sqlite_store.load(run_id).visits == {"a": {1: "x" * 10_000}}


def test_the_writer_does_not_checkpoint_inside_its_commits(sqlite_store: RunStore) -> None:
    # the writer's connection (private; read to pin the setting this module relies on)
    conn = sqlite_store._writer._conn
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
