"""``wingman-actors ui --store PATH`` lists as the server's viewer does: runs newest first (the
newest kept when a limit cuts the list), each formation drawn as its newest run recorded it;
and its start route refuses what the launcher refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from wingman_actors import Formation
from wingman_actors.server._viewer_store import create_store_viewer


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite"


@pytest.fixture
def viewer(store: Path) -> Iterator[TestClient]:
    with TestClient(create_store_viewer(store), base_url="http://127.0.0.1") as client:
        yield client


def test_ui_store_lists_runs_newest_first_and_a_limit_keeps_the_newest(store: Path) -> None:
    f = Formation("listed").add_function("a", str.upper)
    ids = [f.run(text, store=store).run_id for text in ("one", "two", "three")]
    with TestClient(create_store_viewer(store), base_url="http://127.0.0.1") as viewer:
        assert [r["run_id"] for r in viewer.get("/ui/api/runs").json()] == ids[::-1]
        assert [r["run_id"] for r in viewer.get("/ui/api/runs", params={"limit": 2}).json()] == ids[:0:-1]
        by_formation = viewer.get("/ui/api/runs", params={"formation_id": "listed", "limit": 1}).json()
        assert [r["run_id"] for r in by_formation] == ids[-1:]


def test_ui_store_draws_a_formation_as_its_newest_run_recorded_it(store: Path) -> None:
    Formation("grows").add_function("a", str.upper).run("x", store=store)
    Formation("grows").add_function("a", str.upper).add_function("b", str.lower).connect("a", "b").run("x", store=store)
    with TestClient(create_store_viewer(store), base_url="http://127.0.0.1") as viewer:
        graph = viewer.get("/ui/api/formations").json()[0]["graph"]
    assert [n["name"] for n in graph["nodes"]] == ["a", "b"]


def _no_default_input(tmp_path: Path) -> Path:
    file = tmp_path / "plain.py"
    file.write_text("from wingman_actors import Formation\n\n"
                    "formation = Formation('plain').add_function('shout', str.upper)\n")
    return file


def test_a_start_without_an_input_of_a_file_with_no_default_input_is_a_400_saying_so(
        tmp_path: Path, store: Path) -> None:
    file = _no_default_input(tmp_path)
    with TestClient(create_store_viewer(store, formations=[str(file)]), base_url="http://127.0.0.1") as viewer:
        refused: Any = viewer.post("/ui/api/formations/plain/runs", json={})
        assert refused.status_code == 400, refused.text
        assert "no default input" in refused.json()["error"] and "input" in refused.json()["fields"]
        assert viewer.get("/ui/api/runs").json() == []  # no run was started


def test_starting_a_formation_the_viewer_does_not_know_is_a_404_naming_the_formations(
        tmp_path: Path, store: Path) -> None:
    file = _no_default_input(tmp_path)
    with TestClient(create_store_viewer(store, formations=[str(file)]), base_url="http://127.0.0.1") as viewer:
        refused = viewer.post("/ui/api/formations/nope/runs", json={"input": "x"})
    assert refused.status_code == 404, refused.text
    assert "no formation 'nope'" in refused.json()["error"] and "plain" in refused.json()["error"]


def test_a_start_with_a_body_that_is_not_an_object_is_a_one_line_error(viewer: TestClient) -> None:
    refused = viewer.post("/ui/api/formations/plain/runs", json=["x"])
    assert refused.status_code in (400, 422) and isinstance(refused.json().get("error"), str), refused.text
