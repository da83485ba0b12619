"""The launcher's entry points, usage errors and command hooks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wingman_actors import __version__
from wingman_actors.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def test_python_m_wingman_actors_shows_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "wingman_actors", "--help"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, check=False)
    assert proc.returncode == 0
    for command in ("run", "graph", "providers", "version"):
        assert command in proc.stdout


def test_version_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version"]) == 0
    assert capsys.readouterr().out.strip() == f"wingman-actors {__version__}"


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: wingman-actors" in capsys.readouterr().err


def test_an_unknown_flag_exits_2_without_raising(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py", "--colour"]) == 2
    assert "unrecognized arguments: --colour" in capsys.readouterr().err


def test_a_non_positive_timeout_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "formations/budget.py", "--timeout", "0"]) == 2
    assert "must be > 0 seconds" in capsys.readouterr().err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--help"]) == 0
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().out


def test_the_run_command_has_the_documented_flags() -> None:
    args = build_parser().parse_args(["run", "f.py", "--input", "x", "--provider", "p", "--model", "m",
                                      "--option", "a=1", "--option", "b=2", "--json", "--events", "--debug"])
    assert (args.input, args.provider, args.model, args.option) == ("x", "p", "m", ["a=1", "b=2"])
    assert args.json and args.events and args.debug
