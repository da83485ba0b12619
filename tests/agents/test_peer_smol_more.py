"""More of Hugging Face smolagents' own tests, ported to our agent layer: managed agents
(ours: delegation through an AgentRegistry), the agent's memory (ours: the result's trace
and the session's history) and the final answer's structure (ours: output_schema). The
models are played by the scripted provider."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from wingman_actors import Agent, Session, tool
from wingman_actors.core import InferenceResponse, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.events import Event, EventBus
from wingman_actors.orchestration import AgentRegistry
from wingman_actors.testing import ScriptedProvider


def calls(*specs: tuple[str, str, dict[str, Any]], usage: Usage | None = None) -> InferenceResponse:
    response = InferenceResponse.of_tool_calls(list(specs))
    return response.model_copy(update={"usage": usage}) if usage is not None else response


def delegate(*tasks: dict[str, Any], call_id: str = "d1") -> InferenceResponse:
    return calls((call_id, "delegate", {"tasks": list(tasks)}), usage=Usage(input_tokens=5, output_tokens=5))


def answer(text: str, tokens: int = 7) -> InferenceResponse:
    return InferenceResponse.of_text(text, usage=Usage(input_tokens=tokens, output_tokens=tokens))


@tool
def web_search(query: str) -> str:
    """Search the web.

    Args:
        query: what to look for
    """
    return f"results for {query}"


def team(web_provider: ScriptedProvider, **more: Agent) -> AgentRegistry:
    registry = AgentRegistry()
    registry.register(Agent("web_agent", instructions="You search.", provider=web_provider, tools=[web_search]),
                      description="Runs web searches for you")
    for name, agent in more.items():
        registry.register(agent, description=f"the {name}")
    return registry


# -- managed agents: delegation ----------------------------------------------------------


def test_a_managers_system_prompt_lists_its_managed_agents_and_theirs_does_not() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_agent_description_gets_correctly_inserted_in_system_prompt."""
    web = Agent("web_agent", instructions="You search.", provider=ScriptedProvider([]), tools=[web_search])
    registry = AgentRegistry()
    registry.register(web, description="Runs web searches for you")
    manager = Agent("manager", instructions="You manage.", provider=ScriptedProvider(["ok"]), delegates=registry)

    assert manager.system_prompt.startswith("You manage.")
    assert "Available agents" in manager.system_prompt and "- web_agent: Runs web searches for you" in manager.system_prompt
    assert web.system_prompt == "You search."
    provider = manager.provider
    assert isinstance(provider, ScriptedProvider)
    Session(manager).run("go")
    assert "web_agent" in (provider.requests[0].instructions or "")
    assert {t.name for t in provider.requests[0].tools} == {"list_agents", "delegate"}


def test_a_manager_gets_its_managed_agents_answer_and_pays_for_its_calls() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_multiagents (the manager hands a
    task to a managed agent, which searches and answers; the manager answers from it)."""
    web = ScriptedProvider([calls(("w1", "web_search", {"query": "LLM"}), usage=Usage(input_tokens=3, output_tokens=3)),
                            answer("Found: results for LLM", 4)])
    manager_model = ScriptedProvider([delegate({"agent": "web_agent", "task": "search LLM"}), answer("Report: LLM", 6)])
    manager = Agent("manager", provider=manager_model, delegates=team(web))

    result = Session(manager).run("Write a report on LLMs")

    assert result.response == "Report: LLM"
    assert json.loads(result.tool_calls[0].output) == [{"agent": "web_agent", "result": "Found: results for LLM"}]
    [child] = result.child_runs
    assert (child.agent, child.task, child.depth) == ("web_agent", "search LLM", 1)
    assert child.result is not None and [c.output for c in child.result.tool_calls] == ["results for LLM"]
    # the manager's two calls (5+6 in) and the managed agent's two (3+4 in)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (18, 18)


def test_the_context_given_with_a_task_reaches_the_managed_agent_before_the_task() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_additional_args_added_to_task
    (for a managed agent: the context travels with the task)."""
    web = ScriptedProvider(["done"])
    manager = Agent("manager", provider=ScriptedProvider([
        delegate({"agent": "web_agent", "task": "summarise", "context": "The user is Ada."}), "ok"]),
        delegates=team(web))
    Session(manager).run("go")
    assert [m.text for m in web.requests[0].messages] == ["The user is Ada.", "summarise"]


def test_a_managed_agent_that_fails_comes_back_as_an_error_entry_and_the_manager_answers() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_multiagents (a managed agent that fails)."""
    web = ScriptedProvider([AgentError("search backend down", kind=ErrorKind.AGENT)])
    manager = Agent("manager", provider=ScriptedProvider([delegate({"agent": "web_agent", "task": "x"}),
                                                          "The search failed."]), delegates=team(web))
    result = Session(manager).run("go")

    [entry] = json.loads(result.tool_calls[0].output)
    assert entry["agent"] == "web_agent" and "search backend down" in entry["error"]
    assert result.response == "The search failed."
    assert result.child_runs[0].error is not None


def test_a_task_for_an_agent_that_is_not_managed_is_an_error_naming_the_ones_that_are() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_multiagents (a task for a name
    that is no team member is an error observation listing the members)."""
    manager = Agent("manager", provider=ScriptedProvider([delegate({"agent": "nobody", "task": "x"}), "ok"]),
                    delegates=team(ScriptedProvider([])))
    result = Session(manager).run("go")
    [call] = result.tool_calls
    assert "nobody" in call.output and "web_agent" in call.output
    assert result.response == "ok"


def test_two_managed_agents_called_in_one_step_both_answer_in_task_order() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_multiagents (several managed agents)."""
    coder = Agent("coder", provider=ScriptedProvider(["code written"], latency_s=0.05))
    web = ScriptedProvider(["searched"], latency_s=0.1)
    manager = Agent("manager", provider=ScriptedProvider([
        delegate({"agent": "web_agent", "task": "search"}, {"agent": "coder", "task": "code"}), "both done"]),
        delegates=team(web, coder=coder))
    result = Session(manager).run("go")
    assert json.loads(result.tool_calls[0].output) == [
        {"agent": "web_agent", "result": "searched"}, {"agent": "coder", "result": "code written"}]
    assert [c.agent for c in result.child_runs] == ["web_agent", "coder"]


def test_a_manager_awaited_with_arun_delegates_as_a_blocking_one_does() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_multiagents (the manager awaited)."""
    web = ScriptedProvider(["async found"])
    manager = Agent("manager", provider=ScriptedProvider([delegate({"agent": "web_agent", "task": "x"}), "ok"]),
                    delegates=team(web))
    result = asyncio.run(Session(manager).arun("go"))
    assert json.loads(result.tool_calls[0].output) == [{"agent": "web_agent", "result": "async found"}]
    assert result.child_runs[0].result is not None


@pytest.fixture
def bus() -> Iterator[EventBus]:
    with EventBus() as events:
        yield events


def test_a_managed_agents_run_is_seen_live_by_the_managers_hooks_with_its_depth_and_parent(bus: EventBus) -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_step_callbacks of a managed agent
    (the manager's callbacks see its team's work)."""
    seen: list[Event] = []
    bus.subscribe(["subagent_start", "subagent_stop"], seen.append)
    manager = Agent("manager", provider=ScriptedProvider([delegate({"agent": "web_agent", "task": "x"}), "ok"]),
                    delegates=team(ScriptedProvider([answer("found", 2)])), events=bus)
    session = Session(manager)
    session.run("go")
    bus.close()

    assert [(e.kind, e.agent, e.depth, e.parent_session_id) for e in seen] == [
        ("subagent_start", "web_agent", 1, session.id), ("subagent_stop", "web_agent", 1, session.id)]
    assert seen[1].status == "succeeded" and seen[1].usage == Usage(input_tokens=2, output_tokens=2)


# -- memory: the trace and the history ---------------------------------------------------


def test_a_runs_trace_lists_each_model_step_and_each_tool_call_with_its_step_input_and_output() -> None:
    """Ported from huggingface/smolagents tests/test_memory.py::test_get_full_steps (every step's
    model output, tool calls and observations)."""
    provider = ScriptedProvider([calls(("c1", "web_search", {"query": "a"}), ("c2", "web_search", {"query": "b"})),
                                 "done"])
    result = Session(Agent("a", provider=provider, tools=[web_search])).run("go")

    assert [(t.kind, t.step, t.name) for t in result.trace] == [
        ("model", 1, "scripted"), ("tool", 1, "web_search"), ("tool", 1, "web_search"), ("model", 2, "scripted")]
    assert [(t.input, t.output) for t in result.trace if t.kind == "tool"] == [
        ({"query": "a"}, "results for a"), ({"query": "b"}, "results for b")]
    assert result.trace[-1].output == "done" and all(t.duration_s >= 0 for t in result.trace)


def test_a_new_session_given_an_old_sessions_history_continues_the_conversation() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_reset_conversations (a run with
    reset=False continues from the agent's memory; ours: a session given the history)."""
    agent = Agent("a", provider=ScriptedProvider(["Hi Ada.", "You are Ada."]))
    first = Session(agent)
    first.run("I am Ada.")
    second = Session(agent, history=first.history)
    assert second.run("Who am I?").response == "You are Ada."
    provider = agent.provider
    assert isinstance(provider, ScriptedProvider)
    assert [m.text for m in provider.requests[1].messages] == ["I am Ada.", "Hi Ada.", "Who am I?"]
    assert len(first.history) == 2  # the old session's memory is its own


# -- the final answer's structure --------------------------------------------------------


class Report(BaseModel):
    title: str
    score: int


def test_a_structured_final_answer_after_a_tool_step_is_the_validated_object() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_response_format.py::TestResponseFormatAsModel::test_pydantic_model."""
    provider = ScriptedProvider([calls(("c1", "web_search", {"query": "x"})), '{"title": "X", "score": 3}'])
    result = Session(Agent("a", provider=provider, tools=[web_search], output_schema=Report)).run("go")
    assert result.output == Report(title="X", score=3)
    assert provider.requests[0].output_schema is not None and "score" in json.dumps(provider.requests[0].output_schema)


def test_a_final_answer_that_does_not_match_its_schema_is_sent_back_once_then_fails_clearly() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_final_answer_checks (a final
    answer the checks refuse is an error the model sees; the run fails when it persists)."""
    provider = ScriptedProvider(['{"title": "X"}', '{"title": "X", "score": "high"}'])
    with pytest.raises(AgentError, match=r"does not match the output schema after one corrective retry") as caught:
        Session(Agent("a", provider=provider, output_schema=Report)).run("go")
    assert caught.value.kind is ErrorKind.INVALID
    assert "score" in (provider.requests[1].messages[-1].text or "")  # the correction named the field


# -- the agent's configuration -----------------------------------------------------------


def test_changing_an_agents_tools_makes_a_new_agent_and_leaves_the_first_as_it_was() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_change_tools_after_init
    (smolagents lets agent.tools be changed in place; our Agent is immutable:
    with_overrides gives a variant)."""

    @tool
    def fake_tool_1() -> str:
        """Tool 1."""
        return "1"

    @tool
    def fake_tool_2() -> str:
        """Tool 2."""
        return "2"

    first = Agent("a", provider=ScriptedProvider(["ok"]), tools=[fake_tool_1])
    second = first.with_overrides(tools=[fake_tool_1, fake_tool_2])
    assert first.tool_registry.names == ["fake_tool_1"]
    assert second.tool_registry.names == ["fake_tool_1", "fake_tool_2"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.tools = [fake_tool_2]  # type: ignore[misc]


@pytest.mark.parametrize("steps", [0, -1])
def test_max_steps_below_one_is_refused_when_the_agent_is_made(steps: int) -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_fails_max_steps (the limit a run is
    held to; one below 1 is refused when the agent is made)."""
    with pytest.raises(ValueError, match=rf"agent 'a': max_steps must be >= 1, got {steps}"):
        Agent("a", max_steps=steps)
