"""More of openai-python's wire-format tests, ported to our OpenAI-compatible provider
(see test_peer_wire_openai.py): the SSE byte stream (characters and events split across
HTTP chunks, line separators inside JSON, comments, CRLF), errors inside streams, read
timeouts mid-stream, and tool-call deltas that come in unusual shapes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.providers.test_openai import chunk, completion, sse, usage_chunk
from tests.providers.test_peer_wire_openai import answered, of_type, streamed
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.core import StreamEventType
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers._base import BaseProvider


@pytest.fixture
def make(loopback: LoopbackServer, built: Callable[..., BaseProvider]) -> Callable[..., BaseProvider]:
    def build(max_retries: int = 0, **options: Any) -> BaseProvider:
        return built("openai", {"model": "gpt-4o", "base_url": f"{loopback.url}/v1", "api_key": "sk-test", **options}, max_retries)

    return build


# --- the SSE byte stream ------------------------------------------------------------------


def raw_sse(*chunks: dict[str, Any]) -> bytes:
    """The bytes of an SSE stream with its JSON unescaped (as OpenAI's servers send UTF-8)."""
    events = [f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks]
    return "".join([*events, "data: [DONE]\n\n"]).encode()


def test_an_event_split_across_http_chunks_inside_a_multi_byte_character_is_read_whole(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/test_streaming.py::test_multi_byte_character_multiple_chunks."""
    body = raw_sse(chunk({"role": "assistant", "content": "\u0438\u0437\u0431\u0430"}), chunk({}, "stop"), usage_chunk())
    cut = body.index("\u0437".encode()) + 1
    loopback.queue(Reply(200, iter([body[:5], body[5:cut], body[cut:]]), {"content-type": "text/event-stream"}))
    _, response = streamed(make(), mode)
    assert response.text == "\u0438\u0437\u0431\u0430"


@pytest.mark.parametrize("odd", ["\u2028", "\u2029", "\x85", "\x1c"], ids=["LS", "PS", "NEL", "FS"])
def test_unicode_line_separators_inside_the_json_are_text_not_line_breaks(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str, odd: str
) -> None:
    """Ported from openai/openai-python tests/test_streaming.py::test_special_new_line_character."""
    text = f"culpa{odd}qui"
    body = raw_sse(chunk({"role": "assistant", "content": text}), chunk({}, "stop"), usage_chunk())
    loopback.queue(Reply(200, body, {"content-type": "text/event-stream"}))
    _, response = streamed(make(), mode)
    assert response.text == text


def test_comment_lines_and_crlf_line_ends_are_read_as_sse(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/test_streaming.py::test_multiple_events_with_data (keep-alive comments, CRLF)."""
    body = raw_sse(chunk({"role": "assistant", "content": "Hi"}), chunk({}, "stop"), usage_chunk())
    body = b": OPENROUTER PROCESSING\r\n\r\n" + body.replace(b"\n", b"\r\n")
    loopback.queue(Reply(200, body, {"content-type": "text/event-stream"}))
    _, response = streamed(make(), mode)
    assert response.text == "Hi"


def test_a_named_error_event_in_a_stream_is_an_agent_error_with_its_message(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/test_streaming.py (an ``event: error`` server-sent event)."""
    loopback.queue(Reply.sse([(None, chunk({"role": "assistant", "content": "Hal"})),
                              ("error", {"message": "upstream model crashed", "code": 502})]))
    with pytest.raises(AgentError, match=r"upstream model crashed") as caught:
        streamed(make(max_retries=2), mode)
    assert caught.value.kind is ErrorKind.AGENT
    assert len(loopback.requests) == 1  # text reached the caller: no retry


def test_a_stream_that_stalls_after_its_first_chunk_is_a_timeout(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/test_client.py::TestOpenAI::test_request_timeout (read timeout mid-stream)."""
    stalled = sse(chunk({"role": "assistant", "content": "Hal"}), done=False)
    stalled.hang = True
    loopback.queue(stalled)
    with pytest.raises(AgentError) as caught:
        streamed(make(timeout=0.3), mode)
    assert caught.value.kind is ErrorKind.TIMEOUT


def test_tool_calls_streamed_without_an_index_are_told_apart_by_their_ids(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python issue #2806 (Gemini's OpenAI-compatible stream sends tool calls with no index).

    The SDK's stream accumulator fails on such chunks; a new id starts a new call, and
    argument deltas with no id continue the last one."""
    first = {"id": "function-call-1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":'}}
    more = {"function": {"arguments": ' "Paris"}'}}
    second = {"id": "function-call-2", "type": "function", "function": {"name": "get_weather",
                                                                        "arguments": '{"city": "Oslo"}'}}
    loopback.queue(sse(chunk({"role": "assistant", "tool_calls": [first]}), chunk({"tool_calls": [more]}),
                       chunk({"tool_calls": [second]}), chunk({}, "stop"), usage_chunk()))
    _, response = streamed(make(), mode)
    assert [(c.id, c.input) for c in response.tool_calls] == [
        ("function-call-1", {"city": "Paris"}), ("function-call-2", {"city": "Oslo"})]
    assert response.stop_reason == "tool_use"


def test_an_error_object_as_a_streams_first_chunk_is_retried_like_a_5xx(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/test_streaming.py (an error as the 200 stream's first event).

    Nothing reached the caller yet, so the retry policy may try again, as for a 5xx."""
    loopback.queue(sse({"error": {"message": "The server is overloaded", "type": "server_error"}}, done=False),
                   sse(chunk({"role": "assistant", "content": "Ok"}), chunk({}, "stop"), usage_chunk()))
    events, response = streamed(make(max_retries=1), mode)
    assert response.text == "Ok"
    assert len(of_type(events, StreamEventType.MESSAGE_START)) == 1


@pytest.mark.parametrize("scenario", ["initial", "after_role", "empty", "existing_tool", "parallel"])
def test_several_deltas_of_one_call_in_one_chunk_are_joined_in_order(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str, scenario: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_tool_call_deltas.py::test_duplicate_tool_call_deltas."""
    other = {"index": 0, "id": "call_other", "type": "function", "function": {"name": "other", "arguments": "{}"}}
    at = 1 if scenario in ("existing_tool", "parallel") else 0
    head: list[dict[str, Any]] = []
    if scenario in ("after_role", "empty"):
        head.append(chunk({"role": "assistant", **({"tool_calls": []} if scenario == "empty" else {})}))
    if scenario == "existing_tool":
        head.append(chunk({"role": "assistant", "tool_calls": [other]}))
    first = [{"index": at, "id": "call_files", "type": "function", "function": {"name": "list_files"}},
             {"index": at, "function": {"arguments": '{"path"'}}]
    if scenario == "parallel":
        first.insert(0, other)
    later = [{"index": at, "function": {"arguments": ": "}}, {"index": at, "function": {"arguments": '"."}'}}]
    loopback.queue(sse(*head, chunk({"role": "assistant", "tool_calls": first}), chunk({"tool_calls": later}),
                       chunk({}, "tool_calls")))
    _, response = streamed(make(), mode)
    expected = [("call_files", "list_files", {"path": "."})]
    if at == 1:
        expected.insert(0, ("call_other", "other", {}))
    assert [(c.id, c.name, c.input) for c in response.tool_calls] == expected


def test_a_length_stop_inside_a_tool_calls_arguments_is_an_invalid_error_naming_the_tool(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_completions_streaming.py::test_parse_max_tokens_reached (cut inside a tool call).

    The SDK raises LengthFinishReasonError; ours is an AgentError of kind invalid (a
    retry at the same max_tokens would be cut again) naming the tool and max_tokens."""
    loopback.queue(sse(
        chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                    "function": {"name": "get_weather", "arguments": '{"ci'}}]}),
        chunk({}, "length"), usage_chunk(),
    ))
    with pytest.raises(AgentError, match=r"max_tokens.*'get_weather'") as caught:
        streamed(make(max_retries=2), mode)
    assert caught.value.kind is ErrorKind.INVALID
    assert len(loopback.requests) == 1


def test_a_length_stop_inside_a_non_streamed_tool_calls_arguments_is_the_same_invalid_error(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from openai/openai-python tests/lib/chat/test_completions.py::test_parse_max_tokens_reached (cut inside a
    tool call, not streamed): as streamed, an invalid error naming the tool, not retried (it was a retried
    malformed-JSON error of kind agent)."""
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"ci'}}
    loopback.queue(*[Reply.json(completion(None, tool_calls=[call], finish_reason="length"))] * 3)
    with pytest.raises(AgentError, match=r"max_tokens.*'get_weather'") as caught:
        answered(make(max_retries=2), mode)
    assert caught.value.kind is ErrorKind.INVALID
    assert len(loopback.requests) == 1
