"""The launcher with map nodes: the live table shows them with their kind, and
``graph`` draws them."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from wingman_actors.cli import main

LENGTHS = """
    from wingman_actors import Formation

    def words(text: str) -> list[str]:
        return text.split()

    async def length(word: str) -> int:
        return len(word)

    formation = (Formation("lengths").add_function("words", words)
                 .add_map("length", length, max_workers=3).connect("words", "length"))
"""


def test_the_live_table_shows_a_map_node_and_its_kind(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, formation_file: Callable[[str, str], Path]
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["run", str(formation_file("lengths", LENGTHS)), "--input", "a bb ccc", "--no-store"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == [1, 2, 3]
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", err)  # the live table's colours and cursor moves
    row = next(line for line in plain.splitlines() if " length " in line and "done" in line)
    assert " map " in row


def test_graph_draws_a_map_node(capsys: pytest.CaptureFixture[str], formation_file: Callable[[str, str], Path]) -> None:
    assert main(["graph", str(formation_file("lengths", LENGTHS))]) == 0
    assert 'length[/"map: length \u00d73"/]' in capsys.readouterr().out
