"""A stream whose body ends before the provider's end marker (Anthropic's message_stop,
OpenAI's [DONE] or finish_reason, Ollama's done line) is the same failure for every
provider: kind ``agent`` (the provider was reached and answered, but its answer is
incomplete; ``network`` is for a provider that could not be reached), which a retry
policy may try again. Sync and async paths alike, against the loopback server."""

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


def _streamed(provider: BaseProvider, aio: bool) -> None:
    request = InferenceRequest(messages=[Message.user("Hi")])
    if not aio:
        for _ in provider.stream_inference(request):
            pass
        return

    async def main() -> None:
        try:
            await provider.astream_inference(request).consume()
        finally:
            await provider.aclose()

    asyncio.run(main())


def _anthropic_cut() -> Reply:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}}
    return Reply.sse([
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "Hal"}}),
    ])


def _openai_cut() -> Reply:
    chunk: dict[str, Any] = {"id": "c1", "object": "chat.completion.chunk", "model": "m",
                             "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hal"},
                                          "finish_reason": None}]}
    return Reply.sse([(None, chunk)])


def _ollama_cut() -> Reply:
    return Reply.ndjson([{"model": "m", "created_at": "2024-07-22T20:33:28.123648Z",
                          "message": {"role": "assistant", "content": "Hal"}, "done": False}])


_CUT = {"anthropic": (_anthropic_cut, "before message_stop"), "openai": (_openai_cut, r"before \[DONE\]"),
        "ollama": (_ollama_cut, "before its final")}


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("provider", sorted(_CUT))
def test_a_stream_that_ends_before_its_end_marker_is_a_retryable_agent_error(
    make: Callable[[str], BaseProvider], loopback: LoopbackServer, provider: str, aio: bool
) -> None:
    reply, says = _CUT[provider]
    loopback.queue(reply())

    with pytest.raises(AgentError, match=says) as info:
        _streamed(make(provider), aio)

    assert info.value.kind is ErrorKind.AGENT
    assert info.value.kind.retryable
    assert info.value.provider == provider
