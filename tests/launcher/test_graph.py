"""`wingman-actors graph`: Mermaid, DOT, PNG with and without Graphviz."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from wingman_actors.cli import main


def test_graph_prints_mermaid_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "formations/budget.py"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("flowchart TD") and 'categorise[["fleet: categorise \u00d74"]]' in out


def test_graph_prints_dot(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "formations.research", "--format", "dot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith('digraph "research" {') and '"outline" -> "draft";' in out


def test_graph_writes_text_to_an_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graph", "formations/budget.py", "-o", str(tmp_path / "budget.mmd")]) == 0
    assert (tmp_path / "budget.mmd").read_text().startswith("flowchart TD")


def test_png_without_graphviz_says_so_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["graph", "formations/budget.py", "--format", "png"]) == 2
    assert "png needs Graphviz's `dot` on PATH; use --format mermaid or dot" in capsys.readouterr().err


def test_png_is_rendered_by_dot_when_it_is_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "dot"  # a stand-in for Graphviz: checks -Tpng, copies the DOT text to the -o path
    fake.write_text('#!/bin/sh\n[ "$1" = "-Tpng" ] || exit 3\ncat > "$3"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "budget.png"
    assert main(["graph", "formations/budget.py", "--format", "png", "-o", str(out)]) == 0
    assert out.read_text().startswith('digraph "budget"')
    assert capsys.readouterr().err.strip() == f"wrote {out}"
