"""More of the Vercel AI SDK's behaviours (vercel/ai packages/ai/src/generate-text/
events/on-step-finish.test.ts, events/on-tool-call-finish.test.ts, generate-text.test.ts
'tool callbacks' and 'abort signal handling', stream-text-onfinish-abort.test.ts), ported
to our event bus and to the async drivers (``Session.arun``/``astream``), over Anthropic's
wire format on a loopback server.

The SDK's ``onStepFinish`` is our ``model_end`` event (one per model call, with that call's
usage), its ``onToolCallFinish`` our ``tool_end`` (the call, its result, its step), its
``onFinish`` our ``session_stop``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.providers.test_anthropic import (
    MakeProvider,
    block_start,
    block_stop,
    delta,
    make_provider,
    message_end,
    message_json,
    message_start,
    text_stream,
)
from tests.support.loopback import LoopbackServer, Reply
from tests.support.peers import until
from wingman_actors import Agent, Session, tool
from wingman_actors.core import StreamEvent, StreamEventType
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.events import Event, EventBus
from wingman_actors.tools import ToolContext

__all__ = ["make_provider"]  # fixtures

T = StreamEventType


@tool
def get_weather(location: str) -> str:
    """The weather of a place."""
    return f"sunny in {location}"


@tool
def risky_operation(dangerous: bool) -> str:
    """Fails every time."""
    raise TimeoutError("Network timeout")


def streamed_call(name: str, args_json: str, *, input_tokens: int = 10, output_tokens: int = 5) -> Reply:
    events = [message_start(input_tokens), block_start(0, {"type": "tool_use", "id": "call-1", "name": name,
                                                           "input": {}}),
              delta(0, {"type": "input_json_delta", "partial_json": args_json}), block_stop(0),
              *message_end("tool_use", output_tokens)]
    return Reply.sse(events)


def streamed_text(text: str, *, input_tokens: int = 3, output_tokens: int = 10) -> Reply:
    events = [message_start(input_tokens), block_start(0, {"type": "text", "text": ""}),
              delta(0, {"type": "text_delta", "text": text}), block_stop(0), *message_end("end_turn", output_tokens)]
    return Reply.sse(events)


def recorded(bus: EventBus, kinds: list[str]) -> list[Event]:
    got: list[Event] = []
    bus.subscribe(kinds, got.append)
    return got


def test_each_streamed_model_call_ends_with_its_own_usage_on_the_bus(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From events/on-step-finish.test.ts and generate-text.test.ts 'onStepFinish should be
    called for each step' (each step's own usage: 10/5, then 3/10)."""
    loopback.queue(streamed_call("get_weather", '{"location": "NYC"}'), streamed_text("It is sunny."))
    with EventBus() as bus:
        ends = recorded(bus, ["model_end"])
        stream = Session(Agent("a", provider=make_provider(), tools=[get_weather], events=bus)).run_stream("weather?")
        list(stream)
        bus.flush()

    assert [(e.step, e.usage.input_tokens, e.usage.output_tokens) for e in ends if e.usage is not None] == [
        (1, 10, 5), (2, 3, 10)]
    assert (stream.result().usage.input_tokens, stream.result().usage.output_tokens) == (13, 15)


def test_a_finished_tool_call_reaches_the_bus_with_its_output_step_and_duration(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From events/on-tool-call-finish.test.ts 'should propagate successful tool call output',
    'should propagate execution duration for successful calls' and 'should propagate step and
    model context'."""
    loopback.queue(streamed_call("get_weather", '{"location": "NYC"}'), streamed_text("ok"))
    with EventBus() as bus:
        ends = recorded(bus, ["tool_end"])
        list(Session(Agent("a", provider=make_provider(), tools=[get_weather], events=bus)).run_stream("weather?"))
        bus.flush()

    [end] = ends
    assert end.call is not None and (end.call.name, end.call.input) == ("get_weather", {"location": "NYC"})
    assert end.result is not None and end.result.content == "sunny in NYC" and not end.result.is_error
    assert end.step == 1


def test_a_failed_tool_call_reaches_the_bus_as_an_error_result_saying_why(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From events/on-tool-call-finish.test.ts 'should propagate failed tool call with error'
    ('Network timeout')."""
    loopback.queue(streamed_call("risky_operation", '{"dangerous": true}'), streamed_text("it failed"))
    with EventBus() as bus:
        ends = recorded(bus, ["tool_end"])
        stream = Session(Agent("a", provider=make_provider(), tools=[risky_operation], events=bus)).run_stream("go")
        list(stream)
        bus.flush()

    [end] = ends
    assert end.result is not None and end.result.is_error and "Network timeout" in str(end.result.content)
    assert stream.result().response == "it failed"


def test_a_tool_calls_stream_events_go_start_then_input_then_its_whole_input_then_the_call(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From generate-text.test.ts 'tool callbacks: should invoke callbacks in the correct order'
    (onInputStart, then onInputDelta, then onInputAvailable with the parsed input)."""
    loopback.queue(streamed_call("get_weather", '{"location": "Paris"}'), streamed_text("ok"))
    events = list(Session(Agent("a", provider=make_provider(), tools=[get_weather])).run_stream("weather?"))
    first_call = events[: next(i for i, e in enumerate(events) if e.type is T.TOOL_START) + 1]
    about_the_call = [e for e in first_call if e.type in (T.CONTENT_BLOCK_START, T.INPUT_JSON_DELTA,
                                                          T.CONTENT_BLOCK_STOP, T.TOOL_START)]

    assert [e.type for e in about_the_call] == [T.CONTENT_BLOCK_START, T.INPUT_JSON_DELTA, T.CONTENT_BLOCK_STOP,
                                                T.TOOL_START]
    start, _, stop, run = about_the_call
    assert start.block is not None and (start.block.name, start.block.id) == ("get_weather", "call-1")
    assert stop.block is not None and stop.block.input == {"location": "Paris"}
    assert run.block is not None and run.block.input == {"location": "Paris"}


# --- the async drivers: aborts and streams left early ---------------------------------------


def ask_tool(name: str, args: dict[str, Any]) -> Reply:
    block = {"type": "tool_use", "id": "call-1", "name": name, "input": args}
    return Reply.json(message_json([block], stop_reason="tool_use"))


@pytest.mark.parametrize("completes", [False, True], ids=["tool-raises", "tool-returns"])
def test_an_awaited_run_cancelled_from_inside_its_tool_makes_no_other_model_call(
    loopback: LoopbackServer, make_provider: MakeProvider, completes: bool
) -> None:
    """From generate-text.test.ts 'abort signal handling' ('should reject when the abort signal
    fires during tool execution' and 'should reject before another model call when a tool
    completes after cancellation'), through ``Session.arun``."""
    holder: list[Session] = []

    @tool
    def tool1(value: str, ctx: ToolContext) -> str:
        """Aborts the run it is part of."""
        holder[0].cancel()
        if not completes and ctx.token is not None:
            ctx.token.check()
        return "tool result"

    loopback.queue(ask_tool("tool1", {"value": "value"}), Reply.json(message_json()))
    holder.append(Session(Agent("a", provider=make_provider(), tools=[tool1])))
    with pytest.raises(AgentError) as caught:
        asyncio.run(holder[0].arun("test-input"))

    assert caught.value.kind is ErrorKind.CANCELLED and len(loopback.requests) == 1


def test_an_async_stream_left_early_reports_the_sessions_stop_once(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text-onfinish-abort.test.ts 'should call onFinish when async iteration stops
    mid-stream' (``for await ... break``: onFinish once), through ``Session.astream``."""
    loopback.queue(text_stream("First", " chunk", " of", " text"))

    async def main(bus: EventBus) -> list[str]:
        session = Session(Agent("a", provider=make_provider(), events=bus))
        stream = session.astream("Generate text")
        seen: list[str] = []
        async for event in stream:
            if event.type is T.TEXT_DELTA:
                seen.append(event.text or "")
                break
        await stream.aclose()
        return seen

    with EventBus() as bus:
        stops = recorded(bus, ["session_stop"])
        seen = asyncio.run(main(bus))
        bus.flush()
        assert until(lambda: len(stops) >= 1)

    assert seen == ["First"] and len(stops) == 1


def test_the_session_runs_again_after_its_stream_was_left_early(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text-onfinish-abort.test.ts 'should call onFinish when reader.cancel() is
    called' (the stream cancelled by its reader ends cleanly, onFinish getting the partial
    text). Deliberately different: ours keeps no half answer; the session is as before the
    run, free for the next one, whose request carries only its own message."""
    loopback.queue(text_stream("Streaming", " content", " that", " will", " be", " cancelled"),
                   Reply.json(message_json([{"type": "text", "text": "again"}])))
    session = Session(Agent("a", provider=make_provider()))
    with session.run_stream("Generate content") as stream:
        first: list[StreamEvent] = []
        for event in stream:
            first.append(event)
            if event.type is T.TEXT_DELTA:
                break

    assert [e.text for e in first if e.type is T.TEXT_DELTA] == ["Streaming"] and session.history == []
    assert session.run("once more").response == "again"
    assert loopback.requests[1].json()["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "once more"}]}]
