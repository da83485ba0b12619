"""LangGraph ToolNode's and smolagents' tool-loop behaviours where the wire format matters,
ported to sessions over the Anthropic provider (the real SDK against a loopback server
speaking the Messages API, never the internet): parallel tool results paired by id in
one user turn, error results flagged, and a history a run left behind (a cancelled tool
step, stray calls after the step limit) sent as the API accepts it."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from tests.providers.test_anthropic import (  # make_provider: a fixture
    MakeProvider,
    make_provider,
    message_json,
)
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Middleware, RunContext
from wingman_actors.core import InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind

__all__ = ["make_provider"]  # a fixture


def tool_use(*calls: tuple[str, str, dict[str, Any]], input_tokens: int = 12) -> Reply:
    blocks = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
    return Reply.json(message_json(blocks, stop_reason="tool_use",
                                   usage={"input_tokens": input_tokens, "output_tokens": 6}))


def answer(text: str, input_tokens: int = 20) -> Reply:
    return Reply.json(message_json([{"type": "text", "text": text}],
                                   usage={"input_tokens": input_tokens, "output_tokens": 4}))


@tool
def tool1(some_val: int, some_other_val: str) -> str:
    """Tool 1 docstring."""
    if some_val == 0:
        raise ValueError("Test error")
    return f"{some_val} - {some_other_val}"


def roles_alternate(messages: list[dict[str, Any]]) -> bool:
    return all(a["role"] != b["role"] for a, b in itertools.pairwise(messages))


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_parallel_results_go_back_in_one_user_turn_paired_by_id_with_the_error_flagged(
    driver: str, make_provider: MakeProvider, loopback: LoopbackServer,
) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_tool_node.py::test_tool_node_error_handling
    (one ToolMessage per call, status="error" for the failed one), over the Anthropic wire."""
    loopback.queue(tool_use(("toolu_1", "tool1", {"some_val": 1, "some_other_val": "foo"}),
                            ("toolu_2", "tool1", {"some_val": 0, "some_other_val": "bar"})))
    loopback.queue(answer("One worked."))
    session = Session(Agent("a", provider=make_provider(), tools=[tool1]))
    result = session.run("go") if driver == "run" else asyncio.run(session.arun("go"))

    assert result.response == "One worked."
    second = loopback.requests[1].json()["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert [(b["tool_use_id"], b["content"], b["is_error"]) for b in second[2]["content"]] == [
        ("toolu_1", "1 - foo", False), ("toolu_2", "Error: tool 'tool1' raised ValueError: Test error", True)]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (32, 10)


def test_stray_calls_after_the_step_limit_leave_a_history_the_api_takes_on_the_next_run(
    make_provider: MakeProvider, loopback: LoopbackServer,
) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_react_agent_parallel_tool_calls
    (remaining_steps run out while the model keeps calling tools with no steps left): the next request has no empty
    message, no call without its result, and alternating roles."""
    loopback.queue(tool_use(("toolu_1", "tool1", {"some_val": 1, "some_other_val": "x"})))
    loopback.queue(tool_use(("toolu_2", "tool1", {"some_val": 2, "some_other_val": "y"})))
    loopback.queue(answer("Fine."))
    session = Session(Agent("a", provider=make_provider(), tools=[tool1], max_steps=1))
    first = session.run("go")
    assert (first.response, first.max_steps_reached) == ("", True)

    assert session.run("and now?").response == "Fine."
    messages = loopback.requests[2].json()["messages"]
    assert roles_alternate(messages) and all(m["content"] for m in messages)
    used = {b["id"] for m in messages for b in m["content"] if b["type"] == "tool_use"}
    answered = {b["tool_use_id"] for m in messages for b in m["content"] if b["type"] == "tool_result"}
    assert used == answered == {"toolu_1"}


class CancelAtFirstStep(Middleware):
    def __init__(self) -> None:
        self.session: Session | None = None

    def after_model(self, ctx: RunContext, response: InferenceResponse) -> InferenceResponse | None:
        if self.session is not None:
            self.session.cancel("stopped by a step callback")
        return None


def test_a_tool_step_cut_by_a_cancel_is_sent_with_error_results_before_the_next_message(
    make_provider: MakeProvider, loopback: LoopbackServer,
) -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_interrupt (an interrupted agent's
    memory is reused by its next run), over the Anthropic wire."""
    loopback.queue(tool_use(("toolu_1", "tool1", {"some_val": 1, "some_other_val": "x"})))
    loopback.queue(answer("Again then."))
    stopper = CancelAtFirstStep()
    session = Session(Agent("a", provider=make_provider(), tools=[tool1], middleware=[stopper]))
    stopper.session = session
    with pytest.raises(AgentError) as caught:
        session.run("go")
    assert caught.value.kind is ErrorKind.CANCELLED
    stopper.session = None

    assert session.run("retry").response == "Again then."
    messages = loopback.requests[1].json()["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    result, text = messages[2]["content"]
    assert (result["type"], result["tool_use_id"], result["is_error"]) == ("tool_result", "toolu_1", True)
    assert "stopped by a step callback" in result["content"]
    assert text == {"type": "text", "text": "retry"}
