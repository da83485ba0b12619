"""A locked-down server: bearer token, work_dir confinement, no bash, short request timeout."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.harness import RunningServer, scripted_agent
from wingman_actors.server import ServerConfig

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, work_root: Path) -> Iterator[RunningServer]:
    config = ServerConfig(db_path=tmp_path_factory.mktemp("db") / "w.db", work_root=work_root, token=TOKEN,
                          allow_bash=False, request_timeout=1.0, entry_points=False)
    running = RunningServer(config).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def client(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client(TOKEN) as c:
        yield c


@pytest.fixture
def anonymous(server: RunningServer) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


def test_health_needs_no_token(anonymous: httpx.Client) -> None:
    assert anonymous.get("/health").json() == {"status": "ok"}


def test_every_other_route_needs_the_token(anonymous: httpx.Client) -> None:
    for method, path in (("GET", "/agents"), ("POST", "/sessions"), ("GET", "/provider"), ("GET", "/runs"),
                         ("GET", "/provider/auth"), ("POST", "/fleets/x/run/stream")):
        response = anonymous.request(method, path)
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"] == "Bearer"
        assert "Authorization: Bearer" in response.json()["error"]


def test_docs_and_openapi_document_need_no_token(anonymous: httpx.Client) -> None:
    for path in ("/openapi.json", "/docs", "/redoc"):
        assert anonymous.get(path).status_code == 200, path


def test_openapi_document_declares_the_bearer_scheme(anonymous: httpx.Client) -> None:
    doc = anonymous.get("/openapi.json").json()
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert doc["security"] == [{"bearer": []}]
    assert doc["paths"]["/health"]["get"]["security"] == []
    assert "401" in doc["paths"]["/agents"]["get"]["responses"]
    assert "401" not in doc["paths"]["/health"]["get"]["responses"]


def test_wrong_token_is_401(server: RunningServer) -> None:
    with server.client("not-the-token") as c:
        response = c.get("/agents")
    assert response.status_code == 401
    assert response.json()["error"].startswith("invalid bearer token")


def test_right_token_is_served(client: httpx.Client) -> None:
    assert client.get("/agents").status_code == 200


def test_work_dir_outside_the_root_is_400(client: httpx.Client, tmp_path: Path) -> None:
    response = client.post("/sessions", json={"work_dir": str(tmp_path)})
    assert response.status_code == 400
    assert response.json()["fields"] == ["work_dir"]
    assert "outside the server's work root" in response.json()["error"]


def test_dot_dot_cannot_escape_the_root(client: httpx.Client) -> None:
    assert client.post("/sessions", json={"work_dir": "project/../.."}).status_code == 400


def test_symlink_leading_out_of_the_root_is_refused(client: httpx.Client, work_root: Path, tmp_path: Path) -> None:
    link = work_root / "escape"
    link.symlink_to(tmp_path, target_is_directory=True)
    try:
        assert client.post("/sessions", json={"work_dir": "escape"}).status_code == 400
    finally:
        link.unlink()


def test_missing_directory_is_400(client: httpx.Client) -> None:
    response = client.post("/sessions", json={"work_dir": "does-not-exist"})
    assert response.status_code == 400
    assert "not an existing directory" in response.json()["error"]


def test_session_update_is_confined_too(client: httpx.Client) -> None:
    sid = client.post("/sessions", json={"work_dir": "project"}).json()["id"]
    assert client.put(f"/sessions/{sid}", json={"work_dir": "/"}).status_code == 400


def test_fleet_and_task_work_dirs_are_confined(client: httpx.Client) -> None:
    agent = scripted_agent(client)
    assert client.post("/fleets", json={"name": "f", "agent_id": agent, "work_dir": "/"}).status_code == 400
    fleet = client.post("/fleets", json={"name": "f", "agent_id": agent, "work_dir": "project"}).json()["id"]
    response = client.post(f"/fleets/{fleet}/run", json={"tasks": [{"message": "x", "work_dir": "../.."}]})
    assert response.status_code == 400
    assert response.json()["fields"] == ["tasks[0].work_dir"]


def test_bash_tool_is_refused_when_disabled(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "shell", "tools": ["read", "bash"]})
    assert response.status_code == 400
    assert response.json()["fields"] == ["tools"]
    assert "--no-bash" in response.json()["error"]


def test_request_running_past_the_timeout_is_504(client: httpx.Client) -> None:
    agent = scripted_agent(client, "late", options={"latency_s": 5})
    sid = client.post("/sessions").json()["id"]
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "hurry"})
    assert response.status_code == 504
    assert response.json()["kind"] == "timeout"
    assert client.get(f"/sessions/{sid}").json()["history"] == []


def test_streaming_routes_are_not_bound_by_the_request_timeout(client: httpx.Client) -> None:
    agent = scripted_agent(client, "slow but fine", options={"latency_s": 1.3})
    sid = client.post("/sessions").json()["id"]
    response = client.post(f"/sessions/{sid}/message/stream", json={"agent_id": agent, "message": "take your time"})
    assert response.status_code == 200
    assert "event: done" in response.text
