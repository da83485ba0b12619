"""Tokens spent by an agent before it failed count: in the session's error, in the node's
trace and in the run's usage (the calls were made and paid for)."""

from __future__ import annotations

import pytest

from tests.support.cuts import SPENT, calls_a_tool, look
from wingman_actors import Agent, Formation, Session
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind, FormationRuntimeError
from wingman_actors.formation import NodeFailure
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


class ProvidersOwnError(Exception):
    """An exception type the library does not own (a user's, a vendor SDK's)."""


def answers_once_then_raises_its_own_error() -> Agent:
    return Agent("researcher", provider=ScriptedProvider([calls_a_tool(), ProvidersOwnError("boom")]), tools=[look])


def test_a_session_failing_with_an_exception_the_library_does_not_own_leaves_that_exception_unchanged() -> None:
    with Session(answers_once_then_raises_its_own_error()) as session, pytest.raises(ProvidersOwnError) as caught:
        session.run("research x")
    assert not hasattr(caught.value, "usage")
    assert vars(caught.value) == {}


def test_an_agent_node_failing_with_a_users_exception_counts_its_tokens_without_changing_the_exception() -> None:
    seen: list[NodeFailure] = []

    def handle(failure: NodeFailure) -> str:
        seen.append(failure)
        return "handled"

    formation = (Formation("f").add_agent("research", answers_once_then_raises_its_own_error())
                 .add_function("handle", handle).connect("research", "handle", on_error=True))
    result = formation.run("x")
    assert result.outputs["handle"] == "handled"
    assert result.nodes["research"].usage == SPENT
    assert result.usage == SPENT
    assert isinstance(seen[0].error, ProvidersOwnError)
    assert vars(seen[0].error) == {}


def test_a_fleet_node_whose_item_fails_with_a_users_exception_counts_its_tokens_without_changing_it() -> None:
    def reply(request: InferenceRequest) -> InferenceResponse | BaseException:
        if "bad" in request.messages[0].text:
            return ProvidersOwnError("boom") if len(request.messages) > 1 else calls_a_tool()
        return InferenceResponse.of_text("ok", usage=SPENT)

    seen: list[NodeFailure] = []

    def handle(failure: NodeFailure) -> str:
        seen.append(failure)
        return "handled"

    agent = Agent("worker", provider=ScriptedProvider([reply], cycle=True), tools=[look])
    formation = (Formation("f").add_fleet("many", agent).add_function("handle", handle)
                 .connect("many", "handle", on_error=True))
    result = formation.run(["good", "bad"])
    assert result.nodes["many"].usage == SPENT + SPENT
    (item_error,) = seen[0].error.errors.values()  # type: ignore[attr-defined]
    assert isinstance(item_error, ProvidersOwnError)
    assert vars(item_error) == {}
