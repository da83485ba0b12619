"""LiteLLM's own tests of its streaming chunk handler and chunk builder (and of its
OpenAI-compatible response transformations), ported to our OpenAI-compatible provider
against a loopback server: role-only and empty-choices chunks, usage in the last chunk
(or in every chunk, or none), finish reasons, tool-call deltas split across chunks (the
name late, the id repeated), text before a call, and answers whose ``content`` is a list
of parts. Sync and async (httpx's and aiohttp's transports); what is asserted is what a
user sees: our InferenceResponse and stream events."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.providers.test_openai import chunk, completion, sse, tool_call, usage_chunk
from tests.providers.test_peer_wire_openai import answered, of_type, streamed
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.core import ContentBlock, StreamEventType, Usage
from wingman_actors.errors import AgentError
from wingman_actors.providers._base import BaseProvider

LITELLM = "BerriAI/litellm"
BUILDER = f"{LITELLM} tests/local_testing/test_stream_chunk_builder.py"
EMPTY = f"{LITELLM} tests/test_litellm/litellm_core_utils/test_empty_choices_streaming.py"
MISTRAL = f"{LITELLM} tests/test_litellm/llms/mistral/test_mistral_chat_transformation.py"


@pytest.fixture
def make(loopback: LoopbackServer, built: Callable[..., BaseProvider]) -> Callable[..., BaseProvider]:
    def build(**options: Any) -> BaseProvider:
        return built("openai", {"model": "gpt-4o", "base_url": f"{loopback.url}/v1", **options})

    return build


def call_delta(index: int | None, *, id: str | None = None, name: str | None = None, args: str = "") -> dict[str, Any]:
    entry: dict[str, Any] = {"function": {"arguments": args}}
    if index is not None:
        entry["index"] = index
    if id is not None:
        entry.update(id=id, type="function")
    if name is not None:
        entry["function"]["name"] = name
    return entry


def with_usage(c: dict[str, Any], prompt: int, completion_tokens: int) -> dict[str, Any]:
    c["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                  "total_tokens": prompt + completion_tokens}
    return c


# --- role-only, empty and finishing chunks ---------------------------------------------------


def test_a_role_only_first_chunk_adds_no_empty_text_block(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_stream_chunk_builder.py (the first chunk carries only the role)."""
    loopback.queue(sse(chunk({"role": "assistant", "content": ""}), chunk({"content": "Hi"}),
                       chunk({"content": " there"}), chunk({}, "stop"), usage_chunk()))
    events, response = streamed(make(), mode)
    assert [e.text for e in of_type(events, StreamEventType.TEXT_DELTA)] == ["Hi", " there"]
    assert response.content == [ContentBlock.text_block("Hi there")]


def test_empty_choices_chunks_between_content_chunks_are_skipped(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/test_empty_choices_streaming.py::test_empty_choices_on_second_to_last_chunk."""
    empty = usage_chunk()
    del empty["usage"]
    loopback.queue(sse(empty, chunk({"role": "assistant", "content": "hello"}), empty, chunk({}, "stop"), empty))
    _, response = streamed(make(), mode)
    assert (response.text, response.stop_reason) == ("hello", "end_turn")


def test_a_stream_of_only_empty_choices_chunks_is_an_empty_answer_not_an_error(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/test_empty_choices_streaming.py::test_all_chunks_have_empty_choices.

    LiteLLM builds an assistant message with no content; so do we: [DONE] ended the
    stream properly, so it is an empty end_turn answer with the usage it reported."""
    loopback.queue(sse(usage_chunk(prompt=7, completion=0), usage_chunk(prompt=7, completion=0)))
    events, response = streamed(make(), mode)
    assert (response.content, response.stop_reason) == ([], "end_turn")
    assert response.usage.input_tokens == 7
    assert of_type(events, StreamEventType.MESSAGE_STOP)


def test_the_finish_reason_may_come_in_the_same_chunk_as_the_last_text(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_stream_chunk_builder.py (finish_reason on the last content chunk)."""
    loopback.queue(sse(chunk({"role": "assistant", "content": "Par"}), chunk({"content": "is"}, "length"), usage_chunk()))
    _, response = streamed(make(), mode)
    assert (response.text, response.stop_reason) == ("Paris", "max_tokens")


def test_a_stream_with_no_finish_reason_but_done_ends_the_turn(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_stream_chunk_builder.py (a missing finish_reason defaults to stop)."""
    loopback.queue(sse(chunk({"role": "assistant", "content": "ok"})))
    _, response = streamed(make(), mode)
    assert (response.text, response.stop_reason) == ("ok", "end_turn")


@pytest.mark.parametrize("reason", ["eos", "end_turn", "stop_sequence"])
def test_an_unknown_finish_reason_ends_the_turn(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str, reason: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/test_core_helpers_finish_reason_mapping.py (provider spellings of stop)."""
    loopback.queue(sse(chunk({"role": "assistant", "content": "done"}), chunk({}, reason), usage_chunk()))
    _, response = streamed(make(), mode)
    assert response.stop_reason == "end_turn"


# --- usage -----------------------------------------------------------------------------------


def test_usage_in_the_finishing_chunk_without_a_usage_chunk_is_kept(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_stream_chunk_builder.py::test_stream_chunk_builder_litellm_usage_chunks."""
    loopback.queue(sse(chunk({"role": "assistant", "content": "x"}), with_usage(chunk({}, "stop"), 31, 4)))
    events, response = streamed(make(), mode)
    assert response.usage == Usage(input_tokens=31, output_tokens=4)
    [message_delta] = of_type(events, StreamEventType.MESSAGE_DELTA)
    assert message_delta.usage == response.usage


def test_usage_sent_in_every_chunk_is_the_last_one_not_a_sum(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_stream_chunk_builder.py (vLLM's continuous usage stats: cumulative counts per chunk)."""
    loopback.queue(sse(with_usage(chunk({"role": "assistant", "content": "a"}), 9, 1),
                       with_usage(chunk({"content": "b"}), 9, 2), with_usage(chunk({}, "stop"), 9, 3)))
    _, response = streamed(make(), mode)
    assert response.usage == Usage(input_tokens=9, output_tokens=3)


def test_a_server_that_sends_no_usage_gives_zero_usage(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_stream_chunk_builder.py (a stream without include_usage support)."""
    loopback.queue(sse(chunk({"role": "assistant", "content": "x"}), chunk({}, "stop")))
    _, response = streamed(make(), mode)
    assert response.usage == Usage()


# --- tool-call deltas --------------------------------------------------------------------------


def test_a_tool_calls_name_arriving_after_its_first_delta_names_the_call(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_stream_chunk_builder.py (tool-call deltas combined by index; the
    name taken from whichever delta carries it). Before the fix the call kept the first delta's empty name, so a
    session looked up a tool named ''."""
    loopback.queue(sse(
        chunk({"role": "assistant", "tool_calls": [call_delta(0, id="call_1")]}),
        chunk({"tool_calls": [call_delta(0, name="get_weather", args='{"city": ')]}),
        chunk({"tool_calls": [call_delta(0, args='"Oslo"}')]}),
        chunk({}, "tool_calls"), usage_chunk(),
    ))
    events, response = streamed(make(), mode)
    [call] = response.tool_calls
    assert (call.id, call.name, call.input) == ("call_1", "get_weather", {"city": "Oslo"})
    [stop] = [e.block for e in of_type(events, StreamEventType.CONTENT_BLOCK_STOP)]
    assert stop is not None and stop.name == "get_weather"


def test_a_name_repeated_in_every_delta_of_a_call_is_not_doubled(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_stream_chunk_builder.py (providers that resend id and name on every delta)."""
    loopback.queue(sse(
        chunk({"role": "assistant", "tool_calls": [call_delta(0, id="call_1", name="get_weather", args='{"city"')]}),
        chunk({"tool_calls": [call_delta(0, id="call_1", name="get_weather", args=': "Rome"}')]}),
        chunk({}, "tool_calls"), usage_chunk(),
    ))
    _, response = streamed(make(), mode)
    assert [(c.id, c.name, c.input) for c in response.tool_calls] == [("call_1", "get_weather", {"city": "Rome"})]


def test_parallel_calls_all_sent_at_index_0_with_their_own_ids_are_separate_calls(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm issue #21331 (its Responses-API bridge streamed every parallel call at index 0), as vLLM,
    Ollama and Grok send them too. Before the fix the calls were merged into one whose arguments were two JSON
    objects end to end: an error, and no call ran."""
    loopback.queue(sse(
        chunk({"role": "assistant", "tool_calls": [call_delta(0, id="call_a", name="get_weather", args="")]}),
        chunk({"tool_calls": [call_delta(0, args='{"city": "Oslo"}')]}),
        chunk({"tool_calls": [call_delta(0, id="call_b", name="get_weather", args='{"city": ')]}),
        chunk({"tool_calls": [call_delta(0, args='"Rome"}')]}),
        chunk({}, "tool_calls"), usage_chunk(),
    ))
    events, response = streamed(make(), mode)
    assert [(c.id, c.input) for c in response.tool_calls] == [("call_a", {"city": "Oslo"}), ("call_b", {"city": "Rome"})]
    starts = [e.block.id for e in of_type(events, StreamEventType.CONTENT_BLOCK_START) if e.block is not None]
    assert starts == ["call_a", "call_b"]


def test_text_then_a_tool_call_in_one_stream_keeps_both_in_order(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_stream_chunk_builder.py::test_stream_chunk_builder_openai_prompt_caching (content and tool_calls in one message)."""
    loopback.queue(sse(
        chunk({"role": "assistant", "content": "Let me check."}),
        chunk({"tool_calls": [call_delta(0, id="call_1", name="get_weather", args='{"city": "Lima"}')]}),
        chunk({}, "tool_calls"), usage_chunk(),
    ))
    _, response = streamed(make(), mode)
    assert [b.type for b in response.content] == ["text", "tool_use"]
    assert (response.text, response.stop_reason) == ("Let me check.", "tool_use")


def test_a_stop_finish_reason_with_tool_calls_is_a_tool_use_answer(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_stream_chunk_builder.py (finish_reason "stop" with tool calls, as vLLM sends it, becomes tool_calls)."""
    loopback.queue(sse(
        chunk({"role": "assistant", "tool_calls": [call_delta(0, id="call_1", name="get_weather", args="{}")]}),
        chunk({}, "stop"), usage_chunk(),
    ))
    _, response = streamed(make(), mode)
    assert response.stop_reason == "tool_use"


def test_a_whole_tool_call_in_the_finishing_chunk_is_one_call(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_stream_chunk_builder.py (a call sent whole in one delta)."""
    finishing = chunk({"role": "assistant", "tool_calls": [
        call_delta(0, id="call_9", name="get_weather", args='{"city": "Quito"}')]}, "tool_calls")
    loopback.queue(sse(finishing, usage_chunk()))
    _, response = streamed(make(), mode)
    assert [(c.id, c.input) for c in response.tool_calls] == [("call_9", {"city": "Quito"})]


def test_a_plain_answers_tool_call_with_empty_arguments_has_an_empty_input(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/local_testing/test_gemini_no_arg_function_call.py."""
    loopback.queue(Reply.json(completion(None, tool_calls=[tool_call("call_1", "get_weather", "")],
                                         finish_reason="tool_calls")))
    response = answered(make(), mode)
    assert [(c.name, c.input) for c in response.tool_calls] == [("get_weather", {})]


def test_a_plain_answers_tool_calls_with_a_stop_finish_reason_are_a_tool_use_answer(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/llm_response_utils/test_convert_dict_to_response.py (tool calls with finish_reason stop)."""
    loopback.queue(Reply.json(completion(None, tool_calls=[tool_call("call_1", "get_weather", '{"city": "Oslo"}')])))
    response = answered(make(), mode)
    assert response.stop_reason == "tool_use"


# --- content as a list of parts (Mistral) --------------------------------------------------------


def mistral_parts() -> list[dict[str, Any]]:
    return [
        {"type": "thinking", "thinking": [{"type": "text", "text": "Paris is the capital."}]},
        {"type": "text", "text": "The capital of France "},
        {"type": "text", "text": "is Paris."},
    ]


def test_a_plain_answer_whose_content_is_a_list_of_parts_gives_their_text_and_thinking(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/mistral/test_mistral_chat_transformation.py::TestMistralThinkingContentHandling::test_transform_response_with_thinking_content.

    Before the fix a list ``content`` (Mistral's magistral models) was dropped: the answer
    was empty and a session ended with ``response == ""``."""
    answer = completion(None)
    answer["choices"][0]["message"]["content"] = mistral_parts()
    loopback.queue(Reply.json(answer))
    response = answered(make(), mode)
    assert response.text == "The capital of France is Paris."
    assert [(b.type, b.text) for b in response.content if b.type == "thinking"] == [("thinking", "Paris is the capital.")]


def test_streamed_deltas_whose_content_is_a_list_of_parts_stream_their_text_and_thinking(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/mistral/test_mistral_chat_transformation.py (the streamed form of the same answer)."""
    parts = mistral_parts()
    loopback.queue(sse(chunk({"role": "assistant", "content": parts[:1]}), chunk({"content": parts[1:2]}),
                       chunk({"content": parts[2:]}), chunk({}, "stop"), usage_chunk()))
    events, response = streamed(make(), mode)
    assert [e.text for e in of_type(events, StreamEventType.TEXT_DELTA)] == ["The capital of France ", "is Paris."]
    assert [e.text for e in of_type(events, StreamEventType.THINKING_DELTA)] == ["Paris is the capital."]
    assert response.text == "The capital of France is Paris."


# --- a server that does not stream ------------------------------------------------------------------


def test_a_whole_json_answer_to_a_streaming_request_is_streamed_as_its_events(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/llm_response_utils/test_convert_to_streaming_response.py::test_sync_multi_chunk_and_lossless_join.

    LiteLLM replays a complete answer as a stream (cache hits, providers without
    streaming); a server that ignores ``stream: true`` gets the same from us. Before the fix
    it was a retryable error (content-type not text/event-stream), retried in vain."""
    text = "Sure! Here's a list of fruits: apple, banana, orange."
    loopback.queue(Reply.json(completion(text, usage={"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12})))
    events, response = streamed(make(), mode)
    deltas = of_type(events, StreamEventType.TEXT_DELTA)
    assert len(deltas) > 1 and "".join(e.text or "" for e in deltas) == text
    assert (response.text, response.stop_reason, response.usage) == (text, "end_turn", Usage(input_tokens=5, output_tokens=7))
    assert events[-1].type is StreamEventType.MESSAGE_STOP


def test_a_whole_json_answer_with_tool_calls_to_a_streaming_request_gives_the_calls(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/llm_response_utils/test_convert_to_streaming_response.py::test_async_empty_content_yields_single_finish_frame (a tool-calls-only answer)."""
    loopback.queue(Reply.json(completion(None, tool_calls=[tool_call("call_1", "get_weather", '{"city": "Oslo"}')],
                                         finish_reason="tool_calls")))
    _, response = streamed(make(), mode)
    assert [(c.id, c.input) for c in response.tool_calls] == [("call_1", {"city": "Oslo"})]
    assert response.stop_reason == "tool_use"


def test_a_streaming_request_answered_with_something_else_is_still_an_error_naming_the_content_type(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/llm_response_utils/test_convert_to_streaming_response.py (only a chat.completion is replayed)."""
    loopback.queue(Reply(200, b"<html>proxy login</html>", {"content-type": "text/html"}))
    with pytest.raises(AgentError, match="text/html") as caught:
        streamed(make(), mode)
    assert caught.value.provider == "openai"
