"""Sessions that wait, awaited: ``await Session(agent, store=...).arun(...)`` suspends on
``interrupt()``/``ask_human`` as ``run`` does, and ``await session.aresume(...)``
continues it without repeating model calls; cancelling the awaiting task cancels the
resumed run."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from wingman_actors import Agent, Session, interrupt, tool
from wingman_actors.core import InferenceResponse
from wingman_actors.store import RunNotResumableError, RunStore
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext

from .session_worker import ASK, agent, confirm


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "runs.sqlite") as store:
        yield store


def test_arun_of_a_session_with_a_store_suspends_on_an_interrupt(store: RunStore) -> None:
    session = Session(agent(ScriptedProvider([ASK])), store=store)

    result = asyncio.run(session.arun("Book me a trip."))

    assert (result.status, result.interrupt) == ("suspended", {"question": "Which city?"})
    assert store.get(session.id).status == "suspended"


def test_aresume_answers_the_interrupt_without_repeating_model_calls(store: RunStore) -> None:
    provider = ScriptedProvider([ASK, confirm])
    session = Session(agent(provider), store=store)

    async def main() -> tuple[str, str | None]:
        await session.arun("Book me a trip.")
        result = await session.aresume(session.id, answer="Lisbon")
        return result.status, result.response

    assert asyncio.run(main()) == ("succeeded", "Booked for Lisbon")
    assert provider.calls == 2  # the ask, then the confirmation: the ask was replayed
    assert store.get(session.id).status == "succeeded"


def test_aresume_continues_a_session_suspended_by_the_blocking_run(store: RunStore) -> None:
    provider = ScriptedProvider([ASK, confirm])
    first = Session(agent(provider), store=store)
    first.run("Book me a trip.")

    result = asyncio.run(Session(agent(provider)).aresume(first.id, store=store, answer="Porto"))

    assert result.response == "Booked for Porto" and provider.calls == 2


def test_an_async_tool_that_interrupts_suspends_an_awaited_session(store: RunStore) -> None:
    @tool
    async def gated(ctx: ToolContext) -> str:
        """Ask, then answer."""
        answer = interrupt("ok?")
        await asyncio.sleep(0)
        return f"got {answer}"

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("g1", "gated", {})]),
                                 lambda request: request.messages[-1].tool_results_blocks[0].content or ""])
    session = Session(Agent("a", provider=provider, tools=[gated]), store=store)

    async def main() -> tuple[object, str | None]:
        suspended = await session.arun("go")
        return suspended.interrupt, (await session.aresume(session.id, answer="yes")).response

    assert asyncio.run(main()) == ("ok?", "got yes")


def test_cancelling_the_task_awaiting_aresume_cancels_the_resumed_run(store: RunStore) -> None:
    resumed, unwound = threading.Event(), threading.Event()

    @tool
    async def slow_after_asking(ctx: ToolContext) -> str:
        """Ask, then work a long time."""
        answer = interrupt("go?")
        resumed.set()
        try:
            await asyncio.sleep(30)
        finally:
            unwound.set()
        return str(answer)

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("s1", "slow_after_asking", {})]), "done"])
    session = Session(Agent("a", provider=provider, tools=[slow_after_asking]), store=store)

    async def main() -> None:
        await session.arun("go")
        task = asyncio.ensure_future(session.aresume(session.id, answer="yes"))
        while not resumed.is_set():
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())

    assert unwound.is_set()  # the tool's coroutine was cancelled: its finally ran
    assert store.get(session.id).status == "failed"
    assert not session._busy.locked()  # the session is free for its next message


def test_a_session_whose_aresume_was_cancelled_resumes_again_with_its_answer(store: RunStore) -> None:
    attempts: list[str] = []

    @tool
    async def asks(ctx: ToolContext) -> str:
        """Ask, then (the first time) hang."""
        answer = str(interrupt("go?"))
        attempts.append(answer)
        if len(attempts) == 1:
            await asyncio.sleep(30)
        return answer

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("a1", "asks", {})]),
                                 lambda request: request.messages[-1].tool_results_blocks[0].content or ""])
    session = Session(Agent("a", provider=provider, tools=[asks]), store=store)

    async def main() -> str | None:
        await session.arun("go")
        task = asyncio.ensure_future(session.aresume(session.id, answer="yes"))
        while not attempts:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return (await session.aresume(session.id)).response

    assert asyncio.run(main()) == "yes"
    assert attempts == ["yes", "yes"] and provider.calls == 2


def test_a_session_whose_aresume_was_cancelled_at_once_stays_resumable(store: RunStore) -> None:
    provider = ScriptedProvider([ASK, confirm])
    session = Session(agent(provider), store=store)

    async def main() -> str | None:
        await session.arun("Book me a trip.")
        task = asyncio.ensure_future(session.aresume(session.id, answer="Lisbon"))
        await asyncio.sleep(0)  # it is claiming the run on a worker thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(500):  # the claim ends, then the run is marked failed
            if store.get(session.id).status == "failed":
                break
            await asyncio.sleep(0.01)
        return (await session.aresume(session.id)).response

    assert asyncio.run(main()) == "Booked for Lisbon"


def test_aresume_of_a_finished_session_is_refused(store: RunStore) -> None:
    session = Session(agent(ScriptedProvider([ASK, confirm])), store=store)

    async def main() -> None:
        await session.arun("Book me a trip.")
        await session.aresume(session.id, answer="Lisbon")
        with pytest.raises(RunNotResumableError):
            await session.aresume(session.id, answer="again")

    asyncio.run(main())


def test_aresume_without_a_store_says_where_to_give_one() -> None:
    with pytest.raises(ValueError, match="resume needs the store"):
        asyncio.run(Session(agent(ScriptedProvider())).aresume("some-id", answer="x"))


def test_astream_of_a_session_with_a_store_ends_on_an_interrupt_with_the_suspended_result(store: RunStore) -> None:
    provider = ScriptedProvider([ASK, confirm])
    session = Session(agent(provider), store=store)

    async def main() -> tuple[list[str], str, object, str | None]:
        stream = session.astream("Book me a trip.")
        kinds = [event.type.value async for event in stream]
        suspended = stream.result()
        resumed = await session.aresume(session.id, answer="Lisbon")
        return kinds, suspended.status, suspended.interrupt, resumed.response

    kinds, status, payload, response = asyncio.run(main())

    assert (status, payload) == ("suspended", {"question": "Which city?"})
    assert "tool_start" in kinds and "error" not in kinds
    assert response == "Booked for Lisbon" and provider.calls == 2


def test_leaving_an_astream_of_a_session_with_a_store_early_frees_the_session(store: RunStore) -> None:
    session = Session(Agent("a", provider=ScriptedProvider(["Hello there, friend."])), store=store)

    async def main() -> None:
        async for _ in session.astream("hi"):
            break

    asyncio.run(main())

    assert not session._busy.locked() and store.runs() == []
