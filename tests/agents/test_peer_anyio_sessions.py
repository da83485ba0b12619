"""Behaviours ported from AnyIO's task-group and thread tests (agronholm/anyio
``tests/test_taskgroups.py``, ``tests/test_to_thread.py``) and CPython's
``Lib/test/test_asyncio/test_taskgroups.py`` / ``test_timeouts.py``, mapped onto agent
sessions and fleets awaited with ``Session.arun`` / ``astream`` and ``Fleet.arun``, and onto
the blocking ``Session.run`` / ``Fleet.run`` called from a running loop.

Deliberately different: none found. A session awaited in a task group, under
``asyncio.timeout`` or an AnyIO cancel scope is cancelled as any awaited call is: the
``async def`` tool being awaited sees the cancel (its ``finally`` runs) and the session is
free for its next message.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

import anyio
import pytest

from tests.support.peers import a_until, until
from wingman_actors import Agent, Session, interrupt, tool
from wingman_actors.agents import Fleet
from wingman_actors.core import InferenceResponse
from wingman_actors.errors import AgentError
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


class Tools:
    """An ``async def`` tool ``wait`` that sleeps ``seconds``, noting starts and finallys."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: list[float] = []
        self.finished: list[float] = []

        @tool
        async def wait(seconds: float) -> str:
            """Wait a while.

            Args:
                seconds: how long.
            """
            with self.lock:
                self.started.append(seconds)
            try:
                await asyncio.sleep(seconds)
            finally:
                with self.lock:
                    self.finished.append(seconds)
            return f"waited {seconds}"

        self.wait = wait


def waiting_agent(tools: Tools, seconds: float, name: str = "waiter") -> Agent:
    def reply(request: Any) -> Any:  # per request, so the sessions of a fleet can share the one provider
        results = request.messages[-1].tool_results_blocks
        if results:
            return "done: " + (results[0].content or "")
        return InferenceResponse.of_tool_calls([("w1", "wait", {"seconds": seconds})])

    return Agent(name, provider=ScriptedProvider([reply], cycle=True), tools=[tools.wait])


def test_a_task_group_of_session_aruns_gives_every_sessions_reply() -> None:
    """From agronholm/anyio tests/test_taskgroups.py::test_success and CPython test_taskgroups.py::test_taskgroup_01."""
    tools = Tools()

    async def main() -> list[str]:
        async with asyncio.TaskGroup() as group:
            runs = [group.create_task(Session(waiting_agent(tools, s)).arun("go")) for s in (0.05, 0.01)]
        return [run.result().response for run in runs]

    assert asyncio.run(main()) == ["done: waited 0.05", "done: waited 0.01"]


def test_a_failing_session_in_a_task_group_cancels_its_sibling_and_the_siblings_tool_unwinds() -> None:
    """From agronholm/anyio tests/test_taskgroups.py::test_failing_child_task_cancels_host and CPython
    test_taskgroups.py::test_taskgroup_03."""
    tools = Tools()
    slow = Session(waiting_agent(tools, 30))
    broken = Session(Agent("broken", provider=ScriptedProvider([RuntimeError("model down")])))

    async def main() -> list[str]:
        with pytest.raises(ExceptionGroup) as caught:
            async with asyncio.TaskGroup() as group:
                group.create_task(slow.arun("go"))
                assert await a_until(lambda: tools.started == [30])
                group.create_task(broken.arun("go"))
        return [str(e) for e in caught.value.exceptions]

    assert asyncio.run(main()) == ["model down"]
    assert until(lambda: tools.finished == [30])
    assert not slow._busy.locked()  # the cancelled session is free for its next message


def test_asyncio_timeout_around_session_arun_cancels_the_awaited_tool_and_frees_the_session() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_timeout_basic."""
    tools = Tools()
    agent = waiting_agent(tools, 30)
    session = Session(agent)

    async def main() -> str:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                await session.arun("go")
        assert await a_until(lambda: tools.finished == [30])
        tools_quick = Tools()
        return (await Session(waiting_agent(tools_quick, 0.01)).arun("go")).response

    assert asyncio.run(main()) == "done: waited 0.01"
    assert not session._busy.locked()


def test_the_sessions_own_timeout_inside_a_longer_asyncio_timeout_fails_the_run_not_the_timeout() -> None:
    """From python-trio/trio src/trio/_tests/test_timeouts.py::test_move_on_after (the innermost deadline wins)."""
    tools = Tools()

    async def main() -> bool:
        async with asyncio.timeout(20) as cm:
            with pytest.raises(AgentError, match=r"run timed out after 0\.3s"):
                await Session(waiting_agent(tools, 30)).arun("go", timeout=0.3)
        return cm.expired()

    assert asyncio.run(main()) is False
    assert until(lambda: tools.finished == [30])


def test_move_on_after_around_session_arun_cancels_its_tool_and_the_session_runs_again() -> None:
    """From agronholm/anyio tests/test_taskgroups.py::test_move_on_after."""
    tools = Tools()
    session = Session(waiting_agent(tools, 30))

    async def main() -> tuple[bool, list[float]]:
        with anyio.move_on_after(0.3) as scope:
            await session.arun("go")
        return scope.cancelled_caught, list(tools.finished)

    caught, _ = anyio.run(main)
    assert caught
    assert until(lambda: tools.finished == [30])  # cancelled on the runtime's tool loop, at once or nearly
    assert until(lambda: not session._busy.locked())


def test_a_shielded_session_arun_finishes_though_its_task_group_is_cancelled() -> None:
    """From agronholm/anyio tests/test_taskgroups.py::test_shielding."""
    tools = Tools()
    replies: list[str] = []

    async def main() -> None:
        async def shielded() -> None:
            with anyio.CancelScope(shield=True):
                replies.append((await Session(waiting_agent(tools, 0.5)).arun("go")).response)
            await anyio.sleep(5)
            replies.append("not reached")

        async with anyio.create_task_group() as group:
            group.start_soon(shielded)
            assert await a_until(lambda: tools.started == [0.5])
            group.cancel_scope.cancel()

    anyio.run(main)
    assert replies == ["done: waited 0.5"]


def test_asyncio_timeout_around_session_astream_cancels_the_tool_and_ends_the_stream() -> None:
    """From python/cpython Lib/test/test_asyncio/test_timeouts.py::test_timeout_basic, over a session's stream."""
    tools = Tools()
    session = Session(waiting_agent(tools, 30))

    async def main() -> list[str]:
        kinds: list[str] = []
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.3):
                async with session.astream("go") as stream:
                    async for event in stream:
                        kinds.append(event.type.value)
        return kinds

    kinds = asyncio.run(main())
    assert kinds[-1] == "tool_start"  # the stream ended in the tool's wait, with no end of run after it
    assert until(lambda: tools.finished == [30])
    assert until(lambda: not session._busy.locked())


def test_asyncio_timeout_around_fleet_arun_cancels_every_tasks_tool() -> None:
    """From python/cpython Lib/test/test_asyncio/test_taskgroups.py::test_taskgroup_05 (cancelling the
    parent cancels every child), the fleet's tasks being the children."""
    tools = Tools()
    fleet = Fleet(waiting_agent(tools, 30), ["a", "b", "c"])

    async def main() -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await fleet.arun()

    asyncio.run(main())
    assert until(lambda: tools.finished == [30, 30, 30])


def test_a_fleet_in_a_task_group_with_a_failing_sibling_is_cancelled_whole() -> None:
    """From agronholm/anyio tests/test_taskgroups.py::test_failing_child_task_cancels_host, a fleet as the child."""
    tools = Tools()
    fleet = Fleet(waiting_agent(tools, 30), ["a", "b"])

    async def sibling() -> None:
        await a_until(lambda: len(tools.started) == 2)
        raise KeyError("sibling failed")

    async def main() -> None:
        with pytest.raises(ExceptionGroup) as caught:
            async with asyncio.TaskGroup() as group:
                group.create_task(fleet.arun())
                group.create_task(sibling())
        assert [type(e) for e in caught.value.exceptions] == [KeyError]

    asyncio.run(main())
    assert until(lambda: tools.finished == [30, 30])


def test_the_blocking_session_run_awaits_an_async_tool_when_called_inside_a_running_loop() -> None:
    """From agronholm/anyio tests/test_to_thread.py (sync code called where a loop runs): the blocking run
    awaits its async def tool on a loop of its own, not the caller's running one."""
    tools = Tools()

    async def main() -> str:
        return Session(waiting_agent(tools, 0.01)).run("go").response

    assert asyncio.run(main()) == "done: waited 0.01"


def test_the_blocking_fleet_run_works_when_called_inside_a_running_loop() -> None:
    """From agronholm/anyio tests/test_to_thread.py (sync code called where a loop runs), for a fleet."""
    tools = Tools()

    async def main() -> list[str]:
        return [r.response for r in Fleet(waiting_agent(tools, 0.01), ["a", "b"]).run()]

    assert asyncio.run(main()) == ["done: waited 0.01"] * 2


def test_a_blocking_session_run_on_anyios_worker_thread_returns_its_reply() -> None:
    """From agronholm/anyio tests/test_to_thread.py::test_run_in_thread_cancelled's plain round trip."""
    tools = Tools()
    session = Session(waiting_agent(tools, 0.01))

    async def main() -> str:
        result = await anyio.to_thread.run_sync(session.run, "go")
        return str(result.response)

    assert anyio.run(main) == "done: waited 0.01"
    session.close()


def test_an_async_tool_of_an_awaited_session_sees_the_callers_context_variables() -> None:
    """From agronholm/anyio tests/test_to_thread.py::test_contextvar_propagation (docs/async.md: the tool
    "still sees your context variables")."""
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")

    @tool
    async def whoami() -> str:
        """Say the request id."""
        return request_id.get()

    def reply(request: Any) -> Any:
        results = request.messages[-1].tool_results_blocks
        if results:
            return "id " + (results[0].content or "")
        return InferenceResponse.of_tool_calls([("t1", "whoami", {})])

    agent = Agent("ctx", provider=ScriptedProvider([reply], cycle=True), tools=[whoami])

    async def main() -> str:
        request_id.set("req-42")
        return (await Session(agent).arun("go")).response

    assert asyncio.run(main()) == "id req-42"


def test_move_on_after_around_aresume_journals_the_cancelled_run_before_going_on(tmp_path: Any) -> None:
    """From agronholm/anyio tests/test_taskgroups.py::test_move_on_after, around a session's aresume: as
    under one ``task.cancel()`` (tests/agents/test_async_waiting.py), the store says ``failed`` when the
    code after the scope runs. Before the fix AnyIO's repeated cancel left it ``running`` then."""
    resumed = threading.Event()

    @tool
    async def slow_after_asking() -> str:
        """Ask, then work a long time."""
        answer = interrupt("go?")
        resumed.set()
        await asyncio.sleep(30)
        return str(answer)

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("s1", "slow_after_asking", {})]), "done"])
    with RunStore(tmp_path / "runs.sqlite") as store:
        session = Session(Agent("a", provider=provider, tools=[slow_after_asking]), store=store)

        async def main() -> tuple[str, str]:
            asked = await session.arun("go")
            with anyio.move_on_after(0.3):
                await session.aresume(session.id, answer="yes")
            return asked.status, store.get(session.id).status

        assert asyncio.run(main()) == ("suspended", "failed")
        assert resumed.is_set() and not session._busy.locked()
