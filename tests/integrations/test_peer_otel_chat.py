"""The GenAI instrumentations' own tests of ``chat`` spans, ported to our telemetry:
opentelemetry-python-contrib's openai-v2 instrumentation and traceloop/openllmetry's
anthropic and ollama ones. Each runs a Session against one of our providers speaking its
wire format to a loopback server, and checks the span a user's backend would receive:
name, kind, the gen_ai.* attributes, error status and ``error.type``, content capture
only when opted in, and streamed calls ending their span however the stream ends."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason='needs opentelemetry-sdk: pip install -e ".[dev,otel]"')

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tests.providers import test_anthropic as wire_anthropic
from tests.providers import test_ollama as wire_ollama
from tests.providers.test_openai import chunk, completion, sse, text_stream, tool_call, usage_chunk
from tests.support.loopback import LoopbackServer, Reply, free_port
from tests.support.otel import by_name, parent_id, span_id
from wingman_actors import Agent, Session, tool
from wingman_actors.core import InferenceResponse
from wingman_actors.errors import AgentError
from wingman_actors.integrations import otel
from wingman_actors.providers import new_provider
from wingman_actors.providers._base import BaseProvider
from wingman_actors.providers._retry import RetryPolicy
from wingman_actors.testing import ScriptedProvider

CONTRIB = "open-telemetry/opentelemetry-python-contrib instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests"
LLMETRY = "traceloop/openllmetry packages"
MODEL = "gpt-4o-mini"
SERVED = "gpt-4o-mini-2024-07-18"  # what the loopback's completions name as their model


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"Sunny in {city}"


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "ANTHROPIC_API_KEY", otel.CAPTURE_ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def make(loopback: LoopbackServer) -> Iterator[Callable[..., BaseProvider]]:
    """Providers of any of our wire formats pointed at the loopback server; closed after."""
    made: list[BaseProvider] = []

    def build(kind: str = "openai", **options: Any) -> BaseProvider:
        base = {"openai": f"{loopback.url}/v1", "anthropic": loopback.url, "ollama": loopback.url}[kind]
        model = {"openai": MODEL, "anthropic": wire_anthropic.MODEL, "ollama": wire_ollama.MODEL}[kind]
        provider = new_provider(kind, {"model": model, "base_url": base, "api_key": "k", **options})
        assert isinstance(provider, BaseProvider)
        provider.retry = RetryPolicy(provider.options.max_retries, base_delay=0.001, max_delay=0.002)
        made.append(provider)
        return provider

    yield build
    for provider in made:
        provider.close()


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    assert span.attributes is not None
    return dict(span.attributes)


def _one(spans: InMemorySpanExporter, name: str) -> ReadableSpan:
    (span,) = by_name(spans.get_finished_spans())[name]
    return span


# -- a plain call ----------------------------------------------------------------------------


def test_a_chat_call_is_one_client_span_named_after_the_model_with_usage_and_the_served_model(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_chat_completions.py::test_chat_completion_no_content.

    The peer reports the provider's own finish reason ("stop") and the response id; we report
    our normalised stop reason ("end_turn") and have no response id (InferenceResponse has none)."""
    loopback.queue(Reply.json(completion("This is a test.")))
    result = Session(Agent("tester", provider=make())).run("Say this is a test")
    chat = _one(spans, f"chat {MODEL}")
    attrs = _attrs(chat)
    assert chat.kind is SpanKind.CLIENT
    assert chat.status.status_code is StatusCode.UNSET
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == MODEL
    assert attrs["gen_ai.response.model"] == SERVED
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (19, 10)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (19, 10)
    assert attrs["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert "error.type" not in attrs
    for content in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"):
        assert content not in attrs  # no content unless opted in


def test_the_agent_span_is_internal_and_parents_the_client_chat_span(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-openai-agents/tests/test_openai_agents.py::test_agent_spans."""
    loopback.queue(Reply.json(completion("hi")))
    Session(Agent("greeter", provider=make())).run("hello")
    agent, chat = _one(spans, "invoke_agent greeter"), _one(spans, f"chat {MODEL}")
    assert agent.kind is SpanKind.INTERNAL
    assert parent_id(chat) == span_id(agent)
    assert agent.context.trace_id == chat.context.trace_id
    assert _attrs(agent)["gen_ai.operation.name"] == "invoke_agent"
    assert _attrs(agent)["gen_ai.agent.name"] == "greeter"
    assert (_attrs(agent)["gen_ai.usage.input_tokens"], _attrs(agent)["gen_ai.usage.output_tokens"]) == (19, 10)


def test_the_request_parameters_the_provider_sends_are_on_the_chat_span(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_chat_completions.py::test_chat_completion_extra_params.

    Set as provider options (as DESIGN's new_provider takes them), they are what goes on the wire."""
    loopback.queue(Reply.json(completion()))
    Session(Agent("a", provider=make(max_tokens=50, temperature=0.5))).run("hi")
    body = loopback.requests[0].json()
    attrs = _attrs(_one(spans, f"chat {MODEL}"))
    assert (body["max_tokens"], body["temperature"]) == (50, 0.5)
    assert attrs["gen_ai.request.max_tokens"] == 50
    assert attrs["gen_ai.request.temperature"] == 0.5


def test_the_agents_own_request_parameters_win_on_the_chat_span_as_on_the_wire(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_request_attributes.py (request parameters)."""
    loopback.queue(Reply.json(completion()))
    Session(Agent("a", provider=make(max_tokens=50, temperature=0.5), max_tokens=77, temperature=0.1)).run("hi")
    body = loopback.requests[0].json()
    attrs = _attrs(_one(spans, f"chat {MODEL}"))
    assert (attrs["gen_ai.request.max_tokens"], attrs["gen_ai.request.temperature"]) == (77, 0.1)
    assert (body["max_tokens"], body["temperature"]) == (77, 0.1)


def test_a_temperature_nobody_set_is_not_reported(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_chat_completions.py::test_chat_completion_handles_not_given."""
    loopback.queue(Reply.json(completion()))
    Session(Agent("a", provider=make())).run("hi")
    assert "temperature" not in loopback.requests[0].json()
    assert "gen_ai.request.temperature" not in _attrs(_one(spans, f"chat {MODEL}"))


def test_a_tool_calling_turn_reports_tool_use_then_the_tool_span_then_a_second_chat(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_chat_completions.py::test_chat_completion_tool_calls_no_content."""
    calls = [tool_call("call_seattle", "get_weather", '{"city": "Seattle"}'),
             tool_call("call_sf", "get_weather", '{"city": "San Francisco"}')]
    loopback.queue(Reply.json(completion(None, tool_calls=calls, finish_reason="tool_calls")),
                   Reply.json(completion("Sunny in both.")))
    Session(Agent("weather", provider=make(), tools=[get_weather])).run("Weather in Seattle and SF?")
    got = by_name(spans.get_finished_spans())
    first, second = sorted(got[f"chat {MODEL}"], key=lambda s: s.start_time or 0)
    assert _attrs(first)["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert _attrs(second)["gen_ai.response.finish_reasons"] == ("end_turn",)
    tools = got["execute_tool get_weather"]
    assert sorted(_attrs(t)["gen_ai.tool.call.id"] for t in tools) == ["call_seattle", "call_sf"]
    (agent,) = got["invoke_agent weather"]
    assert {parent_id(s) for s in [first, second, *tools]} == {span_id(agent)}
    for t in tools:  # run between the two model calls
        assert (first.end_time or 0) <= (t.start_time or 0) and (t.end_time or 0) <= (second.start_time or 0)
        assert "gen_ai.tool.call.arguments" not in _attrs(t) and "gen_ai.tool.call.result" not in _attrs(t)


# -- content capture ---------------------------------------------------------------------------


def test_content_is_captured_when_the_environment_variable_opts_in(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_chat_completions.py::test_chat_completion_with_content."""
    monkeypatch.setenv(otel.CAPTURE_ENV, "true")
    loopback.queue(Reply.json(completion("This is a test.")))
    Session(Agent("a", instructions="Be brief.", provider=make())).run("Say this is a test")
    attrs = _attrs(_one(spans, f"chat {MODEL}"))
    import json

    assert json.loads(attrs["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Say this is a test"}]}
    ]
    assert json.loads(attrs["gen_ai.output.messages"]) == [
        {"role": "assistant", "parts": [{"type": "text", "content": "This is a test."}], "finish_reason": "end_turn"}
    ]
    assert json.loads(attrs["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be brief."}]


@pytest.mark.parametrize("value", ["false", "", "no"])
def test_content_stays_out_unless_the_environment_variable_says_true(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_is_content_enabled.py."""
    monkeypatch.setenv(otel.CAPTURE_ENV, value)
    Session(Agent("a", provider=ScriptedProvider(["secret answer"]))).run("secret question")
    for span in spans.get_finished_spans():
        assert "secret" not in str(_attrs(span))


def test_capture_content_false_overrides_an_environment_that_opts_in(
    spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_is_content_enabled.py."""
    monkeypatch.setenv(otel.CAPTURE_ENV, "true")
    otel.capture_content(False)
    Session(Agent("a", provider=ScriptedProvider(["secret answer"]))).run("secret question")
    assert not any("secret" in str(_attrs(s)) for s in spans.get_finished_spans())


# -- failures ------------------------------------------------------------------------------


def test_a_404_ends_the_chat_and_agent_spans_in_error_with_an_error_type(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_chat_completions.py::test_chat_completion_404.

    The peer's error.type is the SDK's exception class ("NotFoundError"); ours is the error's
    ErrorKind ("invalid"), as our otel module documents."""
    loopback.queue(Reply.json({"error": {"message": "The model does not exist", "type": "invalid_request_error"}},
                              status=404))
    with pytest.raises(AgentError, match="does not exist"):
        Session(Agent("a", provider=make(model="this-model-does-not-exist"))).run("hi")
    chat = _one(spans, "chat this-model-does-not-exist")
    agent = _one(spans, "invoke_agent a")
    for span in (chat, agent):
        assert span.status.status_code is StatusCode.ERROR
        assert _attrs(span)["error.type"] == "invalid"
    assert "does not exist" in (chat.status.description or "")
    assert [e.name for e in chat.events] == ["exception"]
    assert "gen_ai.usage.input_tokens" not in _attrs(chat)


def test_an_unreachable_endpoint_is_a_network_error_on_the_chat_span(
    spans: InMemorySpanExporter, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_chat_completions.py::test_chat_completion_bad_endpoint.

    The peer also sets server.address/server.port; we do not (a gap, in the report)."""
    provider = make(base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=0)
    with pytest.raises(AgentError):
        Session(Agent("a", provider=provider)).run("hi")
    chat = _one(spans, f"chat {MODEL}")
    assert chat.status.status_code is StatusCode.ERROR
    assert _attrs(chat)["error.type"] == "network"


def test_a_read_timeout_is_a_timeout_error_on_the_chat_span(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/tests/test_cancellation.py."""
    loopback.queue(Reply.never())
    with pytest.raises(AgentError, match="timed out"):
        Session(Agent("a", provider=make(timeout=0.2, max_retries=0))).run("hi")
    chat = _one(spans, f"chat {MODEL}")
    assert chat.status.status_code is StatusCode.ERROR
    assert _attrs(chat)["error.type"] == "timeout"
    assert _attrs(_one(spans, "invoke_agent a"))["error.type"] == "timeout"


def test_a_server_error_retried_by_the_provider_is_one_successful_chat_span(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_chat_completions.py::test_chat_completion_with_content.

    As with the peer (the SDK's retries are inside one instrumented create()), the provider's
    retries are inside one model call: one chat span, which succeeded."""
    loopback.queue(Reply.json({"error": {"message": "overloaded"}}, status=503), Reply.json(completion("ok")))
    Session(Agent("a", provider=make(max_retries=2))).run("hi")
    assert len(loopback.requests) == 2
    (chat,) = by_name(spans.get_finished_spans())[f"chat {MODEL}"]
    assert chat.status.status_code is StatusCode.UNSET
    assert _attrs(chat)["gen_ai.usage.output_tokens"] == 10


# -- streaming -----------------------------------------------------------------------------


def test_a_streamed_call_ends_its_span_with_the_streams_usage_and_model(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_chat_completions.py::test_chat_completion_streaming."""
    loopback.queue(text_stream("This ", "is ", "a test."))
    stream = Session(Agent("a", provider=make())).run_stream("Say this is a test")
    assert not by_name(spans.get_finished_spans())  # nothing ended before the stream is read
    list(stream)
    attrs = _attrs(_one(spans, f"chat {MODEL}"))
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (12, 5)
    assert attrs["gen_ai.response.model"] == SERVED
    assert attrs["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert stream.result().response == "This is a test."


def test_a_streamed_tool_call_reports_tool_use_and_its_tool_span(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_chat_completions.py::test_chat_completion_multiple_tools_streaming_no_content."""
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    args = {"index": 0, "function": {"arguments": '{"city": "Oslo"}'}}
    loopback.queue(
        sse(chunk({"role": "assistant", "tool_calls": [call]}), chunk({"tool_calls": [args]}),
            chunk({}, "tool_calls"), usage_chunk()),
        text_stream("Sunny."),
    )
    list(Session(Agent("a", provider=make(), tools=[get_weather])).run_stream("Oslo?"))
    got = by_name(spans.get_finished_spans())
    reasons = sorted(_attrs(c)["gen_ai.response.finish_reasons"] for c in got[f"chat {MODEL}"])
    assert reasons == [("end_turn",), ("tool_use",)]
    (tool_span,) = got["execute_tool get_weather"]
    assert _attrs(tool_span)["gen_ai.tool.call.id"] == "call_1"


def test_a_stream_left_early_ends_its_chat_span_without_marking_it_failed(
    spans: InMemorySpanExporter,
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/tests/test_stream_early_exit.py::test_sync_close_ends_span."""
    stream = Session(Agent("a", provider=ScriptedProvider(["one two three four"]))).run_stream("go")
    events = iter(stream)
    next(events)
    stream.close()
    chat, agent = _one(spans, "chat scripted"), _one(spans, "invoke_agent a")
    assert chat.end_time is not None and agent.end_time is not None
    for span in (chat, agent):
        assert span.status.status_code is not StatusCode.ERROR
        assert "error.type" not in _attrs(span)
    assert parent_id(chat) == span_id(agent)


def test_an_async_stream_left_early_ends_its_chat_span_without_marking_it_failed(
    spans: InMemorySpanExporter,
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/tests/test_stream_early_exit.py::test_async_close_ends_span."""

    async def main() -> None:
        stream = Session(Agent("a", provider=ScriptedProvider(["one two three four"]))).astream("go")
        async for _ in stream:
            break
        await stream.aclose()

    asyncio.run(main())
    chat = _one(spans, "chat scripted")
    assert chat.status.status_code is not StatusCode.ERROR
    assert "error.type" not in _attrs(chat)
    assert _one(spans, "invoke_agent a").end_time is not None


def test_a_stream_cut_by_the_server_ends_its_chat_span_in_error(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_chat_completions.py::test_chat_completion_streaming_not_complete.

    The peer's stream is left by its reader; here the server stops mid-answer, which is an error."""
    loopback.queue(sse(chunk({"role": "assistant", "content": "This "}), done=False))
    with pytest.raises(AgentError):
        list(Session(Agent("a", provider=make(max_retries=0))).run_stream("hi"))
    chat = _one(spans, f"chat {MODEL}")
    assert chat.status.status_code is StatusCode.ERROR
    assert "error.type" in _attrs(chat)


# -- other wire formats ----------------------------------------------------------------------


def test_an_anthropic_call_names_the_anthropic_provider_and_its_usage(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/tests/test_messages.py::test_anthropic_message_create_legacy."""
    loopback.queue(Reply.json(wire_anthropic.message_json(usage={"input_tokens": 12, "output_tokens": 6})))
    Session(Agent("a", provider=make("anthropic", max_tokens=1024))).run("Tell me a joke")
    chat = _one(spans, f"chat {wire_anthropic.MODEL}")
    attrs = _attrs(chat)
    assert chat.kind is SpanKind.CLIENT
    assert attrs["gen_ai.provider.name"] == "anthropic"
    assert attrs["gen_ai.request.model"] == attrs["gen_ai.response.model"] == wire_anthropic.MODEL
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (12, 6)
    assert attrs["gen_ai.request.max_tokens"] == 1024


def test_an_anthropic_stream_ends_its_span_with_the_final_usage(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/tests/test_messages.py::test_anthropic_message_streaming_legacy."""
    loopback.queue(wire_anthropic.text_stream("Why ", "not?"))
    list(Session(Agent("a", provider=make("anthropic"))).run_stream("joke"))
    attrs = _attrs(_one(spans, f"chat {wire_anthropic.MODEL}"))
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (25, 15)


def test_an_anthropic_overload_is_an_agent_error_on_the_chat_span(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-anthropic/tests/test_completion.py (error path)."""
    loopback.queue(wire_anthropic.error_reply(529, "overloaded_error", "Overloaded"))
    with pytest.raises(AgentError, match="Overloaded"):
        Session(Agent("a", provider=make("anthropic", max_retries=0))).run("hi")
    chat = _one(spans, f"chat {wire_anthropic.MODEL}")
    assert chat.status.status_code is StatusCode.ERROR
    assert _attrs(chat)["error.type"] == "agent"


def test_an_ollama_call_names_the_ollama_provider_model_and_token_counts(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-ollama/tests/test_chat.py::test_ollama_chat_legacy."""
    loopback.queue(Reply.json(wire_ollama.chat_reply("Hello there!")))
    Session(Agent("a", provider=make("ollama", temperature=0.3))).run("hi")
    attrs = _attrs(_one(spans, f"chat {wire_ollama.MODEL}"))
    assert attrs["gen_ai.provider.name"] == "ollama"
    assert attrs["gen_ai.response.model"] == wire_ollama.MODEL
    assert attrs["gen_ai.request.temperature"] == 0.3
    assert attrs["gen_ai.usage.input_tokens"] > 0 and attrs["gen_ai.usage.output_tokens"] > 0


def test_an_ollama_stream_ends_its_span_when_the_done_line_arrives(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from traceloop/openllmetry packages/opentelemetry-instrumentation-ollama/tests/test_chat.py::test_ollama_streaming_chat_legacy."""
    loopback.queue(Reply.ndjson([wire_ollama.line("Hel"), wire_ollama.line("lo"), wire_ollama.final_line()]))
    stream = Session(Agent("a", provider=make("ollama"))).run_stream("hi")
    list(stream)
    attrs = _attrs(_one(spans, f"chat {wire_ollama.MODEL}"))
    assert attrs["gen_ai.usage.output_tokens"] == stream.result().usage.output_tokens
    assert attrs["gen_ai.response.finish_reasons"] == ("end_turn",)


# -- sampling, async -------------------------------------------------------------------------


def test_a_scripted_answer_without_usage_still_ends_a_complete_chat_span(spans: InMemorySpanExporter) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_chat_completions.py::test_chat_completion_n_1_is_not_reported."""
    Session(Agent("a", provider=ScriptedProvider([InferenceResponse.of_text("plain")], model="m"))).run("x")
    attrs = _attrs(_one(spans, "chat m"))
    assert attrs["gen_ai.request.model"] == "m"
    assert "gen_ai.request.max_tokens" not in attrs  # nobody set one, and no wire carries one


def test_an_awaited_call_through_the_async_transport_makes_the_same_chat_span(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_async_chat_completions.py::test_async_chat_completion_no_content."""
    loopback.queue(Reply.json(completion("async hi")))
    provider = make(max_tokens=64)

    async def main() -> str:
        try:
            return (await Session(Agent("a", provider=provider)).arun("hi")).response
        finally:
            await provider.aclose()

    assert asyncio.run(main()) == "async hi"
    chat, agent = _one(spans, f"chat {MODEL}"), _one(spans, "invoke_agent a")
    attrs = _attrs(chat)
    assert chat.kind is SpanKind.CLIENT and parent_id(chat) == span_id(agent)
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.response.model"]) == (19, SERVED)
    assert attrs["gen_ai.request.max_tokens"] == 64


def test_an_awaited_404_marks_the_chat_span_failed(
    spans: InMemorySpanExporter, loopback: LoopbackServer, make: Callable[..., BaseProvider]
) -> None:
    """Ported from open-telemetry/opentelemetry-python-contrib
    instrumentation-genai/opentelemetry-instrumentation-openai-v2/tests/test_async_chat_completions.py::test_async_chat_completion_404."""
    loopback.queue(Reply.json({"error": {"message": "no such model"}}, status=404))
    provider = make()

    async def main() -> None:
        try:
            await Session(Agent("a", provider=provider)).arun("hi")
        finally:
            await provider.aclose()

    with pytest.raises(AgentError, match="no such model"):
        asyncio.run(main())
    chat = _one(spans, f"chat {MODEL}")
    assert chat.status.status_code is StatusCode.ERROR and _attrs(chat)["error.type"] == "invalid"
