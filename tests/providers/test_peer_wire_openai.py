"""The openai-python SDK's own tests of the chat-completions wire format, ported to our
OpenAI-compatible provider against a loopback server: streamed tool-call argument deltas
(split across chunks, several calls by index), usage in the final chunk, refusals,
finish reasons, empty-choices chunks, retries on 429/5xx with retry-after headers, and
timeouts. Every streamed case runs sync and async (httpx's and aiohttp's transports);
what is asserted is what a user sees: our InferenceResponse, stream events, AgentError."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.providers.test_openai import chunk, completion, sse, tool_call, usage_chunk
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.core import (
    InferenceRequest,
    InferenceResponse,
    Message,
    StreamEvent,
    StreamEventType,
    ToolDefinition,
    Usage,
)
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers._base import BaseProvider

SDK = "openai/openai-python"
STREAMING = f"{SDK} tests/lib/chat/test_completions_streaming.py"
CLIENT = f"{SDK} tests/test_client.py"

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def ask(text: str = "Hi", **fields: Any) -> InferenceRequest:
    return InferenceRequest(messages=[Message.user(text)], tools=[WEATHER], **fields)


def streamed(
    provider: BaseProvider, mode: str, request: InferenceRequest | None = None
) -> tuple[list[StreamEvent], InferenceResponse]:
    """Stream ``request`` through the sync path, or the async one on a fresh loop."""
    request = request or ask()
    if mode == "sync":
        stream = provider.stream_inference(request)
        events = list(stream)
        return events, stream.response

    async def main() -> tuple[list[StreamEvent], InferenceResponse]:
        try:
            astream = provider.astream_inference(request)
            events = [event async for event in astream]
            return events, astream.response
        finally:
            await provider.aclose()

    return asyncio.run(main())


def answered(provider: BaseProvider, mode: str, request: InferenceRequest | None = None) -> InferenceResponse:
    """One non-streamed call, sync or async."""
    request = request or ask()
    if mode == "sync":
        return provider.run_inference(request)

    async def main() -> InferenceResponse:
        try:
            return await provider.arun_inference(request)
        finally:
            await provider.aclose()

    return asyncio.run(main())


def of_type(events: list[StreamEvent], kind: StreamEventType) -> list[StreamEvent]:
    return [e for e in events if e.type is kind]


@pytest.fixture
def make(loopback: LoopbackServer, built: Callable[..., BaseProvider]) -> Callable[..., BaseProvider]:
    def build(max_retries: int = 0, **options: Any) -> BaseProvider:
        return built("openai", {"model": "gpt-4o", "base_url": f"{loopback.url}/v1", "api_key": "sk-test", **options}, max_retries)

    return build


def call_delta(index: int, *, id: str | None = None, name: str | None = None, args: str = "") -> dict[str, Any]:
    """One tool_calls delta entry: the first names the call, later ones carry argument text."""
    entry: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id is not None:
        entry.update(id=id, type="function")
        entry["function"]["name"] = name
    return entry


# --- streamed tool calls ----------------------------------------------------------------


def test_streamed_tool_call_arguments_split_across_chunks_assemble_into_one_input(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_completions_streaming.py::test_parse_pydantic_tool."""
    pieces = ['{"', "ci", 'ty":', ' "San ', "Franc", 'isco"', "}"]
    loopback.queue(sse(
        chunk({"role": "assistant", "content": None,
               "tool_calls": [call_delta(0, id="call_7", name="get_weather")]}),
        *[chunk({"tool_calls": [call_delta(0, args=p)]}) for p in pieces],
        chunk({}, "tool_calls"), usage_chunk(),
    ))
    events, response = streamed(make(), mode)
    assert "".join(e.partial_json or "" for e in of_type(events, StreamEventType.INPUT_JSON_DELTA)) == "".join(pieces)
    [call] = response.tool_calls
    assert (call.id, call.name, call.input) == ("call_7", "get_weather", {"city": "San Francisco"})
    assert response.stop_reason == "tool_use"


def test_two_streamed_tool_calls_interleaved_by_index_become_two_calls_in_order(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_completions_streaming.py::test_parse_multiple_pydantic_tools."""
    loopback.queue(sse(
        chunk({"role": "assistant", "tool_calls": [call_delta(0, id="call_a", name="get_weather")]}),
        chunk({"tool_calls": [call_delta(0, args='{"city": ')]}),
        chunk({"tool_calls": [call_delta(1, id="call_b", name="get_weather", args='{"ci')]}),
        chunk({"tool_calls": [call_delta(0, args='"Paris"}')]}),
        chunk({"tool_calls": [call_delta(1, args='ty": "Oslo"}')]}),
        chunk({}, "tool_calls"), usage_chunk(),
    ))
    events, response = streamed(make(), mode)
    assert [(c.id, c.input) for c in response.tool_calls] == [("call_a", {"city": "Paris"}), ("call_b", {"city": "Oslo"})]
    stops = [e.block for e in of_type(events, StreamEventType.CONTENT_BLOCK_STOP)]
    assert [b.id for b in stops if b is not None] == ["call_a", "call_b"]


def test_a_streamed_tool_call_with_empty_arguments_has_an_empty_input(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_tool_call_deltas.py::test_duplicate_tool_call_deltas (a call with no argument deltas)."""
    loopback.queue(sse(
        chunk({"role": "assistant", "tool_calls": [call_delta(0, id="call_1", name="get_weather")]}),
        chunk({}, "tool_calls"), usage_chunk(),
    ))
    _, response = streamed(make(), mode)
    assert response.tool_calls[0].input == {}


def test_streamed_tool_call_arguments_that_are_not_json_are_an_agent_error_naming_the_tool(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_completions_streaming.py::test_parse_pydantic_tool (arguments that are not JSON)."""
    loopback.queue(sse(
        chunk({"role": "assistant", "tool_calls": [call_delta(0, id="call_1", name="get_weather", args='{"city": ')]}),
        chunk({}, "tool_calls"), usage_chunk(),
    ))
    with pytest.raises(AgentError, match=r"get_weather") as caught:
        streamed(make(), mode)
    assert caught.value.kind is ErrorKind.AGENT


# --- usage, choices, finish reasons -------------------------------------------------------


def test_usage_in_the_final_empty_choices_chunk_is_the_responses_usage(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_completions_streaming.py::test_parse_nothing (stream_options include_usage)."""
    loopback.queue(sse(chunk({"role": "assistant", "content": "Hi"}), chunk({}, "stop"),
                       usage_chunk(prompt=79, completion=14, cached=64)))
    events, response = streamed(make(), mode)
    assert loopback.requests[0].json()["stream_options"] == {"include_usage": True}
    assert response.usage == Usage(input_tokens=79, output_tokens=14, cache_read_input_tokens=64)
    [message_delta] = of_type(events, StreamEventType.MESSAGE_DELTA)
    assert message_delta.usage == response.usage


def test_an_empty_choices_chunk_before_the_answer_is_skipped(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_completions_streaming.py (Azure's first chunk: prompt_filter_results, no choices)."""
    filters = {"id": "", "object": "", "created": 0, "model": "", "choices": [],
               "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}]}
    loopback.queue(sse(filters, chunk({"role": "assistant", "content": "Fine."}), chunk({}, "stop"), usage_chunk()))
    _, response = streamed(make(), mode)
    assert response.text == "Fine."
    assert response.model == "gpt-4o-mini-2024-07-18"


def test_only_the_first_choice_is_the_answer_when_n_is_above_one(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_completions_streaming.py::test_parse_pydantic_model_multiple_choices."""
    second = chunk({"role": "assistant", "content": "Second"})
    second["choices"][0]["index"] = 1
    loopback.queue(sse(chunk({"role": "assistant", "content": "First"}), second, chunk({}, "stop"), usage_chunk()))
    _, response = streamed(make(n=2), mode)
    assert loopback.requests[0].json()["n"] == 2
    assert response.text == "First"


def test_a_length_finish_reason_is_max_tokens_with_the_partial_text(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_completions_streaming.py::test_parse_max_tokens_reached."""
    loopback.queue(sse(chunk({"role": "assistant", "content": '{"city": "Par'}), chunk({}, "length"), usage_chunk()))
    _, response = streamed(make(), mode)
    assert (response.stop_reason, response.text) == ("max_tokens", '{"city": "Par')


def test_a_streamed_refusal_is_the_answers_text(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_completions_streaming.py::test_parse_pydantic_model_refusal.

    The SDK keeps a refusal apart (``message.refusal``); we have no refusal block, so the
    refusal is the answer's text, streamed as text deltas; the turn ends, ``refused``."""
    loopback.queue(sse(
        chunk({"role": "assistant", "content": None, "refusal": ""}),
        chunk({"refusal": "I'm sorry, "}), chunk({"refusal": "I can't help with that."}),
        chunk({}, "stop"), usage_chunk(),
    ))
    events, response = streamed(make(), mode)
    assert [e.text for e in of_type(events, StreamEventType.TEXT_DELTA)] == ["I'm sorry, ", "I can't help with that."]
    assert (response.text, response.stop_reason, response.refused) == ("I'm sorry, I can't help with that.", "end_turn",
                                                                        True)


def test_a_refusal_in_a_plain_answer_is_the_answers_text(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_completions.py::test_parse_pydantic_model_refusal."""
    answer = completion(None)
    answer["choices"][0]["message"]["refusal"] = "I'm very sorry, but I can't assist with that."
    loopback.queue(Reply.json(answer))
    response = answered(make(), mode)
    assert response.text == "I'm very sorry, but I can't assist with that."


def test_a_content_filter_finish_reason_is_a_refusal(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_content_filter.py::test_stream_content_filter_completion.

    The SDK's parse helpers raise ContentFilterFinishReasonError; ours ends the answer with
    what was streamed before the filter, ``end_turn`` and ``refused`` (an agent with an
    output schema then fails naming the refusal: tests/agents/test_refusals.py)."""
    loopback.queue(sse(chunk({"role": "assistant", "content": "Once"}), chunk({}, "content_filter"), usage_chunk()))
    _, response = streamed(make(), mode)
    assert (response.text, response.stop_reason, response.refused) == ("Once", "end_turn", True)


def test_an_error_object_in_the_middle_of_a_stream_is_an_agent_error_with_its_message(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/test_streaming.py::test_error_event (an error inside a 200 stream)."""
    loopback.queue(sse(chunk({"role": "assistant", "content": "Hal"}),
                       {"error": {"message": "The server had an error", "type": "server_error"}}))
    with pytest.raises(AgentError, match=r"The server had an error") as caught:
        streamed(make(), mode)
    assert (caught.value.kind, caught.value.provider) == (ErrorKind.AGENT, "openai")


def test_non_streamed_tool_calls_become_tool_use_blocks(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_completions.py::test_parse_multiple_pydantic_tools."""
    calls = [tool_call("call_a", "get_weather", '{"city": "Paris"}'), tool_call("call_b", "get_weather", '{"city":"Oslo"}')]
    loopback.queue(Reply.json(completion(None, tool_calls=calls, finish_reason="tool_calls")))
    response = answered(make(), mode)
    assert [(c.id, c.input) for c in response.tool_calls] == [("call_a", {"city": "Paris"}), ("call_b", {"city": "Oslo"})]
    assert response.stop_reason == "tool_use"


# --- retries and timeouts ----------------------------------------------------------------


def test_a_429_with_retry_after_is_retried_then_the_answer_is_returned(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/test_client.py::TestOpenAI::test_retries_taken."""
    limited = Reply.json({"error": {"message": "Rate limit reached"}}, status=429, headers={"retry-after": "0"})
    loopback.queue(limited, limited, Reply.json(completion("Done.")))
    assert answered(make(max_retries=2), mode).text == "Done."
    assert len(loopback.requests) == 3


@pytest.mark.parametrize("status", [500, 503])
def test_a_5xx_answer_is_retried(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str, status: int
) -> None:
    """Ported from openai/openai-python tests/test_client.py::TestOpenAI::test_retrying_status_errors_doesnt_leak."""
    loopback.queue(Reply.json({"error": {"message": "oops"}}, status=status), Reply.json(completion("Back.")))
    assert answered(make(max_retries=1), mode).text == "Back."


def test_a_stream_that_answers_503_first_is_retried_before_any_event(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/test_client.py::TestOpenAI::test_retries_taken (stream=True)."""
    loopback.queue(Reply.json({"error": {"message": "busy"}}, status=503),
                   sse(chunk({"role": "assistant", "content": "Ok"}), chunk({}, "stop"), usage_chunk()))
    events, response = streamed(make(max_retries=1), mode)
    assert response.text == "Ok"
    assert len(of_type(events, StreamEventType.MESSAGE_START)) == 1


def test_retries_spent_on_429_raise_rate_limit_with_the_status_and_retry_after(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/test_client.py::TestOpenAI::test_parse_retry_after_header."""
    limited = Reply.json({"error": {"message": "Rate limit reached"}}, status=429, headers={"retry-after": "0"})
    loopback.queue(limited, limited)
    with pytest.raises(AgentError, match=r"Rate limit reached") as caught:
        answered(make(max_retries=1), mode)
    assert (caught.value.kind, caught.value.status, caught.value.retry_after) == (ErrorKind.RATE_LIMIT, 429, 0.0)
    assert len(loopback.requests) == 2


def test_retry_after_ms_is_the_retry_after_in_seconds(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/test_client.py::TestOpenAI::test_parse_retry_after_header (retry-after-ms)."""
    loopback.queue(Reply.json({"error": {"message": "slow down"}}, status=429, headers={"retry-after-ms": "250"}))
    with pytest.raises(AgentError) as caught:
        answered(make(), mode)
    assert caught.value.retry_after == pytest.approx(0.25)


def test_retry_after_ms_wins_over_retry_after(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/test_client.py::TestOpenAI::test_parse_retry_after_header (both headers)."""
    headers = {"retry-after-ms": "20", "retry-after": "30"}
    loopback.queue(Reply.json({"error": {"message": "slow down"}}, status=429, headers=headers))
    with pytest.raises(AgentError) as caught:
        answered(make(), mode)
    assert caught.value.retry_after == pytest.approx(0.02)


@pytest.mark.parametrize("status", [400, 401, 404])
def test_a_4xx_answer_is_never_retried_and_is_invalid(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str, status: int
) -> None:
    """Ported from openai/openai-python tests/test_client.py::TestOpenAI::test_retrying_status_errors_doesnt_leak (4xx)."""
    loopback.queue(Reply.json({"error": {"message": "nope", "type": "invalid_request_error"}}, status=status))
    with pytest.raises(AgentError, match=r"nope") as caught:
        answered(make(max_retries=3), mode)
    assert (caught.value.kind, caught.value.status) == (ErrorKind.INVALID, status)
    assert len(loopback.requests) == 1


def test_a_server_that_does_not_answer_in_time_is_a_timeout(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/test_client.py::TestOpenAI::test_request_timeout."""
    loopback.queue(Reply.never())
    started = time.monotonic()
    with pytest.raises(AgentError) as caught:
        answered(make(timeout=0.2), mode)
    assert caught.value.kind is ErrorKind.TIMEOUT
    assert time.monotonic() - started < 3.0


