"""Awaited runs tell each tool call's end as it finishes, as blocking and streamed runs do
(tests/agents/test_peer_hsagents_more.py): of two calls of one step, the fast one's
``tool_end`` (event bus, ``astream`` event; a formation's ``agent_tool_result``) comes
while the slow one still runs. The slow tool is held by an event that only the fast
one's end sets: it reports, in its result, whether it was let go."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest

from wingman_actors import Agent, Formation, Session, tool
from wingman_actors.core import InferenceResponse, StreamEventType
from wingman_actors.events import EventBus
from wingman_actors.formation.events import FormationEventType
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import Tool

_HOLD_S = 10.0  # how long the slow tool waits to be let go before it gives up
LET_GO = "let go"
NEVER = "never let go: the fast call's end was not told while this one ran"


def tools(gate: threading.Event, kind: str) -> list[Tool]:
    """``fast`` returns at once; ``slow`` waits for ``gate`` (a blocking or an ``async def`` tool)."""

    @tool
    def fast() -> str:
        """Answer at once."""
        return "quick"

    if kind == "blocking":

        @tool
        def slow() -> str:
            """Wait until let go."""
            return LET_GO if gate.wait(_HOLD_S) else NEVER

        return [fast, slow]

    @tool(name="slow")
    async def slow_async() -> str:
        """Wait until let go."""
        for _ in range(int(_HOLD_S / 0.01)):
            if gate.is_set():
                return LET_GO
            await asyncio.sleep(0.01)
        return NEVER

    return [fast, slow_async]


def script() -> list[Any]:
    return [InferenceResponse.of_tool_calls([("c_slow", "slow", {}), ("c_fast", "fast", {})]), "done"]


@pytest.mark.parametrize("kind", ["blocking", "async"])
def test_an_awaited_run_tells_the_bus_a_fast_tools_end_while_a_slow_one_of_its_step_runs(kind: str) -> None:
    gate = threading.Event()
    ends: list[str] = []

    def on_end(event: Any) -> None:
        ends.append(event.call.id)
        if event.call.id == "c_fast":
            gate.set()

    provider = ScriptedProvider(script())
    with EventBus() as bus:
        bus.subscribe("tool_end", on_end, timeout=_HOLD_S)
        agent = Agent("a", provider=provider, tools=tools(gate, kind), events=bus)
        result = asyncio.run(Session(agent).arun("go"))
        bus.flush()
    assert [(c.id, c.output) for c in sorted(result.tool_calls, key=lambda c: c.id)] == [
        ("c_fast", "quick"), ("c_slow", LET_GO)
    ]
    assert ends == ["c_fast", "c_slow"]


@pytest.mark.parametrize("kind", ["blocking", "async"])
def test_an_async_stream_shows_a_fast_tools_end_while_a_slow_one_of_its_step_runs(kind: str) -> None:
    gate = threading.Event()
    provider = ScriptedProvider(script())
    session = Session(Agent("a", provider=provider, tools=tools(gate, kind)))
    starts: list[str] = []
    ends: list[tuple[str, str]] = []

    async def main() -> None:
        stream = session.astream("go")
        async for event in stream:
            if event.block is None:
                continue
            if event.type is StreamEventType.TOOL_START:
                starts.append(event.block.id or "")
            elif event.type is StreamEventType.TOOL_END:
                ends.append((event.block.tool_use_id or "", event.block.content or ""))
                if ends[-1][0] == "c_fast":
                    gate.set()
        assert stream.result().response == "done"

    asyncio.run(main())
    assert starts == ["c_slow", "c_fast"]
    assert ends == [("c_fast", "quick"), ("c_slow", LET_GO)]
    # the results go back to the model in call order, whatever order the calls ended in
    assert [b.content for b in provider.requests[1].messages[-1].tool_results_blocks] == [LET_GO, "quick"]


@pytest.mark.parametrize("kind", ["blocking", "async"])
def test_an_async_stream_left_after_one_tool_ended_while_another_runs_leaves_the_session_usable(kind: str) -> None:
    """As the blocking stream (test_peer_hsagents_more.py): the call still running is
    abandoned (an ``async def`` one cancelled), and the next run sends a valid conversation."""
    gate = threading.Event()
    provider = ScriptedProvider([*script()[:1], "next"])
    session = Session(Agent("a", provider=provider, tools=tools(gate, kind)))

    async def main() -> str:
        async with session.astream("go") as stream:
            async for event in stream:
                if event.type is StreamEventType.TOOL_END:
                    break  # c_fast ended; c_slow still runs
        gate.set()
        return (await session.arun("again")).response

    assert asyncio.run(main()) == "next"
    sent = provider.requests[-1].messages
    used = {b.id for m in sent for b in m.tool_calls}
    answered = {b.tool_use_id for m in sent for b in m.tool_results_blocks}
    assert used == answered == {"c_slow", "c_fast"}


def formation_of(gate: threading.Event, kind: str) -> Formation:
    agent = Agent("worker", provider=ScriptedProvider(script()), tools=tools(gate, kind))
    return Formation("f").add_agent("worker", agent)


def tool_results(gate: threading.Event, record: list[tuple[str, str]]) -> Callable[[Any], None]:
    def listen(event: Any) -> None:
        if event.type is FormationEventType.AGENT_TOOL_RESULT:
            record.append((event.data["id"], event.data["output"]))
            if event.data["id"] == "c_fast":
                gate.set()

    return listen


@pytest.mark.parametrize("kind", ["blocking", "async"])
def test_an_awaited_formation_tells_on_event_an_agent_nodes_fast_tool_result_while_a_slow_one_runs(
    kind: str,
) -> None:
    gate = threading.Event()
    results: list[tuple[str, str]] = []
    outcome = asyncio.run(formation_of(gate, kind).arun("go", on_event=tool_results(gate, results)))
    assert outcome.output == "done"
    assert results == [("c_fast", "quick"), ("c_slow", LET_GO)]


@pytest.mark.parametrize("kind", ["blocking", "async"])
def test_an_async_formation_stream_shows_an_agent_nodes_fast_tool_result_while_a_slow_one_runs(kind: str) -> None:
    gate = threading.Event()
    results: list[tuple[str, str]] = []
    listen = tool_results(gate, results)

    async def main() -> None:
        async for event in formation_of(gate, kind).astream("go"):
            listen(event)

    asyncio.run(main())
    assert results == [("c_fast", "quick"), ("c_slow", LET_GO)]
