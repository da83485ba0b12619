"""`wingman-actors run` of a formation with a nested formation: the live table has a row
per inner node, named by path, and the event lines name them so."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.peers import Gate
from wingman_actors import Formation
from wingman_actors._launcher.progress import RunBoard, event_line
from wingman_actors.cli import main

NESTED = """
    from wingman_actors import Formation

    def shout(text: str) -> str:
        return text.upper()

    def mark(text: str) -> str:
        return text + "!"

    inner = Formation("inner").add_function("shout", shout).add_function("mark", mark)
    inner.connect("shout", "mark")
    formation = Formation("outer").add_formation("sub", inner)
"""


def test_the_live_table_shows_the_inner_nodes_by_path(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, formation_file: Callable[[str, str], Path]
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["run", str(formation_file("nested", NESTED)), "--input", "hi", "--no-store"]) == 0
    out, err = capsys.readouterr()
    assert out == "HI!\n"
    assert "sub/shout" in err and "sub/mark" in err
    assert err.count("✓ done") >= 3


def test_event_lines_name_the_inner_nodes_by_path(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path]
) -> None:
    assert main(["run", str(formation_file("nested", NESTED)), "--input", "hi", "--events", "--no-store"]) == 0
    err = capsys.readouterr().err
    assert "sub/shout: done" in err and "sub/mark: done" in err


def test_the_live_table_shows_an_inner_node_cut_by_its_formation_nodes_timeout_as_ended_not_running() -> None:
    gate = Gate()
    inner = Formation("inner").add_function("shout", str.upper).add_function("wait", gate).connect("shout", "wait")
    outer = Formation("outer").add_formation("sub", inner, timeout=1.0, on_error="skip")
    board = RunBoard([("sub", "formation"), ("sub/shout", "function"), ("sub/wait", "function")])
    lines: list[str] = []
    try:
        result = outer.run("hi", on_event=lambda e: (board.apply(e), lines.append(event_line(e, 0.0) or "")))
    finally:
        gate.opened.set()
    assert result.outputs == {} and gate.reached.is_set()
    assert [board.rows[n].status for n in ("sub", "sub/shout", "sub/wait")] == ["failed", "done", "skipped"]
    assert "cancelled" in board.rows["sub/wait"].note
    assert any(line.endswith("sub/wait: skipped (cancelled: the inner run of 'sub' was cancelled)") for line in lines)


def test_runs_lists_a_nested_runs_outer_run_only(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path], tmp_path: Path
) -> None:
    import json

    store = str(tmp_path / "runs.sqlite")
    assert main(["run", str(formation_file("nested", NESTED)), "--input", "hi", "--store", store]) == 0
    capsys.readouterr()
    assert main(["runs", "--store", store, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["formation"], r["status"]) for r in rows] == [("outer", "succeeded")]
    assert main(["runs", "--store", store]) == 0
    table = capsys.readouterr().out
    assert "outer" in table and "/sub/1" not in table


def test_resume_of_an_inner_run_is_refused_naming_the_outer_run_and_its_command(
    capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path], tmp_path: Path
) -> None:
    from wingman_actors.store import RunStore

    store = str(tmp_path / "runs.sqlite")
    assert main(["run", str(formation_file("nested", NESTED)), "--input", "hi", "--store", store]) == 0
    with RunStore(store) as opened:
        (outer,) = opened.runs()
    capsys.readouterr()
    assert main(["resume", f"{outer.id}/sub/1", "--store", store]) == 2
    err = capsys.readouterr().err
    assert f"is an inner run of run {outer.id}" in err
    assert f"wingman-actors resume {outer.id} --store {store}" in err
