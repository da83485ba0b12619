"""Everything is in SQLite: a new server on the same database file sees it all."""

from __future__ import annotations

from pathlib import Path

from tests.server.harness import FUNCTIONS_MODULE, running, scripted_agent
from wingman_actors.server import ServerConfig


def test_data_survives_a_restart_on_the_same_database(tmp_path: Path) -> None:
    config = ServerConfig(db_path=tmp_path / "data" / "wingman.db", work_root=tmp_path,
                          functions=(FUNCTIONS_MODULE,), entry_points=False)
    with running(config) as first, first.client() as client:
        agent = scripted_agent(client, "remembered")
        session = client.post("/sessions", json={"title": "kept"}).json()["id"]
        client.post(f"/sessions/{session}/message", json={"agent_id": agent, "message": "hello"})
        fleet = client.post("/fleets", json={"name": "f", "agent_id": agent, "worker_count": 2}).json()["id"]
        client.put("/provider/auth", json={"providers": {"anthropic": {"key": "sk-ant-kept"}}})
        formation = client.post("/formations", json={
            "name": "one", "nodes": [{"name": "clean", "kind": "function", "function": "clean"}]}).json()["id"]
        run = client.post(f"/formations/{formation}/run", json={"input": " x "}).json()["id"]
        before = {path: client.get(path).json() for path in (
            f"/agents/{agent}", f"/sessions/{session}", f"/fleets/{fleet}", f"/formations/{formation}",
            f"/runs/{run}", "/provider/auth")}

    with running(config) as second, second.client() as client:
        for path, body in before.items():
            assert client.get(path).json() == body, path
        history = client.get(f"/sessions/{session}").json()["history"]
        assert [m["content"][0]["text"] for m in history] == ["hello", "remembered"]
        more = client.post(f"/sessions/{session}/message", json={"agent_id": agent, "message": "again"})
        assert more.status_code == 200
        assert len(client.get(f"/sessions/{session}").json()["history"]) == 4


def test_database_folder_is_created(tmp_path: Path) -> None:
    db = tmp_path / "deep" / "er" / "wingman.db"
    with running(ServerConfig(db_path=db, work_root=tmp_path, entry_points=False)) as server, server.client() as c:
        assert c.get("/health").status_code == 200
    assert db.is_file()


def test_stored_bash_agent_loses_bash_when_the_server_disables_it(tmp_path: Path) -> None:
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, entry_points=False)
    call = {"content": [{"type": "tool_use", "id": "c1", "name": "bash", "input": {"command": "echo hi"}}],
            "stop_reason": "tool_use"}
    with running(config) as first, first.client() as client:
        agent = scripted_agent(client, call, "done", tools=["read", "bash"])
        session = client.post("/sessions").json()["id"]
    locked = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, entry_points=False, allow_bash=False)
    with running(locked) as second, second.client() as client:
        assert client.get(f"/agents/{agent}").json()["tools"] == ["read", "bash"]
        body = client.post(f"/sessions/{session}/message", json={"agent_id": agent, "message": "run it"}).json()
        (tool_call,) = body["tool_calls"]
        assert tool_call["is_error"] and "unknown tool 'bash'" in tool_call["output"]


def test_cors_origins_are_allowed_only_when_configured(tmp_path: Path) -> None:
    origin = "http://localhost:5173"
    preflight = {"Origin": origin, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type"}
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, entry_points=False, token="t",
                          cors_origins=(origin,))
    with running(config) as server, server.client() as client:
        response = client.options("/agents", headers=preflight)
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] == origin
    plain = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, entry_points=False)
    with running(plain) as server, server.client() as client:
        assert "access-control-allow-origin" not in client.options("/agents", headers=preflight).headers
