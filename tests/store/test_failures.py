"""SQLite's own errors reach the caller of the store as the store's errors, naming what
failed; a failed write nobody waits for is logged once and raised by the next flush()."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from wingman_actors import Formation
from wingman_actors.store import RunStore, StoreClosedError, StoreError, StoreWriteError

from .conftest import chain_shape


def _drop_the_journal(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE journal")
    conn.close()


def test_a_waited_write_that_sqlite_fails_raises_a_store_write_error_naming_it(path: Path) -> None:
    with RunStore(path) as store:
        run_id = store.begin_run("chain", chain_shape(), 1)
        _drop_the_journal(path)
        with pytest.raises(StoreWriteError, match=r"answer|journal") as info:
            store.answer(run_id, "yes")
        assert isinstance(info.value.__cause__, sqlite3.Error)


def test_a_read_that_sqlite_fails_raises_a_store_error_naming_the_file(path: Path) -> None:
    with RunStore(path) as store:
        run_id = store.begin_run("chain", chain_shape(), 1)
        _drop_the_journal(path)
        with pytest.raises(StoreError, match=r"runs.sqlite: a read failed: .*journal") as info:
            store.load(run_id)
        assert isinstance(info.value.__cause__, sqlite3.Error)


def test_a_failed_write_nobody_waits_for_is_logged_once_and_raised_by_flush(
        path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with RunStore(path) as store:
        run_id = store.begin_run("chain", chain_shape(), 1)
        _drop_the_journal(path)
        with caplog.at_level(logging.ERROR, logger="wingman_actors.store"):
            store.record_visit(run_id, "a", 1, "out")
            with pytest.raises(StoreWriteError, match=r"record visit of node 'a' \(visit 1\) of run"):
                store.flush()
        failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(failures) == 1 and run_id in failures[0].getMessage()
        store.flush()  # reported once


def _pair() -> Formation:
    return Formation("pair").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2).connect("a", "b")


def test_a_run_whose_journal_writes_fail_raises_a_store_write_error_naming_it(path: Path) -> None:
    with RunStore(path) as store:
        _drop_the_journal(path)
        with pytest.raises(StoreWriteError, match=r"record visit of node 'a' \(visit 1\) of run 'mine'"):
            _pair().run(1, store=store, run_id="mine")


def test_a_run_is_not_failed_by_the_failed_writes_of_another_run(path: Path) -> None:
    with RunStore(path) as store:
        store.record_visit("another", "a", 1, 0)  # no such run: this write fails
        assert _pair().run(1, store=store, run_id="mine").output == 4
        with pytest.raises(StoreWriteError, match="'another'"):
            store.flush()


def test_a_run_on_a_shared_store_returns_once_its_status_is_committed(path: Path) -> None:
    with RunStore(path) as store:
        _pair().run(1, store=store, run_id="mine")
        conn = sqlite3.connect(path)  # another connection (as another process) sees it
        assert conn.execute("SELECT status FROM runs WHERE id = 'mine'").fetchone() == ("succeeded",)
        conn.close()


def test_a_flush_of_a_closed_store_says_it_is_closed(path: Path) -> None:
    store = RunStore(path)
    store.close()
    with pytest.raises(StoreClosedError, match="closed"):
        store.flush()


def test_a_flush_of_one_run_raises_its_own_and_its_nested_runs_failed_writes_only(path: Path) -> None:
    with RunStore(path) as store:
        for run_id in ("outer/inner/1", "outer2", "other"):  # no such runs: these writes fail
            store.record_visit(run_id, "a", 1, 0)
        with pytest.raises(StoreWriteError, match="'outer/inner/1'") as info:
            store.flush("outer")
        assert len(info.value.errors) == 1
        with pytest.raises(StoreWriteError) as rest:
            store.flush()
        assert len(rest.value.errors) == 2
