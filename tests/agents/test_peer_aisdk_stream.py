"""Behaviours of the Vercel AI SDK's ``streamText`` tests (vercel/ai
packages/ai/src/generate-text/stream-text.test.ts, stream-text-retry.test.ts,
stream-text-timeout.test.ts, stream-text-onfinish-abort.test.ts), ported to streamed
sessions over Anthropic's wire format: a loopback server on 127.0.0.1 sends the Messages
API's server-sent events (the SDK's ``MockLanguageModelV2`` ``doStream``), and our real
provider (the official ``anthropic`` SDK under it) reads them.

Deliberately different: the SDK's ``fullStream`` has step parts (``start-step``,
``finish-step``) and ``tool-input-start``/``-end``; ours marks each model call with
``message_start``/``message_stop`` and a tool call's input with ``content_block_start``,
``input_json_delta`` and ``content_block_stop``, then the loop's ``tool_start``/``tool_end``.
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
    error_reply,
    fast_retries,
    make_provider,
    message_end,
    message_start,
    text_stream,
)
from tests.support.loopback import LoopbackServer, Reply
from tests.support.peers import until
from wingman_actors import Agent, Session, tool
from wingman_actors.core import StreamEvent, StreamEventType
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.events import Event, EventBus

__all__ = ["make_provider"]  # fixtures

T = StreamEventType


@tool
def tool1(value: str) -> str:
    """The SDK tests' tool1."""
    return f"{value}-result"


@tool
def broken(value: str) -> str:
    """A tool that fails."""
    raise ValueError("test error")


def tool_step(text: str, *pieces: str, call_id: str = "call-1", name: str = "tool1",
              input_tokens: int = 10, output_tokens: int = 5) -> Reply:
    """A streamed answer with some text, then a tool call whose JSON arrives in ``pieces``."""
    events = [message_start(input_tokens)]
    if text:
        events += [block_start(0, {"type": "text", "text": ""}), delta(0, {"type": "text_delta", "text": text}),
                   block_stop(0)]
    events.append(block_start(1, {"type": "tool_use", "id": call_id, "name": name, "input": {}}))
    events += [delta(1, {"type": "input_json_delta", "partial_json": p}) for p in pieces]
    events += [block_stop(1), *message_end("tool_use", output_tokens)]
    return Reply.sse(events)


def text_step(*pieces: str, input_tokens: int = 3, output_tokens: int = 10) -> Reply:
    events = [message_start(input_tokens), block_start(0, {"type": "text", "text": ""})]
    events += [delta(0, {"type": "text_delta", "text": p}) for p in pieces]
    return Reply.sse([*events, block_stop(0), *message_end("end_turn", output_tokens)])


def drain(stream: Any) -> tuple[list[StreamEvent], BaseException | None]:
    """Every event of ``stream``, and what its iteration raised (None if it ended)."""
    events: list[StreamEvent] = []
    try:
        for event in stream:
            events.append(event)
    except Exception as exc:  # the test looks at it
        return events, exc
    return events, None


async def adrain(stream: Any) -> tuple[list[StreamEvent], BaseException | None]:
    """:func:`drain` for an async stream."""
    events: list[StreamEvent] = []
    try:
        async for event in stream:
            events.append(event)
    except Exception as exc:  # the test looks at it
        return events, exc
    return events, None


def texts(events: list[StreamEvent]) -> list[str]:
    return [e.text or "" for e in events if e.type is T.TEXT_DELTA]


def test_text_deltas_arrive_in_the_order_sent_and_join_to_the_response(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text.test.ts 'result.textStream: should send text deltas'."""
    loopback.queue(text_stream("Hello", ", ", "world!"))
    stream = Session(Agent("a", provider=make_provider())).run_stream("test-input")
    events, error = drain(stream)

    assert error is None and texts(events) == ["Hello", ", ", "world!"]
    assert stream.result().response == "Hello, world!"
    assert loopback.requests[0].json()["stream"] is True


def test_a_two_step_stream_gives_each_calls_events_then_the_tools_then_the_next_call(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text.test.ts 'options.stopWhen / 2 steps: result.fullStream should contain
    events from all steps' (start-step, text, tool-call, tool-result, finish-step, then the
    second step's text)."""
    loopback.queue(tool_step("Let me look. ", '{"value": "value"}'), text_step("Hello, ", "world!"))
    stream = Session(Agent("a", provider=make_provider(), tools=[tool1])).run_stream("test-input")
    events, error = drain(stream)

    kinds = [e.type for e in events if e.type not in (T.CONTENT_BLOCK_START, T.CONTENT_BLOCK_STOP, T.MESSAGE_DELTA)]
    assert error is None
    assert kinds == [T.MESSAGE_START, T.TEXT_DELTA, T.INPUT_JSON_DELTA, T.MESSAGE_STOP, T.TOOL_START, T.TOOL_END,
                     T.MESSAGE_START, T.TEXT_DELTA, T.TEXT_DELTA, T.MESSAGE_STOP]
    result = stream.result()
    assert result.response == "Hello, world!" and result.tool_calls[0].output == "value-result"


def test_a_tool_calls_input_streams_in_pieces_and_the_tool_gets_the_whole_of_it(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text.test.ts 'should send tool call deltas' (tool-input-start, the deltas,
    tool-input-end, then the tool call with its parsed input)."""
    pieces = ['{"va', 'lue":', ' "Spark', 'le Day"}']
    loopback.queue(tool_step("", *pieces), text_step("done"))
    stream = Session(Agent("a", provider=make_provider(), tools=[tool1])).run_stream("test-input")
    events, _ = drain(stream)

    assert [e.partial_json for e in events if e.type is T.INPUT_JSON_DELTA] == pieces
    [start] = [e for e in events if e.type is T.TOOL_START]
    assert start.block is not None and start.block.input == {"value": "Sparkle Day"}
    [end] = [e for e in events if e.type is T.TOOL_END]
    assert end.block is not None and end.block.tool_use_id == "call-1"
    assert stream.result().tool_calls[0].output == "Sparkle Day-result"


def test_a_streamed_multi_step_runs_usage_sums_every_calls_usage(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text.test.ts 'options.stopWhen / 2 steps: result.totalUsage should contain
    total token usage' (the steps' usage summed)."""
    loopback.queue(tool_step("", '{"value": "v"}', input_tokens=10, output_tokens=5),
                   text_step("ok", input_tokens=3, output_tokens=10))
    stream = Session(Agent("a", provider=make_provider(), tools=[tool1])).run_stream("test-input")
    drain(stream)

    usage = stream.result().usage
    assert (usage.input_tokens, usage.output_tokens) == (13, 15)


def test_a_tool_error_in_a_stream_is_its_tool_end_and_the_next_step_still_streams(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text.test.ts 'tool execution errors: should include tool error part in the
    full stream' (a tool-error part, then the run goes on)."""
    loopback.queue(tool_step("", '{"value": "v"}', name="broken"), text_step("recovered"))
    stream = Session(Agent("a", provider=make_provider(), tools=[broken])).run_stream("test-input")
    events, error = drain(stream)

    [end] = [e for e in events if e.type is T.TOOL_END]
    assert error is None and end.block is not None and end.block.is_error and "test error" in str(end.block.content)
    assert texts(events) == ["recovered"]
    sent_back = loopback.requests[1].json()["messages"][-1]["content"][0]
    assert sent_back["type"] == "tool_result" and sent_back["is_error"] is True


def test_an_error_event_mid_stream_ends_the_stream_with_an_error_after_the_text_so_far(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text.test.ts 'should forward error in doStream as error stream part' and
    'should invoke onError' (the error is a part of the stream; the result rejects)."""
    failure = ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    events = [message_start(), block_start(0, {"type": "text", "text": ""}),
              delta(0, {"type": "text_delta", "text": "Hello"}), failure]
    loopback.queue(Reply.sse(events))
    stream = Session(Agent("a", provider=make_provider())).run_stream("test-input")
    seen, error = drain(stream)

    assert texts(seen) == ["Hello"]
    assert seen[-1].type is T.ERROR and "Overloaded" in (seen[-1].error or "")
    assert isinstance(error, AgentError) and error.kind is ErrorKind.AGENT
    with pytest.raises(AgentError):
        stream.result()


def test_an_error_answer_before_any_event_is_retried_and_the_stream_shows_one_answer(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text.test.ts 'options.maxRetries' (a failed doStream is retried; the stream
    carries the answer that came)."""
    provider = make_provider()
    fast_retries(provider, 2)
    loopback.queue(error_reply(529, "overloaded_error", "Overloaded"), text_stream("Hello"))
    stream = Session(Agent("a", provider=provider)).run_stream("test-input")
    events, error = drain(stream)

    assert error is None and texts(events) == ["Hello"] and len(loopback.requests) == 2
    assert [e.type for e in events].count(T.MESSAGE_START) == 1


def test_with_no_retries_an_error_answer_fails_the_stream_with_the_servers_words(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text.test.ts 'options.maxRetries: 0' (one attempt; the error is the stream's)."""
    loopback.queue(error_reply(529, "overloaded_error", "Overloaded right now"))
    stream = Session(Agent("a", provider=make_provider(max_retries=0))).run_stream("test-input")
    events, error = drain(stream)

    assert isinstance(error, AgentError) and error.status == 529 and "Overloaded right now" in str(error)
    assert events[-1].type is T.ERROR and len(loopback.requests) == 1


def test_a_stream_cut_after_some_text_fails_and_is_not_retried_into_a_second_answer(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text-retry.test.ts 'should retry when a retryable error interrupts the
    response stream' (the SDK's text stream then shows ``partial`` and ``complete``).
    Deliberately different: once text has gone to the consumer, ours does not start the answer
    over (its deltas would join two answers): the stream ends with a retryable ``agent`` error
    (a formation node's ``retries`` run the session again)."""
    provider = make_provider()
    fast_retries(provider, 2)

    cut = [message_start(), block_start(0, {"type": "text", "text": ""}),
           delta(0, {"type": "text_delta", "text": "partial"})]  # the body ends here: no message_stop
    loopback.queue(Reply.sse(cut), text_stream("complete"))
    stream = Session(Agent("a", provider=provider)).run_stream("test-input")
    events, error = drain(stream)

    assert texts(events) == ["partial"] and isinstance(error, AgentError)
    assert error.kind is ErrorKind.AGENT and "message_stop" in str(error) and len(loopback.requests) == 1


def test_a_stream_that_sends_nothing_past_its_timeout_fails_in_time_and_closes_the_request(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text-timeout.test.ts 'should abort when only non-output chunks arrive
    before firstChunkMs' (the request is aborted, the result rejects with a TimeoutError)."""
    events = [message_start(), block_start(0, {"type": "text", "text": ""}), ("ping", {"type": "ping"})]
    loopback.queue(Reply(200, Reply.sse(events).body, {"content-type": "text/event-stream"}, hang=True))
    stream = Session(Agent("a", provider=make_provider())).run_stream("test-input", timeout=0.5)
    seen, error = drain(stream)

    assert isinstance(error, AgentError) and error.kind is ErrorKind.TIMEOUT
    assert seen[-1].type is T.ERROR and texts(seen) == []
    assert loopback.wait_closed()


def test_a_streams_timeout_covers_each_step_not_only_the_first(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text-timeout.test.ts 'should re-arm firstChunkMs for each model-call step'
    (the second step's stream stalls: it is aborted). Ours: the run's timeout bounds every step."""
    stall = [message_start(), block_start(0, {"type": "text", "text": ""})]
    loopback.queue(tool_step("", '{"value": "v"}'),
                   Reply(200, Reply.sse(stall).body, {"content-type": "text/event-stream"}, hang=True))
    stream = Session(Agent("a", provider=make_provider(), tools=[tool1])).run_stream("test-input", timeout=2.0)
    seen, error = drain(stream)

    assert isinstance(error, AgentError) and error.kind is ErrorKind.TIMEOUT
    assert [e.type for e in seen].count(T.TOOL_END) == 1 and len(loopback.requests) == 2
    assert loopback.wait_closed()


# --- the end of a stream left early, or cancelled: the session's stop event -----------------


def stops_of(bus: EventBus) -> list[Event]:
    got: list[Event] = []
    bus.subscribe("session_stop", got.append)
    return got


def test_a_stream_left_early_and_closed_still_reports_the_sessions_stop_once(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text-onfinish-abort.test.ts 'should call onFinish when async iteration stops
    mid-stream' (onFinish is called once, with what streamed so far)."""
    loopback.queue(text_stream("First", " chunk", " of", " text"))
    with EventBus() as bus:
        stops = stops_of(bus)
        session = Session(Agent("a", provider=make_provider(), events=bus))
        with session.run_stream("Generate text") as stream:
            for event in stream:
                if event.type is T.TEXT_DELTA:
                    break
        bus.flush()
        assert until(lambda: len(stops) >= 1)

    assert len(stops) == 1


def test_a_cancelled_stream_reports_the_sessions_stop_once_as_failed_and_cancelled(
    loopback: LoopbackServer, make_provider: MakeProvider
) -> None:
    """From stream-text-onfinish-abort.test.ts 'should call onFinish when stream is aborted via
    AbortController' (onFinish once, ``isAborted: true``)."""
    events = [message_start(), block_start(0, {"type": "text", "text": ""}),
              delta(0, {"type": "text_delta", "text": "Hello"})]
    loopback.queue(Reply(200, Reply.sse(events).body, {"content-type": "text/event-stream"}, hang=True))
    with EventBus() as bus:
        stops = stops_of(bus)
        session = Session(Agent("a", provider=make_provider(), events=bus))
        stream = session.run_stream("Say hello")
        seen: list[StreamEvent] = []
        with pytest.raises(AgentError) as caught:
            for event in stream:
                seen.append(event)
                if event.type is T.TEXT_DELTA:
                    session.cancel()
        bus.flush()

    assert caught.value.kind is ErrorKind.CANCELLED and texts(seen) == ["Hello"]
    assert [e.status for e in stops] == ["failed"] and "cancel" in (stops[0].error or "")
    assert loopback.wait_closed()


@pytest.mark.parametrize("driver", ["run_stream", "astream"])
def test_a_streamed_tool_call_cut_at_max_tokens_is_refused_as_cut_though_its_block_was_closed(
    loopback: LoopbackServer, make_provider: MakeProvider, driver: str
) -> None:
    """From generate-text.test.ts 'should not execute tools when the finish reason is length',
    streamed: the limit cut the call inside its arguments and the server closed the block
    (``content_block_stop``) before saying why the answer stopped (``message_delta``, as every
    block of the Messages stream ends). The call is not run, the error says to raise
    ``max_tokens`` (not that the model sent malformed JSON), and it is not retried at the same
    limit."""
    ran: list[str] = []

    @tool
    def make_file(filename: str) -> str:
        """Writes a file."""
        ran.append(filename)
        return "written"

    provider = make_provider()
    fast_retries(provider, 2)
    loopback.handler = lambda request: Reply.sse([
        message_start(), block_start(0, {"type": "tool_use", "id": "toolu_1", "name": "make_file", "input": {}}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"filename": "taxes.t'}), block_stop(0),
        *message_end("max_tokens", 124),
    ])
    session = Session(Agent("a", provider=provider, tools=[make_file]))
    if driver == "astream":
        events, error = asyncio.run(adrain(session.astream("Write my taxes guide")))
    else:
        events, error = drain(session.run_stream("Write my taxes guide"))

    assert isinstance(error, AgentError) and error.kind is ErrorKind.INVALID
    assert "max_tokens" in str(error) and "make_file" in str(error) and "malformed" not in str(error)
    assert ran == [] and len(loopback.requests) == 1 and events[-1].type is T.ERROR
