"""The anthropic-sdk-python SDK's own tests of the Messages streaming wire format, ported
to our Anthropic provider (built on that SDK) against a loopback server: text and
tool_use blocks (input_json_delta split anywhere), thinking and signature deltas,
message_delta usage, ping events, error events in the middle of a stream, overloaded
529 answers and retry headers. Sync and async (httpx's and aiohttp's transports); what
is asserted is our InferenceResponse, stream events and AgentError kinds."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.providers.test_anthropic import (
    MODEL,
    PING,
    block_start,
    block_stop,
    delta,
    error_reply,
    message_end,
    message_json,
    message_start,
)
from tests.providers.test_peer_wire_openai import answered, of_type, streamed
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.core import StreamEventType, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers._anthropic import _sdk_aiohttp
from wingman_actors.providers._base import BaseProvider

MODES = [
    "sync",
    "httpx",
    pytest.param("aiohttp", marks=pytest.mark.skipif(not _sdk_aiohttp(), reason="no aiohttp client in this SDK")),
]
TEXT = {"type": "text", "text": ""}


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def make(loopback: LoopbackServer, built: Callable[..., BaseProvider]) -> Callable[..., BaseProvider]:
    def build(max_retries: int = 0, **options: Any) -> BaseProvider:
        return built("anthropic", {"api_key": "test-key", "base_url": loopback.url, "model": MODEL, **options}, max_retries)

    return build


def tool_block(id: str = "toolu_01", name: str = "get_weather") -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": {}}


def json_deltas(index: int, *pieces: str) -> list[tuple[str, dict[str, Any]]]:
    return [delta(index, {"type": "input_json_delta", "partial_json": p}) for p in pieces]


# --- text, tools, thinking ------------------------------------------------------------------


def test_a_streamed_text_block_yields_its_deltas_and_the_assembled_text(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py::TestSyncMessages::test_basic_response."""
    loopback.queue(Reply.sse([
        message_start(), block_start(0, TEXT), PING,
        delta(0, {"type": "text_delta", "text": "Hello"}), delta(0, {"type": "text_delta", "text": " there!"}),
        block_stop(0), *message_end(),
    ]))
    events, response = streamed(make(), mode)
    kinds = [e.type for e in events]
    assert kinds[0] is StreamEventType.MESSAGE_START and kinds[-1] is StreamEventType.MESSAGE_STOP
    assert [e.text for e in of_type(events, StreamEventType.TEXT_DELTA)] == ["Hello", " there!"]
    [stop] = of_type(events, StreamEventType.CONTENT_BLOCK_STOP)
    assert stop.block is not None and stop.block.text == "Hello there!"
    assert (response.text, response.stop_reason, response.model) == ("Hello there!", "end_turn", MODEL)


def test_ping_events_anywhere_in_a_stream_yield_nothing(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py (ping events between every event)."""
    loopback.queue(Reply.sse([
        PING, message_start(), PING, block_start(0, TEXT), PING, delta(0, {"type": "text_delta", "text": "Hi"}),
        PING, block_stop(0), PING, *message_end(),
    ]))
    events, response = streamed(make(), mode)
    assert response.text == "Hi"
    assert [e.type for e in events] == [
        StreamEventType.MESSAGE_START, StreamEventType.CONTENT_BLOCK_START, StreamEventType.TEXT_DELTA,
        StreamEventType.CONTENT_BLOCK_STOP, StreamEventType.MESSAGE_DELTA, StreamEventType.MESSAGE_STOP,
    ]


@pytest.mark.parametrize(("pieces", "city"), [
    (['{"city": "Paris"}'], "Paris"),
    (["", '{"ci', 'ty"', ': "Pa', 'ris"', "}"], "Paris"),
    (['{"city": "\\u00e9', 'l\\u00e8ve"}'], "\u00e9l\u00e8ve"),
    (['{"city": "\\u', '00e9l\\u00e8ve"}'], "\u00e9l\u00e8ve"),
], ids=["whole", "split-mid-key", "split-between-escapes", "split-inside-an-escape"])
def test_tool_use_input_json_split_anywhere_assembles_into_the_input(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str, pieces: list[str], city: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_partial_json.py::test_partial_json_with_invalid_json (and test_messages.py::test_tool_use)."""
    loopback.queue(Reply.sse([
        message_start(), block_start(0, tool_block()), *json_deltas(0, *pieces), block_stop(0),
        *message_end("tool_use"),
    ]))
    events, response = streamed(make(), mode)
    [call] = response.tool_calls
    assert (call.id, call.name) == ("toolu_01", "get_weather")
    assert call.input == {"city": city}
    assert "".join(e.partial_json or "" for e in of_type(events, StreamEventType.INPUT_JSON_DELTA)) == "".join(pieces)
    assert response.stop_reason == "tool_use"


def test_a_tool_use_block_with_no_input_deltas_has_an_empty_input(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py::test_tool_use (a tool with no parameters)."""
    loopback.queue(Reply.sse([message_start(), block_start(0, tool_block()), block_stop(0), *message_end("tool_use")]))
    _, response = streamed(make(), mode)
    assert response.tool_calls[0].input == {}


def test_text_then_two_tool_use_blocks_keep_their_order_and_inputs(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py::test_tool_use (several blocks)."""
    loopback.queue(Reply.sse([
        message_start(), block_start(0, TEXT), delta(0, {"type": "text_delta", "text": "Checking both."}), block_stop(0),
        block_start(1, tool_block("toolu_a")), *json_deltas(1, '{"city":', ' "Paris"}'), block_stop(1),
        block_start(2, tool_block("toolu_b")), *json_deltas(2, '{"city": "Oslo"}'), block_stop(2),
        *message_end("tool_use"),
    ]))
    _, response = streamed(make(), mode)
    assert [b.type for b in response.content] == ["text", "tool_use", "tool_use"]
    assert [(c.id, c.input) for c in response.tool_calls] == [("toolu_a", {"city": "Paris"}), ("toolu_b", {"city": "Oslo"})]


def test_thinking_and_signature_deltas_become_a_signed_thinking_block(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py (thinking_delta, signature_delta)."""
    loopback.queue(Reply.sse([
        message_start(), block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "Two plus "}), delta(0, {"type": "thinking_delta", "thinking": "two."}),
        delta(0, {"type": "signature_delta", "signature": "EqQBCkYIARgCIkB"}), block_stop(0),
        block_start(1, TEXT), delta(1, {"type": "text_delta", "text": "4"}), block_stop(1), *message_end(),
    ]))
    events, response = streamed(make(thinking={"type": "enabled", "budget_tokens": 1024}), mode)
    assert [e.text for e in of_type(events, StreamEventType.THINKING_DELTA)] == ["Two plus ", "two."]
    thinking, text = response.content
    assert (thinking.type, thinking.text, thinking.signature) == ("thinking", "Two plus two.", "EqQBCkYIARgCIkB")
    assert (text.type, text.text, response.text) == ("text", "4", "4")


def test_a_redacted_thinking_block_is_kept_with_its_data(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py (redacted_thinking content_block_start)."""
    loopback.queue(Reply.sse([
        message_start(), block_start(0, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}), block_stop(0),
        block_start(1, TEXT), delta(1, {"type": "text_delta", "text": "Ok"}), block_stop(1), *message_end(),
    ]))
    _, response = streamed(make(), mode)
    assert response.content[0].type == "redacted_thinking"
    assert response.content[0].data == "EmwKAhgBEgy3va"
    assert response.text == "Ok"


# --- usage and stop reasons ------------------------------------------------------------------


def test_message_delta_usage_gives_output_tokens_and_message_start_the_input_and_cache(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py::test_basic_response (usage accumulation)."""
    loopback.queue(Reply.sse([
        message_start(input_tokens=40, cache_read_input_tokens=30, cache_creation_input_tokens=5),
        block_start(0, TEXT), delta(0, {"type": "text_delta", "text": "Hi"}), block_stop(0),
        *message_end(output_tokens=21),
    ]))
    events, response = streamed(make(), mode)
    assert response.usage == Usage(input_tokens=40, output_tokens=21, cache_read_input_tokens=30,
                                   cache_creation_input_tokens=5)
    [message_delta] = of_type(events, StreamEventType.MESSAGE_DELTA)
    assert message_delta.stop_reason == "end_turn"


@pytest.mark.parametrize(("wire", "ours"), [
    ("end_turn", "end_turn"), ("max_tokens", "max_tokens"), ("tool_use", "tool_use"), ("stop_sequence", "end_turn"),
    ("refusal", "end_turn"), ("pause_turn", "end_turn"),
])
def test_a_streamed_stop_reason_maps_onto_ours(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str, wire: str, ours: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py (message_delta stop_reason).

    The SDK passes every stop_reason through; ours are only end_turn, tool_use and
    max_tokens (DESIGN), so stop_sequence, refusal and pause_turn end the turn; a refusal also
    sets ``refused``."""
    loopback.queue(Reply.sse([
        message_start(), block_start(0, TEXT), delta(0, {"type": "text_delta", "text": "x"}), block_stop(0),
        *message_end(wire),
    ]))
    _, response = streamed(make(), mode)
    assert (response.stop_reason, response.refused) == (ours, wire == "refusal")


# --- errors in and around streams ------------------------------------------------------------


@pytest.mark.parametrize(("error_type", "kind"), [
    ("overloaded_error", ErrorKind.AGENT), ("api_error", ErrorKind.AGENT), ("rate_limit_error", ErrorKind.RATE_LIMIT),
])
def test_an_error_event_in_the_middle_of_a_stream_raises_its_kind_after_the_text_so_far(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str, error_type: str, kind: ErrorKind
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/test_streaming.py::test_error_event (an error event inside a 200 stream)."""
    loopback.queue(Reply.sse([
        message_start(), block_start(0, TEXT), delta(0, {"type": "text_delta", "text": "Hal"}),
        ("error", {"type": "error", "error": {"type": error_type, "message": "Overloaded"}}),
    ]))
    with pytest.raises(AgentError, match=r"Overloaded") as caught:
        streamed(make(max_retries=2), mode)
    assert (caught.value.kind, caught.value.provider) == (kind, "anthropic")
    assert len(loopback.requests) == 1  # deltas reached the caller: no retry


def test_an_overloaded_529_is_retried_then_the_answer_is_returned(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/test_client.py::TestAnthropic::test_retries_taken (529 overloaded)."""
    loopback.queue(error_reply(529, "overloaded_error", "Overloaded"), Reply.json(message_json()))
    assert answered(make(max_retries=1), mode).text == "Hello!"
    assert len(loopback.requests) == 2


def test_an_overloaded_529_after_retries_is_an_agent_error_with_its_status(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/test_client.py::TestAnthropic::test_retrying_status_errors_doesnt_leak."""
    loopback.queue(error_reply(529, "overloaded_error", "Overloaded"), error_reply(529, "overloaded_error", "Overloaded"))
    with pytest.raises(AgentError, match=r"overloaded_error") as caught:
        streamed(make(max_retries=1), mode)
    assert (caught.value.kind, caught.value.status) == (ErrorKind.AGENT, 529)
    assert len(loopback.requests) == 2


def test_retry_after_ms_wins_over_retry_after(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/test_client.py::TestAnthropic::test_parse_retry_after_header (retry-after-ms first)."""
    headers = {"retry-after-ms": "20", "retry-after": "30"}
    loopback.queue(error_reply(429, "rate_limit_error", "Slow down", headers))
    with pytest.raises(AgentError) as caught:
        answered(make(), mode)
    assert (caught.value.kind, caught.value.retry_after) == (ErrorKind.RATE_LIMIT, pytest.approx(0.02))


def test_a_bad_request_is_invalid_with_the_apis_message_and_not_retried(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/test_client.py::TestAnthropic::test_retrying_status_errors_doesnt_leak (4xx)."""
    loopback.queue(error_reply(400, "invalid_request_error", "max_tokens: field required"))
    with pytest.raises(AgentError, match=r"max_tokens: field required") as caught:
        streamed(make(max_retries=3), mode)
    assert (caught.value.kind, caught.value.status) == (ErrorKind.INVALID, 400)
    assert len(loopback.requests) == 1


def test_a_server_that_does_not_answer_in_time_is_a_timeout(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/test_client.py::TestAnthropic::test_request_timeout."""
    loopback.queue(Reply.never())
    started = time.monotonic()
    with pytest.raises(AgentError) as caught:
        answered(make(timeout=0.2), mode)
    assert caught.value.kind is ErrorKind.TIMEOUT
    assert time.monotonic() - started < 3.0


def test_message_delta_usage_that_carries_input_tokens_overrides_message_starts(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py (accumulate_event: message_delta usage wins when set)."""
    end = message_end(output_tokens=9)
    end[0][1]["usage"].update(input_tokens=55, cache_read_input_tokens=7)
    loopback.queue(Reply.sse([
        message_start(input_tokens=40), block_start(0, TEXT), delta(0, {"type": "text_delta", "text": "Hi"}),
        block_stop(0), *end,
    ]))
    _, response = streamed(make(), mode)
    assert (response.usage.input_tokens, response.usage.output_tokens) == (55, 9)
    assert response.usage.cache_read_input_tokens == 7


def test_a_citations_delta_on_a_text_block_is_skipped_and_the_text_kept(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py (citations_delta events)."""
    citation = {"type": "char_location", "cited_text": "sky", "document_index": 0, "document_title": None,
                "start_char_index": 0, "end_char_index": 3}
    loopback.queue(Reply.sse([
        message_start(), block_start(0, {"type": "text", "text": "", "citations": []}),
        delta(0, {"type": "text_delta", "text": "Blue"}), delta(0, {"type": "citations_delta", "citation": citation}),
        delta(0, {"type": "text_delta", "text": "."}), block_stop(0), *message_end(),
    ]))
    _, response = streamed(make(), mode)
    assert response.text == "Blue."


def test_a_429_before_any_event_is_retried_and_the_stream_then_read(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/test_client.py::TestAnthropic::test_retries_taken (stream=True, 429)."""
    loopback.queue(error_reply(429, "rate_limit_error", "Slow down", {"retry-after": "0"}), Reply.sse([
        message_start(), block_start(0, TEXT), delta(0, {"type": "text_delta", "text": "Ok"}), block_stop(0),
        *message_end(),
    ]))
    events, response = streamed(make(max_retries=1), mode)
    assert response.text == "Ok"
    assert len(of_type(events, StreamEventType.MESSAGE_START)) == 1
    assert len(loopback.requests) == 2


def test_a_stream_that_stalls_after_its_first_delta_is_a_timeout(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/test_client.py::TestAnthropic::test_request_timeout (read timeout mid-stream)."""
    events = [message_start(), block_start(0, TEXT), delta(0, {"type": "text_delta", "text": "Hal"})]
    stalled = Reply.sse(events)
    stalled.hang = True
    loopback.queue(stalled)
    with pytest.raises(AgentError) as caught:
        streamed(make(timeout=0.3), mode)
    assert caught.value.kind is ErrorKind.TIMEOUT


def test_an_overloaded_error_event_before_any_content_is_retried_like_a_529(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/test_streaming.py::test_error_event (the error as a 200 stream's first event)."""
    loopback.queue(
        Reply.sse([("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})]),
        Reply.sse([message_start(), block_start(0, TEXT), delta(0, {"type": "text_delta", "text": "Ok"}),
                   block_stop(0), *message_end()]),
    )
    events, response = streamed(make(max_retries=1), mode)
    assert response.text == "Ok"
    assert len(of_type(events, StreamEventType.MESSAGE_START)) == 1
    assert len(loopback.requests) == 2


def test_a_message_start_without_usage_takes_the_usage_of_message_delta(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py (fixture missing_usage_response.txt)."""
    start = message_start()
    del start[1]["message"]["usage"]
    end = message_end(output_tokens=1)
    end[0][1]["usage"].update(input_tokens=11, cache_creation_input_tokens=3, cache_read_input_tokens=5)
    loopback.queue(Reply.sse([start, block_start(0, TEXT), delta(0, {"type": "text_delta", "text": "hi"}),
                              block_stop(0), *end]))
    _, response = streamed(make(), mode)
    assert response.text == "hi"
    assert response.usage == Usage(input_tokens=11, output_tokens=1, cache_creation_input_tokens=3,
                                   cache_read_input_tokens=5)


def test_a_message_delta_without_usage_keeps_message_starts_usage(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py (fixture message_delta_omitted_usage_response.txt, usage left out whole)."""
    end = message_end()
    del end[0][1]["usage"]
    loopback.queue(Reply.sse([message_start(input_tokens=40), block_start(0, TEXT),
                              delta(0, {"type": "text_delta", "text": "Hi"}), block_stop(0), *end]))
    _, response = streamed(make(), mode)
    assert (response.text, response.usage.input_tokens, response.stop_reason) == ("Hi", 40, "end_turn")


def test_max_tokens_inside_a_tool_calls_input_is_an_invalid_error_naming_the_tool_and_the_fix(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from anthropics/anthropic-sdk-python tests/lib/streaming/test_messages.py (fixture incomplete_partial_json_response.txt).

    The SDK returns the cut call with its input partly parsed; we never hand a session a
    call cut short (it would run with wrong arguments), and a retry at the same max_tokens
    would be cut again: the error says so and is not retried."""
    loopback.queue(Reply.sse([
        message_start(), block_start(0, TEXT), delta(0, {"type": "text_delta", "text": "Let me"}), block_stop(0),
        block_start(1, tool_block("toolu_1", "make_file")), *json_deltas(1, "", '{"filename": "taxes.txt'),
        *message_end("max_tokens", output_tokens=124),
    ]))
    with pytest.raises(AgentError, match=r"max_tokens.*'make_file'") as caught:
        streamed(make(max_retries=2), mode)
    assert caught.value.kind is ErrorKind.INVALID
    assert len(loopback.requests) == 1
