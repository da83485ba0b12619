"""The OpenAI-compatible provider against a loopback server speaking /v1/chat/completions."""

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
from wingman_actors.providers._openai import OpenAIProvider, build_openai
from wingman_actors.providers._retry import RetryPolicy

MODEL = "gpt-4o-mini"
SERVED_MODEL = "gpt-4o-mini-2024-07-18"
KEY = "sk-test-123"
WEATHER = ToolDefinition(
    name="get_weather",
    description="Current weather for a city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def completion(
    content: str | None = "Hello!",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A non-streaming chat.completion object as OpenAI sends it."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1721596428,
        "model": SERVED_MODEL,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": usage
        or {
            "prompt_tokens": 19,
            "completion_tokens": 10,
            "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        },
        "system_fingerprint": "fp_44709d6fcb",
    }


def tool_call(id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """One chat.completion.chunk with a single choice."""
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion.chunk",
        "created": 1721596428,
        "model": SERVED_MODEL,
        "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        "usage": None,
    }


def usage_chunk(prompt: int = 12, completion: int = 5, cached: int = 0) -> dict[str, Any]:
    """The last chunk of a stream with include_usage: empty choices, the usage."""
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion.chunk",
        "created": 1721596428,
        "model": SERVED_MODEL,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def sse(*chunks: dict[str, Any], done: bool = True) -> Reply:
    events: list[tuple[str | None, Any]] = [(None, c) for c in chunks]
    if done:
        events.append((None, "[DONE]"))
    return Reply.sse(events)


def text_stream(*pieces: str) -> Reply:
    head = [chunk({"role": "assistant", "content": ""})]
    body = [chunk({"content": p}) for p in pieces]
    return sse(*head, *body, chunk({}, "stop"), usage_chunk())


def ask(text: str = "Hi", **kwargs: Any) -> InferenceRequest:
    return InferenceRequest(messages=[Message.user(text)], **kwargs)


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def make(loopback: LoopbackServer) -> Iterator[Callable[..., OpenAIProvider]]:
    """Build providers pointed at the loopback server; all closed at teardown."""
    made: list[OpenAIProvider] = []

    def build(**options: Any) -> OpenAIProvider:
        provider = build_openai({"model": MODEL, "base_url": f"{loopback.url}/v1", "api_key": KEY, **options})
        provider.retry = RetryPolicy(provider.options.max_retries, base_delay=0.001, max_delay=0.002)
        made.append(provider)
        return provider

    yield build
    for provider in made:
        provider.close()


def test_a_plain_reply_gives_text_usage_stop_reason_and_model(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    loopback.queue(Reply.json(completion("Hello there!")))
    response = make().run_inference(ask())
    assert response.text == "Hello there!"
    assert response.usage == Usage(input_tokens=19, output_tokens=10)
    assert response.stop_reason == "end_turn"
    assert response.model == SERVED_MODEL


def test_the_request_body_has_system_message_tools_limits_and_the_bearer_key(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    loopback.queue(Reply.json(completion()))
    request = ask(
        "Weather in Paris?", instructions="Be brief.", tools=[WEATHER], max_tokens=321, temperature=0.2
    )
    make().run_inference(request)
    sent = loopback.requests[0]
    body = sent.json()
    assert (sent.method, sent.path) == ("POST", "/v1/chat/completions")
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert body["model"] == MODEL
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert (body["max_tokens"], body["temperature"]) == (321, 0.2)
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
    assert "stream" not in body and "response_format" not in body


def test_tool_calls_and_results_are_sent_in_openai_shape(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    loopback.queue(Reply.json(completion("Paris is sunny.")))
    history = [
        Message.user("Weather in Paris and Oslo?"),
        Message.assistant(
            [
                ContentBlock.tool_use_block("call_a", "get_weather", {"city": "Paris"}),
                ContentBlock.tool_use_block("call_b", "get_weather", {"city": "Oslo"}),
            ]
        ),
        Message.tool_results(
            [
                ContentBlock.tool_result_block("call_a", "Sunny, 22C"),
                ContentBlock.tool_result_block("call_b", "service down", is_error=True),
            ]
        ),
    ]
    make().run_inference(InferenceRequest(messages=history, tools=[WEATHER]))
    messages = loopback.requests[0].json()["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            },
        ],
    }
    assert messages[2:] == [
        {"role": "tool", "tool_call_id": "call_a", "content": "Sunny, 22C"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: service down"},
    ]


def test_images_are_sent_as_data_urls(loopback: LoopbackServer, make: Callable[..., OpenAIProvider]) -> None:
    loopback.queue(Reply.json(completion("A cat.")))
    message = Message.user(
        [ContentBlock.text_block("What is this?"), ContentBlock.image_block("aGVsbG8=", "image/png")]
    )
    make().run_inference(InferenceRequest(messages=[message]))
    assert loopback.requests[0].json()["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}},
    ]


def test_max_completion_tokens_replaces_max_tokens_when_asked(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    loopback.queue(Reply.json(completion()))
    make(max_tokens_param="max_completion_tokens", max_tokens=99).run_inference(ask())
    body = loopback.requests[0].json()
    assert body["max_completion_tokens"] == 99 and "max_tokens" not in body


def test_output_schema_becomes_response_format_only_with_structured_output(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}}
    loopback.queue(Reply.json(completion('{"answer": 4}')), Reply.json(completion('{"answer": 4}')))
    make().run_inference(ask(output_schema=schema))
    make(structured_output=True).run_inference(ask(output_schema=schema))
    assert "response_format" not in loopback.requests[0].json()
    assert loopback.requests[1].json()["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema},
    }


def test_a_tool_call_reply_becomes_tool_use_blocks(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    calls = [tool_call("call_abc", "get_weather", '{"city": "Paris"}')]
    loopback.queue(Reply.json(completion(None, tool_calls=calls, finish_reason="tool_calls")))
    response = make().run_inference(ask(tools=[WEATHER]))
    assert response.stop_reason == "tool_use"
    [call] = response.tool_calls
    assert (call.id, call.name, call.input) == ("call_abc", "get_weather", {"city": "Paris"})


def test_malformed_tool_arguments_are_an_agent_error_naming_the_tool(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    calls = [tool_call("call_abc", "get_weather", '{"city": "Par')]
    loopback.queue(Reply.json(completion(None, tool_calls=calls, finish_reason="tool_calls")))
    with pytest.raises(AgentError) as info:
        make(max_retries=0).run_inference(ask(tools=[WEATHER]))
    assert info.value.kind is ErrorKind.AGENT
    assert "get_weather" in str(info.value)


def test_a_length_stop_maps_to_max_tokens(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    loopback.queue(Reply.json(completion("Once upon a", finish_reason="length")))
    assert make().run_inference(ask()).stop_reason == "max_tokens"


def test_cached_prompt_tokens_become_cache_read_tokens(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    usage = {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "prompt_tokens_details": {"cached_tokens": 1920},
    }
    loopback.queue(Reply.json(completion(usage=usage)))
    assert make().run_inference(ask()).usage == Usage(
        input_tokens=2006, output_tokens=300, cache_read_input_tokens=1920
    )


def test_streaming_text_yields_deltas_and_the_assembled_response(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    loopback.queue(text_stream("The ", "sky ", "is blue."))
    stream = make().stream_inference(ask())
    events = list(stream)
    assert [e.text for e in events if e.type is StreamEventType.TEXT_DELTA] == ["The ", "sky ", "is blue."]
    assert events[0].type is StreamEventType.MESSAGE_START
    assert events[-1].type is StreamEventType.MESSAGE_STOP
    assert (stream.response.text, stream.response.stop_reason) == ("The sky is blue.", "end_turn")
    body = loopback.requests[0].json()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_the_usage_chunk_sets_the_stream_usage(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    loopback.queue(sse(chunk({"content": "Hi"}), chunk({}, "stop"), usage_chunk(40, 7, cached=32)))
    stream = make().stream_inference(ask())
    events = list(stream)
    delta = next(e for e in events if e.type is StreamEventType.MESSAGE_DELTA)
    expected = Usage(input_tokens=40, output_tokens=7, cache_read_input_tokens=32)
    assert delta.usage == expected and stream.response.usage == expected


def test_a_streamed_tool_call_assembles_arguments_split_over_chunks(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    first = {
        "index": 0,
        "id": "call_xyz",
        "type": "function",
        "function": {"name": "get_weather", "arguments": ""},
    }
    pieces = ['{"ci', 'ty": "Pa', 'ris"}']
    loopback.queue(
        sse(
            chunk({"role": "assistant", "content": "Checking. "}),
            chunk({"tool_calls": [first]}),
            *[chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces],
            chunk({}, "tool_calls"),
            usage_chunk(),
        )
    )
    stream = make().stream_inference(ask(tools=[WEATHER]))
    events = list(stream)
    assert [e.partial_json for e in events if e.type is StreamEventType.INPUT_JSON_DELTA] == pieces
    starts = [e for e in events if e.type is StreamEventType.CONTENT_BLOCK_START]
    assert [e.block.type for e in starts if e.block] == ["text", "tool_use"]
    assert starts[0].index != starts[1].index
    assert stream.response.stop_reason == "tool_use"
    assert stream.response.text == "Checking. "
    [call] = stream.response.tool_calls
    assert (call.id, call.name, call.input) == ("call_xyz", "get_weather", {"city": "Paris"})


def test_an_error_object_mid_stream_raises_an_agent_error(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    error = {
        "error": {"message": "The server had an error while processing your request.", "type": "server_error"}
    }
    loopback.queue(sse(chunk({"content": "Hel"}), error, done=False))
    with pytest.raises(AgentError) as info:
        list(make().stream_inference(ask()))
    assert info.value.kind is ErrorKind.AGENT
    assert "server had an error" in str(info.value)


@pytest.mark.parametrize(("code", "kind", "status"), [
    (429, ErrorKind.RATE_LIMIT, 429), ("400", ErrorKind.INVALID, 400), (502, ErrorKind.AGENT, 502),
    ("context_length_exceeded", ErrorKind.AGENT, None), (None, ErrorKind.AGENT, None),
])
def test_an_error_object_in_a_200_answer_takes_its_kind_from_a_numeric_code(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider], code: Any, kind: ErrorKind, status: int | None
) -> None:
    """OpenRouter and LiteLLM's proxy send ``{"error": {"code": 429, ...}}`` with HTTP 200 (found by the
    LiteLLM port): a numeric code decides the kind as the status would (a 400 is not retried in vain)."""
    loopback.queue(Reply.json({"error": {"message": "upstream said no", "code": code}}),
                   sse(chunk({"content": "Hel"}), {"error": {"message": "upstream said no", "code": code}}, done=False))
    provider = make(max_retries=0)
    for call in (lambda: provider.run_inference(ask()), lambda: list(provider.stream_inference(ask()))):
        with pytest.raises(AgentError) as info:
            call()
        assert (info.value.kind, info.value.status) == (kind, status)
        assert "upstream said no" in str(info.value)


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
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider], status: int, kind: ErrorKind
) -> None:
    error = {
        "error": {
            "message": f"failure {status}",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
    loopback.queue(Reply.json(error, status=status))
    with pytest.raises(AgentError) as info:
        make(max_retries=0).run_inference(ask())
    assert (info.value.kind, info.value.status) == (kind, status)
    assert f"failure {status}" in str(info.value)


def test_a_429_records_retry_after(loopback: LoopbackServer, make: Callable[..., OpenAIProvider]) -> None:
    error = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    loopback.queue(Reply.json(error, status=429, headers={"retry-after": "7"}))
    with pytest.raises(AgentError) as info:
        make(max_retries=0).run_inference(ask())
    assert info.value.retry_after == 7.0


def test_an_error_status_on_a_stream_raises_with_the_server_message(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    error = {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
    loopback.queue(Reply.json(error, status=401))
    with pytest.raises(AgentError) as info:
        list(make().stream_inference(ask()))
    assert (info.value.kind, info.value.status) == (ErrorKind.INVALID, 401)
    assert "Incorrect API key" in str(info.value)


def test_a_500_is_retried_then_succeeds(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    loopback.queue(
        Reply.json({"error": {"message": "busy"}}, status=500), Reply.json(completion("Recovered"))
    )
    assert make().run_inference(ask()).text == "Recovered"
    assert len(loopback.requests) == 2


def test_a_stream_is_retried_after_a_429_then_succeeds(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    loopback.queue(
        Reply.json({"error": {"message": "slow down"}}, status=429, headers={"retry-after": "0"}),
        text_stream("ok"),
    )
    assert make().stream_inference(ask()).consume().text == "ok"
    assert len(loopback.requests) == 2


def test_a_400_is_never_retried(loopback: LoopbackServer, make: Callable[..., OpenAIProvider]) -> None:
    loopback.queue(Reply.json({"error": {"message": "bad"}}, status=400), Reply.json(completion()))
    with pytest.raises(AgentError):
        make().run_inference(ask())
    assert len(loopback.requests) == 1


def test_connection_refused_is_a_network_error() -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    provider = build_openai({"model": MODEL, "base_url": base_url, "max_retries": 0})
    try:
        with pytest.raises(AgentError) as info:
            provider.run_inference(ask())
    finally:
        provider.close()
    assert info.value.kind is ErrorKind.NETWORK


def test_a_read_timeout_is_a_timeout_error(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    def slow_body() -> Iterator[bytes]:
        time.sleep(0.6)  # longer than the 0.3 s timeout
        yield json.dumps(completion()).encode()

    loopback.queue(Reply(200, slow_body(), {"content-type": "application/json"}))
    with pytest.raises(AgentError) as info:
        make(timeout=0.3, max_retries=0).run_inference(ask())
    assert info.value.kind is ErrorKind.TIMEOUT


def test_stopping_a_stream_early_closes_the_connection(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    finished = threading.Event()

    def endless() -> Iterator[bytes]:
        try:
            for i in range(400):
                yield f"data: {json.dumps(chunk({'content': f'w{i} '}))}\n\n".encode()
                time.sleep(0.005)
        finally:
            finished.set()

    loopback.queue(Reply(200, endless(), {"content-type": "text/event-stream"}))
    stream = make().stream_inference(ask())
    for event in stream:
        if event.type is StreamEventType.TEXT_DELTA:
            break
    stream.close()
    assert finished.wait(1.5), "the server kept streaming after the consumer stopped"


def test_a_missing_model_is_invalid_at_construction() -> None:
    with pytest.raises(AgentError) as info:
        build_openai({"api_key": KEY})
    assert info.value.kind is ErrorKind.INVALID
    assert 'new_provider("openai", {"model": ' in str(info.value)


def test_a_missing_key_is_invalid_for_api_openai_com() -> None:
    with pytest.raises(AgentError) as info:
        build_openai({"model": MODEL})
    assert info.value.kind is ErrorKind.INVALID
    assert "OPENAI_API_KEY" in str(info.value)


def test_a_local_server_needs_no_key_and_gets_no_auth_header(loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(completion("local")))
    provider = build_openai({"model": "qwen2.5", "base_url": f"{loopback.url}/v1"})
    try:
        assert provider.run_inference(ask()).text == "local"
    finally:
        provider.close()
    assert "authorization" not in loopback.requests[0].headers


def test_the_key_and_base_url_come_from_the_environment(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", f"{loopback.url}/v1")
    loopback.queue(Reply.json(completion()))
    provider = build_openai({"model": MODEL})
    try:
        provider.run_inference(ask())
    finally:
        provider.close()
    assert loopback.requests[0].headers["authorization"] == "Bearer sk-from-env"


def test_an_empty_api_key_means_no_key_even_when_the_environment_has_one(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    loopback.queue(Reply.json(completion("local")))
    provider = build_openai({"model": "qwen2.5", "base_url": f"{loopback.url}/v1", "api_key": ""})
    try:
        provider.run_inference(ask())
    finally:
        provider.close()
    assert "authorization" not in loopback.requests[0].headers


def test_new_provider_builds_a_working_openai_provider(loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(completion("via registry")))
    provider = new_provider("openai", {"model": MODEL, "base_url": f"{loopback.url}/v1", "api_key": KEY})
    assert isinstance(provider, OpenAIProvider)
    try:
        assert provider.run_inference(ask()).text == "via registry"
    finally:
        provider.close()


def test_a_non_streamed_answer_is_the_response_its_blocks_and_usage_make(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # the response is validated in one call, from dicts: the same blocks and usage as
    # their constructors make, down to the fields they set
    answer = completion("Sunny.", tool_calls=[tool_call("call_1", "get_weather", '{"city": "Paris"}')],
                        usage={"prompt_tokens": 9, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 2},
                               "completion_tokens_details": {"reasoning_tokens": 1}})
    answer["choices"][0]["message"]["reasoning_content"] = "Look it up."
    loopback.queue(Reply.json(answer))
    response = make().run_inference(ask(tools=[WEATHER]))
    expected = [ContentBlock.thinking_block("Look it up."), ContentBlock.text_block("Sunny."),
                ContentBlock.tool_use_block("call_1", "get_weather", {"city": "Paris"})]
    assert response.content == expected
    assert [b.model_fields_set for b in response.content] == [b.model_fields_set for b in expected]
    usage = Usage(input_tokens=9, output_tokens=4, cache_read_input_tokens=2, reasoning_tokens=1)
    assert (response.usage, response.usage.model_fields_set) == (usage, usage.model_fields_set)
    assert (response.stop_reason, response.model) == ("tool_use", SERVED_MODEL)


def test_a_refusal_is_the_answers_text_not_an_empty_answer(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    refused = completion(None)
    refused["choices"][0]["message"]["refusal"] = "I'm sorry, I can't help with that."
    loopback.queue(Reply.json(refused))
    response = make().run_inference(ask())
    assert response.text == "I'm sorry, I can't help with that." and response.refused
    assert response.stop_reason == "end_turn"


def test_a_streamed_refusal_streams_as_text(loopback: LoopbackServer, make: Callable[..., OpenAIProvider]) -> None:
    loopback.queue(sse(
        chunk({"role": "assistant", "content": None, "refusal": ""}),
        chunk({"refusal": "I'm sorry, "}),
        chunk({"refusal": "I can't help with that."}),
        chunk({}, finish_reason="stop"),
        usage_chunk(),
    ))
    stream = make().stream_inference(ask())
    text = "".join(e.text or "" for e in stream if e.type == StreamEventType.TEXT_DELTA)
    assert text == "I'm sorry, I can't help with that." == stream.response.text
