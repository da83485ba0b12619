"""The Ollama provider against a loopback server speaking Ollama's /api/chat wire format."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.loopback import LoopbackServer, Reply, free_port
from wingman_actors.core import (
    ContentBlock,
    InferenceRequest,
    Message,
    StreamEventType,
    ToolDefinition,
    Usage,
)
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import new_provider
from wingman_actors.providers._ollama import OllamaProvider, build_ollama
from wingman_actors.providers._retry import RetryPolicy

MODEL = "llama3.2"
WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def chat_reply(content: str = "Hello!", **extra: Any) -> dict[str, Any]:
    """A non-streaming /api/chat answer as Ollama sends it."""
    return {
        "model": MODEL,
        "created_at": "2024-07-22T20:33:28.123648Z",
        "message": {"role": "assistant", "content": content},
        "done_reason": "stop",
        "done": True,
        "total_duration": 5191566416,
        "load_duration": 2154458,
        "prompt_eval_count": 26,
        "prompt_eval_duration": 383809000,
        "eval_count": 298,
        "eval_duration": 4799921000,
        **extra,
    }


def line(content: str = "", **extra: Any) -> dict[str, Any]:
    """One streamed NDJSON line with partial content."""
    return {
        "model": MODEL,
        "created_at": "2024-07-22T20:33:28.123648Z",
        "message": {"role": "assistant", "content": content},
        "done": False,
        **extra,
    }


def final_line(done_reason: str = "stop") -> dict[str, Any]:
    """The last streamed line: done, with the token counts."""
    return {
        "model": MODEL,
        "created_at": "2024-07-22T20:33:29.123648Z",
        "message": {"role": "assistant", "content": ""},
        "done_reason": done_reason,
        "done": True,
        "prompt_eval_count": 12,
        "eval_count": 5,
    }


def ask(text: str = "Hi", **kwargs: Any) -> InferenceRequest:
    return InferenceRequest(messages=[Message.user(text)], **kwargs)


@pytest.fixture(autouse=True)
def _no_ollama_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_HOST", raising=False)


@pytest.fixture
def make(loopback: LoopbackServer) -> Iterator[Callable[..., OllamaProvider]]:
    """Build providers pointed at the loopback server; all closed at teardown."""
    made: list[OllamaProvider] = []

    def build(**options: Any) -> OllamaProvider:
        provider = build_ollama({"model": MODEL, "base_url": loopback.url, **options})
        provider.retry = RetryPolicy(provider.options.max_retries, base_delay=0.001, max_delay=0.002)
        made.append(provider)
        return provider

    yield build
    for provider in made:
        provider.close()


def test_a_plain_reply_gives_text_usage_stop_reason_and_model(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(Reply.json(chat_reply("Hello there!")))
    response = make().run_inference(ask())
    assert response.text == "Hello there!"
    assert response.usage == Usage(input_tokens=26, output_tokens=298)
    assert response.stop_reason == "end_turn"
    assert response.model == MODEL


def test_the_request_body_has_system_message_tools_num_predict_and_temperature(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(Reply.json(chat_reply()))
    request = ask(
        "Weather in Paris?", instructions="Be brief.", tools=[WEATHER], max_tokens=321, temperature=0.2
    )
    make().run_inference(request)
    sent = loopback.requests[0]
    body = sent.json()
    assert (sent.method, sent.path) == ("POST", "/api/chat")
    assert body["model"] == MODEL
    assert body["stream"] is False
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert body["options"] == {"num_predict": 321, "temperature": 0.2}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": WEATHER.input_schema,
            },
        }
    ]


def test_tool_results_go_back_as_tool_messages_named_after_their_call(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(Reply.json(chat_reply("Sunny, 22C")))
    history = [
        Message.user("Weather in Paris and Oslo?"),
        Message.assistant(
            [
                ContentBlock.text_block("Checking."),
                ContentBlock.tool_use_block("call_a", "get_weather", {"city": "Paris"}),
                ContentBlock.tool_use_block("call_b", "lookup", {"q": "Oslo"}),
            ]
        ),
        Message.tool_results(
            [
                ContentBlock.tool_result_block("call_a", "Sunny, 22C"),
                ContentBlock.tool_result_block("call_b", "no such city", is_error=True),
                # a session's own error result starts with the mark already: it is not marked twice
                ContentBlock.tool_result_block("call_c", "Error: tool 'lookup' timed out", is_error=True),
            ]
        ),
    ]
    make().run_inference(InferenceRequest(messages=history, tools=[WEATHER]))
    messages = loopback.requests[0].json()["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"function": {"name": "lookup", "arguments": {"q": "Oslo"}}},
        ],
    }
    assert messages[2:] == [
        {"role": "tool", "content": "Sunny, 22C", "tool_name": "get_weather"},
        {"role": "tool", "content": "Error: no such city", "tool_name": "lookup"},
        {"role": "tool", "content": "Error: tool 'lookup' timed out"},
    ]


def test_images_are_sent_as_base64_in_images(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(Reply.json(chat_reply("A cat.")))
    message = Message.user(
        [ContentBlock.text_block("What is this?"), ContentBlock.image_block("aGVsbG8=", "image/png")]
    )
    make().run_inference(InferenceRequest(messages=[message]))
    assert loopback.requests[0].json()["messages"] == [
        {"role": "user", "content": "What is this?", "images": ["aGVsbG8="]}
    ]


def test_output_schema_is_not_sent_as_format_while_tools_are_offered(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(Reply.json(chat_reply('{"answer": 4}')))
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}}
    tool = ToolDefinition(name="add", description="Add.", input_schema={"type": "object", "properties": {}})
    make().run_inference(ask(output_schema=schema, tools=[tool]))
    body = loopback.requests[0].json()
    assert "format" not in body and body["tools"][0]["function"]["name"] == "add"


def test_output_schema_keep_alive_and_num_ctx_are_passed_on(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(Reply.json(chat_reply('{"answer": 4}')))
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}}
    make(keep_alive="10m", num_ctx=8192).run_inference(ask(output_schema=schema))
    body = loopback.requests[0].json()
    assert body["format"] == schema
    assert body["keep_alive"] == "10m"
    assert body["options"]["num_ctx"] == 8192


def test_a_tool_call_reply_becomes_tool_use_blocks_with_generated_ids(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    calls = [
        {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
    ]
    reply = chat_reply("", message={"role": "assistant", "content": "", "tool_calls": calls})
    loopback.queue(Reply.json(reply))
    response = make().run_inference(ask(tools=[WEATHER]))
    assert response.stop_reason == "tool_use"
    assert [(c.name, c.input) for c in response.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Oslo"}),
    ]
    ids = [c.id or "" for c in response.tool_calls]
    assert all(i.startswith("call_") for i in ids) and len(set(ids)) == 2


def test_a_length_stop_maps_to_max_tokens(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(Reply.json(chat_reply("Once upon a", done_reason="length")))
    assert make().run_inference(ask()).stop_reason == "max_tokens"


def test_streaming_text_yields_deltas_and_the_assembled_response(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(Reply.ndjson([line("The "), line("sky "), line("is blue."), final_line()]))
    stream = make().stream_inference(ask())
    events = list(stream)
    assert [e.text for e in events if e.type is StreamEventType.TEXT_DELTA] == ["The ", "sky ", "is blue."]
    assert events[0].type is StreamEventType.MESSAGE_START
    assert events[-1].type is StreamEventType.MESSAGE_STOP
    assert stream.response.text == "The sky is blue."
    assert stream.response.stop_reason == "end_turn"
    assert loopback.requests[0].json()["stream"] is True


def test_the_final_stream_line_carries_usage(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(Reply.ndjson([line("Hi"), final_line()]))
    stream = make().stream_inference(ask())
    events = list(stream)
    delta = next(e for e in events if e.type is StreamEventType.MESSAGE_DELTA)
    assert delta.usage == Usage(input_tokens=12, output_tokens=5)
    assert stream.response.usage == Usage(input_tokens=12, output_tokens=5)


def test_a_streamed_tool_call_line_becomes_a_tool_use_block(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    call_line = line(
        "",
        message={
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
    )
    loopback.queue(Reply.ndjson([line("Let me check."), call_line, final_line()]))
    stream = make().stream_inference(ask(tools=[WEATHER]))
    events = list(stream)
    starts = [e.block for e in events if e.type is StreamEventType.CONTENT_BLOCK_START]
    assert [b.type for b in starts if b] == ["text", "tool_use"]
    assert stream.response.stop_reason == "tool_use"
    assert stream.response.text == "Let me check."
    [call] = stream.response.tool_calls
    assert (call.name, call.input) == ("get_weather", {"city": "Paris"})


def test_an_error_line_mid_stream_raises_an_agent_error(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(Reply.ndjson([line("Hel"), {"error": "model runner has unexpectedly stopped"}]))
    with pytest.raises(AgentError) as info:
        list(make().stream_inference(ask()))
    assert info.value.kind is ErrorKind.AGENT
    assert "unexpectedly stopped" in str(info.value)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, ErrorKind.INVALID),
        (401, ErrorKind.INVALID),
        (403, ErrorKind.INVALID),
        (404, ErrorKind.INVALID),
        (422, ErrorKind.INVALID),
        (429, ErrorKind.RATE_LIMIT),
        (500, ErrorKind.AGENT),
        (529, ErrorKind.AGENT),
    ],
)
def test_an_error_status_maps_to_its_error_kind(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider], status: int, kind: ErrorKind
) -> None:
    loopback.queue(Reply.json({"error": f"failure {status}"}, status=status))
    with pytest.raises(AgentError) as info:
        make(max_retries=0).run_inference(ask())
    assert (info.value.kind, info.value.status) == (kind, status)
    assert f"failure {status}" in str(info.value)


def test_a_429_records_retry_after(loopback: LoopbackServer, make: Callable[..., OllamaProvider]) -> None:
    loopback.queue(Reply.json({"error": "too many requests"}, status=429, headers={"retry-after": "7"}))
    with pytest.raises(AgentError) as info:
        make(max_retries=0).run_inference(ask())
    assert info.value.retry_after == 7.0


def test_an_error_status_on_a_stream_raises_before_any_event(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(Reply.json({"error": "model 'nope' not found"}, status=404))
    with pytest.raises(AgentError) as info:
        list(make().stream_inference(ask()))
    assert (info.value.kind, info.value.status) == (ErrorKind.INVALID, 404)
    assert "not found" in str(info.value)


def test_a_500_is_retried_then_succeeds(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(Reply.json({"error": "busy"}, status=500), Reply.json(chat_reply("Recovered")))
    assert make().run_inference(ask()).text == "Recovered"
    assert len(loopback.requests) == 2


def test_a_stream_is_retried_after_a_429_then_succeeds(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    loopback.queue(
        Reply.json({"error": "slow down"}, status=429, headers={"retry-after": "0"}),
        Reply.ndjson([line("ok"), final_line()]),
    )
    assert make().stream_inference(ask()).consume().text == "ok"
    assert len(loopback.requests) == 2


def test_a_400_is_never_retried(loopback: LoopbackServer, make: Callable[..., OllamaProvider]) -> None:
    loopback.queue(Reply.json({"error": "bad"}, status=400), Reply.json(chat_reply()))
    with pytest.raises(AgentError):
        make().run_inference(ask())
    assert len(loopback.requests) == 1


def test_connection_refused_is_a_network_error() -> None:
    provider = build_ollama({"model": MODEL, "base_url": f"http://127.0.0.1:{free_port()}", "max_retries": 0})
    try:
        with pytest.raises(AgentError) as info:
            provider.run_inference(ask())
    finally:
        provider.close()
    assert info.value.kind is ErrorKind.NETWORK


def test_a_read_timeout_is_a_timeout_error(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    def slow_body() -> Iterator[bytes]:
        time.sleep(0.6)  # longer than the 0.3 s timeout
        yield json.dumps(chat_reply()).encode()

    loopback.queue(Reply(200, slow_body(), {"content-type": "application/json"}))
    with pytest.raises(AgentError) as info:
        make(timeout=0.3, max_retries=0).run_inference(ask())
    assert info.value.kind is ErrorKind.TIMEOUT


def test_stopping_a_stream_early_closes_the_connection(
    loopback: LoopbackServer, make: Callable[..., OllamaProvider]
) -> None:
    finished = threading.Event()

    def endless() -> Iterator[bytes]:
        try:
            for i in range(400):
                yield json.dumps(line(f"w{i} ")).encode() + b"\n"
                time.sleep(0.005)
        finally:
            finished.set()

    loopback.queue(Reply(200, endless(), {"content-type": "application/x-ndjson"}))
    stream = make().stream_inference(ask())
    for event in stream:
        if event.type is StreamEventType.TEXT_DELTA:
            break
    stream.close()
    assert finished.wait(1.5), "the server kept streaming after the consumer stopped"


def test_a_missing_model_is_invalid_at_construction() -> None:
    with pytest.raises(AgentError) as info:
        build_ollama({})
    assert info.value.kind is ErrorKind.INVALID
    assert 'new_provider("ollama", {"model": "llama3.2"})' in str(info.value)


def test_new_provider_builds_a_working_ollama_provider(loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(chat_reply("via registry")))
    provider = new_provider("ollama", {"model": MODEL, "base_url": loopback.url})
    assert isinstance(provider, OllamaProvider)
    try:
        assert provider.run_inference(ask()).text == "via registry"
    finally:
        provider.close()


def test_ollama_host_sets_the_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11500")
    provider = build_ollama({"model": MODEL})
    assert provider.base_url == "http://gpu-box:11500"
    provider.close()
