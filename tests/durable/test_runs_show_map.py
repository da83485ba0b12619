"""``wingman-actors runs show`` and the run viewer of a run with a map over a formation: the
items' inner nodes (``"each/inner"``) show the items' outputs in item order, as
``FormationResult.nodes`` does for the live run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.cli import main
from wingman_actors.store import RunStore


def square(x: int) -> int:
    return x * x


def mapped() -> Formation:
    per_item = Formation("per_item").add_function("square", square).add_function("show", str).connect("square", "show")
    return Formation("outer").add_map("each", formation=per_item, max_workers=2).add_function("total", len).connect(
        "each", "total")


def show(path: Path, run_id: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["runs", "show", run_id, "--store", str(path), "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_runs_show_lists_the_outputs_of_a_maps_inner_nodes_in_item_order_as_the_result_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.sqlite"
    result = mapped().run([1, 2, 3, 4], store=path)
    nodes = show(path, result.run_id, capsys)["nodes"]
    assert nodes["each/square"]["outputs"] == result.nodes["each/square"].outputs == [1, 4, 9, 16]
    assert nodes["each/show"]["outputs"] == result.nodes["each/show"].outputs == ["1", "4", "9", "16"]
    assert nodes["each/show"]["output"] == "16"


def _ask(text: str) -> str:
    return f"{text}: {interrupt({'go?': text})}" if text == "b" else text


def test_runs_show_lists_the_outputs_of_the_items_done_before_one_suspended_a_map(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.sqlite"
    per_item = Formation("per_item").add_function("ask", _ask).add_function("finish", str.upper).connect("ask", "finish")
    outer = Formation("outer").add_map("each", formation=per_item, max_workers=1)
    result = outer.run(["a", "b", "c"], store=path)
    assert result.status == "suspended"
    nodes = show(path, result.run_id, capsys)["nodes"]
    assert nodes["each/finish"]["outputs"] == result.nodes["each/finish"].outputs == ["A", "C"]


def test_the_run_viewer_shows_the_outputs_of_a_maps_inner_nodes_in_item_order(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from wingman_actors.server._viewer_store import create_store_viewer

    path = tmp_path / "runs.sqlite"
    with RunStore(path) as store:
        run_id = mapped().run([3, 1, 2], store=store).run_id
    with TestClient(create_store_viewer(path), base_url="http://127.0.0.1") as viewer:
        view = viewer.get(f"/ui/api/runs/{run_id}").json()
    assert view["nodes"]["each/show"]["outputs"] == ["9", "1", "4"]
    assert view["nodes"]["each/show"]["status"] == "succeeded"
