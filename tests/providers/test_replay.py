"""The replay provider and the recorder that writes its cassettes."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest

from wingman_actors.core import (
    ContentBlock,
    InferenceRequest,
    InferenceResponse,
    Message,
    StreamEventType,
    ToolDefinition,
)
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import (
    RecordingProvider,
    ReplayProvider,
    ScriptedProvider,
    new_provider,
)


def _request(text: str = "What is 2 + 2?", **kw: object) -> InferenceRequest:
    return InferenceRequest(messages=[Message.user(text)], **kw)  # type: ignore[arg-type]


def _tool_answer() -> InferenceResponse:
    return InferenceResponse.of_tool_calls([("call_1", "add", {"a": 2, "b": 2})], text="Let me add.")


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_blocking_calls_replay_the_recorded_responses(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = RecordingProvider(ScriptedProvider(["4", _tool_answer()]), cassette)
    first, second = _request("one"), _request("two")
    recorded = [recorder.run_inference(first), recorder.run_inference(second)]

    replay = ReplayProvider(cassette)

    assert [replay.run_inference(first), replay.run_inference(second)] == recorded


def test_streamed_calls_replay_the_recorded_responses(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = RecordingProvider(ScriptedProvider([_tool_answer()]), cassette)
    request = _request()
    recorded_stream = recorder.stream_inference(request)
    recorded_events = list(recorded_stream)

    replayed_stream = ReplayProvider(cassette).stream_inference(request)
    replayed_events = list(replayed_stream)

    assert replayed_stream.response == recorded_stream.response
    assert [e.type for e in replayed_events] == [e.type for e in recorded_events]
    assert replayed_events[-1].type is StreamEventType.MESSAGE_STOP


def test_a_stream_is_recorded_only_once_consumed(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = RecordingProvider(ScriptedProvider(["hello"]), cassette)
    stream = recorder.stream_inference(_request())
    assert not cassette.exists()

    stream.consume()

    assert len(_lines(cassette)) == 1


def test_a_failed_call_is_not_recorded(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = RecordingProvider(ScriptedProvider([AgentError("boom")]), cassette)

    with pytest.raises(AgentError, match="boom"):
        recorder.run_inference(_request())

    assert not cassette.exists()


def test_cassette_lines_carry_version_key_request_and_response(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    request = _request()
    RecordingProvider(ScriptedProvider(["4"]), cassette).run_inference(request)

    (line,) = _lines(cassette)

    assert line["version"] == 1
    assert line["key"] == request.fingerprint()
    assert InferenceRequest.model_validate(line["request"]).fingerprint() == request.fingerprint()
    assert InferenceResponse.model_validate(line["response"]).text == "4"


def test_the_recorder_creates_missing_parent_directories(tmp_path: Path) -> None:
    cassette = tmp_path / "deep" / "er" / "c.jsonl"

    RecordingProvider(ScriptedProvider(["4"]), cassette).run_inference(_request())

    assert cassette.exists()


def test_the_recorder_reports_the_inner_model_and_its_own_id(tmp_path: Path) -> None:
    recorder = RecordingProvider(ScriptedProvider(model="m-1"), tmp_path / "c.jsonl")

    assert (recorder.id, recorder.model) == ("recording", "m-1")


def test_repeated_recordings_of_one_request_replay_in_order_then_the_last_repeats(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = RecordingProvider(ScriptedProvider(["a", "b"]), cassette)
    request = _request()
    recorder.run_inference(request)
    recorder.run_inference(request)

    replay = ReplayProvider(cassette)

    assert [replay.run_inference(request).text for _ in range(4)] == ["a", "b", "b", "b"]


def test_the_same_request_built_twice_has_the_same_fingerprint() -> None:
    def build() -> InferenceRequest:
        return InferenceRequest(
            messages=[Message.user("hi"), Message.assistant(ContentBlock.tool_use_block("c", "t", {"x": 1}))],
            tools=[ToolDefinition(name="t", description="a tool")],
            instructions="be brief",
            temperature=0.5,
        )

    assert build().fingerprint() == build().fingerprint()


def test_the_fingerprint_ignores_the_order_of_dict_keys() -> None:
    a = _request(tools=[ToolDefinition(name="t", input_schema={"type": "object", "properties": {}})])
    b = _request(tools=[ToolDefinition(name="t", input_schema={"properties": {}, "type": "object"})])

    assert a.fingerprint() == b.fingerprint()


def test_a_different_temperature_gives_a_different_fingerprint() -> None:
    assert _request(temperature=0.2).fingerprint() != _request(temperature=0.3).fingerprint()


def test_an_unrecorded_request_names_key_cassette_size_and_how_to_record(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    RecordingProvider(ScriptedProvider(["4"]), cassette).run_inference(_request("recorded"))
    missing = _request("never recorded")

    with pytest.raises(AgentError) as info:
        ReplayProvider(cassette).run_inference(missing)

    err = info.value
    assert (err.kind, err.provider) == (ErrorKind.INVALID, "replay")
    assert missing.fingerprint() in err.message
    assert str(cassette) in err.message
    assert "1 entry" in err.message
    assert "RecordingProvider(new_provider(" in err.message


def test_an_unrecorded_streamed_request_fails_when_iterated(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    cassette.write_text("")

    with pytest.raises(AgentError, match="no recorded answer"):
        list(ReplayProvider(cassette).stream_inference(_request()))


def test_a_missing_cassette_is_an_invalid_error_naming_the_file(tmp_path: Path) -> None:
    cassette = tmp_path / "nope.jsonl"

    with pytest.raises(AgentError) as info:
        ReplayProvider(cassette)

    assert info.value.kind is ErrorKind.INVALID
    assert str(cassette) in info.value.message
    assert "does not exist" in info.value.message


def test_a_malformed_line_is_an_invalid_error_naming_file_and_line(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    RecordingProvider(ScriptedProvider(["4"]), cassette).run_inference(_request())
    with cassette.open("a") as f:
        f.write("\n{not json\n")

    with pytest.raises(AgentError) as info:
        ReplayProvider(cassette)

    assert info.value.kind is ErrorKind.INVALID
    assert f"{str(cassette)!r} line 3" in info.value.message


def test_a_line_with_an_invalid_response_names_its_line(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    bad = {"version": 1, "key": "k", "response": {"content": [{"type": "text"}]}}
    cassette.write_text(json.dumps(bad) + "\n")

    with pytest.raises(AgentError, match=r"line 1 has an invalid 'response'"):
        ReplayProvider(cassette)


def test_a_line_of_another_cassette_version_is_refused(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(json.dumps({"version": 2, "key": "k", "response": {}}) + "\n")

    with pytest.raises(AgentError, match="line 1 has cassette version 2"):
        ReplayProvider(cassette)


def test_new_provider_builds_a_replay_provider_from_a_cassette_option(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    RecordingProvider(ScriptedProvider(["4"]), cassette).run_inference(_request())

    provider = new_provider("replay", {"cassette": str(cassette)})

    assert provider.id == "replay"
    assert provider.run_inference(_request()).text == "4"


def test_new_provider_without_a_cassette_option_says_it_is_needed() -> None:
    with pytest.raises(AgentError, match="needs a 'cassette' option") as info:
        new_provider("replay", {})

    assert info.value.kind is ErrorKind.INVALID


def test_eight_threads_recording_at_once_write_eight_valid_lines(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = RecordingProvider(ScriptedProvider([f"answer {i}" * 50 for i in range(8)]), cassette)
    barrier = threading.Barrier(8)

    def call(i: int) -> None:
        barrier.wait()
        recorder.run_inference(_request(f"question {i}"))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    lines = _lines(cassette)
    assert len(lines) == 8
    assert len({line["key"] for line in lines}) == 8
    assert len(ReplayProvider(cassette)) == 8


def test_async_calls_replay_the_recorded_responses_on_the_running_loop(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = RecordingProvider(ScriptedProvider(["4", _tool_answer()]), cassette)
    first, second = _request("one"), _request("two")
    recorded = [recorder.run_inference(first), recorder.run_inference(second)]
    threads: list[str] = []

    class Watched(ReplayProvider):
        def _lookup(self, request: InferenceRequest) -> InferenceResponse:
            threads.append(threading.current_thread().name)
            return super()._lookup(request)

    replay = Watched(cassette)

    async def both() -> tuple[list[InferenceResponse], str]:
        got = [await replay.arun_inference(first), await replay.arun_inference(second)]
        return got, threading.current_thread().name

    got, loop_thread = asyncio.run(both())
    assert got == recorded
    assert threads == [loop_thread, loop_thread]  # no worker thread per call


def test_async_streamed_calls_replay_the_recorded_responses(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = RecordingProvider(ScriptedProvider([_tool_answer()]), cassette)
    request = _request()
    recorded_stream = recorder.stream_inference(request)
    recorded_events = list(recorded_stream)
    replay = ReplayProvider(cassette)

    async def consume() -> tuple[list[StreamEventType], InferenceResponse]:
        stream = replay.astream_inference(request)
        events = [e.type async for e in stream]
        return events, stream.response

    events, response = asyncio.run(consume())
    assert events == [e.type for e in recorded_events]
    assert response == recorded_stream.response


def test_an_async_unrecorded_request_is_the_same_invalid_error(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    RecordingProvider(ScriptedProvider(["4"]), cassette).run_inference(_request("one"))

    with pytest.raises(AgentError) as caught:
        asyncio.run(ReplayProvider(cassette).arun_inference(_request("never recorded")))
    assert caught.value.kind is ErrorKind.INVALID and "no recorded answer" in str(caught.value)
