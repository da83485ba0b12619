"""An answer or stream not shaped as the provider's API documents (a proxy's, another API's)
is an ``AgentError`` naming the provider and what it sent, never a raw ``AttributeError``,
``TypeError`` or ``JSONDecodeError`` out of the provider's own reading of it; in the sync
and the async paths alike."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.core import InferenceRequest, Message
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import new_provider
from wingman_actors.providers._base import BaseProvider


@pytest.fixture
def make(loopback: LoopbackServer) -> Iterator[Callable[[str], BaseProvider]]:
    made: list[BaseProvider] = []

    def build(provider: str) -> BaseProvider:
        base_url = f"{loopback.url}/v1" if provider == "openai" else loopback.url
        built = new_provider(provider, {"model": "m", "base_url": base_url, "api_key": "k", "max_retries": 0})
        assert isinstance(built, BaseProvider)
        made.append(built)
        return built

    yield build
    for provider in made:
        provider.close()


def ask() -> InferenceRequest:
    return InferenceRequest(messages=[Message.user("Hi")])


def streamed(provider: BaseProvider, aio: bool) -> None:
    if not aio:
        for _ in provider.stream_inference(ask()):
            pass
        return

    async def main() -> None:
        try:
            await provider.astream_inference(ask()).consume()
        finally:
            await provider.aclose()

    asyncio.run(main())


def answered(provider: BaseProvider, aio: bool) -> None:
    if not aio:
        provider.run_inference(ask())
        return

    async def main() -> None:
        try:
            await provider.arun_inference(ask())
        finally:
            await provider.aclose()

    asyncio.run(main())


def openai_chunk(choice: Any) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_an_openai_stream_chunk_whose_delta_is_not_an_object_is_an_agent_error(
    make: Callable[[str], BaseProvider], loopback: LoopbackServer, aio: bool
) -> None:
    loopback.queue(Reply.sse([(None, openai_chunk({"index": 0, "delta": "not an object"})), (None, "[DONE]")]))
    with pytest.raises(AgentError) as info:
        streamed(make("openai"), aio)
    assert info.value.kind is ErrorKind.AGENT
    assert info.value.provider == "openai"
    assert "stream chunk" in info.value.message and "not an object" in info.value.message


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_an_openai_answer_whose_choice_is_not_an_object_is_an_agent_error(
    make: Callable[[str], BaseProvider], loopback: LoopbackServer, aio: bool
) -> None:
    loopback.queue(Reply.json({"id": "c1", "object": "chat.completion", "model": "m", "choices": ["hello"]}))
    with pytest.raises(AgentError) as info:
        answered(make("openai"), aio)
    assert info.value.kind is ErrorKind.AGENT
    assert info.value.provider == "openai"
    assert "an answer not shaped" in info.value.message


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_an_ollama_stream_line_whose_message_is_not_an_object_is_an_agent_error(
    make: Callable[[str], BaseProvider], loopback: LoopbackServer, aio: bool
) -> None:
    loopback.queue(Reply.ndjson([{"model": "m", "message": "oops", "done": False}]))
    with pytest.raises(AgentError) as info:
        streamed(make("ollama"), aio)
    assert info.value.kind is ErrorKind.AGENT
    assert info.value.provider == "ollama"
    assert "stream line" in info.value.message and "oops" in info.value.message


@pytest.mark.parametrize("answer", [{"model": "m", "done": True}, {"model": "m", "message": 5, "done": True}],
                         ids=["no message", "message not an object"])
def test_an_ollama_answer_without_a_message_object_is_an_agent_error_not_an_empty_success(
    make: Callable[[str], BaseProvider], loopback: LoopbackServer, answer: dict[str, Any]
) -> None:
    loopback.queue(Reply.json(answer))
    with pytest.raises(AgentError) as info:
        answered(make("ollama"), False)
    assert info.value.kind is ErrorKind.AGENT
    assert info.value.provider == "ollama"
    assert "without a message object" in info.value.message


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_an_anthropic_stream_event_that_is_not_json_is_an_agent_error(
    make: Callable[[str], BaseProvider], loopback: LoopbackServer, aio: bool
) -> None:
    loopback.queue(Reply.sse([("message_start", "{not json")]))
    with pytest.raises(AgentError) as info:
        streamed(make("anthropic"), aio)
    assert info.value.kind is ErrorKind.AGENT
    assert info.value.provider == "anthropic"
    assert "not JSON" in info.value.message


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_an_anthropic_message_start_without_its_message_is_an_agent_error(
    make: Callable[[str], BaseProvider], loopback: LoopbackServer, aio: bool
) -> None:
    loopback.queue(Reply.sse([("message_start", {"type": "message_start"})]))
    with pytest.raises(AgentError) as info:
        streamed(make("anthropic"), aio)
    assert info.value.kind is ErrorKind.AGENT
    assert info.value.provider == "anthropic"
    assert "stream event" in info.value.message
