"""``HEAD`` on every ``GET`` route of both servers (``wingman-actors serve`` and ``wingman-actors
ui``): the status and headers a ``GET`` would get, ``Content-Length`` and ``Content-Type``
included, and no body (RFC 9110, section 9.3.2). A streaming route answers its headers and
ends: no stream is left running for a request that reads none."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.server.harness import FUNCTIONS_MODULE, RunningServer, running, scripted_agent
from tests.server.test_design_contract_http import concrete
from tests.server.test_peer_sse_server import formation, gated_run
from wingman_actors.server import ServerConfig
from wingman_actors.server._viewer_store import create_store_viewer
from wingman_actors.store import RunStore

_VARYING = ("date",)


def same_answer(got: httpx.Response, want: httpx.Response) -> list[str]:
    """What differs between a HEAD's answer and the GET's, but the body and the Date."""
    problems = [] if got.status_code == want.status_code else [f"status {got.status_code} != {want.status_code}"]
    heads = {k: v for k, v in got.headers.items() if k not in _VARYING}
    gets = {k: v for k, v in want.headers.items() if k not in _VARYING}
    if heads != gets:
        problems.append(f"headers {heads} != {gets}")
    if got.content:
        problems.append(f"a body: {got.content[:80]!r}")
    return problems


def test_head_on_every_documented_get_path_answers_as_the_get_without_its_body(
    client: httpx.Client, server: RunningServer
) -> None:
    agent = scripted_agent(client, "hi")
    fid = formation(client, "clean", name="head")
    run = client.post(f"/formations/{fid}/run", json={"input": " a "}).json()
    real = {"/agents/{id}": f"/agents/{agent}", "/formations/{id}": f"/formations/{fid}",
            "/runs/{id}": f"/runs/{run['id']}", "/runs/{id}/history": f"/runs/{run['id']}/history",
            "/ui/api/runs/{id}": f"/ui/api/runs/{run['id']}", "/ui/api/runs/{id}/stream": f"/ui/api/runs/{run['id']}/stream"}
    doc = client.get("/openapi.json").json()
    wrong: list[str] = []
    probed = 0
    for path, operations in doc["paths"].items():
        if "get" not in operations:
            continue
        for target in {real.get(path, concrete(path)), concrete(path)}:
            probed += 1
            problems = same_answer(client.head(target), client.get(target))
            wrong += [f"HEAD {target}: {p}" for p in problems]
    assert probed > 20
    assert wrong == []


@pytest.mark.parametrize("path", ["/health", "/agents", "/openapi.json", "/ui/", "/docs"])
def test_head_answers_with_the_gets_content_length_and_content_type(client: httpx.Client, path: str) -> None:
    got, want = client.head(path), client.get(path)

    assert got.status_code == want.status_code == 200
    assert got.headers["content-length"] == str(len(want.content)) and int(got.headers["content-length"]) > 0
    assert got.headers["content-type"] == want.headers["content-type"]
    assert got.content == b""


def test_a_head_of_an_unknown_record_is_the_gets_404_without_its_body(client: httpx.Client) -> None:
    got, want = client.head("/agents/01NOSUCHAGENT"), client.get("/agents/01NOSUCHAGENT")

    assert got.status_code == want.status_code == 404
    assert got.headers["content-length"] == str(len(want.content))
    assert got.content == b""


def test_a_method_a_get_path_does_not_have_is_still_a_405_naming_the_documented_methods(client: httpx.Client) -> None:
    response = client.put("/health", json={})

    assert response.status_code == 405
    assert response.headers["allow"] == "GET"


def test_head_of_a_live_runs_event_stream_answers_its_headers_at_once_and_leaves_the_run_alone(
    client: httpx.Client, server: RunningServer, gate: threading.Event
) -> None:
    fid = formation(client, "clean", "gated", name="head-live")
    run_id, thread, answers = gated_run(client, server, fid)
    started = time.monotonic()

    response = client.head(f"/ui/api/runs/{run_id}/stream", timeout=10)

    assert time.monotonic() - started < 5  # the GET would stream until the gate opens
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.content == b""
    assert client.get(f"/runs/{run_id}").json()["status"] == "running"
    gate.set()
    thread.join(20)
    assert answers[0].json()["status"] == "succeeded"


def test_head_needs_the_token_as_get_does(tmp_path_factory: pytest.TempPathFactory, work_root: Path) -> None:
    config = ServerConfig(db_path=tmp_path_factory.mktemp("head-token") / "wingman.db", work_root=work_root,
                          functions=(FUNCTIONS_MODULE,), entry_points=False, token="secret-token")
    with running(config) as guarded, guarded.client() as bare, guarded.client("secret-token") as authorised:
        refused, allowed = bare.head("/agents"), authorised.head("/agents")

    assert (refused.status_code, refused.headers["www-authenticate"], refused.content) == (401, "Bearer", b"")
    assert (allowed.status_code, allowed.content) == (200, b"")


def test_a_cors_preflight_for_head_is_allowed(tmp_path: Path) -> None:
    origin = "http://localhost:5173"
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, entry_points=False, cors_origins=(origin,))
    with running(config) as server, server.client() as client:
        preflight = client.options("/agents", headers={"Origin": origin, "Access-Control-Request-Method": "HEAD",
                                                       "Access-Control-Request-Headers": "authorization"})
        head = client.head("/agents", headers={"Origin": origin})

    assert preflight.status_code == 200, preflight.text
    assert "HEAD" in preflight.headers["access-control-allow-methods"]
    assert (head.status_code, head.headers["access-control-allow-origin"], head.content) == (200, origin, b"")


# -- wingman-actors ui: the store viewer -------------------------------------------------------


@pytest.fixture
def store_viewer(tmp_path: Path) -> Iterator[TestClient]:
    RunStore(tmp_path / "runs.sqlite").close()
    with TestClient(create_store_viewer(tmp_path / "runs.sqlite"), base_url="http://127.0.0.1") as viewer:
        yield viewer


@pytest.mark.parametrize("path", ["/ui/api/info", "/ui/api/formations", "/ui/api/runs", "/ui/api/runs/01UNKNOWN",
                                  "/ui/api/runs/01UNKNOWN/stream", "/ui/"])
def test_the_store_viewer_answers_head_as_get_without_the_body(store_viewer: TestClient, path: str) -> None:
    got, want = store_viewer.head(path), store_viewer.get(path)

    assert same_answer(got, want) == []
