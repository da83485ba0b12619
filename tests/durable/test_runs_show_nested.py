"""``wingman-actors runs show`` of a run suspended inside a nested formation: the interrupt
named by its path as ``FormationResult.interrupt`` names it, the inner node and its formation
node suspended, the inner visits done so far with their outputs, and what follows pending."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wingman_actors import Formation, interrupt
from wingman_actors.cli import main


def _ask(text: str) -> str:
    return f"{text}: {interrupt({'go?': text})}"


def nested() -> Formation:
    inner = (Formation("inner").add_function("prepare", str.strip).add_function("ask", _ask)
             .add_function("finish", str.upper).connect("prepare", "ask").connect("ask", "finish"))
    return (Formation("outer").add_function("first", str.lower).add_formation("sub", inner)
            .add_function("last", str.title).connect("first", "sub").connect("sub", "last"))


def show(path: Path, run_id: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["runs", "show", run_id, "--store", str(path), "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_runs_show_names_an_inner_interrupt_by_its_path_as_the_result_does(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = nested().run(" X ", store=path)
    assert show(path, result.run_id, capsys)["interrupt"]["node"] == result.interrupt["node"] == "sub/ask"


def test_runs_show_of_a_run_suspended_inside_a_nested_formation_shows_each_node_where_it_is(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = nested().run(" X ", store=path).run_id
    nodes = show(path, run_id, capsys)["nodes"]
    assert {name: n["status"] for name, n in nodes.items()} == {
        "first": "succeeded", "sub": "suspended", "sub/prepare": "succeeded", "sub/ask": "suspended",
        "sub/finish": "pending", "last": "pending"}
    assert nodes["sub/prepare"]["outputs"] == ["x"]


def test_the_store_viewer_shows_a_run_suspended_inside_a_nested_formation_node_by_node(path: Path) -> None:
    from starlette.testclient import TestClient

    from wingman_actors.server._viewer_store import create_store_viewer

    run_id = nested().run(" X ", store=path).run_id
    with TestClient(create_store_viewer(path), base_url="http://127.0.0.1") as viewer:
        doc = viewer.get(f"/ui/api/runs/{run_id}").json()
    assert doc["interrupt"]["node"] == "sub/ask"
    assert {name: n["status"] for name, n in doc["nodes"].items()} == {
        "first": "succeeded", "sub": "suspended", "sub/prepare": "succeeded", "sub/ask": "suspended",
        "sub/finish": "pending", "last": "pending"}


def test_runs_show_names_an_interrupt_inside_a_map_over_a_formation_by_its_path_as_the_result_does(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    per_item = Formation("per_item").add_function("ask", _ask).add_function("finish", str.upper).connect("ask", "finish")
    mapped = (Formation("mapped").add_function("split", str.split).add_map("each", formation=per_item)
              .add_function("last", len).connect("split", "each").connect("each", "last"))
    result = mapped.run("a b", store=path)
    document = show(path, result.run_id, capsys)
    assert document["interrupt"]["node"] == result.interrupt["node"] == "each/0/ask"
    assert {name: n["status"] for name, n in document["nodes"].items()} == {
        "split": "succeeded", "each": "suspended", "each/ask": "suspended", "each/finish": "pending",
        "last": "pending"}  # the items' inner nodes, merged as a nested formation's visits are
