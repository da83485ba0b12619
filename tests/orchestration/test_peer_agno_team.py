"""Behaviours of agno's team tests (libs/agno/tests/unit/team/), ported to our cooperating
agents: a leader agent with an AgentRegistry of members (agno's Team) hands tasks out
through ``delegate`` (route: one member; collaborate/broadcast: several at once), and
gets each member's answer back. Covered: results in task order, concurrency, usage summed
over members, unknown and duplicate members, a failing member, an empty answer, members'
structured outputs, fresh member sessions, sub-agent events, and cancelling or timing out
a leader while a member is stuck (agno's cascade cancel). Models are scripted."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from tests.agents.test_peer_agno import calls, text
from tests.support.peers import InFlight
from wingman_actors import Agent, Session, tool
from wingman_actors.core import InferenceRequest, InferenceResponse, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.events import Event, EventBus
from wingman_actors.orchestration import AgentRegistry
from wingman_actors.testing import ScriptedProvider


def delegate(*tasks: tuple[str, str], usage: Usage | None = None, call_id: str = "d1") -> InferenceResponse:
    """A leader's answer handing ``tasks`` (agent, task) out."""
    return calls((call_id, "delegate", {"tasks": [{"agent": a, "task": t} for a, t in tasks]}), usage=usage)


def answers(result: Any) -> list[dict[str, Any]]:
    """The decoded answer of a run's first delegate call."""
    decoded: list[dict[str, Any]] = json.loads(result.tool_calls[0].output)
    return decoded


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown: lets a stuck member's abandoned tool thread end."""
    event = threading.Event()
    yield event
    event.set()


# -- route and collaborate ---------------------------------------------------------------


def test_a_leader_routes_a_task_to_one_member_and_answers_from_its_result() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_team_mode.py (route mode: one member
    answers, the leader relays it)."""
    registry = AgentRegistry()
    registry.register(Agent("translator", provider=ScriptedProvider(["Bonjour"])), description="Translates to French.")
    leader_model = ScriptedProvider([delegate(("translator", "Translate 'hello'")), "It is 'Bonjour'."])
    result = Session(Agent("leader", provider=leader_model, delegates=registry)).run("French for hello?")

    assert answers(result) == [{"agent": "translator", "result": "Bonjour"}]
    assert result.response == "It is 'Bonjour'."
    assert [(c.agent, c.task, c.result.response if c.result else None) for c in result.child_runs] == [
        ("translator", "Translate 'hello'", "Bonjour")]


def test_a_leader_hands_tasks_to_several_members_at_once_and_gets_answers_in_task_order() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_task_tools_parallel_events.py (members
    of a collaborate/broadcast team run concurrently)."""
    flight = InFlight()
    both = threading.Barrier(2, timeout=5)

    def member(answer: str, delay: float) -> Any:
        def reply(_: InferenceRequest) -> str:
            with flight:
                both.wait()
                time.sleep(delay)
            return answer
        return reply

    registry = AgentRegistry()
    registry.register(Agent("slow", provider=ScriptedProvider([member("slow answer", 0.05)])), description="Slow.")
    registry.register(Agent("fast", provider=ScriptedProvider([member("fast answer", 0.0)])), description="Fast.")
    leader_model = ScriptedProvider([delegate(("slow", "a"), ("fast", "b")), "done"])
    result = Session(Agent("leader", provider=leader_model, delegates=registry)).run("go")

    assert flight.peak == 2
    assert answers(result) == [{"agent": "slow", "result": "slow answer"}, {"agent": "fast", "result": "fast answer"}]


def test_the_leaders_usage_includes_every_members_model_calls() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_team.py (team metrics add the members'
    to the leader's)."""
    registry = AgentRegistry()
    registry.register(Agent("a", provider=ScriptedProvider([text("A", 10, 1)])), description="A.")
    registry.register(Agent("b", provider=ScriptedProvider([
        calls(("t1", "echo", {"word": "x"}), usage=Usage(input_tokens=20, output_tokens=2)), text("B", 30, 3)]),
        tools=[echo]), description="B.")
    leader_model = ScriptedProvider([delegate(("a", "1"), ("b", "2"), usage=Usage(input_tokens=100, output_tokens=10)),
                                     text("done", 200, 20)])
    result = Session(Agent("leader", provider=leader_model, delegates=registry)).run("go")

    assert (result.usage.input_tokens, result.usage.output_tokens) == (360, 36)
    assert sum(c.usage.input_tokens for c in result.child_runs) == 60


@tool
def echo(word: str) -> str:
    """Echo a word."""
    return word


def test_a_members_structured_output_reaches_the_leader_as_a_json_object() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_delegate_member_schema.py (a member with
    an output schema answers with its object)."""

    class Price(BaseModel):
        item: str
        eur: float

    registry = AgentRegistry()
    registry.register(Agent("pricer", provider=ScriptedProvider(['{"item": "gpu", "eur": 1999.5}']), output_schema=Price),
                      description="Prices items.")
    leader_model = ScriptedProvider([delegate(("pricer", "price the gpu")), "ok"])
    result = Session(Agent("leader", provider=leader_model, delegates=registry)).run("go")
    assert answers(result) == [{"agent": "pricer", "result": {"item": "gpu", "eur": 1999.5}}]


# -- members that cannot answer ---------------------------------------------------------


def test_a_task_for_an_unknown_member_is_a_tool_error_naming_the_members_there_are() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_delegate_member_id_enum.py (the member id
    must be one of the team's)."""
    registry = AgentRegistry()
    registry.register(Agent("writer", provider=ScriptedProvider(["never"])), description="Writes.")
    leader_model = ScriptedProvider([delegate(("editor", "edit this")), "I will do it myself."])
    result = Session(Agent("leader", provider=leader_model, delegates=registry)).run("go")

    [call] = result.tool_calls
    assert call.is_error and "'editor'" in call.output and "writer" in call.output
    assert result.response == "I will do it myself."


def test_two_members_of_one_name_are_refused_when_the_second_is_registered() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_duplicate_member_ids.py (agno warns about
    duplicate member ids; ours refuses, naming the name and the fix)."""
    registry = AgentRegistry()
    registry.register(Agent("writer", provider=ScriptedProvider(["a"])), description="Writes.")
    with pytest.raises(ValueError, match=r"'writer' is already registered"):
        registry.register(Agent("writer", provider=ScriptedProvider(["b"])), description="Writes too.")


def test_a_failing_member_answers_the_leader_with_its_error_and_cancels_its_siblings(release: threading.Event) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_task_mode_retries.py (a member's failure
    reaches the leader, which decides what next)."""
    started = threading.Event()

    @tool
    def research(topic: str) -> str:
        """Research a topic (stuck until released)."""
        started.set()
        release.wait(5)
        return "late"

    def fail_after_sibling_started(_: InferenceRequest) -> Any:
        started.wait(5)
        return RuntimeError("model crashed")

    registry = AgentRegistry()
    registry.register(Agent("researcher", provider=ScriptedProvider([calls(("r1", "research", {"topic": "x"}))]),
                            tools=[research]), description="Researches.")
    registry.register(Agent("broken", provider=ScriptedProvider([fail_after_sibling_started])), description="Breaks.")
    leader_model = ScriptedProvider([delegate(("researcher", "dig"), ("broken", "fail")), "One member failed."])
    begun = time.perf_counter()
    result = Session(Agent("leader", provider=leader_model, delegates=registry)).run("go")

    assert time.perf_counter() - begun < 2
    researcher, broken = answers(result)
    assert broken == {"agent": "broken", "error": "RuntimeError: model crashed"}
    assert researcher["agent"] == "researcher" and "sibling task 1" in researcher["error"]
    assert result.response == "One member failed."


def test_a_member_that_answers_nothing_gives_the_leader_an_empty_result() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_member_response_empty.py. agno replaces
    an empty member answer with a message saying the task was NOT completed; ours hands the
    leader the member's answer as it is (an empty string), marked as a result, not an error."""
    registry = AgentRegistry()
    registry.register(Agent("mute", provider=ScriptedProvider([""])), description="Says nothing.")
    leader_model = ScriptedProvider([delegate(("mute", "say something")), "ok"])
    result = Session(Agent("leader", provider=leader_model, delegates=registry)).run("go")
    assert answers(result) == [{"agent": "mute", "result": ""}]


# -- member sessions ---------------------------------------------------------------------


def test_each_delegation_runs_a_fresh_member_session_that_sees_only_its_task() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_delegated_session_state_isolation.py and
    test_route_mode_history.py. agno can pass the team's history to a member; ours gives a
    member its task (and the task's context) only, in a new session each time."""
    member_model = ScriptedProvider(["first", "second"])
    registry = AgentRegistry()
    registry.register(Agent("m", provider=member_model), description="Member.")
    leader_model = ScriptedProvider([delegate(("m", "task one")), delegate(("m", "task two"), call_id="d2"), "done"])
    Session(Agent("leader", provider=leader_model, delegates=registry)).run("secret leader message")

    assert [[m.text for m in r.messages] for r in member_model.requests] == [["task one"], ["task two"]]


def test_member_runs_are_announced_live_with_their_depth_and_the_leaders_session(tmp_path: Any) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_delegate_child_run_id.py (a member's run
    is tied to the team run that started it)."""
    seen: list[Event] = []
    registry = AgentRegistry()
    registry.register(Agent("m", provider=ScriptedProvider(["done"])), description="Member.")
    with EventBus() as bus:
        bus.subscribe(["subagent_start", "subagent_stop"], seen.append)
        session = Session(Agent("leader", provider=ScriptedProvider([delegate(("m", "t")), "ok"]), delegates=registry,
                                events=bus))
        session.run("go")

    start, stop = seen
    assert (start.kind, start.agent, start.depth, start.parent_session_id, start.message) == (
        "subagent_start", "m", 1, session.id, "t")
    assert (stop.kind, stop.status, stop.session_id) == ("subagent_stop", "succeeded", start.session_id)


# -- cancelling a team (agno's cascade cancel) -------------------------------------------


def stuck_member(started: threading.Event, release: threading.Event) -> AgentRegistry:
    @tool
    def scrape(url: str) -> str:
        """Scrape a page (stuck until released)."""
        started.set()
        release.wait(5)
        return "late"

    registry = AgentRegistry()
    registry.register(Agent("scraper", provider=ScriptedProvider([
        calls(("s1", "scrape", {"url": "https://example.org"}), usage=Usage(input_tokens=7, output_tokens=7))]),
        tools=[scrape]), description="Scrapes.")
    return registry


def test_cancelling_the_leader_stops_a_member_stuck_in_a_tool_and_counts_the_members_tokens(
    release: threading.Event,
) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_team_cascade_cancel.py::test_cancel_run_cascades_to_children."""
    started = threading.Event()
    leader = Session(Agent("leader", provider=ScriptedProvider([delegate(("scraper", "scrape it"),
                                                                         usage=Usage(input_tokens=1, output_tokens=1))]),
                           delegates=stuck_member(started, release)))
    cancelled_at: list[float] = []

    def cancel() -> None:
        started.wait(5)
        cancelled_at.append(time.perf_counter())
        leader.cancel("user stopped the team")

    canceller = threading.Thread(target=cancel)
    canceller.start()
    with pytest.raises(AgentError, match=r"user stopped the team") as caught:
        leader.run("go")
    canceller.join()

    assert time.perf_counter() - cancelled_at[0] < 0.5
    assert caught.value.kind is ErrorKind.CANCELLED
    assert caught.value.usage is not None and caught.value.usage.input_tokens == 8  # the leader's 1 + the member's 7


def test_a_leaders_timeout_holds_while_a_member_is_stuck(release: threading.Event) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_team_cancellation.py (a team run stops
    within its limit whatever its members do)."""
    started = threading.Event()
    leader = Session(Agent("leader", provider=ScriptedProvider([delegate(("scraper", "scrape it"))]),
                           delegates=stuck_member(started, release)))
    begun = time.perf_counter()
    with pytest.raises(AgentError) as caught:
        leader.run("go", timeout=0.3)
    assert caught.value.kind is ErrorKind.TIMEOUT and time.perf_counter() - begun < 1.0
