"""LiteLLM's own tests of its Ollama and Anthropic message translation (system prompts,
tool calls and results, images) and of finish reasons, ported to agent Sessions over our
Ollama, Anthropic and OpenAI-compatible providers against loopback servers: what is
asserted is the request each server receives, turn after turn of a session's tool loop,
and the Result the session returns."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.providers.test_anthropic import message_json
from tests.providers.test_ollama import chat_reply
from tests.providers.test_openai import chunk, completion, sse, tool_call, usage_chunk
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors import Agent, Session, tool
from wingman_actors.core import ContentBlock, InferenceRequest, Message
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import new_provider
from wingman_actors.providers._base import BaseProvider

OLLAMA = "BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py"
ANTHROPIC = "BerriAI/litellm tests/test_litellm/llms/anthropic/chat/test_anthropic_chat_transformation.py"
FACTORY = "BerriAI/litellm tests/test_litellm/litellm_core_utils/prompt_templates/test_litellm_core_utils_prompt_templates_factory.py"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@tool
def broken(city: str) -> str:
    """A tool that always fails."""
    raise RuntimeError(f"no station in {city}")


@pytest.fixture
def providers(loopback: LoopbackServer) -> Iterator[dict[str, BaseProvider]]:
    built = {
        "ollama": new_provider("ollama", {"model": "llama3.2", "base_url": loopback.url, "max_retries": 0}),
        "anthropic": new_provider("anthropic", {"model": "claude-test-model", "base_url": loopback.url,
                                                "api_key": "test-key", "max_retries": 0}),
        "openai": new_provider("openai", {"model": "gpt-4o", "base_url": f"{loopback.url}/v1", "max_retries": 0}),
    }
    made = {name: p for name, p in built.items() if isinstance(p, BaseProvider)}
    assert len(made) == 3
    yield made
    for provider in made.values():
        provider.close()


def sent(loopback: LoopbackServer, n: int) -> dict[str, Any]:
    body: dict[str, Any] = loopback.requests[n].json()
    return body


def ollama_calls(*calls: tuple[str, dict[str, Any]]) -> Reply:
    message = {"role": "assistant", "content": "",
               "tool_calls": [{"function": {"name": n, "arguments": a}} for n, a in calls]}
    return Reply.json(chat_reply("", message=message))


def anthropic_calls(*calls: tuple[str, str, dict[str, Any]]) -> Reply:
    blocks = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
    return Reply.json(message_json(blocks, stop_reason="tool_use"))


def anthropic_text(text: str) -> Reply:
    return Reply.json(message_json([{"type": "text", "text": text}]))


# --- Ollama ---------------------------------------------------------------------------------------


def test_ollama_gets_the_instructions_as_a_first_system_message(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py (system messages go first, as they are)."""
    loopback.queue(Reply.json(chat_reply("Ahoy.")))
    result = Session(Agent("pirate", provider=providers["ollama"], instructions="Talk like a pirate.")).run("Hi")
    assert result.response == "Ahoy."
    messages = sent(loopback, 0)["messages"]
    assert messages[0] == {"role": "system", "content": "Talk like a pirate."}
    assert messages[1]["role"] == "user" and messages[1]["content"] == "Hi"


def test_an_ollama_text_only_message_has_no_images_key(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py::test_transform_request_no_images_no_images_key."""
    loopback.queue(Reply.json(chat_reply()))
    Session(Agent("a", provider=providers["ollama"])).run("Just text here")
    [user] = sent(loopback, 0)["messages"]
    assert user == {"role": "user", "content": "Just text here"}


def test_ollama_gets_several_images_as_bare_base64_and_the_text_joined(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py::test_transform_request_multiple_images_extraction."""
    loopback.queue(Reply.json(chat_reply("Two cats.")))
    message = Message.user([ContentBlock.text_block("Compare these images:"), ContentBlock.image_block(PNG, "image/png"),
                            ContentBlock.text_block(" and "), ContentBlock.image_block(PNG + "AA", "image/jpeg")])
    assert Session(Agent("a", provider=providers["ollama"])).run(message).response == "Two cats."
    [user] = sent(loopback, 0)["messages"]
    assert user == {"role": "user", "content": "Compare these images: and ", "images": [PNG, PNG + "AA"]}


def test_an_ollama_message_with_only_an_image_sends_empty_text_and_the_image(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py::test_transform_request_image_extraction."""
    loopback.queue(Reply.json(chat_reply()))
    Session(Agent("a", provider=providers["ollama"])).run(Message.user([ContentBlock.image_block(PNG, "image/png")]))
    [user] = sent(loopback, 0)["messages"]
    assert (user["content"], user["images"]) == ("", [PNG])


def test_an_ollama_answer_with_tool_calls_and_a_stop_reason_is_a_tool_use_answer(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py::TestOllamaToolCalling::test_finish_reason_tool_calls_non_streaming."""
    loopback.queue(ollama_calls(("get_weather", {"city": "Tokyo"})))
    response = providers["ollama"].run_inference(InferenceRequest(messages=[Message.user("Weather?")]))
    assert response.stop_reason == "tool_use"
    assert [(c.name, c.input) for c in response.tool_calls] == [("get_weather", {"city": "Tokyo"})]


def test_an_ollama_answer_without_tool_calls_ends_the_turn(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py::TestOllamaToolCalling::test_finish_reason_stop_when_no_tool_calls."""
    loopback.queue(Reply.json(chat_reply("Sunny.")))
    response = providers["ollama"].run_inference(InferenceRequest(messages=[Message.user("Weather?")]))
    assert (response.stop_reason, response.tool_calls) == ("end_turn", [])


def test_an_ollama_session_sends_each_parallel_calls_result_as_a_named_tool_message_in_order(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py (tool messages after an assistant message with tool_calls)."""
    loopback.queue(ollama_calls(("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})),
                   Reply.json(chat_reply("Oslo and Rome are sunny.")))
    result = Session(Agent("a", provider=providers["ollama"], tools=[get_weather])).run("Weather in Oslo and Rome?")
    assert result.response == "Oslo and Rome are sunny."
    second = sent(loopback, 1)["messages"]
    assert second[1]["tool_calls"] == [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
                                       {"function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]
    assert second[2:] == [{"role": "tool", "content": "sunny in Oslo", "tool_name": "get_weather"},
                          {"role": "tool", "content": "sunny in Rome", "tool_name": "get_weather"}]


def test_an_ollama_tool_that_fails_goes_back_as_an_error_tool_message(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/prompt_templates/test_litellm_core_utils_prompt_templates_factory.py (a failed tool's result, on a wire with no error flag)."""
    loopback.queue(ollama_calls(("broken", {"city": "Oslo"})), Reply.json(chat_reply("No data.")))
    assert Session(Agent("a", provider=providers["ollama"], tools=[broken])).run("Weather?").response == "No data."
    tool_message = sent(loopback, 1)["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"].startswith("Error: ")
    assert "no station in Oslo" in tool_message["content"]


# --- Anthropic ------------------------------------------------------------------------------------


def test_anthropic_gets_the_instructions_as_the_top_level_system_and_no_system_message(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/anthropic/chat/test_anthropic_chat_transformation.py (system messages become the system parameter)."""
    loopback.queue(anthropic_text("Ahoy."))
    Session(Agent("pirate", provider=providers["anthropic"], instructions="Talk like a pirate.")).run("Hi")
    body = sent(loopback, 0)
    assert body["system"] == "Talk like a pirate."
    assert [m["role"] for m in body["messages"]] == ["user"]


def test_an_anthropic_session_sends_parallel_tool_results_in_one_user_message(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/prompt_templates/test_litellm_core_utils_prompt_templates_factory.py (consecutive tool results merged into one user turn)."""
    loopback.queue(anthropic_calls(("toolu_1", "get_weather", {"city": "Oslo"}), ("toolu_2", "get_weather", {"city": "Rome"})),
                   anthropic_text("Both sunny."))
    result = Session(Agent("a", provider=providers["anthropic"], tools=[get_weather])).run("Oslo and Rome?")
    assert result.response == "Both sunny."
    messages = sent(loopback, 1)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [(b["type"], b["tool_use_id"], b["content"]) for b in messages[2]["content"]] == [
        ("tool_result", "toolu_1", "sunny in Oslo"), ("tool_result", "toolu_2", "sunny in Rome")]


def test_an_anthropic_tool_that_fails_goes_back_with_is_error(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/anthropic/chat/test_anthropic_chat_transformation.py (tool results keep is_error)."""
    loopback.queue(anthropic_calls(("toolu_1", "broken", {"city": "Oslo"})), anthropic_text("No data."))
    Session(Agent("a", provider=providers["anthropic"], tools=[broken])).run("Weather?")
    [result_block] = sent(loopback, 1)["messages"][-1]["content"]
    assert result_block["is_error"] is True and "no station in Oslo" in result_block["content"]


def test_an_anthropic_assistant_turn_with_only_a_call_is_sent_without_an_empty_text_block(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/prompt_templates/test_litellm_core_utils_prompt_templates_factory.py (empty text content blocks are dropped: the API refuses them)."""
    answer = message_json([{"type": "text", "text": ""}, {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                          "input": {"city": "Oslo"}}], stop_reason="tool_use")
    loopback.queue(Reply.json(answer), anthropic_text("Sunny."))
    Session(Agent("a", provider=providers["anthropic"], tools=[get_weather])).run("Weather?")
    assistant = sent(loopback, 1)["messages"][1]
    assert [b["type"] for b in assistant["content"]] == ["tool_use"]


def test_an_anthropic_image_and_its_question_go_as_one_user_turn_in_order(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/anthropic/chat/test_anthropic_chat_transformation.py (image_url data URLs become base64 image sources)."""
    loopback.queue(anthropic_text("A pixel."))
    message = Message.user([ContentBlock.image_block(PNG, "image/png"), ContentBlock.text_block("What is this?")])
    Session(Agent("a", provider=providers["anthropic"])).run(message)
    [user] = sent(loopback, 0)["messages"]
    assert user["content"] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "text", "text": "What is this?"},
    ]


@pytest.mark.parametrize(("reason", "ours"), [("end_turn", "end_turn"), ("stop_sequence", "end_turn"),
                                              ("max_tokens", "max_tokens"), ("tool_use", "tool_use")])
def test_anthropic_stop_reasons_map_like_litellms_finish_reasons(
    loopback: LoopbackServer, providers: dict[str, BaseProvider], reason: str, ours: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/test_core_helpers_finish_reason_mapping.py::test_map_finish_reason_maps_provider_values."""
    content = [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}] if reason == "tool_use" else None
    loopback.queue(Reply.json(message_json(content, stop_reason=reason)))
    assert providers["anthropic"].run_inference(InferenceRequest(messages=[Message.user("Hi")])).stop_reason == ours


def test_an_anthropic_refusal_stop_reason_is_a_refusal_with_what_was_said(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/test_core_helpers_finish_reason_mapping.py (refusals map to content_filter).

    LiteLLM reports ``content_filter``; ours ends the turn (``end_turn``: DESIGN's three stop
    reasons) with ``refused`` set and whatever text came before it."""
    loopback.queue(Reply.json(message_json([{"type": "text", "text": "I can't help with that."}], stop_reason="refusal")))
    result = Session(Agent("a", provider=providers["anthropic"])).run("Something bad")
    assert (result.response, result.stop_reason, result.refused) == ("I can't help with that.", "end_turn", True)


# --- OpenAI-compatible, through a session -----------------------------------------------------------


def test_an_openai_session_runs_a_streamed_call_whose_name_came_late(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/local_testing/test_stream_chunk_builder.py (tool-call deltas combined by index), through a session."""
    loopback.queue(
        sse(chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                        "function": {"arguments": ""}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]}),
            chunk({}, "tool_calls"), usage_chunk()),
        sse(chunk({"role": "assistant", "content": "Sunny."}), chunk({}, "stop"), usage_chunk()),
    )
    session = Session(Agent("a", provider=providers["openai"], tools=[get_weather]))
    stream = session.run_stream("Weather in Oslo?")
    for _ in stream:
        pass
    result = stream.result()
    assert result.response == "Sunny."
    assert [(c.name, c.output) for c in result.tool_calls] == [("get_weather", "sunny in Oslo")]
    tool_message = sent(loopback, 1)["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "call_1", "content": "sunny in Oslo"}


def test_an_openai_session_answers_with_the_text_of_a_list_content(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/mistral/test_mistral_chat_transformation.py::TestMistralThinkingContentHandling, through a session."""
    answer = completion(None)
    answer["choices"][0]["message"]["content"] = [{"type": "thinking", "thinking": [{"type": "text", "text": "Easy."}]},
                                                  {"type": "text", "text": "Paris."}]
    loopback.queue(Reply.json(answer))
    assert Session(Agent("a", provider=providers["openai"])).run("Capital of France?").response == "Paris."


def test_an_openai_session_sends_the_instructions_first_and_the_call_then_its_result(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/prompt_templates/test_litellm_core_utils_prompt_templates_factory.py (assistant tool_calls then tool messages)."""
    loopback.queue(Reply.json(completion(None, tool_calls=[tool_call("call_7", "get_weather", '{"city": "Lima"}')],
                                         finish_reason="tool_calls")),
                   Reply.json(completion("Sunny in Lima.")))
    Session(Agent("a", provider=providers["openai"], tools=[get_weather], instructions="Be brief.")).run("Lima?")
    messages = sent(loopback, 1)["messages"]
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert messages[2]["role"] == "assistant" and messages[2]["content"] is None
    assert json.loads(messages[2]["tool_calls"][0]["function"]["arguments"]) == {"city": "Lima"}
    assert messages[3] == {"role": "tool", "tool_call_id": "call_7", "content": "sunny in Lima"}


def test_a_session_whose_request_overflows_the_context_window_raises_the_fix(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/local_testing/test_exceptions.py::test_context_window (ContextWindowExceededError from completion())."""
    loopback.queue(Reply.json({"error": {"message": "This model's maximum context length is 4096 tokens.",
                                         "code": "context_length_exceeded"}}, status=400))
    with pytest.raises(AgentError) as caught:
        Session(Agent("a", provider=providers["openai"])).run("a very long text")
    assert caught.value.kind is ErrorKind.INVALID and "context_budget" in str(caught.value)


def test_an_anthropic_context_window_stop_reason_is_a_cut_answer_with_the_text_so_far(
    loopback: LoopbackServer, providers: dict[str, BaseProvider]
) -> None:
    """From BerriAI/litellm tests/test_litellm/litellm_core_utils/test_core_helpers_finish_reason_mapping.py (provider stop reasons mapped onto finish reasons).

    As LiteLLM maps it to ``length``: Anthropic's ``model_context_window_exceeded`` (the
    answer was cut where the context window ended) is our ``max_tokens``, a cut answer."""
    loopback.queue(Reply.json(message_json([{"type": "text", "text": "The list goes on: 1, 2,"}],
                                           stop_reason="model_context_window_exceeded")))
    response = providers["anthropic"].run_inference(InferenceRequest(messages=[Message.user("Count")]))
    assert (response.text, response.stop_reason) == ("The list goes on: 1, 2,", "max_tokens")
