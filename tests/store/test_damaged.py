"""A store file that is damaged (cut short, or with a garbled page) is refused when opened,
with a ``StoreOpenError`` that says the file is damaged and names the fix: never a raw
database error, and never a fix that does not apply (its permissions). A path of another
type is a ``TypeError`` saying what ``RunStore`` takes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.support.store_fixtures import APPROVAL_FORMATION
from wingman_actors.cli import main
from wingman_actors.store import RunStore, StoreOpenError

from .conftest import chain_shape


def _store_with_runs(path: Path) -> None:
    with RunStore(path) as store:
        shape = chain_shape()
        for _ in range(20):
            run_id = store.begin_run("chain", shape, "x" * 200)
            store.record_visit(run_id, "a", 1, "y" * 200)
            store.set_status(run_id, "succeeded")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything in the file itself
    conn.close()


def _garble_table(path: Path, table: str) -> None:
    conn = sqlite3.connect(path)
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    data[(root - 1) * size:root * size] = b"\xff" * size
    path.write_bytes(bytes(data))


def _says_damaged_with_the_fix(error: StoreOpenError, path: Path) -> None:
    text = str(error)
    assert str(path) in text and "damaged" in text
    assert "backup" in text and "new file" in text
    assert "permissions" not in text


def test_a_store_file_cut_short_is_refused_as_damaged_naming_the_fix(path: Path) -> None:
    _store_with_runs(path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(StoreOpenError) as err:
        RunStore(path)
    _says_damaged_with_the_fix(err.value, path)


@pytest.mark.parametrize("table", ["owners", "runs"])
def test_a_store_file_with_a_garbled_table_is_refused_on_open_as_damaged(path: Path, table: str) -> None:
    _store_with_runs(path)
    _garble_table(path, table)
    with pytest.raises(StoreOpenError) as err:
        RunStore(path)
    _says_damaged_with_the_fix(err.value, path)


def test_a_damaged_store_given_to_the_cli_is_one_line_and_exit_2(
        tmp_path: Path, path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _store_with_runs(path)
    _garble_table(path, "owners")
    module = tmp_path / "approval.py"
    module.write_text(APPROVAL_FORMATION)
    for command in (["runs"], ["run", str(module), "--input", "cats"], ["resume", "some-run"]):
        assert main([*command, "--store", str(path)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and "damaged" in err, command



@pytest.mark.parametrize("bad", [5, None])
def test_a_path_that_is_not_a_str_or_path_is_a_type_error_naming_what_runstore_takes(bad: object) -> None:
    with pytest.raises(TypeError, match=r"RunStore: path must be .*str.*postgresql://.*got " + type(bad).__name__):
        RunStore(bad)  # type: ignore[arg-type]
