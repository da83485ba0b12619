"""The server's Ollama agents take their key from the auth store, as its other providers
do, and never from the server's environment (``OLLAMA_API_KEY``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.harness import running
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.server import ServerConfig


@pytest.fixture
def ollama(loopback: LoopbackServer) -> LoopbackServer:
    loopback.handler = lambda req: Reply.json(
        {"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": True}
    )
    return loopback


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[httpx.Client]:
    monkeypatch.setenv("OLLAMA_API_KEY", "from-the-servers-environment")
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    with running(ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, entry_points=False)) as server, \
            server.client() as client:
        yield client


def _ask(client: httpx.Client, base_url: str) -> None:
    agent = client.post("/agents", json={"name": "o", "provider": "ollama", "model": "m",
                                         "options": {"base_url": base_url, "max_retries": 0}})
    assert agent.status_code == 201, agent.text
    sid = client.post("/sessions").json()["id"]
    answer = client.post(f"/sessions/{sid}/message", json={"agent_id": agent.json()["id"], "message": "hi"})
    assert answer.status_code == 200, answer.text


def test_a_stored_ollama_key_is_sent_as_a_bearer_token(client: httpx.Client, ollama: LoopbackServer) -> None:
    stored = client.put("/provider/auth", json={"providers": {"ollama": {"type": "api_key", "key": "sk-stored"}}})
    assert stored.status_code == 200

    _ask(client, ollama.url)

    assert ollama.requests[0].headers.get("authorization") == "Bearer sk-stored"


def test_without_a_stored_key_no_key_is_sent_not_even_the_environments(
    client: httpx.Client, ollama: LoopbackServer
) -> None:
    _ask(client, ollama.url)

    assert "authorization" not in ollama.requests[0].headers


def test_the_provider_list_says_ollama_takes_an_api_key(client: httpx.Client) -> None:
    assert client.get("/provider/ollama").json()["auth_types"] == ["api_key"]
