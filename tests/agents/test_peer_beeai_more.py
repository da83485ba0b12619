"""More of IBM BeeAI framework's tests (i-am-bee/beeai-framework python/tests/test_context.py,
tests/middleware/test_trajectory.py, tests/memory/test_token_memory.py and test_sliding_memory.py's
clones, tests/agents/test_requirement_agent_task_prompt.py), ported to our sessions: a middleware that fails ends a streamed run before the model is
called, cancelling the task that consumes an async stream cancels the async tool in flight, the
logging middleware writes a run's trajectory, and a conversation started from another session's
history is independent of it; the requirement agent's task prompt (``backstory``,
``expected_output``) and its loop without cycle detection."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from wingman_actors import Agent, Fleet, Session, Task, tool
from wingman_actors.agents import LoggingMiddleware, Middleware, RunContext
from wingman_actors.core import InferenceResponse, Message, StreamEventType
from wingman_actors.testing import ScriptedProvider


class Failing(Middleware):
    def __init__(self) -> None:
        self.contexts: list[RunContext] = []

    def before_agent(self, ctx: RunContext, message: Any) -> None:
        self.contexts.append(ctx)
        raise ValueError("Middleware failed")


def test_a_middleware_that_raises_ends_the_stream_with_its_error_before_the_model_is_called() -> None:
    """From i-am-bee/beeai-framework python/tests/test_context.py::test_stream_propagates_middleware_error
    (the handler never runs; the stream raises the middleware's error)."""
    model = ScriptedProvider(["never"], cycle=True)
    failing = Failing()
    session = Session(Agent("a", provider=model, middleware=[failing]))
    events: list[Any] = []
    with pytest.raises(ValueError, match="Middleware failed"):
        for event in session.run_stream("go"):
            events.append(event)

    assert model.calls == 0 and len(failing.contexts) == 1
    assert [e.type for e in events] == [StreamEventType.ERROR]


def test_a_session_whose_middleware_failed_runs_again_once_it_no_longer_fails() -> None:
    """From i-am-bee/beeai-framework python/tests/test_context.py::test_stream_propagates_middleware_error
    (after the failure the context is cleaned up: nothing is left listening). Ours: the session is
    not left mid-run; its next run goes through."""
    fail = [True]

    class Sometimes(Middleware):
        def before_agent(self, ctx: RunContext, message: Any) -> None:
            if fail[0]:
                raise ValueError("Middleware failed")

    session = Session(Agent("a", provider=ScriptedProvider(["fine"]), middleware=[Sometimes()]))
    with pytest.raises(ValueError):
        session.run("go")
    fail[0] = False
    assert session.run("again").response == "fine"


def test_cancelling_the_task_consuming_an_async_stream_cancels_the_async_tool_in_flight() -> None:
    """From i-am-bee/beeai-framework python/tests/test_context.py::test_cancelling_stream_cancels_handler
    (cancelling the consumer cancels the run's handler task, which sees its cancellation)."""
    started, cancelled = threading.Event(), threading.Event()

    @tool
    async def wait_forever() -> str:
        """Wait for ever."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        return "never"

    model = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "wait_forever", {})]), "done"])
    session = Session(Agent("a", provider=model, tools=[wait_forever]))

    async def main() -> None:
        async def consume() -> None:
            async for _ in session.astream("go"):
                pass

        consumer = asyncio.create_task(consume())
        assert await asyncio.to_thread(started.wait, 5)
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(consumer, timeout=5)

    asyncio.run(main())
    assert cancelled.wait(5)
    assert model.calls == 1


def test_the_logging_middleware_writes_each_stage_of_a_run_labelled_with_the_agent(caplog: pytest.LogCaptureFixture) -> None:
    """From i-am-bee/beeai-framework python/tests/middleware/test_trajectory.py::
    test_middleware_writes_to_target_when_enabled (each trajectory entry is labelled with who made it)
    and test_middleware_does_not_write_when_disabled (a level that is off writes nothing)."""

    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    logger = logging.getLogger("tests.beeai.trajectory")
    script: list[Any] = [InferenceResponse.of_tool_calls([("c1", "ping", {})]), "pong received"]
    with caplog.at_level(logging.INFO, logger="tests.beeai.trajectory"):
        Session(Agent("echo", provider=ScriptedProvider(script), tools=[ping],
                      middleware=[LoggingMiddleware(logger)])).run("ping")
        written = [r.getMessage() for r in caplog.records if r.name == "tests.beeai.trajectory"]
        caplog.clear()
        Session(Agent("echo", provider=ScriptedProvider(["quiet"]),
                      middleware=[LoggingMiddleware(logger, level=logging.DEBUG)])).run("ping")
        quiet = [r for r in caplog.records if r.name == "tests.beeai.trajectory"]

    assert written and all(line.startswith("[echo]") for line in written)
    assert "[echo] run starts: ping" in written and "[echo] tool ping ok: pong" in written
    assert written[-1].startswith("[echo] run done in 2 step(s)")
    assert quiet == []


def test_a_session_started_from_anothers_history_continues_it_and_neither_changes_the_other() -> None:
    """From i-am-bee/beeai-framework python/tests/memory/test_token_memory.py::
    test_clone_preserves_messages_and_handlers and test_sliding_memory.py::test_clone_is_independent
    (the clone has the messages; adding to it leaves the original as it was)."""
    agent = Agent("a", provider=ScriptedProvider(["hello", "in the fork", "in the original"]))
    original = Session(agent)
    original.run("hi")
    fork = Session(agent, history=original.history)
    fork.run("fork turn")
    original.run("original turn")

    assert [m.text for m in fork.history] == ["hi", "hello", "fork turn", "in the fork"]
    assert [m.text for m in original.history] == ["hi", "hello", "original turn", "in the original"]


def test_a_history_of_chat_api_message_dicts_with_text_content_becomes_messages() -> None:
    """From i-am-bee/beeai-framework python/tests/memory/test_token_memory.py::
    test_add_appends_messages_within_budget (``UserMessage("hello")``, ``AssistantMessage("world")``:
    messages made from text are kept, in order). A history of message dicts is accepted; the dicts
    every chat API writes, ``{"role": "user", "content": "hello"}``, were refused with a bare
    pydantic error ("Input should be a valid list")."""
    model = ScriptedProvider(["noted"])
    session = Session(Agent("a", provider=model),
                      history=[{"role": "user", "content": "hello"}, {"role": "assistant", "content": "world"}])  # type: ignore[list-item]
    session.run("again")

    assert session.history[:2] == [Message.user("hello"), Message.assistant("world")]
    assert [m.text for m in model.requests[0].messages] == ["hello", "world", "again"]


# -- the requirement agent's task prompt and its loop ----------------------------------------------------


def test_a_tasks_own_instructions_reach_the_model_in_place_of_the_agents() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_requirement_agent_task_prompt.py::
    test_backstory_and_expected_output_reach_the_model (``backstory`` reaches the model with the task).
    Ours: a fleet ``Task``'s ``instructions`` are that session's instructions (they replace the agent's);
    the task is the user message."""
    model = ScriptedProvider(["4"], cycle=True)
    agent = Agent("tutor", instructions="You are a tutor.", provider=model)
    [done] = Fleet(agent, [Task("What is 2+2?", instructions="The user is a five-year-old child.")]).run()

    assert done.response == "4"
    assert model.requests[0].instructions == "The user is a five-year-old child."
    assert [m.text for m in model.requests[0].messages] == ["What is 2+2?"]


class Number(BaseModel):
    value: int


def test_the_expected_output_is_described_to_the_model_after_the_instructions() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_requirement_agent_task_prompt.py::
    test_backstory_and_expected_output_reach_the_model (``expected_output`` is rendered into the prompt).
    Ours: an ``output_schema`` adds its JSON Schema to the instructions and travels with the request."""
    model = ScriptedProvider(['{"value": 4}'])
    result = Session(Agent("tutor", instructions="You are a tutor.", provider=model, output_schema=Number)).run("2+2?")

    sent = model.requests[0]
    assert result.output == Number(value=4)
    assert sent.instructions is not None and sent.instructions.startswith("You are a tutor.")
    assert '"value"' in sent.instructions and sent.output_schema == Number.model_json_schema()


def test_a_model_repeating_the_same_tool_call_is_stopped_by_max_steps_not_by_cycle_detection() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_tool_calling_agent.py::
    test_raises_when_max_iterations_exceeded ("distinct args avoid the cycle-detection path": BeeAI stops
    a model that repeats one call with the same arguments). Ours differ: there is no cycle detection;
    every repeated call runs, and ``max_steps`` bounds the loop with its last call without tools."""
    ran: list[str] = []

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return f"sunny in {city}"

    same = InferenceResponse.of_tool_calls([("c", "weather", {"city": "Prague"})])
    model = ScriptedProvider([same, same, same, "sunny"])
    result = Session(Agent("a", provider=model, tools=[weather], max_steps=3)).run("weather?")

    assert ran == ["Prague"] * 3 and result.max_steps_reached and result.response == "sunny"
