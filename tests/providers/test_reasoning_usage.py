"""Reasoning tokens in :class:`Usage`: an OpenAI-compatible answer's
``usage.completion_tokens_details.reasoning_tokens``, answered whole and streamed (the usage of
a stream comes in its last chunk, asked for with ``stream_options.include_usage``), sync and
async, against the loopback wire server; and a session's usage sums them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.providers.test_openai import chunk, completion, sse, usage_chunk
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors import Agent, Session
from wingman_actors.core import InferenceRequest, Message, Usage
from wingman_actors.providers import Provider, new_provider

REASONING_USAGE = {
    "prompt_tokens": 19,
    "completion_tokens": 300,
    "total_tokens": 319,
    "prompt_tokens_details": {"cached_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 256, "accepted_prediction_tokens": 0},
}
EXPECTED = Usage(input_tokens=19, output_tokens=300, reasoning_tokens=256)


@pytest.fixture
def provider(loopback: LoopbackServer) -> Iterator[Provider]:
    made = new_provider("openai", {"base_url": loopback.url, "model": "o3-mini", "max_retries": 0})
    yield made
    made.close()  # type: ignore[attr-defined]


def ask() -> InferenceRequest:
    return InferenceRequest(messages=[Message.user("What is 27 * 453?")])


def whole() -> Reply:
    return Reply.json(completion("12231", usage=REASONING_USAGE))


def streamed() -> Reply:
    last = usage_chunk()
    last["usage"] = REASONING_USAGE
    return sse(chunk({"role": "assistant", "content": ""}), chunk({"content": "12231"}), chunk({}, "stop"), last)


def test_an_openai_answer_reports_its_reasoning_tokens_as_part_of_its_output_tokens(
    provider: Provider, loopback: LoopbackServer
) -> None:
    loopback.queue(whole())

    assert provider.run_inference(ask()).usage == EXPECTED


def test_an_openai_stream_asks_for_usage_and_reports_the_reasoning_tokens_of_its_last_chunk(
    provider: Provider, loopback: LoopbackServer
) -> None:
    loopback.queue(streamed())

    response = provider.stream_inference(ask()).consume()

    assert loopback.requests[0].json()["stream_options"] == {"include_usage": True}
    assert response.usage == EXPECTED


def test_openai_async_calls_report_reasoning_tokens_whole_and_streamed(
    provider: Provider, loopback: LoopbackServer
) -> None:
    loopback.queue(whole(), streamed())

    async def run() -> list[Usage]:
        try:
            answer = await provider.arun_inference(ask())  # type: ignore[attr-defined]
            stream = await provider.astream_inference(ask()).consume()  # type: ignore[attr-defined]
        finally:
            await provider.aclose()  # type: ignore[attr-defined]
        return [answer.usage, stream.usage]

    assert asyncio.run(run()) == [EXPECTED, EXPECTED]


def test_an_answer_without_completion_token_details_has_no_reasoning_tokens(
    provider: Provider, loopback: LoopbackServer
) -> None:
    usage: dict[str, Any] = {"prompt_tokens": 3, "completion_tokens": 4, "completion_tokens_details": None}
    loopback.queue(Reply.json(completion("hi", usage=usage)))

    assert provider.run_inference(ask()).usage == Usage(input_tokens=3, output_tokens=4)


def test_a_session_sums_the_reasoning_tokens_of_its_model_calls(
    provider: Provider, loopback: LoopbackServer
) -> None:
    loopback.queue(whole())

    result = Session(Agent("calc", provider=provider)).run("What is 27 * 453?")

    assert result.usage.reasoning_tokens == 256
    assert result.trace[0].usage.reasoning_tokens == 256


def test_reasoning_tokens_are_summed_and_stay_within_the_total() -> None:
    total = Usage(output_tokens=10, reasoning_tokens=6) + Usage(input_tokens=2, output_tokens=5, reasoning_tokens=1)

    assert (total.reasoning_tokens, total.total_tokens) == (7, 17)
