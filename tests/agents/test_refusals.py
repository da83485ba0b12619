"""A model's refusal is told apart from an ordinary end of turn (found porting Mirascope, whose
finish reasons include ``REFUSAL``): OpenAI-compatible ``finish_reason: "content_filter"`` (or
an answer in the message's ``refusal`` field) and Anthropic ``stop_reason: "refusal"`` end the
turn (``end_turn``: DESIGN lists three stop reasons) and set ``InferenceResponse.refused`` and
``Result.refused``. The result, the stream's final response, the ``model_end`` event and an
agent node say so, and an agent with an ``output_schema`` fails at once with an error naming
the refusal, not with a JSON error about its words. Against the loopback servers speaking each
provider's wire format."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tests.providers.test_anthropic import (
    block_start,
    block_stop,
    delta,
    message_end,
    message_json,
    message_start,
)
from tests.providers.test_openai import chunk, completion, sse, usage_chunk
from tests.support.loopback import LoopbackServer, Reply
from tests.support.provider_fixtures import providers
from wingman_actors import Agent, Formation, Session
from wingman_actors.core import StreamEventType
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.events import EventBus
from wingman_actors.providers import new_provider

__all__ = ["providers"]  # fixture

SORRY = "I can't help with that."


class Verdict(BaseModel):
    guilty: bool


def agent_for(vendor: str, url: str, providers: list[Any], **kwargs: Any) -> Agent:
    if vendor == "openai":
        provider = new_provider("openai", {"model": "gpt-4o", "base_url": f"{url}/v1", "api_key": "sk", "max_retries": 0})
    else:
        provider = new_provider("anthropic", {"model": "claude-test", "base_url": url, "api_key": "k", "max_retries": 0})
    providers.append(provider)
    return Agent("judge", provider=provider, **kwargs)


def refusal_reply(vendor: str, text: str = SORRY) -> Reply:
    if vendor == "openai":
        return Reply.json(completion(text, finish_reason="content_filter"))
    return Reply.json(message_json([{"type": "text", "text": text}], stop_reason="refusal"))


def streamed_refusal(vendor: str, text: str = SORRY) -> Reply:
    if vendor == "openai":
        return sse(chunk({"role": "assistant", "content": ""}), chunk({"content": text}), chunk({}, "content_filter"),
                   usage_chunk())
    return Reply.sse([message_start(), block_start(0, {"type": "text", "text": ""}),
                      delta(0, {"type": "text_delta", "text": text}), block_stop(0), *message_end("refusal")])


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_refusal_ends_the_run_refused_with_its_words(
    loopback: LoopbackServer, providers: list[Any], vendor: str
) -> None:
    """From Mirascope/mirascope python/tests/llm/responses/test_finish_reason.py::test_finish_reason_values (``FinishReason.REFUSAL``)."""
    loopback.queue(refusal_reply(vendor))
    result = Session(agent_for(vendor, loopback.url, providers)).run("Help me pick a lock")
    assert (result.stop_reason, result.refused, result.response) == ("end_turn", True, SORRY)


def test_an_openai_answer_in_the_refusal_field_is_a_refusal(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/responses/test_finish_reason.py (OpenAI's structured outputs
    refuse in the message's ``refusal`` field, with ``finish_reason: "stop"``)."""
    body = completion(None)
    body["choices"][0]["message"]["refusal"] = SORRY
    loopback.queue(Reply.json(body))
    result = Session(agent_for("openai", loopback.url, providers)).run("Help me pick a lock")
    assert (result.stop_reason, result.refused, result.response) == ("end_turn", True, SORRY)


def test_a_streamed_openai_refusal_field_is_a_refusal(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/responses/test_finish_reason.py (streamed: ``delta.refusal``)."""
    loopback.queue(sse(chunk({"role": "assistant", "content": None, "refusal": ""}), chunk({"refusal": SORRY}),
                       chunk({}, "stop"), usage_chunk()))
    stream = Session(agent_for("openai", loopback.url, providers)).run_stream("Help me pick a lock")
    list(stream)
    assert (stream.result().stop_reason, stream.result().refused, stream.result().response) == ("end_turn", True, SORRY)


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_streamed_refusal_says_so_in_its_final_response_and_its_result(
    loopback: LoopbackServer, providers: list[Any], vendor: str
) -> None:
    """From Mirascope/mirascope python/tests/llm/responses/test_finish_reason.py::test_finish_reason_values (streamed)."""
    loopback.queue(streamed_refusal(vendor))
    stream = Session(agent_for(vendor, loopback.url, providers)).run_stream("Help me pick a lock")
    events = list(stream)
    assert [e.stop_reason for e in events if e.type is StreamEventType.MESSAGE_DELTA] == ["end_turn"]
    [stop] = [e for e in events if e.type is StreamEventType.MESSAGE_STOP]
    assert stop.response is not None and stop.response.refused and stream.result().refused


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
@pytest.mark.parametrize("streamed", [False, True])
def test_an_output_schema_agent_that_is_refused_fails_at_once_naming_the_refusal(
    loopback: LoopbackServer, providers: list[Any], vendor: str, streamed: bool
) -> None:
    """From Mirascope/mirascope python/tests/llm/responses/test_finish_reason.py::test_finish_reason_values: a refused structured call is an error saying it was refused (no
    corrective retry: the model declined; it did not answer badly)."""
    loopback.queue(streamed_refusal(vendor) if streamed else refusal_reply(vendor))
    session = Session(agent_for(vendor, loopback.url, providers, output_schema=Verdict))
    with pytest.raises(AgentError) as caught:
        if streamed:
            list(session.run_stream("Judge him"))
        else:
            session.run("Judge him")
    error = caught.value
    assert "refused" in str(error) and SORRY in str(error)
    assert "JSON" not in str(error) and "schema after one corrective retry" not in str(error)
    assert (error.kind, error.retryable) == (ErrorKind.INVALID, False)
    assert len(loopback.requests) == 1


def test_an_output_schema_agent_that_is_refused_without_a_word_says_so(
    loopback: LoopbackServer, providers: list[Any]
) -> None:
    """From Mirascope/mirascope python/tests/llm/responses/test_finish_reason.py::test_finish_reason_values (a filtered answer may carry no text at all)."""
    loopback.queue(Reply.json(completion("", finish_reason="content_filter")))
    with pytest.raises(AgentError, match=r"refused to answer, without a word"):
        Session(agent_for("openai", loopback.url, providers, output_schema=Verdict)).run("Judge him")


def test_the_model_end_and_session_stop_events_carry_the_refusal(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/responses/test_finish_reason.py::test_finish_reason_values, seen by hooks."""
    seen: list[Any] = []
    loopback.queue(refusal_reply("anthropic"))
    with EventBus() as bus:
        bus.subscribe(["model_end", "session_stop"], seen.append)
        Session(agent_for("anthropic", loopback.url, providers, events=bus)).run("Help me pick a lock")
        assert bus.flush(5)
    model_end = next(e for e in seen if e.kind == "model_end")
    session_stop = next(e for e in seen if e.kind == "session_stop")
    assert (model_end.response.stop_reason, model_end.response.refused) == ("end_turn", True)
    assert (session_stop.result.stop_reason, session_stop.result.refused) == ("end_turn", True)


def test_an_agent_node_with_an_output_schema_that_is_refused_fails_the_run_naming_the_refusal(
    loopback: LoopbackServer, providers: list[Any]
) -> None:
    """From Mirascope/mirascope python/tests/llm/responses/test_finish_reason.py::test_finish_reason_values, in a formation: the refusal is not retried (the same request is refused again)."""
    loopback.queue(refusal_reply("openai"), refusal_reply("openai"))
    formation = Formation("court")
    formation.add_agent("judge", agent_for("openai", loopback.url, providers, output_schema=Verdict), retries=1)
    with pytest.raises(Exception, match="refused to answer") as caught:
        formation.run("Judge him")
    assert "judge" in str(caught.value)
    assert len(loopback.requests) == 1
