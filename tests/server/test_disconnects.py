"""A client that leaves a stream early cancels the run: nothing is stored, the session is
free again, and every thread the run started ends (the leak check verifies it)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.server.harness import scripted_agent

GLOB = {"content": [{"type": "tool_use", "id": "c1", "name": "glob", "input": {"pattern": "*"}}],
        "stop_reason": "tool_use"}


def read_until(client: httpx.Client, path: str, body: Any, marker: str) -> None:
    """Stream ``path`` and hang up as soon as a line contains ``marker``."""
    with client.stream("POST", path, json=body) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if marker in line:
                return
    raise AssertionError(f"the stream ended before {marker!r}")


def wait_for(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


def test_leaving_a_session_stream_cancels_the_run_and_frees_the_session(client: httpx.Client) -> None:
    slow = scripted_agent(client, GLOB, "never seen", tools=["glob"], options={"latency_s": 0.5})
    sid = client.post("/sessions").json()["id"]
    read_until(client, f"/sessions/{sid}/message/stream", {"agent_id": slow, "message": "go"}, "tool_end")
    time.sleep(1.0)  # the run would have finished by now had it not been cancelled
    assert client.get(f"/sessions/{sid}").json()["history"] == []
    fast = scripted_agent(client, "free again")
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": fast, "message": "next"})
    assert response.json()["response"] == "free again"


def test_leaving_a_fleet_stream_cancels_the_remaining_tasks(client: httpx.Client) -> None:
    agent = scripted_agent(client, "done", options={"latency_s": 0.3})
    fleet = client.post("/fleets", json={"name": "f", "agent_id": agent, "worker_count": 1}).json()["id"]
    tasks = [{"message": f"t{i}"} for i in range(20)]
    started = time.monotonic()
    read_until(client, f"/fleets/{fleet}/run/stream", {"tasks": tasks}, "event: result")
    assert client.get("/health").status_code == 200
    assert time.monotonic() - started < 3  # 20 tasks at 0.3 s each were not waited for
    (run,) = client.get("/runs", params={"fleet_id": fleet}).json()
    wait_for(lambda: client.get(f"/runs/{run['id']}").json()["status"] == "cancelled")


def test_leaving_a_formation_stream_records_the_run_cancelled(client: httpx.Client) -> None:
    agent = scripted_agent(client, "late", options={"latency_s": 3})
    body = {"name": "slow", "nodes": [{"name": "ask", "kind": "agent", "agent_id": agent}]}
    fid = client.post("/formations", json=body).json()["id"]
    read_until(client, f"/formations/{fid}/run/stream", {"input": "x"}, "node_started")
    (run,) = client.get("/runs", params={"formation_id": fid}).json()
    wait_for(lambda: client.get(f"/runs/{run['id']}").json()["status"] == "cancelled")
