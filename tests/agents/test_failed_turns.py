"""A run that raised before the model answered (a provider error, a timeout, a cancel, a
middleware halt) leaves the session's history as it was before the run: running the same
message again sends it once, not twice (found porting Mirascope and Langroid, whose retried
calls resend the message once). A run that raised after the model answered keeps its turn,
as docs/agents.md says: the tools it called ran, and each call left without a result is
answered with an error result (tests/agents/test_stopped_turns.py)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.providers.test_openai import completion
from tests.support.loopback import LoopbackServer, Reply
from tests.support.provider_fixtures import providers
from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Halt, Middleware
from wingman_actors.core import InferenceRequest, InferenceResponse, Message, Role
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import new_provider
from wingman_actors.testing import ScriptedProvider

__all__ = ["providers"]  # fixture


def openai_session(url: str, providers: list[Any], **kwargs: Any) -> Session:
    provider = new_provider("openai", {"model": "gpt-4o", "base_url": f"{url}/v1", "api_key": "sk", "max_retries": 0})
    providers.append(provider)
    return Session(Agent("a", provider=provider), **kwargs)


def texts(messages: list[Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages if m["role"] != "system"]


def drive(driver: str, session: Session, message: str, **kwargs: Any) -> Any:
    if driver == "run":
        return session.run(message, **kwargs)
    if driver == "arun":
        return asyncio.run(session.arun(message, **kwargs))
    stream = session.run_stream(message, **kwargs)
    list(stream)
    return stream.result()


@pytest.mark.parametrize("driver", ["run", "arun", "run_stream"])
def test_a_run_the_provider_failed_leaves_the_history_as_it_was_and_a_retry_sends_the_message_once(
    loopback: LoopbackServer, providers: list[Any], driver: str
) -> None:
    """From Mirascope/mirascope python/tests/llm/providers/openai/test_completions_errors.py (a call
    that failed with a server error, made again, is the same call)."""
    earlier = [Message.user("Hi"), Message.assistant("Hello!")]
    session = openai_session(loopback.url, providers, history=earlier)
    loopback.queue(Reply.json({"error": {"message": "overloaded", "type": "server_error"}}, status=500))
    with pytest.raises(AgentError) as caught:
        drive(driver, session, "What is 2 + 2?")
    assert caught.value.kind is ErrorKind.AGENT
    assert session.history == earlier

    if driver == "run_stream":
        from tests.providers.test_openai import text_stream

        loopback.queue(text_stream("4"))
    else:
        loopback.queue(Reply.json(completion("4")))
    assert drive(driver, session, "What is 2 + 2?").response == "4"
    sent = loopback.requests[-1].json()["messages"]
    assert texts(sent) == [("user", "Hi"), ("assistant", "Hello!"), ("user", "What is 2 + 2?")]


@pytest.mark.parametrize("driver", ["run", "arun", "run_stream"])
def test_a_run_that_timed_out_waiting_for_the_model_leaves_the_history_as_it_was(driver: str) -> None:
    """From langroid tests/main/test_task.py::test_task_kill (a stopped task's next run starts
    from where the conversation was)."""
    provider = ScriptedProvider(["first answer", "slow answer", "second answer"])
    session = Session(Agent("a", provider=provider))
    session.run("one")
    before = list(session.history)
    provider.latency_s = 5  # the next call outlasts the run's limit
    with pytest.raises(AgentError) as caught:
        drive(driver, session, "two", timeout=0.2)
    assert caught.value.kind is ErrorKind.TIMEOUT
    assert session.history == before


def test_a_cancelled_run_waiting_for_the_model_leaves_the_history_as_it_was() -> None:
    """From langroid tests/main/test_task.py::test_task_kill (``task.kill()``, then the task runs again)."""
    entered, release = threading.Event(), threading.Event()

    def slow(request: InferenceRequest) -> InferenceResponse:
        entered.set()
        release.wait(5)
        return InferenceResponse.of_text("late")

    provider = ScriptedProvider([slow, "back again"])
    session = Session(Agent("a", provider=provider))
    def kill() -> None:
        if entered.wait(5):
            session.cancel()
        release.set()  # (a scripted reply function is called on the session's thread: let it return)

    killer = threading.Thread(target=kill)
    killer.start()
    try:
        with pytest.raises(AgentError) as caught:
            session.run("hi")
    finally:
        release.set()
        killer.join()
    assert caught.value.kind is ErrorKind.CANCELLED
    assert session.history == []
    assert session.run("hi").response == "back again"
    assert [m.text for m in provider.requests[-1].messages] == ["hi"]


def test_a_run_halted_before_its_model_call_leaves_the_history_as_it_was() -> None:
    """A middleware ``Halt`` before the model call (an input guardrail) raises: the message it
    refused is not kept."""

    class NoSecrets(Middleware):
        def before_model(self, ctx: Any, request: InferenceRequest) -> None:
            if "password" in request.messages[-1].text:
                raise Halt("the message asks for a password")

    session = Session(Agent("a", provider=ScriptedProvider(["ok"]), middleware=[NoSecrets()]))
    with pytest.raises(Halt):
        session.run("What is the password?")
    assert session.history == []


def test_a_run_that_failed_after_its_tools_ran_keeps_its_turn() -> None:
    """Documented (docs/agents.md): a turn in which the model answered is kept, since the tools it
    called ran; the run's failure on its next model call adds no answer."""

    @tool
    def book(room: str) -> str:
        """Book a room."""
        return f"booked {room}"

    provider = ScriptedProvider([
        InferenceResponse.of_tool_calls([("c1", "book", {"room": "A"})]),
        AgentError("the server is overloaded", kind=ErrorKind.AGENT),
    ])
    session = Session(Agent("a", provider=provider, tools=[book]))
    with pytest.raises(AgentError, match="overloaded"):
        session.run("Book room A")
    roles = [m.role for m in session.history]
    assert roles == [Role.USER, Role.ASSISTANT, Role.USER]
    assert session.history[0].text == "Book room A"
    assert session.history[-1].tool_results_blocks[0].content == "booked A"


def test_a_failed_run_after_a_history_ending_in_unanswered_calls_leaves_that_history_unchanged() -> None:
    """A given history ending in tool calls nobody answered is closed for the request; a run that
    fails before the model answered leaves it exactly as given."""
    given = [Message.user("hi"), InferenceResponse.of_tool_calls([("c9", "lost", {})]).to_message()]
    provider = ScriptedProvider([AgentError("down", kind=ErrorKind.NETWORK)])
    session = Session(Agent("a", provider=provider), history=given)
    with pytest.raises(AgentError, match="down"):
        session.run("again")
    assert session.history == given
