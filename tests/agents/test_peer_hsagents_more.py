"""Haystack's agent tool-selection tests (test/components/agents/test_agent.py::TestAgentToolSelection:
``agent.run(tools=[...])`` picks tools per run), ported to ``Agent(prepare=...)`` returning
``Prepared(tools=...)``: names of the agent's own tools, new Tool objects, None keeping the
agent's, and the errors for a name the agent does not have or a bare string. Models are played
by the scripted provider."""

from __future__ import annotations

from typing import Any

import pytest

from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Prepared, RunContext
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
