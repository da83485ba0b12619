"""The run viewer's routes on the server: the page and its assets (no token, no data), and
the JSON behind every view (``/ui/api/...``), readable without a browser."""

from __future__ import annotations

from pathlib import Path

import httpx
import networkx as nx
import pytest

from tests.server.harness import RunningServer, running
from tests.server.test_runs import formation
from wingman_actors.cli import main
from wingman_actors.server import ServerConfig
from wingman_actors.server._ui_page import VENDORED
from wingman_actors.server._viewer import graph_document
from wingman_actors.store import FormationShape, RunStore


def test_the_page_is_served_at_ui_with_a_policy_that_allows_only_its_own_origin(client: httpx.Client) -> None:
    page = client.get("/ui/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "assets/app.js" in page.text
    assert "connect-src 'self'" in page.headers["content-security-policy"]
    assert client.get("/ui/assets/app.js").headers["content-type"].startswith("text/javascript")


def test_an_unknown_asset_is_a_404_naming_the_assets(client: httpx.Client) -> None:
    response = client.get("/ui/assets/evil.js")
    assert response.status_code == 404 and "app.js" in response.json()["error"]


def test_with_a_token_the_page_is_open_but_its_data_is_not(tmp_path_factory: pytest.TempPathFactory) -> None:
    db = tmp_path_factory.mktemp("viewer-token") / "w.db"
    with running(ServerConfig(db_path=db, token="viewer-token-5678")) as server, server.client() as anonymous:
        assert anonymous.get("/ui/").status_code == 200
        assert anonymous.get("/ui/assets/run.js").status_code == 200
        assert anonymous.get("/ui/api/runs").status_code == 401
        with server.client("viewer-token-5678") as client:
            assert client.get("/ui/api/runs").json() == []


def test_formations_come_with_their_nodes_and_edges_for_the_page_to_lay_out(client: httpx.Client) -> None:
    fid = formation(client, "clean", "shout", name="drawn")
    found = next(f for f in client.get("/ui/api/formations").json() if f["id"] == fid)
    assert found["graph"] == {"nodes": [{"name": "clean", "kind": "function"}, {"name": "shout", "kind": "function"}],
                              "edges": [{"source": "clean", "target": "shout", "back": False, "conditional": False}]}


def test_a_back_edge_is_marked_as_one_for_the_page_to_draw_under_the_nodes() -> None:
    graph = nx.DiGraph([("a", "b"), ("b", "a")])
    nx.set_node_attributes(graph, "function", "kind")
    assert [e["back"] for e in graph_document(FormationShape.of(graph))["edges"]] == [False, True]


@pytest.mark.parametrize("name", VENDORED)
def test_each_vendored_library_is_served_as_a_javascript_module(client: httpx.Client, name: str) -> None:
    response = client.get(f"/ui/assets/{name}")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/javascript")
    assert "export" in response.text


@pytest.mark.parametrize("name", ["vendor/README.md", "vendor/LICENSE.dagre", "vendor/dagre.mjs.map", "vendor%2F..%2F_viewer.py"])
def test_only_the_listed_assets_are_served(client: httpx.Client, name: str) -> None:
    assert client.get(f"/ui/assets/{name}").status_code == 404


def test_runs_are_filtered_by_status_and_formation(client: httpx.Client) -> None:
    fid = formation(client, "clean", name="filtered")
    done = client.post(f"/formations/{fid}/run", json={"input": " a "}).json()["id"]
    asks = formation(client, "ask", name="filtered-asks")
    waiting = client.post(f"/formations/{asks}/run", json={"input": "b"}).json()["id"]
    suspended = [r["run_id"] for r in client.get("/ui/api/runs", params={"status": "suspended"}).json()]
    assert waiting in suspended and done not in suspended
    assert [r["run_id"] for r in client.get("/ui/api/runs", params={"formation_id": fid}).json()] == [done]


def test_the_run_list_limit_counts_formation_runs_only(client: httpx.Client) -> None:
    from tests.server.harness import scripted_agent

    fid = formation(client, "clean", name="before-a-fleet")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "x"}).json()["id"]
    fleet = client.post("/fleets", json={"name": "sweep", "agent_id": scripted_agent(client, "done")}).json()
    assert client.post(f"/fleets/{fleet['id']}/run", json={"tasks": [{"message": "a"}]}).status_code == 200
    assert [r["run_id"] for r in client.get("/ui/api/runs", params={"limit": 1}).json()] == [run_id]


def test_an_unknown_status_filter_is_a_400_listing_the_statuses(client: httpx.Client) -> None:
    response = client.get("/ui/api/runs", params={"status": "done"})
    assert response.status_code == 400 and "succeeded" in response.json()["error"]


def test_a_run_shows_each_node_s_status_visits_input_and_output(client: httpx.Client) -> None:
    fid = formation(client, "clean", "shout", name="shown")
    run_id = client.post(f"/formations/{fid}/run", json={"input": " hi "}).json()["id"]
    view = client.get(f"/ui/api/runs/{run_id}").json()
    assert (view["run_id"], view["status"], view["output"]) == (run_id, "succeeded", "HI")
    assert {n: v["status"] for n, v in view["nodes"].items()} == {"clean": "succeeded", "shout": "succeeded"}
    assert [(v["node"], v["input"], v["output"]) for v in view["visits"]] == [("clean", " hi ", "hi"),
                                                                               ("shout", "hi", "HI")]


def test_a_fork_s_visit_shows_the_input_the_fork_gave_it(client: httpx.Client) -> None:
    fid = formation(client, "clean", "shout", name="forked-input")
    run_id = client.post(f"/formations/{fid}/run", json={"input": " hi "}).json()["id"]
    fork_id = client.post(f"/runs/{run_id}/fork", json={"at": "shout", "input": "other"}).json()["id"]
    view = client.get(f"/ui/api/runs/{fork_id}").json()
    assert [(v["node"], v["input"], v["output"]) for v in view["visits"]] == [("clean", " hi ", "hi"),
                                                                               ("shout", "other", "OTHER")]


def test_a_suspended_run_shows_its_node_suspended(client: httpx.Client) -> None:
    fid = formation(client, "clean", "ask", name="waits")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "x"}).json()["id"]
    view = client.get(f"/ui/api/runs/{run_id}").json()
    assert view["nodes"]["ask"]["status"] == "suspended" and view["interrupt"]["node"] == "ask"
    assert view["resumable"] is True


def test_a_suspended_run_shows_the_nodes_after_its_suspended_node_pending(client: httpx.Client) -> None:
    fid = formation(client, "clean", "ask", "shout", name="waits-then-shouts")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "x"}).json()["id"]
    view = client.get(f"/ui/api/runs/{run_id}").json()
    assert {n: v["status"] for n, v in view["nodes"].items()} == {"clean": "succeeded", "ask": "suspended",
                                                                   "shout": "pending"}


def test_an_unknown_run_is_a_404(client: httpx.Client) -> None:
    assert client.get("/ui/api/runs/01NOSUCHRUN").status_code == 404
    assert client.get("/ui/api/runs/01NOSUCHRUN/stream").status_code == 404


def test_a_finished_run_s_stream_replays_its_events_then_ends(client: httpx.Client, server: RunningServer) -> None:
    fid = formation(client, "clean", "shout", name="replayed")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "a"}).json()["id"]
    with client.stream("GET", f"/ui/api/runs/{run_id}/stream") as response:
        text = "".join(response.iter_text())
    names = [line.removeprefix("event: ") for line in text.splitlines() if line.startswith("event: ")]
    assert names[0] == "run_started" and names[-2:] == ["run_finished", "end"]
    assert names.count("node_finished") == 2


def test_ui_with_a_missing_store_is_a_usage_error_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.sqlite"
    assert main(["ui", "--store", str(missing), "--port", "0"]) == 2
    assert str(missing) in capsys.readouterr().err


def test_ui_with_a_file_that_is_not_a_run_store_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    assert main(["ui", "--store", str(text), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an SQLite database" in err and "Traceback" not in err


def test_the_viewer_s_data_is_refused_to_another_site_s_page(client: httpx.Client, server: RunningServer) -> None:
    response = client.get("/ui/api/runs", headers={"Origin": "http://evil.example"})
    assert response.status_code == 403
    same = client.get("/ui/api/runs", headers={"Origin": server.url})
    assert same.status_code == 200


def test_the_store_viewer_follows_a_run_going_on_in_another_process(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from wingman_actors.server._viewer_store import create_store_viewer

    graph = nx.DiGraph([("a", "b")])
    nx.set_node_attributes(graph, "function", "kind")
    with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = store.begin_run("pair", FormationShape.of(graph), "x")
        store.flush()
        with TestClient(create_store_viewer(tmp_path / "runs.sqlite"), base_url="http://127.0.0.1") as viewer:
            assert viewer.get("/ui/api/formations").json()[0]["name"] == "pair"
            assert viewer.get(f"/ui/api/runs/{run_id}").json()["nodes"]["a"]["status"] == "running"  # at work: a source, from the start
            with viewer.stream("GET", f"/ui/api/runs/{run_id}/stream") as events:
                store.record_visit(run_id, "a", 1, "X")
                store.set_status(run_id, "succeeded", wait=True)
                names = [line for line in events.iter_lines() if line.startswith("event: ")]
            assert names[-1] == "event: end" and "event: refresh" in names
            view = viewer.get(f"/ui/api/runs/{run_id}").json()
            assert (view["status"], view["nodes"]["a"]["status"], view["resume"]) == ("succeeded", "succeeded", None)


def test_the_store_viewer_reads_a_postgresql_run_store(postgres_url: str) -> None:
    from starlette.testclient import TestClient

    from wingman_actors.server._viewer_store import create_store_viewer

    graph = nx.DiGraph([("a", "b")])
    nx.set_node_attributes(graph, "function", "kind")
    with RunStore(postgres_url) as store:
        run_id = store.begin_run("pair", FormationShape.of(graph), "x")
        store.record_visit(run_id, "a", 1, "X")
        store.set_status(run_id, "failed", error="b broke", wait=True)
    with TestClient(create_store_viewer(postgres_url), base_url="http://127.0.0.1") as viewer:
        assert [r["run_id"] for r in viewer.get("/ui/api/runs").json()] == [run_id]
        view = viewer.get(f"/ui/api/runs/{run_id}").json()
        assert (view["status"], view["nodes"]["a"]["status"]) == ("failed", "succeeded")
        assert view["resume"].startswith(f"wingman-actors resume {run_id} --store 'postgresql://")


def test_the_store_viewer_cancels_a_run_a_launcher_runs_on_a_postgresql_run_store(
        tmp_path: Path, postgres_url: str) -> None:
    import os
    import subprocess
    import sys
    import time

    from starlette.testclient import TestClient

    from tests.durable.test_runs_cancel import SLOW
    from wingman_actors.server._viewer_store import create_store_viewer

    (tmp_path / "slow.py").write_text(SLOW)
    root = Path(__file__).resolve().parents[2]
    launcher = subprocess.Popen([sys.executable, "-m", "wingman_actors", "run", str(tmp_path / "slow.py"), "--input",
                                 "x", "--store", postgres_url], cwd=root, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                env={**os.environ, "PYTHONPATH": str(root), "GATE": str(tmp_path / "gate")})
    try:
        with TestClient(create_store_viewer(postgres_url), base_url="http://127.0.0.1") as viewer:
            deadline = time.monotonic() + 20
            while not (listed := viewer.get("/ui/api/runs", params={"status": "running"}).json()):
                assert launcher.poll() is None and time.monotonic() < deadline, "the launcher's run never showed"
                time.sleep(0.05)
            run_id = listed[0]["run_id"]
            requested = viewer.post(f"/ui/api/runs/{run_id}/cancel", json={})
            assert (requested.status_code, requested.json()["cancel_requested"]) == (202, True), requested.text
            while (status := viewer.get(f"/ui/api/runs/{run_id}").json()["status"]) == "running":
                assert time.monotonic() < deadline, "the launcher never cancelled its run"
                time.sleep(0.05)
            assert status == "cancelled"
        _, err = launcher.communicate(timeout=30)
        assert launcher.returncode == 1 and f"run {run_id} was cancelled" in err, err
    finally:
        (tmp_path / "gate").touch()  # the abandoned attempt ends
        if launcher.poll() is None:
            launcher.kill()
            launcher.communicate()


def test_ui_with_an_unreachable_postgresql_store_is_one_line_without_its_password(
        capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    assert main(["ui", "--store", f"postgresql://me:s3cret@127.0.0.1:{port}/db", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("wingman-actors ui: error: RunStore cannot connect to postgresql://me:***@") and \
        len(err.splitlines()) == 1, err
    assert "s3cret" not in err


def test_a_store_run_that_succeeded_shows_its_output_by_sink(tmp_path: Path) -> None:
    from wingman_actors import Formation
    from wingman_actors.server._viewer import run_view

    def add(x: int) -> int:
        return x + 1

    def double(x: int) -> int:
        return x * 2

    formation = Formation("two").add_function("add", add).add_function("double", double).connect("add", "double")
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        run_id = formation.run(3, store=store).run_id
        doc = run_view(store, run_id)
    finally:
        store.close()
    assert (doc["output"], doc["outputs"]) == (8, {"double": 8})
