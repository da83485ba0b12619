"""Tokens spent by an agent before it failed count: in the session's error, in the node's
trace and in the run's usage (the calls were made and paid for)."""

from __future__ import annotations

import pytest

from tests.support.cuts import SPENT, calls_a_tool, look
from wingman_actors import Agent, Formation, Session
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind, FormationRuntimeError
from wingman_actors.testing import ScriptedProvider


def answers_once_then_fails() -> Agent:
    refused = AgentError("the provider refused the second call", kind=ErrorKind.INVALID)
    return Agent("researcher", provider=ScriptedProvider([calls_a_tool(), refused]), tools=[look])


def test_a_session_that_fails_after_a_model_call_reports_its_usage_on_the_error() -> None:
    with Session(answers_once_then_fails()) as session, pytest.raises(AgentError) as caught:
        session.run("research x")
    assert caught.value.usage == SPENT


def test_a_failed_agent_node_counts_the_tokens_of_its_calls_in_its_trace_and_the_run() -> None:
    formation = Formation("f").add_agent("research", answers_once_then_fails(), on_error="skip")
    result = formation.run("x")
    assert result.nodes["research"].status == "skipped"
    assert result.nodes["research"].usage == SPENT
    assert result.usage == SPENT


def test_a_run_failed_by_an_agent_node_has_the_tokens_it_spent_in_the_node_trace() -> None:
    formation = Formation("f").add_agent("research", answers_once_then_fails())
    with pytest.raises(FormationRuntimeError) as caught:
        formation.run("x")
    assert caught.value.nodes["research"].usage == SPENT


def test_each_failed_attempt_of_a_retried_agent_node_counts_its_tokens() -> None:
    provider = ScriptedProvider([calls_a_tool(), RuntimeError("connection reset"), calls_a_tool(), "done"])
    agent = Agent("researcher", provider=provider, tools=[look])
    result = Formation("f").add_agent("research", agent, retries=1).run("x")
    assert result.output == "done"
    assert result.nodes["research"].usage.input_tokens > 2 * SPENT.input_tokens


def test_a_failed_fleet_node_counts_the_tokens_of_its_items_that_succeeded_and_failed() -> None:
    def reply(request: InferenceRequest) -> InferenceResponse | BaseException:
        if "bad" in request.messages[0].text:
            if len(request.messages) > 1:
                return AgentError("refused", kind=ErrorKind.INVALID)
            return calls_a_tool()
        return InferenceResponse.of_text("ok", usage=SPENT)

    agent = Agent("worker", provider=ScriptedProvider([reply], cycle=True), tools=[look])
    formation = Formation("f").add_fleet("many", agent, on_error="skip")
    result = formation.run(["good", "bad"])
    assert result.nodes["many"].status == "skipped"
    assert result.nodes["many"].usage == SPENT + SPENT
