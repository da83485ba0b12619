"""SQLite's own errors reach the caller of the store as the store's errors, naming what
failed; a failed write nobody waits for is logged once and raised by the next flush()."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from wingman_actors.store import RunStore, StoreError, StoreWriteError

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
