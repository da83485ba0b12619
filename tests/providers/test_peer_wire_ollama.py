"""The ollama-python client's own tests of the /api/chat wire format, ported to our
Ollama provider against a loopback server: NDJSON streaming (lines split across HTTP
chunks, several in one), thinking, tool calls with object arguments, and errors with a
JSON body (or none) before and inside a stream. Sync and async (httpx's and aiohttp's
transports); what is asserted is our InferenceResponse, stream events and AgentError."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.providers.test_ollama import MODEL, chat_reply, final_line, line
from tests.providers.test_peer_wire_openai import answered, of_type, streamed
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.core import (
    ContentBlock,
    InferenceRequest,
    Message,
    StreamEventType,
    ToolDefinition,
    Usage,
)
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers._base import BaseProvider

WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def ask(text: str = "Hi") -> InferenceRequest:
    return InferenceRequest(messages=[Message.user(text)], tools=[WEATHER])


def ndjson_bytes(*lines: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(x, ensure_ascii=False).encode() + b"\n" for x in lines)


def ollama_call(name: str, arguments: Any, **extra: Any) -> dict[str, Any]:
    return {"function": {"name": name, "arguments": arguments}, **extra}


@pytest.fixture
def make(loopback: LoopbackServer, built: Callable[..., BaseProvider]) -> Callable[..., BaseProvider]:
    def build(max_retries: int = 0, **options: Any) -> BaseProvider:
        return built("ollama", {"model": MODEL, "base_url": loopback.url, **options}, max_retries)

    return build


# --- plain and streamed answers -------------------------------------------------------------


def test_a_chat_answer_gives_text_usage_and_model(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py::test_client_chat (and test_async_client_chat)."""
    loopback.queue(Reply.json(chat_reply("I don't know.")))
    response = answered(make(), mode, ask("Why is the sky blue?"))
    sent = loopback.requests[0]
    assert (sent.path, sent.json()["stream"], sent.json()["model"]) == ("/api/chat", False, MODEL)
    assert (response.text, response.model, response.stop_reason) == ("I don't know.", MODEL, "end_turn")
    assert response.usage == Usage(input_tokens=26, output_tokens=298)


def test_ndjson_lines_stream_as_text_deltas_and_the_done_line_ends_the_answer(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py::test_client_chat_stream (and test_async_client_chat_stream)."""
    loopback.queue(Reply.ndjson([line("I "), line("don't "), line("know."), final_line()]))
    events, response = streamed(make(), mode, ask())
    assert loopback.requests[0].json()["stream"] is True
    assert [e.text for e in of_type(events, StreamEventType.TEXT_DELTA)] == ["I ", "don't ", "know."]
    assert (response.text, response.usage) == ("I don't know.", Usage(input_tokens=12, output_tokens=5))
    assert events[-1].type is StreamEventType.MESSAGE_STOP


def test_ndjson_lines_split_across_http_chunks_and_packed_into_one_are_read_whole(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py::test_client_chat_stream (the server's chunking is not line-aligned)."""
    body = ndjson_bytes(line("Bon"), line("jour "), line("l'\u00e9l\u00e8ve"), final_line())
    cut = body.index("\u00e9".encode()) + 1  # inside the two bytes of é
    loopback.queue(Reply(200, iter([body[:7], body[7:cut], body[cut:]]), {"content-type": "application/x-ndjson"}))
    events, response = streamed(make(), mode, ask())
    assert response.text == "Bonjour l'\u00e9l\u00e8ve"
    assert len(of_type(events, StreamEventType.TEXT_DELTA)) == 3


def test_streamed_thinking_comes_before_the_answer_as_a_thinking_block(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py::test_client_chat_stream_with_thinking (think=True)."""
    thinking = [line(message={"role": "assistant", "content": "", "thinking": t}) for t in ("Blue ", "light.")]
    loopback.queue(Reply.ndjson([*thinking, line("Rayleigh."), final_line()]))
    events, response = streamed(make(think=True), mode, ask())
    assert loopback.requests[0].json()["think"] is True
    assert [e.text for e in of_type(events, StreamEventType.THINKING_DELTA)] == ["Blue ", "light."]
    assert [(b.type, b.text) for b in response.content] == [("thinking", "Blue light."), ("text", "Rayleigh.")]


def test_a_plain_answers_thinking_is_a_thinking_block(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py::test_client_chat_with_thinking."""
    reply = chat_reply("Rayleigh.")
    reply["message"]["thinking"] = "Shorter wavelengths scatter."
    loopback.queue(Reply.json(reply))
    response = answered(make(), mode, ask())
    assert [(b.type, b.text) for b in response.content] == [("thinking", "Shorter wavelengths scatter."),
                                                            ("text", "Rayleigh.")]


# --- tool calls -----------------------------------------------------------------------------


def test_tool_calls_with_object_arguments_become_tool_use_blocks_with_distinct_ids(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py::test_client_chat_with_tools (several calls in one message)."""
    reply = chat_reply("")
    reply["message"]["tool_calls"] = [ollama_call("get_weather", {"city": "Paris"}),
                                      ollama_call("get_weather", {"city": "Oslo"})]
    loopback.queue(Reply.json(reply))
    response = answered(make(), mode, ask())
    assert [(c.name, c.input) for c in response.tool_calls] == [("get_weather", {"city": "Paris"}),
                                                               ("get_weather", {"city": "Oslo"})]
    ids = [c.id for c in response.tool_calls]
    assert all(ids) and len(set(ids)) == 2
    assert response.stop_reason == "tool_use"


def test_a_streamed_tool_call_line_then_a_stop_done_line_is_a_tool_use_answer(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py::test_client_chat_stream_with_tools."""
    calls = [ollama_call("get_weather", {"city": "Rome"}, id="call_x1")]
    loopback.queue(Reply.ndjson([line("", message={"role": "assistant", "content": "", "tool_calls": calls}),
                                 final_line("stop")]))
    events, response = streamed(make(), mode, ask())
    [call] = response.tool_calls
    assert (call.id, call.name, call.input) == ("call_x1", "get_weather", {"city": "Rome"})
    assert json.loads("".join(e.partial_json or "" for e in of_type(events, StreamEventType.INPUT_JSON_DELTA))) == {
        "city": "Rome"}
    assert response.stop_reason == "tool_use"


def test_tool_call_arguments_sent_as_a_json_string_are_parsed(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_type_serialization.py (arguments as a JSON string from compatible servers)."""
    reply = chat_reply("")
    reply["message"]["tool_calls"] = [ollama_call("get_weather", '{"city": "Lima"}')]
    loopback.queue(Reply.json(reply))
    assert answered(make(), mode, ask()).tool_calls[0].input == {"city": "Lima"}


def test_tool_results_go_back_as_tool_messages_with_object_arguments_in_the_history(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py::test_client_chat_with_tools (the tool loop's second request)."""
    loopback.queue(Reply.json(chat_reply("Sunny in Paris.")))
    history = [
        Message.user("Weather in Paris?"),
        Message.assistant([ContentBlock.tool_use_block("call_1", "get_weather", {"city": "Paris"})]),
        Message.tool_results([ContentBlock.tool_result_block("call_1", "Sunny, 22C")]),
    ]
    answered(make(), mode, InferenceRequest(messages=history, tools=[WEATHER]))
    sent = loopback.requests[0].json()["messages"]
    assert sent[1]["tool_calls"] == [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    assert sent[2]["role"] == "tool" and sent[2]["content"] == "Sunny, 22C"


def test_a_length_done_reason_is_max_tokens(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py::test_client_chat_stream (done_reason "length")."""
    loopback.queue(Reply.ndjson([line("Once upon"), final_line("length")]))
    _, response = streamed(make(), mode, ask())
    assert (response.text, response.stop_reason) == ("Once upon", "max_tokens")


# --- errors ---------------------------------------------------------------------------------


def test_an_error_status_with_a_json_body_is_an_agent_error_with_its_message_and_status(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py::test_client_chat_error (ResponseError with the body's error)."""
    loopback.queue(Reply.json({"error": "model \"llama9\" not found, try pulling it first"}, status=404))
    with pytest.raises(AgentError, match=r"model \"llama9\" not found, try pulling it first") as caught:
        answered(make(max_retries=2), mode, ask())
    assert (caught.value.kind, caught.value.status, caught.value.provider) == (ErrorKind.INVALID, 404, "ollama")
    assert len(loopback.requests) == 1


def test_an_error_status_with_a_plain_text_body_keeps_the_text(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py (ResponseError of a body that is not JSON)."""
    loopback.queue(Reply(400, b"invalid options: foo", {"content-type": "text/plain"}))
    with pytest.raises(AgentError, match=r"invalid options: foo") as caught:
        answered(make(), mode, ask())
    assert (caught.value.kind, caught.value.status) == (ErrorKind.INVALID, 400)


def test_an_error_status_on_a_stream_raises_with_the_json_message_before_any_event(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py::test_client_chat_stream_error."""
    loopback.queue(Reply.json({"error": "an error occurred"}, status=500), Reply.json({"error": "an error occurred"}, 500))
    seen: list[Any] = []
    with pytest.raises(AgentError, match=r"an error occurred") as caught:
        provider = make(max_retries=1)
        if mode == "sync":
            seen.extend(provider.stream_inference(ask()))
        else:
            streamed(provider, mode, ask())
    assert seen == []
    assert (caught.value.kind, caught.value.status) == (ErrorKind.AGENT, 500)
    assert len(loopback.requests) == 2  # a 5xx before any event is retried


def test_an_error_line_inside_a_stream_raises_its_message_after_the_text_so_far(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py (an {"error": ...} object in the NDJSON stream)."""
    loopback.queue(Reply.ndjson([line("Par"), {"error": "llama runner process has terminated"}]))
    with pytest.raises(AgentError, match=r"llama runner process has terminated") as caught:
        streamed(make(max_retries=2), mode, ask())
    assert (caught.value.kind, caught.value.provider) == (ErrorKind.AGENT, "ollama")
    assert len(loopback.requests) == 1  # text reached the caller: no retry


def test_a_500_with_a_json_body_is_retried_then_the_answer_is_returned(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py (a ResponseError with status 500, then success)."""
    loopback.queue(Reply.json({"error": "server busy"}, status=503), Reply.json(chat_reply("Back.")))
    assert answered(make(max_retries=1), mode, ask()).text == "Back."


@pytest.mark.parametrize("odd", ["\x85", "\u2028", "\u2029"], ids=["NEL", "LS", "PS"])
def test_unicode_line_separators_inside_a_line_are_text_not_line_breaks(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str, odd: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py::test_client_chat_stream (NDJSON is split on "\\n" only;
    Go's encoder leaves U+0085 unescaped, and Python servers may send any of these raw)."""
    text = f"culpa{odd}qui"
    loopback.queue(Reply(200, ndjson_bytes(line(text), final_line()), {"content-type": "application/x-ndjson"}))
    _, response = streamed(make(), mode, ask())
    assert response.text == text


def test_a_stream_that_stalls_after_its_first_line_is_a_timeout(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py (httpx's read timeout while streaming)."""
    stalled = Reply.ndjson([line("Hal")])
    stalled.hang = True
    loopback.queue(stalled)
    with pytest.raises(AgentError) as caught:
        streamed(make(timeout=0.3), mode, ask())
    assert caught.value.kind is ErrorKind.TIMEOUT


def test_an_error_line_as_a_streams_first_line_is_retried_like_a_5xx(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """Ported from ollama/ollama-python tests/test_client.py (an {"error": ...} first line of a 200 stream).

    Nothing reached the caller yet, so the retry policy may try again, as for a 5xx (and
    as the Anthropic provider does for an error event before any content)."""
    loopback.queue(Reply.ndjson([{"error": "model runner crashed"}]),
                   Reply.ndjson([line("Ok"), final_line()]))
    events, response = streamed(make(max_retries=1), mode, ask())
    assert response.text == "Ok"
    assert len(of_type(events, StreamEventType.MESSAGE_START)) == 1
