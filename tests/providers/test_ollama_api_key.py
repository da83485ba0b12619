"""The Ollama provider's ``api_key`` (a common option): sent as ``Authorization: Bearer``, as
Ollama's API takes it (ollama.com's hosted API, or a server behind an authenticating proxy),
on the sync, async and streamed paths; ``OLLAMA_API_KEY`` when the option is left out."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tests.support.loopback import LoopbackServer, Reply, Request
from wingman_actors.core import InferenceRequest, Message
from wingman_actors.providers import Provider, new_provider


@pytest.fixture(autouse=True)
def _no_ollama_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)


@pytest.fixture
def answering(loopback: LoopbackServer) -> Iterator[LoopbackServer]:
    def reply(req: Request) -> Reply:
        if req.json()["stream"]:
            return Reply.ndjson([
                {"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": False},
                {"model": "m", "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop"},
            ])
        return Reply.json({"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": True})

    loopback.handler = reply
    yield loopback


def _ask() -> InferenceRequest:
    return InferenceRequest(messages=[Message.user("hi")])


def _every_path(provider: Provider) -> None:
    assert provider.run_inference(_ask()).text == "hi"
    stream = provider.stream_inference(_ask())
    list(stream)
    assert asyncio.run(provider.arun_inference(_ask())).text == "hi"  # type: ignore[attr-defined]


def test_the_api_key_option_is_sent_as_a_bearer_token_on_every_path(answering: LoopbackServer) -> None:
    provider = new_provider("ollama", {"model": "m", "base_url": answering.url, "api_key": "sk-ollama"})
    try:
        _every_path(provider)
    finally:
        provider.close()  # type: ignore[attr-defined]

    assert [r.headers.get("authorization") for r in answering.requests] == ["Bearer sk-ollama"] * 3


def test_the_ollama_api_key_variable_is_the_key_when_the_option_is_left_out(
    answering: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLLAMA_API_KEY", "from-env")
    provider = new_provider("ollama", {"model": "m", "base_url": answering.url})
    try:
        provider.run_inference(_ask())
    finally:
        provider.close()  # type: ignore[attr-defined]

    assert answering.requests[0].headers.get("authorization") == "Bearer from-env"


def test_without_a_key_no_authorization_header_is_sent(answering: LoopbackServer) -> None:
    provider = new_provider("ollama", {"model": "m", "base_url": answering.url})
    try:
        provider.run_inference(_ask())
    finally:
        provider.close()  # type: ignore[attr-defined]

    assert "authorization" not in answering.requests[0].headers


def test_the_headers_option_overrides_the_key(answering: LoopbackServer) -> None:
    provider = new_provider(
        "ollama",
        {"model": "m", "base_url": answering.url, "api_key": "k", "headers": {"Authorization": "Basic abc"}},
    )
    try:
        provider.run_inference(_ask())
    finally:
        provider.close()  # type: ignore[attr-defined]

    assert answering.requests[0].headers.get("authorization") == "Basic abc"
