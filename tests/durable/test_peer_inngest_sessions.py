"""Behaviours of the Inngest Python SDK's own test suite (inngest/inngest-py,
``tests/test_function/cases/*.py``) ported to sessions that wait: an agent session with a
store whose tool calls ``interrupt()`` is an Inngest function waiting for an event, and
its resume replays the journalled model responses as Inngest replays memoized steps.
Middleware (``Agent(middleware=[...])``) and the event bus (``Agent(events=bus)``) are
Inngest's middleware hooks.

Deliberately different (docs/agents.md documents ours): Inngest calls
``transform_input`` on every re-entry but ``before_execution`` only once new code runs; a
resumed session runs its middleware hooks again over the replayed model responses (the
session is rebuilt from the journal, so a hook that rewrites a response rewrites the
replayed one the same way), and tools before the ``interrupt()`` run again.
"""

from __future__ import annotations

import threading
from typing import Any

from wingman_actors import Agent, Session, interrupt, tool
from wingman_actors.agents import Middleware, RunContext
from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse, Message, Usage
from wingman_actors.events import Event, EventBus
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider


@tool
def approve(what: str) -> str:
    """Ask a person to approve ``what``."""
    return f"approved: {interrupt({'approve': what})}"


def deploy_script(final: str = "deployed") -> ScriptedProvider:
    """A model that asks for approval, then answers ``final``."""
    return ScriptedProvider([
        InferenceResponse.of_tool_calls([("c1", "approve", {"what": "deploy"})]).model_copy(
            update={"usage": Usage(input_tokens=10, output_tokens=2)}),
        InferenceResponse.of_text(final, usage=Usage(input_tokens=20, output_tokens=3)),
    ])


class Hooks(Middleware):
    """Records each hook it sees and marks the model's text with ``!``."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def before_agent(self, ctx: RunContext, message: Message) -> Message | None:
        self.log.append("before_agent")
        return None

    def before_model(self, ctx: RunContext, request: InferenceRequest) -> InferenceRequest | None:
        self.log.append("before_model")
        return None

    def after_model(self, ctx: RunContext, response: InferenceResponse) -> InferenceResponse | None:
        self.log.append("after_model")
        return response.model_copy(update={"content": [
            b.model_copy(update={"text": f"{b.text}!"}) if b.type == "text" else b for b in response.content]})

    def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
        self.log.append("before_tool")
        return None

    def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
        self.log.append("after_tool")
        return None

    def after_agent(self, ctx: RunContext, result: Any) -> Any:
        self.log.append("after_agent")
        return None


class Collected:
    """What an event bus subscriber received (thread-safe: it runs on the bus's thread)."""

    def __init__(self) -> None:
        self.lock, self.events = threading.Lock(), []  # type: ignore[var-annotated]

    def __call__(self, event: Event) -> None:
        with self.lock:
            self.events.append(event)

    def kinds(self) -> list[str]:
        with self.lock:
            return [e.kind for e in self.events]


def test_middleware_hooks_run_in_order_and_a_resume_runs_them_again_over_the_replayed_response(
        store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/function_middleware.py (hooks order on
    each entry; differs: see the module docstring)."""
    log: list[str] = []
    model = deploy_script()
    agent = Agent("ops", provider=model, tools=[approve], middleware=[Hooks(log)])
    session = Session(agent, store=store)
    paused = session.run("deploy it")
    assert (paused.status, paused.interrupt) == ("suspended", {"approve": "deploy"})
    assert log == ["before_agent", "before_model", "after_model", "before_tool"]
    log.clear()
    done = Session(agent, store=store).resume(session.id, answer="yes")
    assert (done.status, done.response, model.calls) == ("succeeded", "deployed!", 2)
    assert log == ["before_agent", "before_model", "after_model", "before_tool", "after_tool",
                   "before_model", "after_model", "after_agent"]
    assert [(c.name, c.output) for c in done.tool_calls] == [("approve", "approved: yes")]


def test_a_resumed_sessions_replayed_model_call_is_reported_as_journalled_not_as_a_new_call(
        store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/function_middleware.py (a memoized step is
    not executed again, and its hooks say so): a monitor counting model calls or tokens
    from ``model_end`` events must tell a replayed response from a call made now."""
    model, bus, seen = deploy_script(), EventBus(), Collected()
    bus.subscribe(["model_start", "model_end"], seen)
    agent = Agent("ops", provider=model, tools=[approve], events=bus)
    session = Session(agent, store=store)
    assert session.run("deploy it").status == "suspended"
    assert Session(agent, store=store).resume(session.id, answer="yes").response == "deployed"
    bus.close()
    calls = [(e.kind, e.step, e.journalled) for e in seen.events]
    assert calls == [("model_start", 1, False), ("model_end", 1, False),
                     ("model_start", 1, True), ("model_end", 1, True),
                     ("model_start", 2, False), ("model_end", 2, False)]
    made = [e.usage for e in seen.events if e.kind == "model_end" and not e.journalled]
    assert sum(u.input_tokens for u in made if u is not None) == 30  # each call counted once
    assert model.calls == 2


def test_an_async_resume_reports_its_replayed_model_call_as_journalled_too(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/function_middleware.py (its async
    middleware), on ``Session.aresume``."""
    import asyncio

    model, bus, seen = deploy_script(), EventBus(), Collected()
    bus.subscribe(["model_end"], seen)
    agent = Agent("ops", provider=model, tools=[approve], events=bus)

    async def both() -> str:
        session = Session(agent, store=store)
        assert (await session.arun("deploy it")).status == "suspended"
        return (await Session(agent, store=store).aresume(session.id, answer="yes")).response

    assert asyncio.run(both()) == "deployed"
    bus.close()
    assert [(e.step, e.journalled) for e in seen.events] == [(1, False), (1, True), (2, False)]
