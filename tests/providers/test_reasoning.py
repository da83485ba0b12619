"""Reasoning as content blocks, against the loopback Anthropic, OpenAI and Ollama wire servers:
Anthropic ``thinking`` and ``redacted_thinking`` blocks and OpenAI-compatible
``reasoning_content`` and Ollama's ``message.thinking``, answered whole and streamed, and passed
back in a tool loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.providers.test_anthropic import (
    MODEL as ANTHROPIC_MODEL,
)
from tests.providers.test_anthropic import (
    block_start,
    block_stop,
    delta,
    message_end,
    message_json,
    message_start,
)
from tests.providers.test_openai import chunk, completion, sse, tool_call, usage_chunk
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors import Agent, Session, tool
from wingman_actors.core import ContentBlock, InferenceRequest, Message, StreamEventType
from wingman_actors.providers import Provider, new_provider

THINKING = {"type": "enabled", "budget_tokens": 1024}
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"


@pytest.fixture
def providers() -> Iterator[Callable[..., Provider]]:
    made: list[Provider] = []

    def make(id: str, options: dict[str, Any]) -> Provider:
        provider = new_provider(id, {"max_retries": 0, **options})
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.close()  # type: ignore[attr-defined]


def anthropic(make: Callable[..., Provider], loopback: LoopbackServer) -> Provider:
    return make("anthropic", {"api_key": "k", "base_url": loopback.url, "model": ANTHROPIC_MODEL, "thinking": THINKING})


def openai(make: Callable[..., Provider], loopback: LoopbackServer) -> Provider:
    return make("openai", {"base_url": loopback.url, "model": "deepseek-reasoner"})


def ask(text: str = "What is 27 * 453?") -> InferenceRequest:
    return InferenceRequest(messages=[Message.user(text)])


# --- Anthropic ------------------------------------------------------------------------------


def test_anthropic_thinking_option_is_sent_in_the_request_body(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(message_json()))

    anthropic(providers, loopback).run_inference(ask())

    assert loopback.requests[0].json()["thinking"] == THINKING


def test_anthropic_thinking_and_redacted_thinking_come_back_as_content_blocks(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    content = [
        {"type": "thinking", "thinking": "27 * 453 = 12231", "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": REDACTED},
        {"type": "text", "text": "12231"},
    ]
    loopback.queue(Reply.json(message_json(content)))

    response = anthropic(providers, loopback).run_inference(ask())

    assert response.content == [
        ContentBlock.thinking_block("27 * 453 = 12231", signature=SIGNATURE),
        ContentBlock.redacted_thinking_block(REDACTED),
        ContentBlock.text_block("12231"),
    ]
    assert response.text == "12231"


def _thinking_stream() -> Reply:
    return Reply.sse([
        message_start(),
        block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "27 * 453 "}),
        delta(0, {"type": "thinking_delta", "thinking": "= 12231"}),
        delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
        block_stop(0),
        block_start(1, {"type": "redacted_thinking", "data": REDACTED}),
        block_stop(1),
        block_start(2, {"type": "text", "text": ""}),
        delta(2, {"type": "text_delta", "text": "12231"}),
        block_stop(2),
        *message_end(),
    ])


def test_anthropic_streamed_thinking_arrives_as_thinking_delta_events(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(_thinking_stream())

    events = list(anthropic(providers, loopback).stream_inference(ask()))

    deltas = [(e.index, e.text) for e in events if e.type is StreamEventType.THINKING_DELTA]
    assert deltas == [(0, "27 * 453 "), (0, "= 12231")]


def test_anthropic_streamed_thinking_blocks_end_with_their_signature_and_data(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(_thinking_stream())

    stream = anthropic(providers, loopback).stream_inference(ask())
    stopped = [e.block for e in stream if e.type is StreamEventType.CONTENT_BLOCK_STOP]

    expected = [
        ContentBlock.thinking_block("27 * 453 = 12231", signature=SIGNATURE),
        ContentBlock.redacted_thinking_block(REDACTED),
        ContentBlock.text_block("12231"),
    ]
    assert stopped == expected
    assert stream.response.content == expected


def test_anthropic_async_stream_keeps_the_thinking_block(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(_thinking_stream())
    provider = anthropic(providers, loopback)

    async def run() -> list[ContentBlock]:
        try:
            response = await provider.astream_inference(ask()).consume()  # type: ignore[attr-defined]
        finally:
            await provider.aclose()  # type: ignore[attr-defined]
        return list(response.content)

    assert asyncio.run(run())[0] == ContentBlock.thinking_block("27 * 453 = 12231", signature=SIGNATURE)


@tool
def multiply(a: int, b: int) -> str:
    """Multiply two integers."""
    return str(a * b)


def test_anthropic_tool_loop_sends_the_thinking_blocks_back_unchanged(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    first = [
        {"type": "thinking", "thinking": "I should use the tool.", "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": REDACTED},
        {"type": "tool_use", "id": "toolu_01", "name": "multiply", "input": {"a": 27, "b": 453}},
    ]
    loopback.queue(Reply.json(message_json(first, stop_reason="tool_use")), Reply.json(message_json()))
    agent = Agent("calc", provider=anthropic(providers, loopback), tools=[multiply])

    result = Session(agent).run("What is 27 * 453?")

    assert result.response == "Hello!"
    sent = loopback.requests[1].json()["messages"]
    assert sent[1] == {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "I should use the tool.", "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": REDACTED},
        {"type": "tool_use", "id": "toolu_01", "name": "multiply", "input": {"a": 27, "b": 453}},
    ]}
    assert sent[2]["content"][0]["content"] == "12231"


# --- OpenAI-compatible ------------------------------------------------------------------------


def _reasoning_completion(content: str | None = "12231", **fields: Any) -> dict[str, Any]:
    body = completion(content, **fields)
    body["choices"][0]["message"]["reasoning_content"] = "27 * 453 = 12231"
    return body


def test_openai_reasoning_content_comes_back_as_a_thinking_block_without_signature(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(_reasoning_completion()))

    response = openai(providers, loopback).run_inference(ask())

    assert response.content == [ContentBlock.thinking_block("27 * 453 = 12231"), ContentBlock.text_block("12231")]
    assert response.content[0].signature is None


def test_openai_streamed_reasoning_content_arrives_as_thinking_delta_events(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(sse(
        chunk({"role": "assistant", "content": None, "reasoning_content": "27 * 453 "}),
        chunk({"reasoning_content": "= 12231"}),
        chunk({"content": "12231"}),
        chunk({}, "stop"),
        usage_chunk(),
    ))

    stream = openai(providers, loopback).stream_inference(ask())
    events = list(stream)

    assert [e.text for e in events if e.type is StreamEventType.THINKING_DELTA] == ["27 * 453 ", "= 12231"]
    assert stream.response.content == [
        ContentBlock.thinking_block("27 * 453 = 12231"),
        ContentBlock.text_block("12231"),
    ]


def test_openai_reasoning_under_the_name_reasoning_is_read_too_whole_and_streamed(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    """Ollama's /v1, OpenRouter and newer vLLM name the field ``reasoning``: it was dropped silently."""
    body = completion("12231")
    body["choices"][0]["message"]["reasoning"] = "27 * 453 = 12231"
    loopback.queue(Reply.json(body), sse(
        chunk({"role": "assistant", "content": None, "reasoning": "27 * 453 "}),
        chunk({"reasoning": "= 12231"}),
        chunk({"content": "12231"}),
        chunk({}, "stop"),
        usage_chunk(),
    ))
    provider = openai(providers, loopback)

    whole = provider.run_inference(ask())
    stream = provider.stream_inference(ask())
    events = list(stream)

    expected = [ContentBlock.thinking_block("27 * 453 = 12231"), ContentBlock.text_block("12231")]
    assert whole.content == expected and stream.response.content == expected
    assert [e.text for e in events if e.type is StreamEventType.THINKING_DELTA] == ["27 * 453 ", "= 12231"]


def test_openai_tool_loop_sends_the_reasoning_back_with_the_tool_calls(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    call = tool_call("call_1", "multiply", '{"a": 27, "b": 453}')
    loopback.queue(
        Reply.json(_reasoning_completion(None, tool_calls=[call], finish_reason="tool_calls")),
        Reply.json(completion("12231")),
    )
    agent = Agent("calc", provider=openai(providers, loopback), tools=[multiply])

    Session(agent).run("What is 27 * 453?")

    assistant = loopback.requests[1].json()["messages"][1]
    assert assistant["reasoning_content"] == "27 * 453 = 12231"
    assert assistant["tool_calls"][0]["id"] == "call_1"


def test_openai_reasoning_of_an_earlier_turn_is_not_sent_again(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(completion("ok")))
    earlier = Message.assistant([ContentBlock.thinking_block("old reasoning"), ContentBlock.text_block("12231")])
    request = InferenceRequest(messages=[Message.user("27 * 453?"), earlier, Message.user("And halved?")])

    openai(providers, loopback).run_inference(request)

    sent = loopback.requests[0].json()["messages"]
    assert sent[1] == {"role": "assistant", "content": "12231"}


# --- offline providers ------------------------------------------------------------------------


def test_an_offline_provider_streams_a_scripted_thinking_block_as_thinking_delta() -> None:
    from wingman_actors.core import InferenceResponse
    from wingman_actors.testing import ScriptedProvider

    scripted = InferenceResponse(content=[
        ContentBlock.thinking_block("27 * 453 = 12231", signature=SIGNATURE),
        ContentBlock.redacted_thinking_block(REDACTED),
        ContentBlock.text_block("12231"),
    ])
    stream = ScriptedProvider([scripted]).stream_inference(ask())
    events = list(stream)

    assert [e.text for e in events if e.type is StreamEventType.THINKING_DELTA] == ["27 * 453 = 12231"]
    assert stream.response.content == scripted.content


def test_anthropic_leaves_out_thinking_without_a_signature_from_another_provider(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(message_json()))
    earlier = Message.assistant([ContentBlock.thinking_block("from deepseek"), ContentBlock.text_block("12231")])
    request = InferenceRequest(messages=[Message.user("27 * 453?"), earlier, Message.user("And halved?")])

    anthropic(providers, loopback).run_inference(request)

    assert loopback.requests[0].json()["messages"][1]["content"] == [{"type": "text", "text": "12231"}]


# --- Ollama ---------------------------------------------------------------------------------


def ollama(make: Callable[..., Provider], loopback: LoopbackServer) -> Provider:
    return make("ollama", {"base_url": loopback.url, "model": "qwen3", "think": True})


def _ollama_reply(content: str = "12231", **message: Any) -> dict[str, Any]:
    """A non-streamed /api/chat answer of a thinking model, as Ollama sends it."""
    return {
        "model": "qwen3", "created_at": "2025-05-29T09:35:56.012222Z",
        "message": {"role": "assistant", "content": content, "thinking": "27 * 453 = 12231", **message},
        "done_reason": "stop", "done": True, "prompt_eval_count": 18, "eval_count": 40,
    }


def _ollama_line(content: str = "", thinking: str | None = None, done: bool = False) -> dict[str, Any]:
    """One NDJSON line of a streamed answer: a thinking piece or a content piece."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if thinking is not None:
        message["thinking"] = thinking
    line: dict[str, Any] = {"model": "qwen3", "created_at": "2025-05-29T09:35:56.012222Z", "message": message,
                            "done": done}
    if done:
        line.update(done_reason="stop", prompt_eval_count=18, eval_count=40)
    return line


def _ollama_thinking_stream() -> Reply:
    return Reply.ndjson([
        _ollama_line(thinking="27 * 453 "), _ollama_line(thinking="= 12231"),
        _ollama_line("122"), _ollama_line("31"), _ollama_line(done=True),
    ])


def test_ollama_think_option_is_sent_in_the_request_body(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(_ollama_reply()))

    ollama(providers, loopback).run_inference(ask())

    assert loopback.requests[0].json()["think"] is True


def test_ollama_message_thinking_comes_back_as_a_thinking_block_without_signature(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(_ollama_reply()))

    response = ollama(providers, loopback).run_inference(ask())

    assert response.content == [ContentBlock.thinking_block("27 * 453 = 12231"), ContentBlock.text_block("12231")]


def test_ollama_streamed_thinking_arrives_as_thinking_delta_events(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(_ollama_thinking_stream())

    stream = ollama(providers, loopback).stream_inference(ask())
    events = list(stream)

    assert [e.text for e in events if e.type is StreamEventType.THINKING_DELTA] == ["27 * 453 ", "= 12231"]
    stops = [e.block.type for e in events if e.type is StreamEventType.CONTENT_BLOCK_STOP and e.block]
    assert stops == ["thinking", "text"]  # the thinking block ends before the answer starts
    assert stream.response.content == [
        ContentBlock.thinking_block("27 * 453 = 12231"), ContentBlock.text_block("12231"),
    ]


def test_ollama_async_calls_keep_the_thinking_block(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(_ollama_reply()), _ollama_thinking_stream())
    provider = ollama(providers, loopback)

    async def both() -> tuple[Any, list[Any], Any]:
        whole = await provider.arun_inference(ask())  # type: ignore[attr-defined]
        stream = provider.astream_inference(ask())  # type: ignore[attr-defined]
        events = [event async for event in stream]
        await provider.aclose()  # type: ignore[attr-defined]
        return whole, events, stream.response

    whole, events, streamed = asyncio.run(both())

    thinking = ContentBlock.thinking_block("27 * 453 = 12231")
    assert whole.content[0] == thinking
    assert [e.text for e in events if e.type is StreamEventType.THINKING_DELTA] == ["27 * 453 ", "= 12231"]
    assert streamed.content[0] == thinking


def test_ollama_tool_loop_sends_the_thinking_back_with_the_tool_calls(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    call = {"function": {"name": "multiply", "arguments": {"a": 27, "b": 453}}}
    loopback.queue(Reply.json(_ollama_reply("", tool_calls=[call])), Reply.json(_ollama_reply("It is 12231.")))
    agent = Agent("calc", provider=ollama(providers, loopback), tools=[multiply])

    result = Session(agent).run("What is 27 * 453?")

    assistant = loopback.requests[1].json()["messages"][1]
    assert assistant["thinking"] == "27 * 453 = 12231"
    assert assistant["tool_calls"][0]["function"]["name"] == "multiply"
    assert result.response == "It is 12231."


def test_ollama_thinking_of_an_earlier_turn_is_not_sent_again(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(_ollama_reply("ok")))
    earlier = Message.assistant([ContentBlock.thinking_block("old reasoning"), ContentBlock.text_block("12231")])
    request = InferenceRequest(messages=[Message.user("27 * 453?"), earlier, Message.user("And halved?")])

    ollama(providers, loopback).run_inference(request)

    assert loopback.requests[0].json()["messages"][1] == {"role": "assistant", "content": "12231"}
