"""A map over a formation keeps its inner runs' traces, as a formation node does: one
trace per inner node (``"each/show"``), its items counted as that node's visits and
their outputs in item order, however many items (the traces do not grow per item)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wingman_actors import Formation
from wingman_actors.cli import main
from wingman_actors.errors import FormationRuntimeError, MapItemsError


def square(x: int) -> int:
    return x * x


def show(x: int) -> str:
    if x == 49:
        raise ValueError("no sevens")
    return f"<{x}>"


def items(n: int) -> list[int]:
    return list(range(n))


def plain(x: int) -> str:
    return f"<{x}>"


def squares(shown: Any = show, **kwargs: Any) -> Formation:
    inner = Formation("per-item").add_function("square", square).add_function("show", shown).connect("square", "show")
    return Formation("outer").add_function("items", items).add_map("each", formation=inner, **kwargs) \
        .connect("items", "each")


def test_the_map_node_is_followed_by_its_inner_nodes_traces_with_one_visit_per_item() -> None:
    result = squares(max_workers=2).run(4)
    assert list(result.nodes) == ["items", "each", "each/square", "each/show"]
    shown = result.nodes["each/show"]
    assert (shown.status, shown.visits, shown.parent) == ("succeeded", 4, "each")
    assert shown.outputs == ["<0>", "<1>", "<4>", "<9>"]  # in item order
    assert result.nodes["each/square"].outputs == [0, 1, 4, 9]
    assert shown.duration_s > 0 and shown.started_at is not None


def test_a_failed_item_shows_its_inner_node_failed_beside_the_items_that_succeeded() -> None:
    result = squares(on_error="skip").run(9)
    assert result.nodes["each"].status == "skipped"
    shown = result.nodes["each/show"]
    assert (shown.status, shown.error, shown.visits) == ("failed", "ValueError: no sevens", 9)
    assert len(shown.outputs) == 8
    assert result.nodes["each/square"].visits == 9


def test_a_run_failed_by_a_map_item_carries_the_inner_traces() -> None:
    with pytest.raises(FormationRuntimeError) as caught:
        squares().run(8)
    assert isinstance(caught.value.__cause__, MapItemsError)
    assert caught.value.nodes["each/show"].status == "failed"


def test_a_map_of_many_items_keeps_one_trace_per_inner_node() -> None:
    result = squares(plain, max_workers=8).run(300)
    assert [n for n in result.nodes if n.startswith("each/")] == ["each/square", "each/show"]
    assert result.nodes["each/show"].visits == 300


def test_runs_show_prints_a_maps_inner_nodes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "runs.sqlite"
    run_id = squares().run(3, store=store).run_id
    assert main(["runs", "show", run_id, "--store", str(store), "--json"]) == 0
    nodes = json.loads(capsys.readouterr().out)["nodes"]
    assert (nodes["each/show"]["status"], nodes["each/show"]["visits"]) == ("succeeded", 3)
