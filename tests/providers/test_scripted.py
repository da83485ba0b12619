"""The scripted provider: canned replies for tests and offline runs."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from wingman_actors._cancel import CancelToken, cancel_scope
from wingman_actors.core import InferenceRequest, InferenceResponse, Message, StreamEventType
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import ScriptedProvider, new_provider


def _request(text: str = "hi") -> InferenceRequest:
    return InferenceRequest(messages=[Message.user(text)])


def test_a_string_reply_becomes_a_text_answer() -> None:
    response = ScriptedProvider(["4"]).run_inference(_request())

    assert (response.text, response.stop_reason, response.model) == ("4", "end_turn", "scripted")


def test_a_string_reply_reports_a_deterministic_usage_estimate() -> None:
    usage = ScriptedProvider(["12345678"]).run_inference(_request("x" * 40)).usage

    assert (usage.input_tokens, usage.output_tokens) == (10, 2)


def test_an_inference_response_reply_is_returned_with_the_model_filled_in() -> None:
    reply = InferenceResponse.of_tool_calls([("c1", "add", {"a": 1})])

    response = ScriptedProvider([reply], model="m").run_inference(_request())

    assert response == reply.model_copy(update={"model": "m"})


def test_an_inference_response_reply_keeps_its_own_model() -> None:
    response = ScriptedProvider([InferenceResponse.of_text("x", model="own")]).run_inference(_request())

    assert response.model == "own"


def test_an_exception_reply_is_raised() -> None:
    provider = ScriptedProvider([AgentError("overloaded", status=529), "ok"])

    with pytest.raises(AgentError, match="overloaded"):
        provider.run_inference(_request())
    assert provider.run_inference(_request()).text == "ok"


def test_a_callable_reply_is_called_with_the_request() -> None:
    provider = ScriptedProvider([lambda req: f"you said {req.messages[-1].text}"])

    assert provider.run_inference(_request("hello")).text == "you said hello"


def test_a_callable_may_return_an_exception_to_raise() -> None:
    provider = ScriptedProvider([lambda req: ValueError("bad")])

    with pytest.raises(ValueError, match="bad"):
        provider.run_inference(_request())


def test_an_unsupported_reply_type_is_an_invalid_error() -> None:
    provider = ScriptedProvider([lambda req: 42])

    with pytest.raises(AgentError, match="got int") as info:
        provider.run_inference(_request())
    assert info.value.kind is ErrorKind.INVALID


def test_every_request_is_recorded_in_order() -> None:
    provider = ScriptedProvider(["a", "b"])
    first, second = _request("one"), _request("two")

    provider.run_inference(first)
    provider.stream_inference(second).consume()

    assert provider.requests == [first, second]
    assert provider.calls == 2


def test_running_out_of_replies_is_an_invalid_error_saying_how_to_fix_it() -> None:
    provider = ScriptedProvider(["only"])
    provider.run_inference(_request())

    with pytest.raises(AgentError) as info:
        provider.run_inference(_request())

    assert (info.value.kind, info.value.provider) == (ErrorKind.INVALID, "scripted")
    assert "ran out of replies after 1 call(s)" in info.value.message
    assert "cycle=True" in info.value.message


def test_added_replies_extend_the_script() -> None:
    provider = ScriptedProvider(["a"])
    provider.add_replies("b", "c")

    assert [provider.run_inference(_request()).text for _ in range(3)] == ["a", "b", "c"]


def test_cycle_starts_the_script_again() -> None:
    provider = ScriptedProvider(["a", "b"], cycle=True)

    assert [provider.run_inference(_request()).text for _ in range(5)] == ["a", "b", "a", "b", "a"]


def test_requests_are_recorded_unless_record_is_false() -> None:
    recording, silent = ScriptedProvider(["a"], cycle=True), ScriptedProvider(["a"], cycle=True, record=False)
    for provider in (recording, silent):
        for text in ("one", "two"):
            provider.run_inference(_request(text))

    assert [r.messages[0].text for r in recording.requests] == ["one", "two"]
    assert silent.requests == []
    assert (recording.calls, silent.calls) == (2, 2)


def test_a_repeated_reply_with_a_different_estimate_gets_its_own_usage() -> None:
    provider = ScriptedProvider(["ok"], cycle=True)
    short = provider.run_inference(_request("x" * 8))
    long = provider.run_inference(_request("x" * 80))
    again = provider.run_inference(_request("y" * 8))

    assert (short.usage.input_tokens, long.usage.input_tokens) == (2, 20)
    assert again is short  # same reply, same estimate: the immutable response is reused


def test_cycle_with_an_empty_script_still_runs_out() -> None:
    with pytest.raises(AgentError, match="ran out of replies"):
        ScriptedProvider([], cycle=True).run_inference(_request())


def test_latency_s_sleeps_on_each_call() -> None:
    provider = ScriptedProvider(["a"], latency_s=0.05)

    start = time.monotonic()
    provider.run_inference(_request())

    assert time.monotonic() - start >= 0.05


def test_a_negative_latency_is_refused() -> None:
    with pytest.raises(ValueError, match="latency_s"):
        ScriptedProvider(latency_s=-1)


def test_concurrent_calls_each_get_a_distinct_reply() -> None:
    provider = ScriptedProvider([f"r{i}" for i in range(100)])
    barrier = threading.Barrier(20)

    def five_calls() -> list[str]:
        barrier.wait()
        return [provider.run_inference(_request()).text for _ in range(5)]

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = [f.result() for f in [pool.submit(five_calls) for _ in range(20)]]

    replies = [r for batch in results for r in batch]
    assert sorted(replies) == sorted(f"r{i}" for i in range(100))
    assert provider.calls == 100


def test_streaming_a_text_reply_sends_deltas_in_order() -> None:
    stream = ScriptedProvider(["abcdefghij"], stream_chunk=4).stream_inference(_request())

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
    assert [e.text for e in events if e.type is StreamEventType.TEXT_DELTA] == ["abcd", "efgh", "ij"]


def test_streaming_a_tool_call_sends_its_input_as_json() -> None:
    reply = InferenceResponse.of_tool_calls([("c1", "add", {"a": 1, "b": 2})], text="adding")
    stream = ScriptedProvider([reply]).stream_inference(_request())

    events = list(stream)

    (json_delta,) = [e for e in events if e.type is StreamEventType.INPUT_JSON_DELTA]
    assert (json_delta.index, json_delta.partial_json) == (1, '{"a": 1, "b": 2}')
    assert stream.response.tool_calls[0].input == {"a": 1, "b": 2}


def test_a_streamed_reply_ends_with_the_same_response_as_a_blocking_one() -> None:
    reply = InferenceResponse.of_tool_calls([("c1", "add", {"a": 1})], text="adding", model="m")

    stream = ScriptedProvider([reply]).stream_inference(_request())
    events = list(stream)

    assert stream.response == reply
    assert events[-1].response == reply


def test_a_stream_takes_its_reply_only_when_iterated() -> None:
    provider = ScriptedProvider(["a"])

    stream = provider.stream_inference(_request())
    assert provider.calls == 0
    stream.consume()

    assert provider.calls == 1


def test_new_provider_builds_a_scripted_provider_from_options() -> None:
    provider = new_provider(
        "scripted",
        {
            "replies": ["a", InferenceResponse.of_text("b").model_dump(mode="json")],
            "model": "m",
            "cycle": True,
        },
    )

    texts = [provider.run_inference(_request()).text for _ in range(3)]

    assert (provider.id, provider.model, texts) == ("scripted", "m", ["a", "b", "a"])


def test_arun_inference_awaits_the_latency_on_the_loop_and_returns_the_next_reply() -> None:
    provider = ScriptedProvider(["one", "two"], latency_s=0.2)
    request = InferenceRequest(messages=[Message.user("hi")])

    async def both() -> list[str]:
        replies = await asyncio.gather(provider.arun_inference(request), provider.arun_inference(request))
        return sorted(r.text for r in replies)

    t0 = time.perf_counter()
    assert asyncio.run(both()) == ["one", "two"]
    assert time.perf_counter() - t0 < 0.35  # concurrent, not one after the other


def test_astream_inference_streams_the_scripted_reply() -> None:
    provider = ScriptedProvider(["Hello there"])
    request = InferenceRequest(messages=[Message.user("hi")])

    async def text() -> str:
        stream = provider.astream_inference(request)
        deltas = [e.text or "" async for e in stream]
        assert stream.response.text == "Hello there"
        return "".join(deltas)

    assert asyncio.run(text()) == "Hello there"


def test_a_cancel_of_the_runs_token_ends_an_async_scripted_wait() -> None:
    provider = ScriptedProvider(["late"], latency_s=5)
    token = CancelToken()

    async def call() -> None:
        with cancel_scope(token):
            threading.Timer(0.1, token.cancel).start()
            await provider.arun_inference(InferenceRequest(messages=[Message.user("hi")]))

    with pytest.raises(AgentError) as info:
        asyncio.run(call())
    assert info.value.kind is ErrorKind.CANCELLED
