"""Haystack's agent tool-selection tests (test/components/agents/test_agent.py::TestAgentToolSelection:
``agent.run(tools=[...])`` picks tools per run), ported to ``Agent(prepare=...)`` returning
``Prepared(tools=...)``: names of the agent's own tools, new Tool objects, None keeping the
agent's, and the errors for a name the agent does not have or a bare string. Then its ToolInvoker
tests of a parallel step streamed (each result as it is ready) and of the sync and async runs
giving the model the same results. Models are played by the scripted provider."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.support.peers import until
from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Prepared, RunContext
from wingman_actors.core import InferenceResponse, StreamEventType
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider


@tool
def weather_tool(location: str) -> str:
    """Provides weather information for a given location."""
    return f"{location}: sunny"


@tool
def component_tool(text: str) -> str:
    """Cleans a text."""
    return text.strip()


def offered(agent_tools: list[Any], chosen: Any) -> list[str]:
    """The names of the tools the model was offered when ``prepare`` chose ``chosen``."""
    provider = ScriptedProvider(["ok"])

    def prepare(ctx: RunContext) -> Prepared:
        return Prepared(tools=chosen)

    Session(Agent("a", provider=provider, tools=agent_tools, prepare=prepare)).run("go")
    return [d.name for d in provider.requests[0].tools]


def test_a_run_may_offer_only_the_tools_it_names() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::TestAgentToolSelection::test_tool_selection_by_name."""
    assert offered([weather_tool, component_tool], ["weather_tool"]) == ["weather_tool"]


def test_a_run_may_offer_a_tool_the_agent_was_not_given() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::TestAgentToolSelection::test_tool_selection_new_tool."""
    assert offered([weather_tool], [component_tool]) == ["component_tool"]


def test_no_selection_offers_every_tool_of_the_agent_in_order() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::TestAgentToolSelection::test_tool_selection_existing_tools."""
    assert offered([weather_tool, component_tool], None) == ["weather_tool", "component_tool"]


def test_an_empty_selection_offers_no_tools() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::TestAgentToolSelection (an empty list of tools)."""
    assert offered([weather_tool, component_tool], []) == []


@pytest.mark.parametrize("agent_tools", [[weather_tool, component_tool], []])
def test_a_name_the_agent_does_not_have_fails_the_run_naming_it_and_the_tools_there_are(agent_tools: list[Any]) -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::TestAgentToolSelection::test_tool_selection_invalid_tool_name
    and test_tool_selection_no_tools_configured."""
    with pytest.raises(AgentError, match=r"\['invalid_tool_name'\] the agent does not have; its tools: \[") as caught:
        offered(agent_tools, ["invalid_tool_name"])
    assert caught.value.kind is ErrorKind.INVALID
    assert all(repr(t.name) in str(caught.value) for t in agent_tools)


def test_a_bare_string_as_the_selection_is_refused_saying_it_takes_a_list() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::TestAgentToolSelection::test_tool_selection_invalid_type."""
    with pytest.raises(TypeError, match=r"takes a list of tools or names"):
        Prepared(tools="weather_tool")


def test_streamed_tool_starts_come_in_call_order_and_each_end_as_its_call_finishes() -> None:
    """From deepset-ai/haystack test/components/tools/test_tool_invoker.py::test_parallel_tool_calling_with_streaming_callback
    (the callback gets every tool result of a parallel step as it is ready; here the first call ends last,
    and only once the stream has shown the end of the third)."""
    gate = threading.Event()

    @tool
    def slow(n: int) -> str:
        """Call 0 waits until the stream has shown call 2's end."""
        if n == 0 and not gate.wait(5):
            return "the stream never showed call 2's end while call 0 ran"
        return f"d{n}"

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([(f"c{n}", "slow", {"n": n}) for n in range(3)]), "ok"])
    starts: list[str] = []
    ends: list[str] = []
    for event in Session(Agent("a", provider=provider, tools=[slow])).run_stream("go"):
        if event.block is None:
            continue
        if event.type is StreamEventType.TOOL_START:
            starts.append(event.block.id or "")
        elif event.type is StreamEventType.TOOL_END:
            ends.append(event.block.tool_use_id or "")
            if ends[-1] == "c2":
                gate.set()

    assert starts == ["c0", "c1", "c2"]
    assert set(ends) == {"c0", "c1", "c2"} and ends.index("c2") < ends.index("c0")
    assert [b.content for b in provider.requests[1].messages[-1].tool_results_blocks] == ["d0", "d1", "d2"]


def test_a_stream_left_after_one_tool_ended_while_another_runs_leaves_the_session_usable() -> None:
    """From deepset-ai/haystack test/components/tools/test_tool_invoker.py::test_parallel_tool_calling_with_streaming_callback
    (a consumer that stops listening part-way through a parallel step): the call still running is
    abandoned, its thread ends when the tool returns, and the next run sends a valid conversation."""
    release = threading.Event()
    returned = threading.Event()

    @tool
    def step(n: int) -> str:
        """Call 0 blocks until released."""
        if n == 0:
            release.wait(10)
            returned.set()
        return f"d{n}"

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([(f"c{n}", "step", {"n": n}) for n in range(2)]), "next"])
    session = Session(Agent("a", provider=provider, tools=[step]))
    with session.run_stream("go") as stream:
        for event in stream:
            if event.type is StreamEventType.TOOL_END:
                break  # c1 ended; c0 still runs
    release.set()
    assert until(returned.is_set, within=10)

    assert session.run("again").response == "next"
    sent = provider.requests[-1].messages
    used = {b.id for m in sent for b in m.tool_calls}
    answered = {b.tool_use_id for m in sent for b in m.tool_results_blocks}
    assert used == answered == {"c0", "c1"}


@tool
def city_weather(location: str) -> dict[str, Any]:
    """Weather of a city; fails for "boom"."""
    if location == "boom":
        raise RuntimeError("This tool always fails.")
    return {"name": "München", "weather": "sunny"}


@pytest.mark.parametrize("driver", ["run", "arun", "astream"])
def test_every_way_of_running_sends_the_model_the_same_results_and_errors(driver: str) -> None:
    """From deepset-ai/haystack test/components/tools/test_tool_invoker.py (TestToolInvoker's sync tests
    and their ``run_async`` twins): a result, an unknown tool, a raising tool and bad arguments."""
    provider = ScriptedProvider([
        InferenceResponse.of_tool_calls([("c1", "city_weather", {"location": "Berlin"}), ("c2", "nope", {}),
                                         ("c3", "city_weather", {"location": "boom"}), ("c4", "city_weather", {})]),
        "done",
    ])
    session = Session(Agent("a", provider=provider, tools=[city_weather]))
    if driver == "run":
        result = session.run("go")
    elif driver == "arun":
        result = asyncio.run(session.arun("go"))
    else:
        async def streamed() -> Any:
            stream = session.astream("go")
            async for _ in stream:
                pass
            return stream.result()

        result = asyncio.run(streamed())

    assert result.response == "done"
    assert [(b.tool_use_id, b.is_error, b.content) for b in provider.requests[1].messages[-1].tool_results_blocks] == [
        ("c1", False, '{"name": "München", "weather": "sunny"}'),
        ("c2", True, "Error: unknown tool 'nope'; available tools: city_weather"),
        ("c3", True, "Error: tool 'city_weather' raised RuntimeError: This tool always fails."),
        ("c4", True, "Error: invalid arguments for tool 'city_weather': location: Field required. "
                     "Call it again with arguments matching its input schema."),
    ]
