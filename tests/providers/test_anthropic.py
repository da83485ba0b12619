"""The Anthropic provider, driving the real SDK against a loopback server that speaks the
Messages API wire format (JSON answers, SSE streams with pings, error bodies)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import pytest

from tests.support.loopback import LoopbackServer, Reply, Request, free_port
from wingman_actors.core import (
    ContentBlock,
    InferenceRequest,
    Message,
    StreamEventType,
    ToolDefinition,
    Usage,
)
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import RetryPolicy, new_provider
from wingman_actors.providers._anthropic import DEFAULT_MODEL, AnthropicProvider, build_anthropic

MODEL = "claude-test-model"  # not one the SDK warns about as deprecated
MakeProvider = Callable[..., AnthropicProvider]


@pytest.fixture
def make_provider(loopback: LoopbackServer) -> Iterator[MakeProvider]:
    """Build providers pointed at the loopback server; close them all after the test."""
    made: list[AnthropicProvider] = []

    def make(**options: Any) -> AnthropicProvider:
        opts = {"api_key": "test-key", "base_url": loopback.url, "model": MODEL, "max_retries": 0, **options}
        provider = build_anthropic(opts)
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.close()


def fast_retries(provider: AnthropicProvider, max_retries: int) -> None:
    provider.retry = RetryPolicy(max_retries=max_retries, base_delay=0.001, max_delay=0.002)


def ask(text: str = "Hi", **fields: Any) -> InferenceRequest:
    return InferenceRequest(messages=[Message.user(text)], **fields)


# --- the wire format ------------------------------------------------------------------------


def message_json(
    content: list[dict[str, Any]] | None = None,
    *,
    stop_reason: str = "end_turn",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content if content is not None else [{"type": "text", "text": "Hello!"}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 12, "output_tokens": 6},
    }


def error_reply(status: int, error_type: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    body = {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_011"}
    return Reply.json(body, status=status, headers={"request-id": "req_011", **(headers or {})})


def message_start(input_tokens: int = 25, **usage: Any) -> tuple[str, dict[str, Any]]:
    message = message_json([], usage={"input_tokens": input_tokens, "output_tokens": 1, **usage})
    message["stop_reason"] = None
    return "message_start", {"type": "message_start", "message": message}


def block_start(index: int, block: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": payload}


def block_stop(index: int) -> tuple[str, dict[str, Any]]:
    return "content_block_stop", {"type": "content_block_stop", "index": index}


def message_end(stop_reason: str = "end_turn", output_tokens: int = 15) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


PING = ("ping", {"type": "ping"})


def text_stream(*pieces: str) -> Reply:
    events = [message_start(), block_start(0, {"type": "text", "text": ""}), PING]
    events += [delta(0, {"type": "text_delta", "text": p}) for p in pieces]
    return Reply.sse([*events, block_stop(0), *message_end()])


# --- plain replies ------------------------------------------------------------------------


def test_plain_reply_maps_text_usage_model_and_stop_reason(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    usage = {"input_tokens": 12, "output_tokens": 6, "cache_creation_input_tokens": 3, "cache_read_input_tokens": 4}
    loopback.queue(Reply.json(message_json(usage=usage)))

    response = make_provider().run_inference(ask())

    assert response.text == "Hello!"
    assert response.stop_reason == "end_turn"
    assert response.model == MODEL
    assert response.usage == Usage(
        input_tokens=12, output_tokens=6, cache_creation_input_tokens=3, cache_read_input_tokens=4
    )


def test_null_cache_token_counts_become_zero(make_provider: MakeProvider, loopback: LoopbackServer) -> None:
    usage = {"input_tokens": 5, "output_tokens": 2, "cache_creation_input_tokens": None, "cache_read_input_tokens": None}
    loopback.queue(Reply.json(message_json(usage=usage)))

    response = make_provider().run_inference(ask())

    assert response.usage == Usage(input_tokens=5, output_tokens=2)


def test_request_posts_to_messages_with_api_key_and_top_level_system(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(message_json()))

    make_provider().run_inference(ask("Hi", instructions="Be terse."))

    sent = loopback.requests[0]
    body = sent.json()
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    # SDK 2.x sends the key as a bearer token; older SDKs used x-api-key.
    assert sent.headers.get("x-api-key") == "test-key" or sent.headers.get("authorization") == "Bearer test-key"
    assert body["system"] == "Be terse."
    assert body["model"] == MODEL
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    assert all(m["role"] != "system" for m in body["messages"])


def test_request_sends_tools_with_name_description_and_input_schema(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    loopback.queue(Reply.json(message_json()))

    make_provider().run_inference(
        ask(tools=[ToolDefinition(name="get_weather", description="Weather for a city.", input_schema=schema)])
    )

    assert loopback.requests[0].json()["tools"] == [
        {"name": "get_weather", "description": "Weather for a city.", "input_schema": schema}
    ]


def test_request_merges_consecutive_same_role_messages(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(message_json()))
    history = [Message.user("one"), Message.user("two"), Message.assistant("three"), Message.assistant("four")]

    make_provider().run_inference(InferenceRequest(messages=[*history, Message.user("five")]))

    assert loopback.requests[0].json()["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "three"}, {"type": "text", "text": "four"}]},
        {"role": "user", "content": [{"type": "text", "text": "five"}]},
    ]


def test_request_groups_tool_results_into_one_user_message_before_text(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(message_json()))
    calls = Message.assistant(
        [
            ContentBlock.text_block("Checking."),
            ContentBlock.tool_use_block("toolu_1", "add", {"a": 1, "b": 2}),
            ContentBlock.tool_use_block("toolu_2", "read", {"path": "x"}),
        ]
    )
    history = [
        Message.user("Go"),
        calls,
        Message.tool_results([ContentBlock.tool_result_block("toolu_1", "3")]),
        Message.user("and the file?"),
        Message.tool_results([ContentBlock.tool_result_block("toolu_2", "no such file", is_error=True)]),
    ]

    make_provider().run_inference(InferenceRequest(messages=history))

    messages = loopback.requests[0].json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
        {"type": "tool_use", "id": "toolu_2", "name": "read", "input": {"path": "x"}},
    ]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3", "is_error": False},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file", "is_error": True},
        {"type": "text", "text": "and the file?"},
    ]


def test_request_sends_images_as_base64_sources(make_provider: MakeProvider, loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(message_json()))
    image = ContentBlock.image_block("iVBORw0KGgo=", "image/png")

    make_provider().run_inference(
        InferenceRequest(messages=[Message.user([image, ContentBlock.text_block("What is it?")])])
    )

    assert loopback.requests[0].json()["messages"][0]["content"][0] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }


def test_request_max_tokens_and_temperature_override_the_options(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(message_json()))

    make_provider(max_tokens=1000, temperature=0.9).run_inference(ask(max_tokens=77, temperature=0.1))

    body = loopback.requests[0].json()
    assert (body["max_tokens"], body["temperature"]) == (77, 0.1)


def test_request_uses_option_max_tokens_and_omits_unset_temperature(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(message_json()))

    make_provider(max_tokens=1000).run_inference(ask())

    body = loopback.requests[0].json()
    assert body["max_tokens"] == 1000
    assert "temperature" not in body


def test_output_schema_adds_no_request_parameter_and_keeps_the_system_prompt(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(message_json([{"type": "text", "text": '{"answer": 4}'}])))
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}}

    make_provider().run_inference(ask("2+2?", instructions="Be exact.", output_schema=schema))

    body = loopback.requests[0].json()
    assert body["system"] == "Be exact."
    assert set(body) == {"model", "max_tokens", "messages", "system"}


def test_tool_use_reply_maps_to_tool_use_blocks(make_provider: MakeProvider, loopback: LoopbackServer) -> None:
    content: list[dict[str, Any]] = [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_01A", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    loopback.queue(Reply.json(message_json(content, stop_reason="tool_use")))

    response = make_provider().run_inference(ask())

    assert response.stop_reason == "tool_use"
    assert response.text == "Let me check."
    assert response.tool_calls == [ContentBlock.tool_use_block("toolu_01A", "get_weather", {"city": "Paris"})]


@pytest.mark.parametrize(
    ("wire", "ours"),
    [
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "end_turn"),
        ("pause_turn", "end_turn"),
        ("refusal", "end_turn"),  # the turn ends (DESIGN's three reasons); `refused` says why
        ("model_context_window_exceeded", "max_tokens"),  # cut off where the window ran out
    ],
)
def test_stop_reasons_map_onto_ours(
    make_provider: MakeProvider, loopback: LoopbackServer, wire: str, ours: str
) -> None:
    loopback.queue(Reply.json(message_json(stop_reason=wire)))

    response = make_provider().run_inference(ask())
    assert (response.stop_reason, response.refused) == (ours, wire == "refusal")


# --- streaming ----------------------------------------------------------------------------


def test_streaming_text_yields_events_in_order_and_the_final_response(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    loopback.queue(text_stream("Hel", "lo", "!"))

    stream = make_provider().stream_inference(ask())
    events = list(stream)

    assert [e.type for e in events] == [
        StreamEventType.MESSAGE_START,
        StreamEventType.CONTENT_BLOCK_START,
        StreamEventType.TEXT_DELTA,
        StreamEventType.TEXT_DELTA,
        StreamEventType.TEXT_DELTA,
        StreamEventType.CONTENT_BLOCK_STOP,
        StreamEventType.MESSAGE_DELTA,
        StreamEventType.MESSAGE_STOP,
    ]
    assert events[0].model == MODEL
    assert [e.text for e in events if e.type is StreamEventType.TEXT_DELTA] == ["Hel", "lo", "!"]
    assert stream.response.text == "Hello!"
    assert stream.response.stop_reason == "end_turn"
    assert stream.response.usage == Usage(input_tokens=25, output_tokens=15)
    assert loopback.requests[0].json()["stream"] is True


def test_streaming_tool_call_assembles_input_json_deltas_into_a_dict(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    tool = {"type": "tool_use", "id": "toolu_01T", "name": "get_weather", "input": {}}
    pieces = ["", '{"ci', 'ty": "Pa', 'ris", "days"', ": 3}"]
    events = [message_start(), PING, block_start(0, tool)]
    events += [delta(0, {"type": "input_json_delta", "partial_json": p}) for p in pieces]
    loopback.queue(Reply.sse([*events, block_stop(0), *message_end("tool_use", 40)]))

    stream = make_provider().stream_inference(ask())
    seen = list(stream)

    partials = [e.partial_json for e in seen if e.type is StreamEventType.INPUT_JSON_DELTA]
    assert partials == pieces
    stop = next(e for e in seen if e.type is StreamEventType.CONTENT_BLOCK_STOP)
    assert stop.block == ContentBlock.tool_use_block("toolu_01T", "get_weather", {"city": "Paris", "days": 3})
    assert stream.response.stop_reason == "tool_use"
    assert stream.response.tool_calls == [stop.block]
    assert stream.response.usage.output_tokens == 40


def test_streaming_skips_unknown_events_and_blocks(make_provider: MakeProvider, loopback: LoopbackServer) -> None:
    # Thinking blocks are kept (tests/providers/test_reasoning.py); unknown ones are not.
    events = [
        message_start(),
        block_start(0, {"type": "brand_new_block", "detail": ""}),
        block_stop(0),
        ("brand_new_event", {"type": "brand_new_event", "detail": 1}),
        block_start(1, {"type": "text", "text": ""}),
        delta(1, {"type": "text_delta", "text": "Answer"}),
        block_stop(1),
        *message_end(),
    ]
    loopback.queue(Reply.sse(events))

    stream = make_provider().stream_inference(ask())
    seen = list(stream)

    assert {e.index for e in seen if e.index is not None} == {1}
    assert stream.response.content == [ContentBlock.text_block("Answer")]


def test_streaming_usage_keeps_input_and_cache_tokens_from_message_start(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    start = message_start(30, cache_creation_input_tokens=7, cache_read_input_tokens=None)
    events = [start, block_start(0, {"type": "text", "text": ""}), delta(0, {"type": "text_delta", "text": "ok"})]
    loopback.queue(Reply.sse([*events, block_stop(0), *message_end(output_tokens=9)]))

    response = make_provider().stream_inference(ask()).consume()

    assert response.usage == Usage(input_tokens=30, output_tokens=9, cache_creation_input_tokens=7)


@pytest.mark.parametrize(
    ("error_type", "kind"),
    [
        ("overloaded_error", ErrorKind.AGENT),
        ("api_error", ErrorKind.AGENT),
        ("rate_limit_error", ErrorKind.RATE_LIMIT),
        ("invalid_request_error", ErrorKind.INVALID),
    ],
)
def test_streaming_error_event_raises_the_mapped_kind(
    make_provider: MakeProvider, loopback: LoopbackServer, error_type: str, kind: ErrorKind
) -> None:
    events = [message_start(), block_start(0, {"type": "text", "text": ""})]
    events.append(("error", {"type": "error", "error": {"type": error_type, "message": "Something went wrong"}}))
    loopback.queue(Reply.sse(events))

    with pytest.raises(AgentError) as info:
        list(make_provider().stream_inference(ask()))

    assert info.value.kind is kind
    assert info.value.provider == "anthropic"
    assert "Something went wrong" in str(info.value)
    assert isinstance(info.value.__cause__, anthropic.APIStatusError)


def test_streaming_http_error_maps_like_a_plain_call(make_provider: MakeProvider, loopback: LoopbackServer) -> None:
    loopback.queue(error_reply(401, "authentication_error", "invalid x-api-key"))

    with pytest.raises(AgentError) as info:
        list(make_provider().stream_inference(ask()))

    assert (info.value.kind, info.value.status) == (ErrorKind.INVALID, 401)


def test_streaming_retries_an_overloaded_answer_before_any_event(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    loopback.queue(error_reply(529, "overloaded_error", "Overloaded"), text_stream("fine"))
    provider = make_provider()
    fast_retries(provider, 2)

    response = provider.stream_inference(ask()).consume()

    assert response.text == "fine"
    assert len(loopback.requests) == 2


def test_streaming_closes_the_http_response_when_the_consumer_stops_early(
    make_provider: MakeProvider, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[bool] = []
    original_close = anthropic.Stream.close

    def spy_close(self: anthropic.Stream[Any]) -> None:
        original_close(self)
        closed.append(self.response.is_closed)

    monkeypatch.setattr(anthropic.Stream, "close", spy_close)
    loopback.queue(text_stream(*["chunk "] * 50))

    stream = make_provider().stream_inference(ask())
    for event in stream:
        if event.type is StreamEventType.TEXT_DELTA:
            break
    stream.close()

    assert closed and all(closed)


def test_streaming_read_timeout_mid_stream_maps_to_timeout(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    def stall() -> Iterator[tuple[str, dict[str, Any]]]:
        yield message_start()
        time.sleep(1.0)
        yield from message_end()

    loopback.queue(Reply.sse(stall()))

    with pytest.raises(AgentError) as info:
        list(make_provider(timeout=0.3).stream_inference(ask()))

    assert info.value.kind is ErrorKind.TIMEOUT


def test_stream_cut_before_message_stop_raises(make_provider: MakeProvider, loopback: LoopbackServer) -> None:
    events = [message_start(), block_start(0, {"type": "text", "text": ""}), delta(0, {"type": "text_delta", "text": "Hal"})]
    loopback.queue(Reply.sse(events))

    with pytest.raises(AgentError, match="before message_stop"):
        list(make_provider().stream_inference(ask()))


# --- errors and retries -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type", "kind"),
    [
        (400, "invalid_request_error", ErrorKind.INVALID),
        (401, "authentication_error", ErrorKind.INVALID),
        (403, "permission_error", ErrorKind.INVALID),
        (404, "not_found_error", ErrorKind.INVALID),
        (422, "invalid_request_error", ErrorKind.INVALID),
        (500, "api_error", ErrorKind.AGENT),
        (529, "overloaded_error", ErrorKind.AGENT),
    ],
)
def test_error_status_maps_to_kind_with_status_and_api_message(
    make_provider: MakeProvider, loopback: LoopbackServer, status: int, error_type: str, kind: ErrorKind
) -> None:
    loopback.queue(error_reply(status, error_type, f"the {error_type} explained"))

    with pytest.raises(AgentError) as info:
        make_provider().run_inference(ask())

    err = info.value
    assert (err.kind, err.status, err.provider) == (kind, status, "anthropic")
    assert f"the {error_type} explained" in str(err)
    assert isinstance(err.__cause__, anthropic.APIStatusError)
    assert err.retryable is (status >= 500)


def test_rate_limit_maps_to_rate_limit_kind_with_retry_after(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    loopback.queue(error_reply(429, "rate_limit_error", "Number of requests exceeded", {"retry-after": "7"}))

    with pytest.raises(AgentError) as info:
        make_provider().run_inference(ask())

    err = info.value
    assert (err.kind, err.status, err.retry_after) == (ErrorKind.RATE_LIMIT, 429, 7.0)
    assert "Number of requests exceeded" in str(err)
    assert isinstance(err.__cause__, anthropic.RateLimitError)


def test_rate_limit_is_retried_after_the_retry_after_delay(
    make_provider: MakeProvider, loopback: LoopbackServer
) -> None:
    loopback.queue(
        error_reply(429, "rate_limit_error", "slow down", {"retry-after": "0.2"}), Reply.json(message_json())
    )
    provider = make_provider(max_retries=2)
    provider.retry = RetryPolicy(max_retries=2, base_delay=5.0, max_delay=5.0)  # backoff alone would wait >= 2.5s

    started = time.monotonic()
    response = provider.run_inference(ask())
    elapsed = time.monotonic() - started

    assert response.text == "Hello!"
    assert len(loopback.requests) == 2
    assert 0.2 <= elapsed < 1.5


def test_server_error_is_retried_then_succeeds(make_provider: MakeProvider, loopback: LoopbackServer) -> None:
    loopback.queue(error_reply(500, "api_error", "Internal server error"), Reply.json(message_json()))
    provider = make_provider(max_retries=2)
    fast_retries(provider, 2)

    assert provider.run_inference(ask()).text == "Hello!"
    assert len(loopback.requests) == 2


def test_sdk_does_not_retry_on_its_own(make_provider: MakeProvider, loopback: LoopbackServer) -> None:
    loopback.queue(error_reply(500, "api_error", "boom"), Reply.json(message_json()))

    with pytest.raises(AgentError):
        make_provider(max_retries=0).run_inference(ask())

    assert len(loopback.requests) == 1


def test_bad_request_is_never_retried(make_provider: MakeProvider, loopback: LoopbackServer) -> None:
    loopback.queue(error_reply(400, "invalid_request_error", "messages: field required"), Reply.json(message_json()))
    provider = make_provider(max_retries=2)
    fast_retries(provider, 2)

    with pytest.raises(AgentError) as info:
        provider.run_inference(ask())

    assert info.value.kind is ErrorKind.INVALID
    assert len(loopback.requests) == 1


def test_connection_refused_maps_to_network(make_provider: MakeProvider) -> None:
    provider = make_provider(base_url=f"http://127.0.0.1:{free_port()}")

    with pytest.raises(AgentError) as info:
        provider.run_inference(ask())

    assert info.value.kind is ErrorKind.NETWORK
    assert "127.0.0.1" in str(info.value)
    assert isinstance(info.value.__cause__, anthropic.APIConnectionError)


def test_read_timeout_maps_to_timeout(make_provider: MakeProvider, loopback: LoopbackServer) -> None:
    def slow(_: Request) -> Reply:
        time.sleep(1.0)
        return Reply.json(message_json())

    loopback.queue(slow)

    with pytest.raises(AgentError) as info:
        make_provider(timeout=0.3).run_inference(ask())

    assert info.value.kind is ErrorKind.TIMEOUT
    assert isinstance(info.value.__cause__, anthropic.APITimeoutError)


# --- construction -------------------------------------------------------------------------


def test_missing_api_key_raises_invalid_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    with pytest.raises(AgentError) as info:
        build_anthropic({"model": MODEL})

    assert (info.value.kind, info.value.provider) == (ErrorKind.INVALID, "anthropic")
    assert "ANTHROPIC_API_KEY" in str(info.value) and "api_key" in str(info.value)


def test_api_key_falls_back_to_the_environment(
    make_provider: MakeProvider, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    loopback.queue(Reply.json(message_json()))

    make_provider(api_key=None).run_inference(ask())

    headers = loopback.requests[0].headers
    assert headers.get("x-api-key") == "env-key" or headers.get("authorization") == "Bearer env-key"


def test_defaults_are_claude_sonnet_and_4096_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    provider = build_anthropic({})
    try:
        assert (provider.model, provider.options.max_tokens) == (DEFAULT_MODEL, 4096)
        assert DEFAULT_MODEL == "claude-sonnet-4-6"
    finally:
        provider.close()


def test_an_option_that_looks_like_a_typo_is_sent_and_logged_with_a_suggestion(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("WARNING", logger="wingman_actors.providers._options"):
        provider = build_anthropic({"api_key": "k", "modle": MODEL})

    assert provider.options.extra_body() == {"modle": MODEL}
    assert "'modle'" in caplog.text and "did you mean 'model'?" in caplog.text


def test_new_provider_builds_a_working_anthropic_provider(loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(message_json()))
    provider = new_provider("anthropic", {"api_key": "test-key", "base_url": loopback.url, "model": MODEL})
    assert isinstance(provider, AnthropicProvider)
    try:
        assert provider.run_inference(ask()).text == "Hello!"
    finally:
        provider.close()


def test_provider_is_usable_again_after_close(make_provider: MakeProvider, loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(message_json()), Reply.json(message_json()))
    provider = make_provider()

    provider.run_inference(ask())
    provider.close()

    assert provider.run_inference(ask()).text == "Hello!"


@pytest.mark.parametrize(
    "body",
    [{"model": MODEL}, {**message_json(), "content": None}, {**message_json(), "usage": None}, []],
    ids=["no content", "null content", "null usage", "a list"],
)
def test_an_answer_that_is_not_a_message_is_an_agent_error_naming_the_provider(
    make_provider: MakeProvider, loopback: LoopbackServer, body: Any
) -> None:
    loopback.queue(Reply.json(body), Reply.json(body))
    provider = make_provider()

    for call in (lambda: provider.run_inference(ask()), lambda: asyncio.run(provider.arun_inference(ask()))):
        with pytest.raises(AgentError, match="anthropic answered with something that is not a message") as caught:
            call()
        assert caught.value.kind is ErrorKind.AGENT and caught.value.provider == "anthropic"
