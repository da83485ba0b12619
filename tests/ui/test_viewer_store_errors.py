"""``wingman-actors ui --store PATH`` over a store it cannot read says so in one line, as the
launcher's `runs` commands do, before it serves anything."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from wingman_actors.cli import main
from wingman_actors.formation import Formation


def damaged_store(folder: Path) -> Path:
    """A run store with one run whose pages past the first few are overwritten."""
    path = folder / "runs.sqlite"
    Formation("notes").add_function("clean", str.strip).run(" x ", store=path)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with path.open("r+b") as file:
        file.seek(4096 * 3)
        file.write(b"\xde\xad" * 2048)
    return path


def test_ui_over_a_damaged_store_says_the_file_is_damaged_as_runs_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = damaged_store(tmp_path)
    assert main(["runs", "--store", str(path)]) == 2
    said_by_runs = capsys.readouterr().err.strip().splitlines()[-1]
    assert main(["ui", "--store", str(path), "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("wingman-actors ui: error: ") and "damaged" in err and str(path) in err, err
    assert err.removeprefix("wingman-actors ui: error: ") in said_by_runs
