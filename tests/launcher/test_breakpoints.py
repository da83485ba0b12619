"""``run --break-before NODE`` / ``--break-after NODE``: the run suspends there, and
``resume`` continues it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from wingman_actors.cli import main

TWO_STEPS = """
from wingman_actors import Formation

formation = Formation("two").add_function("a", str.strip).add_function("b", str.upper).connect("a", "b")
"""


def _suspended(store: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(["runs", "--store", str(store), "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    return next(r for r in runs if r["status"] == "suspended")


def test_break_after_suspends_the_run_with_the_node_s_output(
    formation_file: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow, store = formation_file("two", TWO_STEPS), tmp_path / "runs.sqlite"
    assert main(["run", str(flow), "-i", " x ", "--store", str(store), "--break-after", "a"]) == 0
    err = capsys.readouterr().err
    assert "waiting at node 'a'" in err and '"breakpoint": "after"' in err


def test_a_run_stopped_at_a_breakpoint_resumes_to_the_end(
    formation_file: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow, store = formation_file("two", TWO_STEPS), tmp_path / "runs.sqlite"
    assert main(["run", str(flow), "-i", " x ", "--store", str(store), "--break-before", "b"]) == 0
    run_id = str(_suspended(store, capsys)["run_id"])
    assert main(["resume", run_id, "--store", str(store)]) == 0
    assert capsys.readouterr().out.strip() == "X"


def test_a_breakpoint_without_a_store_is_a_usage_error_saying_it_needs_one(
    formation_file: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    flow = formation_file("two", TWO_STEPS)
    assert main(["run", str(flow), "-i", "x", "--no-store", "--break-before", "b"]) == 2
    assert "needs a journalled run" in capsys.readouterr().err


def test_a_breakpoint_without_a_store_names_the_flags_that_fix_it_not_the_declaration(
    formation_file: Callable[[str, str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    flow = formation_file("two", TWO_STEPS)
    assert main(["run", str(flow), "-i", "x", "--no-store", "--break-before", "b"]) == 2
    err = capsys.readouterr().err
    assert "--no-store" in err and "--store PATH" in err
    assert "formation.run(" not in err and "declaration" not in err


def test_a_breakpoint_on_an_unknown_node_names_the_flag_and_the_nodes_not_the_declaration(
    formation_file: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = formation_file("two", TWO_STEPS)
    assert main(["run", str(flow), "-i", "x", "--store", str(tmp_path / "runs.sqlite"), "--break-after", "c"]) == 2
    err = capsys.readouterr().err
    assert "--break-after c" in err and "'a', 'b'" in err and "declaration" not in err


def test_a_run_stopped_at_a_breakpoint_prints_non_ascii_values_as_they_are(
    formation_file: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow, store = formation_file("two", TWO_STEPS), tmp_path / "runs.sqlite"
    assert main(["run", str(flow), "-i", " café ", "--store", str(store), "--break-after", "a"]) == 0
    assert """waiting at node 'a': {"breakpoint": "after", "output": "café"}""" in capsys.readouterr().err


def test_a_run_stopped_at_a_breakpoint_says_how_to_continue_it_without_an_answer(
    formation_file: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow, store = formation_file("two", TWO_STEPS), tmp_path / "runs.sqlite"
    assert main(["run", str(flow), "-i", " x ", "--store", str(store), "--break-before", "b"]) == 0
    err = capsys.readouterr().err
    assert "waiting at node 'b'" in err
    line = next(line for line in err.splitlines() if "wingman-actors resume" in line)
    assert line.startswith("continue it with: ") and "--answer" not in line


def test_runs_show_of_a_run_at_a_breakpoint_says_how_to_continue_it_without_an_answer(
    formation_file: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow, store = formation_file("two", TWO_STEPS), tmp_path / "runs.sqlite"
    assert main(["run", str(flow), "-i", " x ", "--store", str(store), "--break-after", "a"]) == 0
    run_id = str(_suspended(store, capsys)["run_id"])
    assert main(["runs", "show", run_id, "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "waiting at node 'a'" in out
    line = next(line for line in out.splitlines() if "wingman-actors resume" in line)
    assert line.startswith("continue it with: ") and "--answer" not in line
