"""Behaviours of IBM BeeAI framework's memory and emitter tests (i-am-bee/beeai-framework
python/tests/memory/ and python/tests/test_emitter.py, tests/tools/test_emitter.py), ported to our
agent layer. BeeAI's memories (TokenMemory, SlidingMemory, SummarizeMemory) are objects holding the
messages an agent sends; ours is the session's history, always whole, with ``context_budget`` fitting
each request under a number of tokens (oldest turns out first) and ``compactor`` summarising what is
left out. BeeAI's Emitter is our EventBus: subscriptions by kind (``"*"`` for all), cancelled ones,
a closed bus, and events of nested (delegated) agents reaching the parent's bus.

Deliberately different (each test that touches one says so):
- BeeAI's memories evict messages from the memory itself; ours never drop from
  ``session.history``: only the requests are fitted.
- BeeAI's emitter matches event paths (``"*.*"``, regexes, priorities); ours subscribes to a closed
  set of kinds, each subscriber on its own ordered queue (no priorities).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tests.support.peers import until
from wingman_actors import Agent, Session, tool
from wingman_actors.agents import estimate_request
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.events import Event, EventBus
from wingman_actors.orchestration import AgentRegistry
from wingman_actors.testing import ScriptedProvider

WORDS = "lorem ipsum dolor sit amet "  # 27 characters, about 7 tokens


def echo(request: InferenceRequest) -> str:
    return "ok " + request.messages[-1].text[:10]


def texts(request: InferenceRequest) -> list[str]:
    return [m.text for m in request.messages]


# -- token memory: requests under a budget, oldest out first ------------------------------------------


def test_a_conversation_under_the_budget_is_sent_whole() -> None:
    """From i-am-bee/beeai-framework python/tests/memory/test_token_memory.py::
    test_add_appends_messages_within_budget."""
    model = ScriptedProvider([echo], cycle=True)
    session = Session(Agent("a", provider=model, context_budget=1000))
    session.run("hello")
    session.run("world")

    assert texts(model.requests[1]) == ["hello", "ok hello", "world"]


def test_past_the_budget_the_oldest_turns_leave_the_request_but_the_first_message_and_history_stay() -> None:
    """From i-am-bee/beeai-framework python/tests/memory/test_token_memory.py::
    test_capacity_enforced_evicts_oldest_by_default (and test_sliding_memory.py::test_evicts_oldest_on_overflow).
    Ours differ on purpose: the session's first message stays (it usually says what the session is
    for) and ``session.history`` keeps everything; only the requests are fitted."""
    model = ScriptedProvider([echo], cycle=True)
    session = Session(Agent("a", provider=model, context_budget=400))
    for n in range(8):
        session.run(f"turn {n} " + WORDS * 6)

    last = model.requests[-1]
    assert estimate_request(last) <= 400
    sent = texts(last)
    assert sent[0].startswith("turn 0 ") and sent[-1].startswith("turn 7 ")
    assert not any(t.startswith("turn 1 ") for t in sent)  # the oldest after the first went first
    assert len(session.history) == 16


def test_one_message_larger_than_the_budget_fails_before_any_model_call() -> None:
    """From i-am-bee/beeai-framework python/tests/memory/test_token_memory.py::
    test_message_larger_than_capacity_raises_fatal ("cannot fit")."""
    model = ScriptedProvider(["never"])
    with pytest.raises(AgentError) as caught:
        Session(Agent("a", provider=model, context_budget=300)).run(WORDS * 80)

    assert caught.value.kind is ErrorKind.INVALID and "300" in str(caught.value)
    assert model.calls == 0


def test_a_tool_call_and_its_result_leave_the_request_together() -> None:
    """From i-am-bee/beeai-framework python/tests/memory/test_token_memory.py (removal keeps the
    memory valid; a removal selector that breaks it raises). Ours: a tool call never goes without its
    result, which every provider would refuse."""

    @tool
    def page(n: int) -> str:
        """Read page n."""
        return f"page {n}: " + WORDS * 8

    steps = [InferenceResponse.of_tool_calls([(f"c{n}", "page", {"n": n})]) for n in range(1, 9)]
    model = ScriptedProvider([*steps, "done"])
    Session(Agent("a", provider=model, tools=[page], context_budget=500)).run("read it all")

    for request in model.requests:
        calls = {b.id for m in request.messages for b in m.tool_calls}
        results = {b.tool_use_id for m in request.messages for b in m.tool_results_blocks}
        assert calls == results
    assert estimate_request(model.requests[-1]) <= 500


def test_an_agent_budget_must_be_a_positive_number_of_tokens() -> None:
    """From i-am-bee/beeai-framework python/tests/memory/test_token_memory.py::
    test_invalid_capacity_threshold_raises (a bad setting fails when the memory is made, naming it)."""
    with pytest.raises(ValueError, match="context_budget"):
        Agent("a", provider=ScriptedProvider(["x"]), context_budget=0)


# -- summarize memory: the left-out turns become one summary ---------------------------------------------


def test_left_out_turns_are_summarised_into_one_message_the_compactor_saw_whole() -> None:
    """From i-am-bee/beeai-framework python/tests/memory/test_summarize_memory.py::
    test_add_replaces_messages_with_summary and test_add_many_summarizes_into_single_message."""
    model = ScriptedProvider([echo], cycle=True)
    summariser = ScriptedProvider(["SUMMARY of the early turns"], cycle=True)
    session = Session(Agent("a", provider=model, context_budget=400, compactor=summariser))
    for n in range(8):
        session.run(f"turn {n} " + WORDS * 6)

    assert summariser.requests, "the compactor was never asked"
    asked = "\n".join(texts(summariser.requests[0]))
    assert "turn 1 " in asked
    last = "\n".join(texts(model.requests[-1]))
    assert "SUMMARY of the early turns" in last and "turn 1 " + WORDS not in last
    assert estimate_request(model.requests[-1]) <= 400


def test_a_later_summary_is_made_from_the_earlier_summary_and_the_new_turns() -> None:
    """From i-am-bee/beeai-framework python/tests/memory/test_summarize_memory.py::
    test_summary_prompt_includes_prior_messages (the second summarization sees the prior summary and
    the new message)."""
    model = ScriptedProvider([echo], cycle=True)
    count = iter(range(1, 100))
    summariser = ScriptedProvider([lambda request: f"SUMMARY-{next(count)}"], cycle=True)
    session = Session(Agent("a", provider=model, context_budget=400, compactor=summariser))
    for n in range(16):
        session.run(f"turn {n} " + WORDS * 6)

    assert len(summariser.requests) >= 2
    second = "\n".join(texts(summariser.requests[1]))
    assert "SUMMARY-1" in second
    assert "turn 0 " + WORDS not in "\n".join(texts(summariser.requests[1]))  # the first message stays out of it


# -- the emitter: our event bus ------------------------------------------------------------------------


@tool
def lookup(query: str) -> str:
    """Look a query up."""
    if query == "bad":
        raise ValueError("nothing for bad")
    return query.upper()


def tool_run(bus: EventBus, *queries: str) -> Any:
    calls = [(f"c{i}", "lookup", {"query": q}) for i, q in enumerate(queries)]
    model = ScriptedProvider([InferenceResponse.of_tool_calls(calls), "done"])
    return Session(Agent("a", provider=model, tools=[lookup], events=bus)).run("go")


def test_a_subscription_by_kind_gets_only_that_kind() -> None:
    """From i-am-bee/beeai-framework python/tests/test_emitter.py::TestEventsPropagation::test_by_name."""
    seen: list[Event] = []
    with EventBus() as bus:
        bus.subscribe("tool_end", seen.append)
        tool_run(bus, "x")
    assert [(e.kind, e.call.name if e.call else None) for e in seen] == [("tool_end", "lookup")]


def test_a_star_subscription_gets_every_kind_in_the_order_they_happened() -> None:
    """From i-am-bee/beeai-framework python/tests/test_emitter.py::test_no_params ("*" and "*.*"
    match everything) and tests/tools/test_emitter.py::test_tool_emitter."""
    seen: list[str] = []
    with EventBus() as bus:
        bus.subscribe("*", lambda e: seen.append(e.kind))
        tool_run(bus, "x")
    assert seen == ["session_start", "model_start", "model_end", "tool_start", "tool_end",
                    "model_start", "model_end", "session_stop"]


def test_a_failing_tool_shows_in_its_tool_end_event_as_an_error_result() -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_emitter.py (a tool run's events; its
    error event) and tests/tools/test_tool_timeout.py (the tool's own error is what is reported)."""
    seen: list[Event] = []
    with EventBus() as bus:
        bus.subscribe("tool_end", seen.append)
        tool_run(bus, "ok", "bad")
    ends = {(e.call.input or {})["query"]: e.result for e in seen if e.call and e.result}
    assert ends["ok"].is_error is False and ends["ok"].content == "OK"
    assert ends["bad"].is_error is True and "nothing for bad" in str(ends["bad"].content)


def test_a_cancelled_subscription_gets_nothing_more() -> None:
    """From i-am-bee/beeai-framework python/tests/test_emitter.py::TestEventsPropagation::
    test_by_function_decorator (``off(callback=...)``) and test_by_name (``off("a")``)."""
    seen: list[str] = []
    with EventBus() as bus:
        sub = bus.subscribe("tool_end", lambda e: seen.append("first"))
        kept = bus.subscribe("tool_end", lambda e: seen.append("kept"))
        tool_run(bus, "x")
        assert bus.flush(5)
        sub.cancel()
        tool_run(bus, "y")
        assert bus.subscriptions == (kept,)
    assert sorted(seen) == ["first", "kept", "kept"]


def test_a_closed_bus_drops_later_events_and_refuses_new_subscriptions() -> None:
    """From i-am-bee/beeai-framework python/tests/test_emitter.py::test_destroy."""
    seen: list[str] = []
    bus = EventBus()
    bus.subscribe("*", lambda e: seen.append(e.kind))
    tool_run(bus, "x")
    bus.close()
    count = len(seen)
    tool_run(bus, "y")

    assert count == 8 and len(seen) == count
    with pytest.raises(RuntimeError, match="closed"):
        bus.subscribe("*", lambda e: None)


def test_subscribing_to_an_unknown_kind_fails_listing_the_kinds_there_are() -> None:
    """From i-am-bee/beeai-framework python/tests/test_emitter.py::test_emit_invalid_name (an invalid
    event name raises EmitterError)."""
    with EventBus() as bus, pytest.raises(ValueError, match="tool_end") as caught:
        bus.subscribe("tool.finish", lambda e: None)
    assert "tool.finish" in str(caught.value)


def test_a_subscriber_that_raises_keeps_its_subscription() -> None:
    """From i-am-bee/beeai-framework python/tests/test_emitter.py (a listener's error does not take
    the emitter down)."""
    seen: list[str] = []

    def flaky(event: Event) -> None:
        seen.append(event.kind)
        if len(seen) == 1:
            raise RuntimeError("listener bug")

    with EventBus() as bus:
        bus.subscribe("tool_end", flaky)
        tool_run(bus, "x")
        tool_run(bus, "y")
    assert seen == ["tool_end", "tool_end"]


def test_events_of_a_delegated_agent_reach_the_parents_bus_with_their_depth() -> None:
    """From i-am-bee/beeai-framework python/tests/test_emitter.py::TestEventsPropagation::
    test_events_from_children (a child emitter's events reach the root's ``*.*`` listener with the
    child's path). Ours: a delegated agent's start and stop reach the delegating agent's bus, with
    the depth and the parent's session id."""
    seen: list[Event] = []
    registry = AgentRegistry()
    registry.register(Agent("child", provider=ScriptedProvider(["child done"])), description="helps")
    ask = InferenceResponse.of_tool_calls([("d1", "delegate", {"tasks": [{"agent": "child", "task": "b"}]})])
    with EventBus() as bus:
        bus.subscribe(["subagent_start", "subagent_stop"], seen.append)
        parent = Agent("app", provider=ScriptedProvider([ask, "all done"]), delegates=registry, events=bus)
        session = Session(parent)
        result = session.run("a")

    assert result.response == "all done"
    assert [(e.kind, e.agent, e.depth, e.parent_session_id) for e in seen] == [
        ("subagent_start", "child", 1, session.id), ("subagent_stop", "child", 1, session.id)]
    assert seen[0].message == "b"


def test_each_subscriber_gets_the_events_even_while_another_is_slow() -> None:
    """From i-am-bee/beeai-framework python/tests/test_emitter.py::test_emitter_listener_priority
    (listeners are called in priority order). Ours differ on purpose: no priorities; each subscriber
    has its own queue, so a slow one holds up neither the agent nor the others."""
    release = threading.Event()
    fast: list[str] = []
    with EventBus() as bus:
        bus.subscribe("tool_end", lambda e: release.wait(5), timeout=None)
        bus.subscribe("tool_end", lambda e: fast.append(e.kind))
        result = tool_run(bus, "x")
        assert result.response == "done"
        assert until(lambda: fast == ["tool_end"])
        release.set()
