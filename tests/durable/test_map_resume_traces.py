"""A resumed run's map over a formation lists the inner nodes of every item in its traces:
the items its journal already had (run before the resume, not again) as well as those the
resume ran, as the traces of a run that was never suspended do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.cli import main


def _ask(word: str) -> str:
    return f"{word}?{interrupt({'go?': word})}" if word == "b" else word


def per_item() -> Formation:
    return Formation("per_item").add_function("ask", _ask).add_function("finish", str.upper).connect("ask", "finish")


def test_a_resumed_map_lists_the_inner_outputs_of_the_items_journalled_before_its_suspension(tmp_path: Path) -> None:
    outer = Formation("outer").add_map("each", formation=per_item(), max_workers=1)
    suspended = outer.run(["a", "b", "c"], store=tmp_path / "runs.sqlite")
    assert suspended.interrupt is not None and suspended.interrupt["node"] == "each/1/ask"

    result = outer.resume(suspended.run_id, store=tmp_path / "runs.sqlite", answer="yes")

    assert result.output == ["A", "B?YES", "C"]
    assert result.nodes["each/finish"].outputs == ["A", "B?YES", "C"]
    assert result.nodes["each/finish"].visits == 3
    assert result.nodes["each/ask"].outputs == ["a", "b?yes", "c"]
    assert result.nodes["each/ask"].status == "succeeded"


def test_a_resumed_run_lists_the_inner_nodes_of_a_map_visit_its_journal_had_whole(tmp_path: Path) -> None:
    def ask_last(text: str) -> str:
        return f"{text}!{interrupt({'go?': text})}"

    items = Formation("per_item").add_function("square", lambda x: x * x).add_function("show", str).connect(
        "square", "show")
    outer = (Formation("outer").add_map("each", formation=items, max_workers=2).add_function("join", "+".join)
             .add_function("ask", ask_last).connect("each", "join").connect("join", "ask"))
    suspended = outer.run([1, 2, 3], store=tmp_path / "runs.sqlite")
    assert suspended.interrupt is not None and suspended.interrupt["node"] == "ask"

    result = outer.resume(suspended.run_id, store=tmp_path / "runs.sqlite", answer="ok")

    assert result.output == "1+4+9!ok"
    assert result.nodes["each/show"].outputs == ["1", "4", "9"]
    assert result.nodes["each/square"].outputs == [1, 4, 9]
    assert (result.nodes["each/square"].status, result.nodes["each/square"].visits) == ("succeeded", 3)


def test_runs_show_of_a_resumed_map_lists_every_items_inner_outputs_as_the_result_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outer = Formation("outer").add_map("each", formation=per_item(), max_workers=1)
    suspended = outer.run(["a", "b", "c"], store=tmp_path / "runs.sqlite")
    result = outer.resume(suspended.run_id, store=tmp_path / "runs.sqlite", answer="yes")
    capsys.readouterr()

    assert main(["runs", "show", result.run_id, "--store", str(tmp_path / "runs.sqlite"), "--json"]) == 0

    nodes = json.loads(capsys.readouterr().out)["nodes"]
    for name in ("each/ask", "each/finish"):
        assert (nodes[name]["status"], nodes[name]["visits"], nodes[name]["outputs"]) == (
            result.nodes[name].status.value, result.nodes[name].visits, result.nodes[name].outputs)
    assert nodes["each/finish"]["outputs"] == ["A", "B?YES", "C"]
