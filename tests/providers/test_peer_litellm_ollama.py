"""LiteLLM's own tests of its Ollama chat response iterator (thinking chunks, the done
line, ``<think>`` tags, token counts), ported to our Ollama provider against a loopback
server speaking /api/chat's NDJSON. Sync and async (httpx's and aiohttp's transports);
what is asserted is our InferenceResponse and stream events."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.providers.test_ollama import MODEL, chat_reply, final_line, line
from tests.providers.test_peer_wire_openai import answered, of_type, streamed
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.core import InferenceRequest, Message, StreamEventType, Usage
from wingman_actors.providers._base import BaseProvider

ITERATOR = "BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py::TestOllamaReasoningContentStreaming"
REQUEST = InferenceRequest(messages=[Message.user("Why is the sky blue?")])


@pytest.fixture
def make(loopback: LoopbackServer, built: Callable[..., BaseProvider]) -> Callable[..., BaseProvider]:
    def build(**options: Any) -> BaseProvider:
        return built("ollama", {"model": MODEL, "base_url": loopback.url, **options})

    return build


def thought(text: str, **extra: Any) -> dict[str, Any]:
    return line("", message={"role": "assistant", "content": "", "thinking": text}, **extra)


def test_every_one_of_many_thinking_lines_is_kept_in_order(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py::TestOllamaReasoningContentStreaming::test_multiple_thinking_chunks_all_returned_as_reasoning_content."""
    loopback.queue(Reply.ndjson([*[thought(f"Thinking chunk {i}. ") for i in range(1, 6)], line("Rayleigh."), final_line()]))
    events, response = streamed(make(think=True), mode, REQUEST)
    assert [e.text for e in of_type(events, StreamEventType.THINKING_DELTA)] == [f"Thinking chunk {i}. " for i in range(1, 6)]
    [thinking] = [b for b in response.content if b.type == "thinking"]
    assert thinking.text == "".join(f"Thinking chunk {i}. " for i in range(1, 6))
    assert response.text == "Rayleigh."


def test_thinking_then_content_closes_the_thinking_block_before_the_text(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py::TestOllamaReasoningContentStreaming::test_thinking_to_content_transition."""
    loopback.queue(Reply.ndjson([thought("Let me think about this..."), line("Here is my answer."), final_line()]))
    events, response = streamed(make(think=True), mode, REQUEST)
    stops = [e.block.type for e in of_type(events, StreamEventType.CONTENT_BLOCK_STOP) if e.block is not None]
    assert stops == ["thinking", "text"]
    assert [(b.type, b.text) for b in response.content] == [("thinking", "Let me think about this..."),
                                                            ("text", "Here is my answer.")]


def test_thinking_on_the_done_line_is_kept(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py::TestOllamaReasoningContentStreaming::test_done_chunk_with_thinking."""
    done = final_line()
    done["message"]["thinking"] = "Final thought"
    loopback.queue(Reply.ndjson([line("The answer."), done]))
    _, response = streamed(make(think=True), mode, REQUEST)
    assert "Final thought" in [b.text for b in response.content if b.type == "thinking"]
    assert (response.text, response.stop_reason) == ("The answer.", "end_turn")


def test_think_tags_inside_the_content_stay_in_the_text(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py::TestOllamaReasoningContentStreaming::test_think_tags_in_content.

    A deliberate difference: LiteLLM parses ``<think>...</think>`` out of the content into
    reasoning; we leave the model's text as it is. Ollama gives reasoning apart with the
    ``think`` option (``message.thinking``), which is what we read (providers-and-errors.md)."""
    loopback.queue(Reply.ndjson([line("<think>I need to analyze this"), line("</think>The answer is 42."), final_line()]))
    _, response = streamed(make(), mode, REQUEST)
    assert response.text == "<think>I need to analyze this</think>The answer is 42."
    assert [b.type for b in response.content] == ["text"]


def test_a_plain_answer_with_thinking_and_tool_calls_keeps_both(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py::TestOllamaToolCalling (qwen3's thinking with a tool call)."""
    message = {"role": "assistant", "content": "", "thinking": "The user wants Tokyo's weather.",
               "tool_calls": [{"function": {"name": "get_weather", "arguments": {"location": "Tokyo"}}}]}
    loopback.queue(Reply.json(chat_reply("", message=message)))
    response = answered(make(think=True), mode, REQUEST)
    assert [b.type for b in response.content] == ["thinking", "tool_use"]
    assert (response.stop_reason, response.tool_calls[0].input) == ("tool_use", {"location": "Tokyo"})


def test_a_done_line_without_a_done_reason_ends_the_turn(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py::TestOllamaToolCalling::test_finish_reason_stop_when_no_tool_calls (no done_reason: stop)."""
    done = final_line()
    del done["done_reason"]
    loopback.queue(Reply.ndjson([line("Hello!"), done]))
    _, response = streamed(make(), mode, REQUEST)
    assert (response.text, response.stop_reason) == ("Hello!", "end_turn")


def test_token_counts_come_from_the_done_line(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py (prompt_eval_count and eval_count as usage)."""
    done = final_line()
    done.update(prompt_eval_count=100, eval_count=50)
    loopback.queue(Reply.ndjson([line("Hi"), done]))
    _, response = streamed(make(), mode, REQUEST)
    assert response.usage == Usage(input_tokens=100, output_tokens=50)


def test_a_cached_prompt_without_prompt_eval_count_counts_zero_input_tokens(
    loopback: LoopbackServer, make: Callable[..., BaseProvider], mode: str
) -> None:
    """From BerriAI/litellm tests/test_litellm/llms/ollama/test_ollama_chat_transformation.py (Ollama leaves prompt_eval_count out when the whole prompt was cached).

    LiteLLM estimates the prompt's tokens then; we report what the server said: 0 input
    tokens, and the output tokens it counted."""
    answer = chat_reply("Hi")
    del answer["prompt_eval_count"]
    loopback.queue(Reply.json(answer))
    response = answered(make(), mode, REQUEST)
    assert response.usage == Usage(input_tokens=0, output_tokens=298)
