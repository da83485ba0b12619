"""Agent hooks on each backend: an agent's ``events=`` bus (with lambda subscribers) and its
``prepare=`` lambda work on ``backend="ray"`` as on threads; the bus stays in the driver and
its Ray stand-in sends the events back (wingman_actors/backends/_ray_hooks.py)."""

from __future__ import annotations

from typing import Any

import pytest

from wingman_actors import Agent, Formation, tool
from wingman_actors.agents import Prepared
from wingman_actors.backends._ray_hooks import RemoteBus, open_call
from wingman_actors.backends._ray_wire import HookEvent
from wingman_actors.core import InferenceResponse
from wingman_actors.events import Event, EventBus
from wingman_actors.orchestration import AgentRegistry
from wingman_actors.testing import ScriptedProvider


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _delegate(agent: str, task: str) -> InferenceResponse:
    return InferenceResponse.of_tool_calls([("d1", "delegate", {"tasks": [{"agent": agent, "task": task}]})])


def test_an_agent_with_event_hooks_and_a_prepare_lambda_runs_on_each_backend(backend: str) -> None:
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "add", {"a": 1, "b": 2})]), "3"])
    seen: list[tuple[str, str]] = []
    with EventBus() as bus:
        bus.subscribe("*", lambda e: seen.append((e.kind, e.agent)))
        agent = Agent("calc", provider=provider, tools=[add], events=bus,
                      prepare=lambda ctx: Prepared(instructions=f"step {ctx.step}"))

        result = Formation("hooks").add_agent("calc", agent).run("1+2?", backend=backend)
        assert bus.flush(10)

    assert result.output == "3"
    assert [kind for kind, _ in seen] == [
        "session_start", "model_start", "model_end", "tool_start", "tool_end", "model_start", "model_end",
        "session_stop",
    ]
    assert {name for _, name in seen} == {"calc"}
    assert [r.instructions for r in provider.requests] == ["step 1", "step 2"]


def test_delegated_agents_events_reach_the_drivers_bus_on_each_backend(backend: str) -> None:
    seen: list[Event] = []
    with EventBus() as bus:
        bus.subscribe(["subagent_start", "subagent_stop", "session_start"], seen.append)
        registry = AgentRegistry()
        # a factory: the child's provider is built where it runs (a live one cannot be pickled)
        registry.register(lambda: Agent("child", provider=ScriptedProvider(["found"]), events=bus), name="child",
                          description="finds")
        root = Agent("root", provider=ScriptedProvider([_delegate("child", "find"), "done"]), delegates=registry,
                     events=bus)

        Formation("tree").add_agent("root", root).run("go", backend=backend)
        assert bus.flush(10)

    assert [(e.kind, e.agent, e.depth) for e in seen] == [
        ("session_start", "root", 0), ("subagent_start", "child", 1), ("session_start", "child", 1),
        ("subagent_stop", "child", 1),
    ]


def test_a_remote_bus_sends_the_kinds_the_driver_wants_only_during_a_call() -> None:
    sent: list[Any] = []
    remote = RemoteBus("token-1")
    event = Event("model_start", "a", "s1")

    remote.emit(event)  # between calls: nowhere to go
    with open_call({"token-1": frozenset({"model_start"})}, sent.append):
        wanted = remote.kinds
        remote.emit(event)

    assert wanted == {"model_start"} and remote.kinds == frozenset()
    assert sent == [HookEvent("token-1", event)]


def test_a_remote_bus_refuses_subscribers_naming_the_drivers_bus() -> None:
    with pytest.raises(RuntimeError, match="subscribe to the bus in the driver"):
        RemoteBus("token-1").subscribe("*", print)
