"""Haystack's agent tests about an Agent inside a pipeline, its time limit and its breakpoints
(test/components/agents/test_agent.py, test_agent_time_limit.py,
test_agent_breakpoints_inside_pipeline.py), ported to agent nodes of a formation (threads
backend), run timeouts of a session, and a journalled run resumed after a later node failed.
Models are played by the scripted provider."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import Counter
from wingman_actors import Agent, Formation, Session, tool
from wingman_actors.core import InferenceResponse, Usage
from wingman_actors.errors import AgentError, ErrorKind, FormationRuntimeError
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


def calls(*specs: tuple[str, str, dict[str, Any]]) -> InferenceResponse:
    return InferenceResponse.of_tool_calls(list(specs)).model_copy(update={"usage": Usage(input_tokens=5, output_tokens=1)})


def text(answer: str) -> InferenceResponse:
    return InferenceResponse.of_text(answer, usage=Usage(input_tokens=7, output_tokens=3))


RAN = Counter()


@tool
def weather_tool(location: str) -> str:
    """Provides weather information for a given location."""
    RAN.hit(("weather", location))
    return f"{location}: sunny, 14 degrees"


class Forecast(BaseModel):
    city: str
    temperature: int


def test_an_agent_node_runs_its_tool_loop_between_two_function_nodes() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_agent_in_pipeline (a prompt
    builder before the agent, a component reading its last message after it)."""
    provider = ScriptedProvider([calls(("c1", "weather_tool", {"location": "Rome"})), text("Sunny in Rome.")])
    formation = (
        Formation("weather")
        .add_function("ask", lambda city: f"What is the weather in {city}?")
        .add_agent("agent", Agent("forecaster", provider=provider, tools=[weather_tool]))
        .add_function("shout", lambda answer: answer.upper())
        .connect("ask", "agent")
        .connect("agent", "shout")
    )

    result = formation.run("Rome", timeout=30)

    assert result.output == "SUNNY IN ROME."
    assert provider.requests[0].messages[0].text == "What is the weather in Rome?"
    assert result.nodes["agent"].usage.input_tokens == 12  # both model calls of the node's session


def test_an_agent_nodes_structured_output_reaches_the_next_node_as_the_object() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_run_with_response_format
    inside a pipeline (the structured reply is what the next component receives)."""
    provider = ScriptedProvider([calls(("c1", "weather_tool", {"location": "Oslo"})),
                                 text('{"city": "Oslo", "temperature": 3}')])

    def report(forecast: Forecast) -> str:
        return f"{forecast.city}: {forecast.temperature + 1}"

    formation = (
        Formation("structured")
        .add_agent("agent", Agent("forecaster", provider=provider, tools=[weather_tool], output_schema=Forecast))
        .add_function("report", report)
        .connect("agent", "report")
    )

    assert formation.run("Oslo?", timeout=30).output == "Oslo: 4"


def test_an_agent_node_whose_tool_fails_lets_the_model_answer_and_the_run_succeeds() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_run_with_tool_invocation_failure
    (``raise_on_tool_invocation_failure=False``, our only behaviour)."""

    @tool
    def broken(location: str) -> str:
        """Always fails."""
        raise RuntimeError("service unavailable")

    provider = ScriptedProvider([calls(("c1", "broken", {"location": "Rome"})), text("I could not check.")])
    formation = Formation("f").add_agent("agent", Agent("a", provider=provider, tools=[broken]))

    result = formation.run("Rome?", timeout=30)

    assert (result.status, result.output) == ("succeeded", "I could not check.")
    [sent] = provider.requests[1].messages[-1].tool_results_blocks
    assert sent.is_error and "service unavailable" in (sent.content or "")


def test_a_run_timeout_stops_a_model_that_keeps_calling_tools() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent_time_limit.py::test_stops_before_tool_invocation_when_time_limit_expires.
    Haystack returns the messages so far with a warning when ``max_agent_time_seconds`` passes;
    ours fails the run with ``AgentError(timeout)`` saying how long it ran."""

    @tool
    def loop() -> str:
        """Return a loop marker."""
        return "looped"

    looping = ScriptedProvider([calls(("c", "loop", {}))], cycle=True)
    session = Session(Agent("a", provider=looping, tools=[loop], max_steps=10_000_000))

    with pytest.raises(AgentError, match=r"timed out after 0\.2s") as caught:
        session.run("Start", timeout=0.2)

    assert caught.value.kind is ErrorKind.TIMEOUT
    assert len(looping.requests) >= 1


@pytest.mark.parametrize("seconds", [0, -1.0])
def test_a_time_limit_that_is_not_positive_is_refused(seconds: float) -> None:
    """From deepset-ai/haystack test/components/agents/test_agent_time_limit.py::test_requires_positive_time_limit."""
    session = Session(Agent("a", provider=ScriptedProvider(["never"])))
    with pytest.raises(ValueError, match="> 0"):
        session.run("go", timeout=seconds)


def test_a_journalled_run_resumed_after_a_later_node_failed_does_not_call_the_agents_model_or_tools_again(
    store: RunStore,
) -> None:
    """From deepset-ai/haystack test/components/agents/test_agent_breakpoints_inside_pipeline.py (a pipeline
    resumed from its snapshot after the agent ran does not run the agent again)."""
    RAN.calls.clear()
    provider = ScriptedProvider([calls(("c1", "weather_tool", {"location": "Lima"})), text("Lima is sunny.")])
    fail = [True]

    def publish(answer: str) -> str:
        if fail:
            fail.pop()
            raise RuntimeError("publisher offline")
        return f"published: {answer}"

    def build() -> Formation:
        return (
            Formation("pub")
            .add_agent("agent", Agent("a", provider=provider, tools=[weather_tool]))
            .add_function("publish", publish)
            .connect("agent", "publish")
        )

    with pytest.raises(FormationRuntimeError, match="publisher offline") as failed:
        build().run("Lima?", store=store, timeout=30)
    assert failed.value.node == "publish" and failed.value.run_id is not None

    resumed = build().resume(failed.value.run_id, store=store)

    assert (resumed.status, resumed.output) == ("succeeded", "published: Lima is sunny.")
    assert len(provider.requests) == 2 and RAN.calls == {("weather", "Lima"): 1}
