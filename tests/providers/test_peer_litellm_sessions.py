"""LiteLLM's own tests of streamed and async completions with tools, retries and
timeouts (``completion(stream=True)``, ``acompletion``, ``num_retries``, ``timeout``),
ported to agent Sessions (``run_stream``, ``arun``, ``astream``) over our OpenAI-compatible,
Ollama and Anthropic providers against loopback servers speaking each one's streaming
format. What is asserted is the session's Result, its events, and its errors."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.providers.test_anthropic import (
    block_start,
    block_stop,
    delta,
    error_reply,
    message_end,
    message_json,
    message_start,
)
from tests.providers.test_ollama import chat_reply, final_line, line
from tests.providers.test_openai import chunk, completion, sse, usage_chunk
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors import Agent, Session, tool
from wingman_actors.core import StreamEventType, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers._base import BaseProvider

STREAMING = "BerriAI/litellm tests/local_testing/test_streaming.py"
RETRIES = "BerriAI/litellm tests/local_testing/test_completion_with_retries.py"
PROVIDERS = ["openai", "ollama", "anthropic"]


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@pytest.fixture(params=PROVIDERS)
def name(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


@pytest.fixture
def provider(loopback: LoopbackServer, name: str, build_provider: Callable[..., BaseProvider]) -> BaseProvider:
    options: dict[str, Any] = {
        "openai": {"model": "gpt-4o", "base_url": f"{loopback.url}/v1"},
        "ollama": {"model": "llama3.2", "base_url": loopback.url},
        "anthropic": {"model": "claude-test-model", "base_url": loopback.url, "api_key": "test-key"},
    }[name]
    return build_provider(name, {**options, "async_transport": "httpx"}, 2)


def text_answer(name: str, *pieces: str, prompt: int = 11, completion_tokens: int = 7) -> Reply:
    """A streamed text answer in the provider's format, its usage at the end."""
    if name == "openai":
        return sse(chunk({"role": "assistant", "content": ""}), *[chunk({"content": p}) for p in pieces],
                   chunk({}, "stop"), usage_chunk(prompt=prompt, completion=completion_tokens))
    if name == "ollama":
        last = final_line()
        last.update(prompt_eval_count=prompt, eval_count=completion_tokens)
        return Reply.ndjson([*[line(p) for p in pieces], last])
    events = [message_start(input_tokens=prompt), block_start(0, {"type": "text", "text": ""})]
    events += [delta(0, {"type": "text_delta", "text": p}) for p in pieces]
    return Reply.sse([*events, block_stop(0), *message_end(output_tokens=completion_tokens)])


def call_answer(name: str, city: str) -> Reply:
    """A streamed answer calling get_weather(city), its arguments split where the format allows."""
    if name == "openai":
        first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
        return sse(chunk({"role": "assistant", "tool_calls": [first]}),
                   chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
                   chunk({"tool_calls": [{"index": 0, "function": {"arguments": f'"{city}"}}'}}]}),
                   chunk({}, "tool_calls"), usage_chunk())
    if name == "ollama":
        calls = [{"function": {"name": "get_weather", "arguments": {"city": city}}}]
        return Reply.ndjson([line("", message={"role": "assistant", "content": "", "tool_calls": calls}), final_line()])
    events = [message_start(), block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}),
              delta(0, {"type": "input_json_delta", "partial_json": '{"city": '}),
              delta(0, {"type": "input_json_delta", "partial_json": f'"{city}"}}'}), block_stop(0),
              *message_end("tool_use")]
    return Reply.sse(events)


def plain_answer(name: str, text: str) -> Reply:
    if name == "openai":
        return Reply.json(completion(text))
    if name == "ollama":
        return Reply.json(chat_reply(text))
    return Reply.json(message_json([{"type": "text", "text": text}]))


def failure(name: str, status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    if name == "anthropic":
        kind = "rate_limit_error" if status == 429 else "api_error"
        return error_reply(status, kind, message, headers)
    body: Any = {"error": message} if name == "ollama" else {"error": {"message": message}}
    return Reply.json(body, status=status, headers=headers)


def test_a_streamed_session_yields_the_text_deltas_and_the_last_chunks_usage(
    loopback: LoopbackServer, provider: BaseProvider, name: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_streaming.py::test_completion_streaming_usage (stream_options include_usage)."""
    loopback.queue(text_answer(name, "Hello", ", ", "world", prompt=11, completion_tokens=7))
    stream = Session(Agent("a", provider=provider)).run_stream("Hi")
    deltas = [e.text for e in stream if e.type is StreamEventType.TEXT_DELTA]
    result = stream.result()
    assert deltas == ["Hello", ", ", "world"]
    assert result.response == "Hello, world"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (11, 7)


def test_a_streamed_session_runs_a_streamed_tool_call_then_streams_the_answer(
    loopback: LoopbackServer, provider: BaseProvider, name: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_streaming.py::test_completion_streaming_with_tools (tool-call deltas rebuilt into a call)."""
    loopback.queue(call_answer(name, "Oslo"), text_answer(name, "Sunny ", "in Oslo."))
    stream = Session(Agent("a", provider=provider, tools=[get_weather])).run_stream("Weather in Oslo?")
    kinds = [e.type for e in stream]
    result = stream.result()
    assert result.response == "Sunny in Oslo."
    assert [(c.name, c.input, c.output) for c in result.tool_calls] == [("get_weather", {"city": "Oslo"}, "sunny in Oslo")]
    assert StreamEventType.TOOL_START in kinds and StreamEventType.TOOL_END in kinds
    assert len(loopback.requests) == 2


def test_an_async_streamed_session_runs_the_tool_loop_the_same_way(
    loopback: LoopbackServer, provider: BaseProvider, name: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_streaming.py (acompletion(stream=True) with tools)."""
    loopback.queue(call_answer(name, "Rome"), text_answer(name, "Sunny in Rome."))

    async def main() -> tuple[list[str], str]:
        try:
            stream = Session(Agent("a", provider=provider, tools=[get_weather])).astream("Weather in Rome?")
            texts = [e.text or "" async for e in stream if e.type is StreamEventType.TEXT_DELTA]
            return texts, stream.result().response
        finally:
            await provider.aclose()

    texts, response = asyncio.run(main())
    assert (texts, response) == (["Sunny in Rome."], "Sunny in Rome.")


def test_an_async_session_retries_a_503_and_returns_the_answer(
    loopback: LoopbackServer, provider: BaseProvider, name: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_completion_with_retries.py (acompletion with num_retries)."""
    loopback.queue(failure(name, 503, "overloaded"), plain_answer(name, "Done."))

    async def main() -> str:
        try:
            return (await Session(Agent("a", provider=provider)).arun("Hi")).response
        finally:
            await provider.aclose()

    assert asyncio.run(main()) == "Done."
    assert len(loopback.requests) == 2


def test_a_session_whose_retries_run_out_raises_the_providers_error_with_no_usage(
    loopback: LoopbackServer, provider: BaseProvider, name: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_completion_with_retries.py (the last error after num_retries)."""
    loopback.handler = lambda _: failure(name, 500, "internal error")
    with pytest.raises(AgentError) as caught:
        Session(Agent("a", provider=provider)).run("Hi")
    assert (caught.value.kind, caught.value.status, caught.value.provider) == (ErrorKind.AGENT, 500, name)
    assert caught.value.usage is None
    assert len(loopback.requests) == 3


def test_a_session_that_fails_after_a_tool_turn_says_what_the_first_call_cost(
    loopback: LoopbackServer, provider: BaseProvider, name: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_streaming.py (usage of a streamed call), for a session that fails later:
    the tokens of the call that succeeded are on the error, as providers-and-errors.md says."""
    loopback.queue(call_answer(name, "Oslo"))
    loopback.handler = lambda _: failure(name, 400, "bad request")
    stream = Session(Agent("a", provider=provider, tools=[get_weather])).run_stream("Weather?")
    with pytest.raises(AgentError) as caught:
        for _ in stream:
            pass
    assert caught.value.kind is ErrorKind.INVALID
    assert caught.value.usage is not None and caught.value.usage != Usage()


def test_a_session_timing_out_while_waiting_on_retry_after_keeps_the_rate_limit_in_its_chain(
    loopback: LoopbackServer, provider: BaseProvider, name: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_completion_with_retries.py (a RateLimitError with retry-after, under a timeout).

    LiteLLM's retry waits out the header whatever the timeout; ours stops at the run's
    deadline with the run's ``timeout`` error, and the 429 that made it wait stays in the
    exception chain (a traceback shows it)."""
    loopback.handler = lambda _: failure(name, 429, "slow down", headers={"retry-after": "30"})
    with pytest.raises(AgentError) as caught:
        Session(Agent("a", provider=provider)).run("Hi", timeout=3)  # room for the first reply under load
    assert caught.value.kind is ErrorKind.TIMEOUT
    chain: list[BaseException] = []
    error: BaseException | None = caught.value
    while error is not None and len(chain) < 10:
        chain.append(error)
        error = error.__cause__ or error.__context__
    limited = [e for e in chain if isinstance(e, AgentError) and e.kind is ErrorKind.RATE_LIMIT]
    assert limited and limited[0].retry_after == 30 and "slow down" in str(limited[0])
    assert len(loopback.requests) == 1
    # the message says what the run was doing when its time ran out, and the 429 is its cause
    assert "while waiting 30.0s to retry the" in str(caught.value) and "slow down" in str(caught.value)
    assert caught.value.__cause__ is limited[0]


def test_an_awaited_session_timing_out_while_waiting_on_retry_after_keeps_the_rate_limit_in_its_chain(
    loopback: LoopbackServer, provider: BaseProvider, name: str
) -> None:
    """The awaited twin of the test above (``Session.arun``): the run's timeout error, with the
    429 it waited on in its chain. The run's deadline ends the wait as an ``asyncio`` timeout
    (the session bounds its awaits with ``asyncio.timeout``), so the message does not name the
    wait as the blocking run's does."""
    loopback.handler = lambda _: failure(name, 429, "slow down", headers={"retry-after": "30"})

    async def main() -> None:
        try:
            await Session(Agent("a", provider=provider)).arun("Hi", timeout=3)
        finally:
            await provider.aclose()

    with pytest.raises(AgentError) as caught:
        asyncio.run(main())
    assert caught.value.kind is ErrorKind.TIMEOUT and str(caught.value).startswith("run timed out after 3s")
    chain: list[BaseException] = []
    error: BaseException | None = caught.value
    while error is not None and len(chain) < 10:
        chain.append(error)
        error = error.__cause__ or error.__context__
    limited = [e for e in chain if isinstance(e, AgentError) and e.kind is ErrorKind.RATE_LIMIT]
    assert limited and limited[0].retry_after == 30 and "slow down" in str(limited[0])
