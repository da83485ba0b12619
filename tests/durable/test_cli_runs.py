"""``wingman-actors runs --store PATH``: the store's runs as a table or JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wingman_actors import Formation
from wingman_actors.cli import main


def test_runs_lists_the_store_runs_as_a_table_and_as_json(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = Formation("listed").add_function("a", lambda x: x)
    run_id = f.run(1, store=path).run_id
    assert main(["runs", "--store", str(path)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["ID", "FORMATION", "STATUS", "CREATED", "UPDATED"]
    assert table[1].split()[:3] == [run_id, "listed", "succeeded"]
    assert main(["runs", "--store", str(path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["id"], r["status"]) for r in rows] == [(run_id, "succeeded")]


def test_runs_with_a_missing_store_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "--store", str(tmp_path / "nope.sqlite")]) == 2
    assert "no such file" in capsys.readouterr().err
