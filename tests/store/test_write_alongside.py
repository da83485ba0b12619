"""``RunStore.write_alongside``: a caller's own writes on a SQLite store's file, committed
in the journal's commits, in call order with its writes."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from tests.store.conftest import chain_shape
from wingman_actors.store import RunStore, StoreWriteError


def _table(store: RunStore) -> None:
    store.write_alongside(lambda conn: conn.execute("CREATE TABLE mine (run TEXT PRIMARY KEY, note TEXT)"))


def _rows(path: Path) -> list[tuple[str, str]]:
    """What another connection sees committed."""
    with sqlite3.connect(path) as conn:
        return sorted(conn.execute("SELECT run, note FROM mine"))


def test_a_waited_write_is_committed_on_return_with_its_result(sqlite_store: RunStore, path: Path) -> None:
    _table(sqlite_store)
    count = sqlite_store.write_alongside(lambda conn: conn.execute("INSERT INTO mine VALUES ('r', 'a')").rowcount)
    assert count == 1
    assert _rows(path) == [("r", "a")]


def test_a_write_not_waited_for_commits_with_the_begin_run_that_follows(sqlite_store: RunStore, path: Path) -> None:
    _table(sqlite_store)
    sqlite_store.write_alongside(lambda conn: conn.execute("INSERT INTO mine VALUES ('r', 'started')"), wait=False)
    run_id = sqlite_store.begin_run("f", chain_shape(), 1)
    assert _rows(path) == [("r", "started")]
    assert sqlite_store.get(run_id).status == "running"


def test_a_waited_write_commits_the_journal_writes_queued_before_it(sqlite_store: RunStore, path: Path) -> None:
    _table(sqlite_store)
    run_id = sqlite_store.begin_run("f", chain_shape(), 1)
    sqlite_store.record_visit(run_id, "a", 1, "out")
    sqlite_store.set_status(run_id, "succeeded")  # returns at once
    sqlite_store.write_alongside(lambda conn: conn.execute("INSERT INTO mine VALUES (?, 'done')", (run_id,)))
    with RunStore(path, recover=False) as other:  # another connection: only what is committed
        assert other.get(run_id).status == "succeeded"
        assert other.load(run_id).visits == {"a": {1: "out"}}


def test_a_failing_write_fails_alone_with_a_store_write_error(sqlite_store: RunStore, path: Path) -> None:
    _table(sqlite_store)
    sqlite_store.write_alongside(lambda conn: conn.execute("INSERT INTO mine VALUES ('r', 'first')"), wait=False)
    with pytest.raises(StoreWriteError, match="UNIQUE"):
        sqlite_store.write_alongside(lambda conn: conn.execute("INSERT INTO mine VALUES ('r', 'again')"))
    assert _rows(path) == [("r", "first")]


def test_a_postgresql_store_refuses_write_alongside(postgres_url: str) -> None:
    with RunStore(postgres_url) as store, pytest.raises(NotImplementedError, match="SQLite"):
        store.write_alongside(lambda conn: None)


def test_a_write_with_on_commit_is_told_once_it_is_committed(sqlite_store: RunStore, path: Path) -> None:
    _table(sqlite_store)
    told = threading.Event()
    seen: list[object] = []

    def on_commit(error: BaseException | None) -> None:
        seen.append((error, _rows(path)))  # what another connection sees by then
        told.set()

    sqlite_store.write_alongside(lambda conn: conn.execute("INSERT INTO mine VALUES ('r', 'x')"), wait=False,
                                 on_commit=on_commit)
    assert told.wait(5)
    assert seen == [(None, [("r", "x")])]


def test_a_failing_write_with_on_commit_is_told_its_error_and_not_reported_again(
        sqlite_store: RunStore, path: Path) -> None:
    _table(sqlite_store)
    sqlite_store.write_alongside(lambda conn: conn.execute("INSERT INTO mine VALUES ('r', 'first')"))
    told: list[BaseException | None] = []
    done = threading.Event()
    sqlite_store.write_alongside(lambda conn: conn.execute("INSERT INTO mine VALUES ('r', 'again')"), wait=False,
                                 on_commit=lambda error: (told.append(error), done.set()))
    assert done.wait(5)
    assert isinstance(told[0], sqlite3.IntegrityError)
    sqlite_store.flush()  # its caller was told: nothing left to report
    assert _rows(path) == [("r", "first")]


def test_on_commit_is_refused_for_a_waited_write(sqlite_store: RunStore) -> None:
    with pytest.raises(ValueError, match="on_commit is for wait=False"):
        sqlite_store.write_alongside(lambda conn: None, on_commit=lambda error: None)
