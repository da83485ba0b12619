"""Secrets never leave: a provider that repeats the key in its error (as OpenAI's
"Incorrect API key provided: sk-..." does) is answered, streamed, recorded and logged with
the key masked."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.harness import FUNCTIONS_MODULE, RunningServer, running, scripted_agent
from tests.support.loopback import LoopbackServer, Reply, Request
from wingman_actors.server import ServerConfig

KEY = "sk-proj-leaky-0123456789abcdef"


def echo_key(request: Request) -> Reply:
    """An OpenAI-compatible endpoint refusing the key, and quoting it back."""
    given = request.headers.get("authorization", "").removeprefix("Bearer ")
    return Reply.json({"error": {"message": f"Incorrect API key provided: {given}", "type": "invalid_request_error",
                                 "code": "invalid_api_key"}}, status=401)


@pytest.fixture
def leaky(loopback: LoopbackServer, client: httpx.Client) -> str:
    """An agent whose provider echoes the stored key in its error; returns its id."""
    loopback.handler = echo_key
    assert client.put("/provider/auth", json={"providers": {"openai": {"key": KEY}}}).status_code == 200
    response = client.post("/agents", json={"name": "leaky", "provider": "openai", "model": "m",
                                            "options": {"base_url": loopback.url, "max_retries": 0}})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    with caplog.at_level(logging.DEBUG):
        yield caplog


def test_the_provider_really_echoes_the_key(loopback: LoopbackServer, leaky: str, client: httpx.Client) -> None:
    sid = client.post("/sessions").json()["id"]
    client.post(f"/sessions/{sid}/message", json={"agent_id": leaky, "message": "hi"})
    assert loopback.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_message_error_masks_the_key(leaky: str, client: httpx.Client, logs: pytest.LogCaptureFixture) -> None:
    sid = client.post("/sessions").json()["id"]
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": leaky, "message": "hi"})
    assert response.status_code == 502
    assert "Incorrect API key provided: [redacted]" in response.json()["error"]
    assert KEY not in response.text
    assert KEY not in logs.text


def test_message_stream_masks_the_key(leaky: str, client: httpx.Client, logs: pytest.LogCaptureFixture) -> None:
    sid = client.post("/sessions").json()["id"]
    response = client.post(f"/sessions/{sid}/message/stream", json={"agent_id": leaky, "message": "hi"})
    assert "[redacted]" in response.text
    assert KEY not in response.text
    assert KEY not in logs.text


def test_fleet_results_mask_the_key(leaky: str, client: httpx.Client, logs: pytest.LogCaptureFixture) -> None:
    fleet = client.post("/fleets", json={"name": "f", "agent_id": leaky}).json()["id"]
    body = {"tasks": [{"message": "a"}, {"message": "b"}]}
    blocking = client.post(f"/fleets/{fleet}/run", json=body)
    streamed = client.post(f"/fleets/{fleet}/run/stream", json=body)
    assert blocking.status_code == 200
    assert all("[redacted]" in r["error"] for r in blocking.json())
    record = client.get("/runs", params={"fleet_id": fleet})
    assert len(record.json()) == 2
    assert "[redacted]" in record.json()[0]["error"]
    for response in (blocking, streamed, record):
        assert KEY not in response.text
    assert KEY not in logs.text


def test_formation_runs_mask_the_key_in_answers_records_and_database(
    leaky: str, client: httpx.Client, server: RunningServer, logs: pytest.LogCaptureFixture
) -> None:
    body = {"name": "leak", "nodes": [{"name": "ask", "kind": "agent", "agent_id": leaky}]}
    fid = client.post("/formations", json=body).json()["id"]
    blocking = client.post(f"/formations/{fid}/run", json={"input": "hi"})
    streamed = client.post(f"/formations/{fid}/run/stream", json={"input": "hi"})
    assert blocking.status_code == 502
    run = client.get(f"/runs/{blocking.json()['run_id']}")
    assert "[redacted]" in run.json()["error"]
    for response in (blocking, streamed, run, client.get("/runs")):
        assert KEY not in response.text
    with sqlite3.connect(server.config.database) as db:
        stored = [db.execute(f"SELECT * FROM {table}").fetchall()  # run records, the run journal, messages
                  for table in ("run_records", "runs", "journal", "messages")]
    assert KEY not in repr(stored)
    assert KEY not in logs.text


def test_environment_keys_are_masked_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_key = "sk-ant-from-the-environment-42"
    monkeypatch.setenv("ANTHROPIC_API_KEY", env_key)
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, functions=(FUNCTIONS_MODULE,),
                          entry_points=False)
    with running(config) as server, server.client() as client:
        agent = scripted_agent(client, f"my key is {env_key}")
        sid = client.post("/sessions").json()["id"]
        answer = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "tell me"})
        assert answer.json()["response"] == "my key is [redacted]"
        for response in (answer, client.get(f"/sessions/{sid}"), client.get("/agents")):
            assert env_key not in response.text
    with sqlite3.connect(config.database) as db:
        assert env_key not in repr(db.execute("SELECT content FROM messages").fetchall())


def test_only_key_like_values_are_masked_so_answers_stay_valid_json() -> None:
    import json

    from wingman_actors.server.redact import Redactor

    redactor = Redactor(["short", "12345678", 'has "quotes" in it', "sk-real-key-42"])
    body = json.dumps({"n": 12345678, "a": "short", "k": "sk-real-key-42!"}).encode()
    assert json.loads(redactor.data(body)) == {"n": 12345678, "a": "short", "k": "[redacted]!"}
