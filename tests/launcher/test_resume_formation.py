"""``resume RUN_ID --formation FILE``: a file that builds another formation than the run
started with is a usage error that names the flag and the formation the run needs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.cli import main

OTHER = """
from wingman_actors import Formation

formation = Formation("other").add_function("clean", str.strip)
"""


def ask(text: str) -> str:
    return f"{text}: {interrupt({'question': 'go?'})}"


def test_resume_with_a_file_of_another_formation_names_the_flag_not_the_declaration(
    formation_file: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.sqlite"
    run = Formation("asking").add_function("clean", str.strip).add_function("ask", ask).connect("clean", "ask")
    suspended = run.run(" x ", store=store)
    other = formation_file("other", OTHER)
    assert main(["resume", suspended.run_id, "--store", str(store), "--formation", str(other), "--answer", "1"]) == 2
    err = capsys.readouterr().err
    assert "--formation" in err and "'asking'" in err and "node 'ask' (function) is missing" in err, err
    assert "fix the formation's declaration" not in err, err
