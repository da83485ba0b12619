"""Delegation nests (a delegated agent delegates through the same registry within the
root's depth limit), and sub-agent events reach the delegating agents' buses live."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from wingman_actors import Agent, Session
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.events import Event, EventBus
from wingman_actors.orchestration import AgentRegistry
from wingman_actors.testing import ScriptedProvider


def delegate_call(agent: str, task: str) -> InferenceResponse:
    return InferenceResponse.of_tool_calls([("d1", "delegate", {"tasks": [{"agent": agent, "task": task}]})])


def echo_tool_result(request: InferenceRequest) -> str:
    return "done: " + (request.messages[-1].tool_results_blocks[0].content or "")


@pytest.fixture
def bus() -> Iterator[EventBus]:
    with EventBus() as bus:
        yield bus


def _chain(registry: AgentRegistry) -> None:
    """middle hands its task to leaf; leaf answers."""
    registry.register(Agent("middle", provider=ScriptedProvider([delegate_call("leaf", "dig"), echo_tool_result])),
                      description="delegates on")
    registry.register(Agent("leaf", provider=ScriptedProvider(["found it"])), description="answers")


def test_an_agent_reached_through_delegate_may_delegate_through_the_same_registry() -> None:
    registry = AgentRegistry()
    _chain(registry)
    root = Agent("root", provider=ScriptedProvider([delegate_call("middle", "find it"), echo_tool_result]),
                 delegates=registry)

    result = Session(root).run("go")

    middle = json.loads(result.response.removeprefix("done: "))[0]
    assert middle == {"agent": "middle", "result": 'done: [{"agent": "leaf", "result": "found it"}]'}
    assert [(c.agent, c.depth) for c in result.walk()] == [("middle", 1), ("leaf", 2)]


def test_nested_delegation_stops_at_the_roots_depth_limit() -> None:
    registry = AgentRegistry()
    middle = ScriptedProvider(["did it myself"])
    registry.register(Agent("middle", provider=middle), description="delegates on")
    registry.register(Agent("leaf", provider=ScriptedProvider(["found it"])), description="answers")
    root = Agent("root", provider=ScriptedProvider([delegate_call("middle", "find it"), echo_tool_result]),
                 delegates=registry, max_delegation_depth=1)

    result = Session(root).run("go")

    assert [c.agent for c in result.walk()] == ["middle"]
    assert middle.requests[0].tools == []  # at the limit a child is offered no delegation tools


def test_a_child_with_a_registry_of_its_own_keeps_it() -> None:
    own = AgentRegistry()
    own.register(Agent("helper", provider=ScriptedProvider(["helped"])), description="helps")
    middle = ScriptedProvider(["ok"])
    registry = AgentRegistry()
    registry.register(Agent("middle", provider=middle, delegates=own), description="has its own team")
    registry.register(Agent("leaf", provider=ScriptedProvider(["found it"])), description="answers")
    root = Agent("root", provider=ScriptedProvider([delegate_call("middle", "find it"), echo_tool_result]),
                 delegates=registry)

    Session(root).run("go")

    assert "- helper: helps" in middle.requests[0].instructions
    assert "- leaf" not in middle.requests[0].instructions


def test_subagent_events_carry_depth_and_the_parents_session_id(bus: EventBus) -> None:
    registry = AgentRegistry()
    _chain(registry)
    seen: list[Event] = []
    bus.subscribe(["subagent_start", "subagent_stop"], seen.append)
    root = Agent("root", provider=ScriptedProvider([delegate_call("middle", "find it"), echo_tool_result]),
                 delegates=registry, events=bus)
    session = Session(root)

    session.run("go")
    assert bus.flush(5)

    assert [(e.kind, e.agent, e.depth) for e in seen] == [
        ("subagent_start", "middle", 1), ("subagent_start", "leaf", 2), ("subagent_stop", "leaf", 2),
        ("subagent_stop", "middle", 1),
    ]
    middle_id = seen[0].session_id
    assert seen[0].parent_session_id == session.id
    assert seen[1].parent_session_id == middle_id
    assert seen[2].status == "succeeded" and seen[2].result.response == "found it"


def test_subagent_start_arrives_while_the_child_still_runs(bus: EventBus) -> None:
    started = threading.Event()
    bus.subscribe("subagent_start", lambda e: started.set())

    def wait_for_the_event(request: InferenceRequest) -> Any:
        assert started.wait(5), "subagent_start was not delivered while the child ran"
        return "child done"

    registry = AgentRegistry()
    registry.register(Agent("child", provider=ScriptedProvider([wait_for_the_event])), description="waits")
    root = Agent("root", provider=ScriptedProvider([delegate_call("child", "wait"), echo_tool_result]),
                 delegates=registry, events=bus)

    result = Session(root).run("go")

    assert json.loads(result.response.removeprefix("done: ")) == [{"agent": "child", "result": "child done"}]


def test_the_events_of_delegated_sessions_carry_their_depth_and_parent_session_id(bus: EventBus) -> None:
    # root (depth 0) -> middle (1) -> leaf (2), every agent on one bus; middle and leaf use a tool
    seen: list[Event] = []
    bus.subscribe(["session_start", "session_stop", "model_start", "model_end", "tool_start", "tool_end"],
                  seen.append)
    registry = AgentRegistry()
    registry.register(Agent("middle", provider=ScriptedProvider([delegate_call("leaf", "dig"), echo_tool_result]),
                            events=bus), description="delegates on")
    leaf_calls = InferenceResponse.of_tool_calls([("t1", "list_agents", {})])
    registry.register(Agent("leaf", provider=ScriptedProvider([leaf_calls, "found it"]), events=bus),
                      description="answers")
    root = Agent("root", provider=ScriptedProvider([delegate_call("middle", "find it"), echo_tool_result]),
                 delegates=registry, events=bus)
    session = Session(root)

    session.run("go")
    assert bus.flush(5)

    by_agent: dict[str, set[tuple[int, str | None]]] = {}
    kinds: dict[str, set[str]] = {}
    for e in seen:
        by_agent.setdefault(e.agent, set()).add((e.depth, e.parent_session_id))
        kinds.setdefault(e.agent, set()).add(e.kind)
    middle_id = next(e.session_id for e in seen if e.agent == "middle")
    assert by_agent == {"root": {(0, None)}, "middle": {(1, session.id)}, "leaf": {(2, middle_id)}}
    assert kinds["leaf"] == kinds["root"] == {"session_start", "session_stop", "model_start", "model_end",
                                              "tool_start", "tool_end"}


def test_a_delegated_run_context_knows_its_depth_and_parent() -> None:
    from wingman_actors.agents import RunContext

    seen: list[tuple[str, int, str | None]] = []

    def note(ctx: RunContext) -> None:
        seen.append((ctx.agent.name, ctx.depth, ctx.parent_session_id))

    registry = AgentRegistry()
    registry.register(Agent("leaf", provider=ScriptedProvider(["found it"]), prepare=note), description="answers")
    root = Agent("root", provider=ScriptedProvider([delegate_call("leaf", "dig"), echo_tool_result]),
                 delegates=registry, prepare=note)
    session = Session(root)

    session.run("go")

    assert seen == [("root", 0, None), ("leaf", 1, session.id), ("root", 0, None)]
