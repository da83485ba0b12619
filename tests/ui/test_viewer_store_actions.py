"""``wingman-actors ui --store PATH`` acts: the routes behind the page's start, answer, resume
and cancel on a launcher's run store (the runs go on in the viewer's process), what the page
is told it may do with each run, and the nested formations' graphs and visits it draws."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.ui.store_files import open_gate, write_files
from wingman_actors.server._viewer_store import create_store_viewer
from wingman_actors.store import FormationShape, RunStore

JSON = {"Content-Type": "application/json"}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    monkeypatch.setenv("UI_GATES", str(tmp_path / "gates"))
    return write_files(tmp_path)


def run_file(path: Path, store: Path, input: Any, *, source: bool = True, **params: Any) -> Any:
    """Run the formation file as ``wingman-actors run`` does (recording the file), or as a
    Python program does (``source=False``: no file recorded); its result."""
    from wingman_actors._launcher.loading import load_module

    formation, _ = load_module(str(path)).build(None, params)
    if source:
        formation.source = str(path)  # type: ignore[attr-defined]
    return formation.run(input, store=store)


@pytest.fixture
def viewer_of(tmp_path: Path) -> Iterator[Any]:
    """``viewer_of(**options)``: a test client of the store viewer over ``tmp_path/runs.sqlite``."""
    opened: list[TestClient] = []

    def make(**options: Any) -> TestClient:
        client = TestClient(create_store_viewer(tmp_path / "runs.sqlite", **options), base_url="http://127.0.0.1")
        opened.append(client.__enter__())
        return client

    try:
        yield make
    finally:
        for client in opened:
            client.__exit__(None, None, None)


def until(viewer: TestClient, run_id: str, status: str, node: str | None = None) -> dict[str, Any]:
    """The run's document once the run (or ``node``) has ``status`` (10 s at most)."""
    deadline = time.monotonic() + 10
    while True:
        doc: dict[str, Any] = viewer.get(f"/ui/api/runs/{run_id}").json()
        now = doc["status"] if node is None else doc["nodes"].get(node, {}).get("status")
        if now == status:
            return doc
        assert time.monotonic() < deadline, f"run {run_id}: {node or 'the run'} is {now}, not {status}"
        time.sleep(0.02)


def test_formations_are_offered_by_the_files_their_runs_record_and_the_files_given(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    run_file(files["notes"], tmp_path / "runs.sqlite", " a ")
    run_file(files["notes"], tmp_path / "runs.sqlite", " b ", source=False)  # newer, and records no file
    viewer = viewer_of(formations=[str(files["nested"])])
    found = {f["name"]: f["file"] for f in viewer.get("/ui/api/formations").json()}
    assert found == {"notes": str(files["notes"]), "nested": str(files["nested"])}


def test_a_run_started_over_the_route_runs_in_the_viewer_and_is_journalled_with_its_file(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    viewer = viewer_of(formations=[str(files["notes"])])
    started = viewer.post("/ui/api/formations/notes/runs", json={"input": " hi "})
    assert started.status_code == 201, started.text
    run_id = started.json()["run_id"]
    assert until(viewer, run_id, "succeeded")["output"] == "HI"
    with RunStore(tmp_path / "runs.sqlite") as store:
        assert store.get(run_id).source == str(files["notes"])


def test_a_run_started_over_the_route_without_an_input_gets_the_file_s_default_input(
        files: dict[str, Path], viewer_of: Any) -> None:
    viewer = viewer_of(formations=[str(files["notes"])])
    run_id = viewer.post("/ui/api/formations/notes/runs", json={}).json()["run_id"]
    assert until(viewer, run_id, "succeeded")["output"] == "DEFAULT WORDS"


def test_a_formation_whose_runs_record_no_file_cannot_be_started_and_the_409_says_how(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    run_file(files["notes"], tmp_path / "runs.sqlite", "x", source=False)
    response = viewer_of().post("/ui/api/formations/notes/runs", json={"input": "y"})
    assert response.status_code == 409 and response.json()["kind"] == "no_file"
    assert "--formation FILE" in response.json()["error"]


def test_an_interrupt_answered_over_the_route_resumes_the_run_in_the_viewer(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    run_id = run_file(files["notes"], tmp_path / "runs.sqlite", " draft ", asking=True).run_id
    viewer = viewer_of(params={"asking": True})
    doc = viewer.get(f"/ui/api/runs/{run_id}").json()
    assert (doc["status"], doc["can_resume"], doc["resume"]) == ("suspended", True, None)
    answered = viewer.post(f"/ui/api/runs/{run_id}/resume", json={"answer": "yes"})
    assert answered.status_code == 202, answered.text
    assert until(viewer, run_id, "succeeded")["output"] == "DRAFT: yes"


def test_a_resume_whose_file_now_builds_another_formation_is_a_409_naming_param(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    run_id = run_file(files["notes"], tmp_path / "runs.sqlite", "draft", asking=True).run_id
    response = viewer_of().post(f"/ui/api/runs/{run_id}/resume", json={"answer": "yes"})
    assert response.status_code == 409 and response.json()["kind"] == "mismatch"
    assert "node 'ask'" in response.json()["error"] and "--param NAME=VALUE" in response.json()["error"]


def test_a_run_started_from_python_shows_the_resume_command_with_formation_file(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    run_id = run_file(files["notes"], tmp_path / "runs.sqlite", "draft", source=False, asking=True).run_id
    viewer = viewer_of(params={"asking": True})
    doc = viewer.get(f"/ui/api/runs/{run_id}").json()
    assert doc["can_resume"] is False and doc["resume"].endswith("--formation FILE")
    refused = viewer.post(f"/ui/api/runs/{run_id}/resume", json={"answer": "yes"})
    assert refused.status_code == 409 and refused.json()["kind"] == "no_file"


def test_a_file_given_to_the_viewer_resumes_the_python_runs_of_its_formation(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    run_id = run_file(files["notes"], tmp_path / "runs.sqlite", "draft", source=False, asking=True).run_id
    viewer = viewer_of(formations=[str(files["notes"])], params={"asking": True})
    assert viewer.get(f"/ui/api/runs/{run_id}").json()["can_resume"] is True
    assert viewer.post(f"/ui/api/runs/{run_id}/resume", json={"answer": "ok"}).status_code == 202
    assert until(viewer, run_id, "succeeded")["output"] == "DRAFT: ok"


def test_cancel_over_the_route_cancels_a_run_going_on_in_the_viewer(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    viewer = viewer_of(formations=[str(files["gated"])])
    run_id = viewer.post("/ui/api/formations/gated/runs", json={"input": "stop"}).json()["run_id"]
    try:
        doc = until(viewer, run_id, "running", node="wait")
        assert doc["cancel_blocked"] is None
        cancelled = viewer.post(f"/ui/api/runs/{run_id}/cancel", json={})
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled", cancelled.text
    finally:
        open_gate(tmp_path, "stop")  # the abandoned attempt ends
    assert until(viewer, run_id, "cancelled", node="wait")["can_resume"] is True


def test_a_run_a_launcher_in_another_process_runs_is_cancelled_over_the_route_through_the_store(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    store = tmp_path / "runs.sqlite"
    launcher = subprocess.Popen([sys.executable, "-m", "wingman_actors", "run", str(files["gated"]), "--input", "far",
                                 "--store", str(store)], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        viewer = viewer_of()
        deadline = time.monotonic() + 20
        while not (listed := viewer.get("/ui/api/runs", params={"status": "running"}).json()):
            assert launcher.poll() is None and time.monotonic() < deadline, "the launcher's run never showed"
            time.sleep(0.05)
        run_id = listed[0]["run_id"]
        doc = until(viewer, run_id, "succeeded", node="clean")  # (its wait node waits for the gate)
        assert doc["cancel_blocked"] is None and doc["cancel_requested"] is None
        requested = viewer.post(f"/ui/api/runs/{run_id}/cancel", json={})
        assert requested.status_code == 202, requested.text
        assert requested.json() == {"run_id": run_id, "status": "running", "cancel_requested": True}
        doc = until(viewer, run_id, "cancelled")
        assert doc["nodes"]["wait"]["status"] == "cancelled" and doc["can_resume"] is True
        _, err = launcher.communicate(timeout=30)
        assert launcher.returncode == 1 and f"run {run_id} was cancelled" in err, err
    finally:
        open_gate(tmp_path, "far")  # the abandoned attempt ends
        if launcher.poll() is None:
            launcher.kill()
            launcher.communicate()


def test_a_cancel_requested_of_a_process_that_runs_no_formation_shows_as_requested(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    import networkx as nx

    graph = nx.DiGraph([("clean", "shout")])
    nx.set_node_attributes(graph, "function", "kind")
    with RunStore(tmp_path / "runs.sqlite") as elsewhere:  # a live owner that is not the viewer, and no formation
        run_id = elsewhere.begin_run("notes", FormationShape.of(graph), "x", source=str(files["notes"]))
        viewer = viewer_of()
        assert viewer.post(f"/ui/api/runs/{run_id}/cancel", json={}).status_code == 202
        doc = viewer.get(f"/ui/api/runs/{run_id}").json()
        assert doc["status"] == "running" and doc["cancel_requested"] is not None


def test_a_suspended_run_is_cancelled_over_the_route_and_stays_resumable(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    run_id = run_file(files["notes"], tmp_path / "runs.sqlite", "draft", asking=True).run_id
    viewer = viewer_of(params={"asking": True})
    assert viewer.post(f"/ui/api/runs/{run_id}/cancel", json={}).json() == {"run_id": run_id, "status": "cancelled"}
    doc = viewer.get(f"/ui/api/runs/{run_id}").json()
    assert (doc["status"], doc["can_resume"]) == ("cancelled", True)


@pytest.mark.parametrize(("headers", "status"), [
    ({}, 415),  # a form or a text body a page may send cross-site without asking
    ({"Content-Type": "text/plain"}, 415),
    ({**JSON, "Origin": "http://evil.example"}, 403),
])
def test_the_action_routes_take_only_json_from_the_page_s_own_origin(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any, headers: dict[str, str], status: int) -> None:
    run_id = run_file(files["notes"], tmp_path / "runs.sqlite", "draft", asking=True).run_id
    viewer = viewer_of(formations=[str(files["notes"])], params={"asking": True})
    for path in ("/ui/api/formations/notes/runs", f"/ui/api/runs/{run_id}/resume", f"/ui/api/runs/{run_id}/cancel"):
        assert viewer.post(path, content=b"{}", headers=headers).status_code == status, path
    assert viewer.get(f"/ui/api/runs/{run_id}").json()["status"] == "suspended"  # nothing was done


def test_with_a_token_the_action_routes_need_it(files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    run_id = run_file(files["notes"], tmp_path / "runs.sqlite", "draft", asking=True).run_id
    viewer = viewer_of(token="ui-token-1234", params={"asking": True})
    assert viewer.post(f"/ui/api/runs/{run_id}/cancel", headers=JSON).status_code == 401
    allowed = viewer.post(f"/ui/api/runs/{run_id}/cancel", headers={**JSON, "Authorization": "Bearer ui-token-1234"})
    assert allowed.status_code == 200


def test_a_nested_run_draws_its_inner_formation_and_names_its_inner_visits_by_path(
        files: dict[str, Path], tmp_path: Path, viewer_of: Any) -> None:
    open_gate(tmp_path, "deep")
    run_id = run_file(files["nested"], tmp_path / "runs.sqlite", " deep ").run_id
    doc = viewer_of().get(f"/ui/api/runs/{run_id}").json()
    sub = next(n for n in doc["graph"]["nodes"] if n["name"] == "sub")
    assert [n["name"] for n in sub["graph"]["nodes"]] == ["shout", "wait"]
    assert doc["nodes"]["sub/shout"]["status"] == "succeeded"
    assert [v["output"] for v in doc["visits"] if v["node"] == "sub/shout"] == ["DEEP"]


def test_a_nested_formation_given_to_the_viewer_is_drawn_with_its_insides(
        files: dict[str, Path], viewer_of: Any) -> None:
    found = viewer_of(formations=[str(files["nested"])]).get("/ui/api/formations").json()
    sub = next(n for n in found[0]["graph"]["nodes"] if n["name"] == "sub")
    assert sub["kind"] == "formation" and sub["graph"]["edges"][0]["source"] == "wait"


def test_ui_with_a_formation_file_that_cannot_be_loaded_is_a_usage_error_naming_it(
        files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wingman_actors.cli import main

    run_file(files["notes"], tmp_path / "runs.sqlite", "x")
    missing = tmp_path / "missing.py"
    assert main(["ui", "--store", str(tmp_path / "runs.sqlite"), "--formation", str(missing), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("wingman-actors ui: error: ") and "missing.py" in err, err


def test_a_run_still_going_when_the_viewer_stops_is_journalled_interrupted_and_resumable(
        files: dict[str, Path], tmp_path: Path) -> None:
    with TestClient(create_store_viewer(tmp_path / "runs.sqlite", formations=[str(files["gated"])]),
                    base_url="http://127.0.0.1") as viewer:
        run_id = viewer.post("/ui/api/formations/gated/runs", json={"input": "left"}).json()["run_id"]
        until(viewer, run_id, "running", node="wait")
    open_gate(tmp_path, "left")  # the abandoned attempt ends
    with RunStore(tmp_path / "runs.sqlite") as store:
        assert store.get(run_id).status == "interrupted"
