"""Tokens an agent node spent before its attempt was cut count: a node whose timer fired,
or whose run was cancelled or timed out, while its session was still working (the model
calls it had made were paid for). The trace has them as soon as the run ends, whenever
the cut session gives up."""

from __future__ import annotations

import threading
import time

import pytest

from tests.support.cuts import SPENT, calls_a_tool, look
from wingman_actors import Agent, Formation, tool
from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.testing import ScriptedProvider


def stuck_after_one_call(entered: threading.Event, release: threading.Event) -> Agent:
    """An agent whose first model call answers (spending SPENT) and whose second hangs
    until ``release``."""

    def reply(request: InferenceRequest) -> InferenceResponse:
        if len(request.messages) == 1:
            return calls_a_tool()
        entered.set()
        release.wait(10)
        return InferenceResponse.of_text("late", usage=SPENT)

    return Agent("researcher", provider=ScriptedProvider([reply], cycle=True), tools=[look])


def test_an_agent_node_that_timed_out_counts_the_tokens_it_spent_before_its_timer_fired(
    gate: tuple[threading.Event, threading.Event]
) -> None:
    entered, release = gate
    formation = Formation("f").add_agent("research", stuck_after_one_call(entered, release), timeout=1.0,
                                         on_error="skip")
    result = formation.run("x")
    trace = result.nodes["research"]
    assert trace.status == "skipped"
    assert "timed out" in (trace.error or "")
    assert trace.usage == SPENT
    assert result.usage == SPENT


def test_a_run_failed_by_an_agent_nodes_timeout_has_its_tokens_in_the_error_traces(
    gate: tuple[threading.Event, threading.Event]
) -> None:
    entered, release = gate
    formation = Formation("f").add_agent("research", stuck_after_one_call(entered, release), timeout=1.0)
    with pytest.raises(FormationRuntimeError) as caught:
        formation.run("x")
    assert caught.value.nodes["research"].usage == SPENT


def test_an_agent_node_cut_by_the_run_timeout_counts_the_tokens_it_spent(
    gate: tuple[threading.Event, threading.Event]
) -> None:
    entered, release = gate
    formation = Formation("f").add_agent("research", stuck_after_one_call(entered, release))
    with pytest.raises(FormationRuntimeError) as caught:
        formation.run("x", timeout=1.5)
    trace = caught.value.nodes["research"]
    assert (trace.status, trace.visits) == ("cancelled", 1)
    assert trace.usage == SPENT


def test_an_agent_node_cut_by_a_cancel_counts_the_tokens_it_spent_in_the_cancelled_runs_traces(
    gate: tuple[threading.Event, threading.Event]
) -> None:
    entered, release = gate
    formation = Formation("f").add_agent("research", stuck_after_one_call(entered, release))
    events: list[object] = []
    with formation.start(on_event=events.append) as running:
        future = running.submit("x")
        assert entered.wait(5)
        time.sleep(0.05)
        assert running.cancel(future.run_id) is True
    cancelled = next(e for e in events if getattr(e, "type", None) == "run_cancelled")
    trace = cancelled.data["nodes"]["research"]  # type: ignore[attr-defined]
    assert trace.status == "cancelled"
    assert trace.usage == SPENT


def test_a_fleet_node_that_timed_out_counts_the_tokens_of_its_finished_and_cut_items(
    gate: tuple[threading.Event, threading.Event]
) -> None:
    entered, release = gate

    def reply(request: InferenceRequest) -> InferenceResponse:
        if "quick" in request.messages[0].text:
            return InferenceResponse.of_text("done", usage=SPENT)
        if len(request.messages) == 1:
            return calls_a_tool()
        entered.set()
        release.wait(10)
        return InferenceResponse.of_text("late", usage=SPENT)

    agent = Agent("worker", provider=ScriptedProvider([reply], cycle=True), tools=[look])
    formation = Formation("f").add_fleet("many", agent, timeout=1.0, on_error="skip")
    result = formation.run(["quick", "slow"])
    trace = result.nodes["many"]
    assert trace.status == "skipped"
    assert entered.is_set()
    assert trace.usage == SPENT + SPENT
    assert result.usage == SPENT + SPENT


def test_an_agent_node_cut_by_a_cancel_whose_session_gives_up_at_once_counts_its_tokens_and_time_once(
    gate: tuple[threading.Event, threading.Event]
) -> None:
    entered, release = gate

    @tool
    def wait_for_data() -> str:
        """Wait for the data (hangs: the cancel abandons the call, and the session ends at once)."""
        entered.set()
        release.wait(10)
        return "late"

    first = InferenceResponse(content=[ContentBlock.tool_use_block("w1", "wait_for_data", {})],
                              stop_reason="tool_use", usage=SPENT)
    agent = Agent("researcher", provider=ScriptedProvider([first, "never"]), tools=[wait_for_data])
    events: list[object] = []
    with Formation("f").add_agent("research", agent).start(on_event=events.append) as running:
        future = running.submit("x")
        assert entered.wait(5)
        time.sleep(0.05)
        assert running.cancel(future.run_id) is True
        time.sleep(0.3)  # the cut session's own error reaches the runtime meanwhile
    cancelled = next(e for e in events if getattr(e, "type", None) == "run_cancelled")
    trace = cancelled.data["nodes"]["research"]  # type: ignore[attr-defined]
    assert (trace.status, trace.attempts) == ("cancelled", 1)
    assert trace.usage == SPENT
    assert trace.duration_s < 1.0
