"""Many requests at once: no "database is locked", no lost write, no lost turn."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.server.harness import RunningServer, scripted_agent


def test_fifty_concurrent_messages_to_one_session_keep_every_turn(server: RunningServer, client: httpx.Client) -> None:
    agent = scripted_agent(client, "ack")
    sid = client.post("/sessions").json()["id"]

    def send(i: int) -> int:
        with server.client() as c:
            return c.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": f"m{i}"}).status_code

    with ThreadPoolExecutor(max_workers=50) as pool:
        statuses = list(pool.map(send, range(50)))
    assert statuses == [200] * 50
    history = client.get(f"/sessions/{sid}").json()["history"]
    assert len(history) == 100
    assert [m["role"] for m in history] == ["user", "assistant"] * 50
    assert sorted(m["content"][0]["text"] for m in history[::2]) == sorted(f"m{i}" for i in range(50))


def test_concurrent_messages_to_many_sessions_all_succeed(server: RunningServer, client: httpx.Client) -> None:
    agent = scripted_agent(client, "ack")
    sessions = [client.post("/sessions").json()["id"] for _ in range(10)]

    def send(i: int) -> int:
        with server.client() as c:
            sid = sessions[i % 10]
            return c.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "hi"}).status_code

    with ThreadPoolExecutor(max_workers=40) as pool:
        assert set(pool.map(send, range(40))) == {200}
    assert [len(client.get(f"/sessions/{s}").json()["history"]) for s in sessions] == [8] * 10


def test_concurrent_creates_and_updates_are_all_stored(server: RunningServer, client: httpx.Client) -> None:
    def create(i: int) -> str:
        with server.client() as c:
            response = c.post("/agents", json={"name": f"bulk-{i}"})
            assert response.status_code == 201, response.text
            agent_id = str(response.json()["id"])
            assert c.put(f"/agents/{agent_id}", json={"instructions": f"n{i}"}).status_code == 200
            return agent_id

    with ThreadPoolExecutor(max_workers=30) as pool:
        ids = list(pool.map(create, range(60)))
    stored = {a["id"]: a for a in client.get("/agents").json()}
    assert all(stored[agent_id]["instructions"] == f"n{i}" for i, agent_id in enumerate(ids))
