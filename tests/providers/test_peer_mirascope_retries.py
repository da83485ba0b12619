"""Behaviours of Mirascope's own retry tests (Mirascope/mirascope: python/tests/llm/
retries/test_retry_calls.py, test_retry_stream_responses.py, test_retries.py), ported to
our providers' retry policy inside whole sessions, against loopback servers speaking the
OpenAI-compatible and Anthropic wire formats. Mirascope's ``@llm.retry(max_retries=N)`` is
our provider option ``max_retries`` (the policy's waits shortened here by the
``build_provider`` fixture).

Deliberately different: a Mirascope stream that fails midway raises ``StreamRestarted``
and starts again when iterated anew; ours retries a stream only before its first event
and otherwise raises, so that no text is ever streamed twice (the caller may run the
turn again).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.providers.test_anthropic import error_reply, message_json
from tests.providers.test_openai import chunk, completion, sse, text_stream
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors import Agent, Session
from wingman_actors.core import StreamEventType
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers._base import BaseProvider

RETRIES = "Mirascope/mirascope python/tests/llm/retries"


def server_error(status: int = 500, message: str = "server error") -> Reply:
    return Reply.json({"error": {"message": message, "type": "server_error", "code": None}}, status=status)


@pytest.fixture
def agent(loopback: LoopbackServer, build_provider: Callable[..., BaseProvider]) -> Callable[..., Agent]:
    def make(max_retries: int = 2, kind: str = "openai") -> Agent:
        if kind == "anthropic":
            options: dict[str, Any] = {"model": "claude-test", "base_url": loopback.url, "api_key": "k"}
        else:
            options = {"model": "gpt-4o", "base_url": f"{loopback.url}/v1", "api_key": "sk-test"}
        return Agent("greeter", provider=build_provider(kind, options, max_retries))

    return make


def streamed_text(session: Session, message: str = "Hello") -> tuple[str, Any]:
    stream = session.run_stream(message)
    text = "".join(e.text or "" for e in stream if e.type is StreamEventType.TEXT_DELTA)
    return text, stream.result()


def test_a_call_that_succeeds_at_once_is_made_once(loopback: LoopbackServer, agent: Callable[..., Agent]) -> None:
    """From Mirascope/mirascope python/tests/llm/retries/test_retry_calls.py (succeeds on the first attempt)."""
    loopback.queue(Reply.json(completion("Hi!")))
    assert Session(agent()).run("Hello").response == "Hi!"
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("failure", [server_error(500), server_error(503), server_error(429, "rate limited")])
def test_a_retryable_failure_is_retried_and_the_session_gets_the_answer(
    loopback: LoopbackServer, agent: Callable[..., Agent], failure: Reply
) -> None:
    """From Mirascope/mirascope python/tests/llm/retries/test_retry_calls.py (retries on ServerError / RateLimitError, then succeeds)."""
    loopback.queue(failure, Reply.json(completion("Hi!")))
    result = Session(agent()).run("Hello")
    assert result.response == "Hi!" and len(loopback.requests) == 2
    assert result.steps == 1


def test_a_request_error_is_not_retried(loopback: LoopbackServer, agent: Callable[..., Agent]) -> None:
    """From Mirascope/mirascope python/tests/llm/retries/test_retries.py (non-retryable errors raise at once)."""
    loopback.queue(Reply.json({"error": {"message": "bad request", "type": "invalid_request_error"}}, status=400),
                   Reply.json(completion("never")))
    with pytest.raises(AgentError) as caught:
        Session(agent()).run("Hello")
    assert caught.value.kind is ErrorKind.INVALID and len(loopback.requests) == 1


def test_spent_retries_raise_the_last_error_after_one_plus_max_retries_requests(
    loopback: LoopbackServer, agent: Callable[..., Agent]
) -> None:
    """From Mirascope/mirascope python/tests/llm/retries/test_retry_stream_responses.py::test_stream_raises_original_error_after_max_attempts."""
    loopback.queue(server_error(500, "first"), server_error(429, "rate limited"))
    with pytest.raises(AgentError, match="rate limited") as caught:
        Session(agent(max_retries=1)).run("Hello")
    assert caught.value.kind is ErrorKind.RATE_LIMIT and len(loopback.requests) == 2


def test_a_stream_refused_before_its_first_event_is_retried_and_streams_its_text_once(
    loopback: LoopbackServer, agent: Callable[..., Agent]
) -> None:
    """From Mirascope/mirascope python/tests/llm/retries/test_retry_stream_responses.py::test_stream_can_continue_after_restart."""
    loopback.queue(server_error(503), text_stream("mock ", "response"))
    text, result = streamed_text(Session(agent()))
    assert text == "mock response" and result.response == "mock response"
    assert len(loopback.requests) == 2


def test_a_stream_cut_after_its_first_event_raises_without_streaming_anything_twice(
    loopback: LoopbackServer, agent: Callable[..., Agent]
) -> None:
    """From Mirascope/mirascope python/tests/llm/retries/test_retry_stream_responses.py::test_stream_raises_stream_restarted_on_error.

    Deliberately different: Mirascope raises ``StreamRestarted`` and runs the call again on
    the next iteration; ours raises the stream's error and makes no second request."""
    loopback.queue(sse(chunk({"role": "assistant", "content": "mock "}), done=False), text_stream("never"))
    seen: list[str] = []
    stream = Session(agent()).run_stream("Hello")
    with pytest.raises(AgentError, match=r"before \[DONE\]"):
        for event in stream:
            if event.type is StreamEventType.TEXT_DELTA:
                seen.append(event.text or "")
    assert seen == ["mock "] and len(loopback.requests) == 1


def test_a_session_can_run_the_turn_again_after_a_stream_was_cut(loopback: LoopbackServer, agent: Callable[..., Agent]) -> None:
    """From Mirascope/mirascope python/tests/llm/retries/test_retry_stream_responses.py::test_stream_can_continue_after_restart
    (the caller's loop: catch, then iterate again).

    The failed turn leaves the history as it was (the model never answered: docs/agents.md),
    so the next turn sends only its own message; the cut answer is not kept."""
    loopback.queue(sse(chunk({"role": "assistant", "content": "mock "}), done=False), text_stream("mock ", "response"))
    session = Session(agent())
    with pytest.raises(AgentError):
        streamed_text(session)
    text, result = streamed_text(session, "Hello again")
    assert text == result.response == "mock response"
    sent = loopback.requests[1].json()["messages"]
    assert [(m["role"], m["content"]) for m in sent] == [("user", "Hello again")]


def test_an_async_stream_is_retried_after_a_server_error_before_its_first_event(
    loopback: LoopbackServer, agent: Callable[..., Agent]
) -> None:
    """From Mirascope/mirascope python/tests/llm/retries/test_retry_stream_responses.py::test_stream_async_can_continue_after_restart."""
    loopback.queue(server_error(500), text_stream("mock ", "response"))

    async def main() -> str:
        made = agent()
        try:
            return "".join([e.text or "" async for e in Session(made).astream("Hello") if e.type is StreamEventType.TEXT_DELTA])
        finally:
            await made.provider.aclose()  # type: ignore[union-attr]

    assert asyncio.run(main()) == "mock response"
    assert len(loopback.requests) == 2


def test_an_overloaded_anthropic_answer_is_retried_and_the_usage_counts_the_answer_only(
    loopback: LoopbackServer, agent: Callable[..., Agent]
) -> None:
    """From Mirascope/mirascope python/tests/llm/retries/test_retry_calls.py (retry_failures kept apart from the response)."""
    loopback.queue(error_reply(529, "overloaded_error", "Overloaded"),
                   Reply.json(message_json([{"type": "text", "text": "Hi!"}])))
    result = Session(agent(kind="anthropic")).run("Hello")
    answer = message_json([{"type": "text", "text": "Hi!"}])["usage"]
    assert result.response == "Hi!" and len(loopback.requests) == 2
    assert (result.usage.input_tokens, result.usage.output_tokens) == (answer["input_tokens"], answer["output_tokens"])


def test_zero_max_retries_makes_one_request_only(loopback: LoopbackServer, agent: Callable[..., Agent]) -> None:
    """From Mirascope/mirascope python/tests/llm/retries/test_retry_config.py (max_retries=0: no retry)."""
    loopback.queue(server_error(500), Reply.json(completion("never")))
    with pytest.raises(AgentError) as caught:
        Session(agent(max_retries=0)).run("Hello")
    assert caught.value.kind is ErrorKind.AGENT and len(loopback.requests) == 1
