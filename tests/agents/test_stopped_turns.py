"""A run stopped while its tools were running (a timeout, a cancel) leaves a history the
next run can send: every tool call of the unfinished turn gets an error result, as the
providers' APIs require (a tool call without its result is refused)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from wingman_actors import Agent, Session, tool
from wingman_actors.core import InferenceResponse, Message, Role
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set when the test ends: the stuck tool returns then, so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def _stuck_session(release: threading.Event) -> tuple[Session, ScriptedProvider]:
    @tool
    def wait_forever() -> str:
        """Never returns (within the test)."""
        release.wait(10)
        return "too late"

    provider = ScriptedProvider([
        InferenceResponse.of_tool_calls([("c1", "wait_forever", {}), ("c2", "wait_forever", {})]),
        "the next answer",
    ])
    return Session(Agent("a", provider=provider, tools=[wait_forever])), provider


def _unanswered(messages: list[Message]) -> set[str]:
    """Ids of tool calls in ``messages`` that no tool result answers."""
    calls = {b.id for m in messages for b in m.content if b.type == "tool_use"}
    answered = {b.tool_use_id for m in messages for b in m.content if b.type == "tool_result"}
    return {c for c in calls if c is not None} - answered


def test_a_run_that_timed_out_in_its_tools_closes_the_turn_with_error_results(release: threading.Event) -> None:
    session, _ = _stuck_session(release)
    with pytest.raises(AgentError) as info:
        session.run("go", timeout=0.2)
    assert info.value.kind is ErrorKind.TIMEOUT
    assert _unanswered(session.history) == set()
    last = session.history[-1]
    assert last.role is Role.USER
    results = last.tool_results_blocks
    assert [b.tool_use_id for b in results] == ["c1", "c2"]
    assert all(b.is_error and "timed out" in (b.content or "") for b in results)


def test_the_next_run_after_a_cancelled_one_sends_every_tool_call_with_its_result(release: threading.Event) -> None:
    session, provider = _stuck_session(release)
    timer = threading.Timer(0.2, session.cancel)
    timer.start()
    with pytest.raises(AgentError) as info:
        session.run("go")
    timer.join()
    assert info.value.kind is ErrorKind.CANCELLED
    assert session.run("and now?").response == "the next answer"
    sent = provider.requests[-1].messages
    assert _unanswered(sent) == set()
    assert sent[-1].text == "and now?"


def test_an_awaited_run_cancelled_by_its_task_closes_the_turn_too(release: threading.Event) -> None:
    session, _ = _stuck_session(release)

    async def main() -> None:
        task = asyncio.ensure_future(session.arun("go"))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert _unanswered(session.history) == set()


def test_a_run_that_ends_normally_adds_nothing_after_its_answer() -> None:
    session = Session(Agent("a", provider=ScriptedProvider(["done"])))
    session.run("go")
    assert [m.role for m in session.history] == [Role.USER, Role.ASSISTANT]


def test_a_streamed_run_left_early_closes_the_turn(release: threading.Event) -> None:
    session, _ = _stuck_session(release)
    stream: Any = session.run_stream("go", timeout=0.3)
    with pytest.raises(AgentError):
        for _ in stream:
            pass
    assert _unanswered(session.history) == set()
