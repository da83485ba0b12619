"""A fleet node's items stream their agents' events (``agent_text``, ``agent_thinking``,
``agent_tool_call``, ``agent_tool_result``) to the run's listeners, as an agent node does,
each with ``data["item"]``: the item's index in the node's input list. A run without
listeners streams nothing and builds no event (found by porting LlamaIndex Workflows'
streaming tests: a run fanning out to 20 sessions showed nothing between ``node_started``
and ``node_finished``)."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from wingman_actors import Agent, Formation, tool
from wingman_actors.core import InferenceRequest, InferenceResponse, Role, StreamEvent
from wingman_actors.formation import _agent_events
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.testing import ScriptedProvider

E = FormationEventType
AGENT_KINDS = (E.AGENT_TEXT, E.AGENT_THINKING, E.AGENT_TOOL_CALL, E.AGENT_TOOL_RESULT)


@tool
def look(topic: str) -> str:
    """Look a topic up."""
    return f"notes on {topic}"


class Researcher:
    """A scripted model for a fleet of researchers: the user message is the item; each item
    calls ``look`` once, then answers ``answer about <item>`` (streamed in 4-character
    deltas). Items in ``fail_once`` fail their first answer (after their tool call)."""

    def __init__(self, fail_once: frozenset[str] = frozenset()) -> None:
        self.fail_once = fail_once
        self.answers: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.provider = ScriptedProvider([self.reply], cycle=True, stream_chunk=4)

    def reply(self, request: InferenceRequest) -> InferenceResponse | str | Exception:
        item = request.messages[0].text
        last = request.messages[-1]
        if not (last.role is Role.USER and last.content[0].type == "tool_result"):
            return InferenceResponse.of_tool_calls([(f"call-{item}", "look", {"topic": item})])
        with self.lock:
            self.answers[item] += 1
            first = self.answers[item] == 1
        if item in self.fail_once and first:
            return RuntimeError(f"the model lost {item}")
        return f"answer about {item}"


def fleet(model: Researcher, **policy: Any) -> Formation:
    agent = Agent("researcher", provider=model.provider, tools=[look])
    return Formation("research").add_fleet("research", agent, **policy)


def agent_events(events: list[FormationEvent]) -> list[FormationEvent]:
    return [e for e in events if e.type in AGENT_KINDS]


def of_item(events: list[FormationEvent], item: int) -> list[FormationEvent]:
    return [e for e in agent_events(events) if e.data["item"] == item]


def story(events: list[FormationEvent]) -> list[tuple[str, Any]]:
    """An item's events as (kind, what): deltas joined while they follow each other."""
    told: list[tuple[str, Any]] = []
    for e in events:
        if e.type is E.AGENT_TEXT and told and told[-1][0] == "text":
            told[-1] = ("text", told[-1][1] + e.data["text"])
        elif e.type is E.AGENT_TEXT:
            told.append(("text", e.data["text"]))
        elif e.type is E.AGENT_TOOL_CALL:
            told.append(("call", (e.data["id"], e.data["name"], e.data["input"])))
        elif e.type is E.AGENT_TOOL_RESULT:
            told.append(("result", (e.data["id"], e.data["output"], e.data["is_error"])))
    return told


def expected_story(item: str) -> list[tuple[str, Any]]:
    return [
        ("call", (f"call-{item}", "look", {"topic": item})),
        ("result", (f"call-{item}", f"notes on {item}", False)),
        ("text", f"answer about {item}"),
    ]


def test_a_streamed_fleet_run_yields_each_items_tool_calls_results_and_text_in_order_tagged_with_the_item() -> None:
    items = [f"topic-{i}" for i in range(5)]
    events = list(fleet(Researcher()).run_stream(items))

    assert events[-1].type is E.RUN_FINISHED
    assert events[-1].data["result"].output == [f"answer about {t}" for t in items]
    streamed = agent_events(events)
    assert {e.node for e in streamed} == {"research"}
    assert {e.data["item"] for e in streamed} == set(range(5))
    for i, topic in enumerate(items):
        assert story(of_item(events, i)) == expected_story(topic)
    kinds = [e.type for e in events]
    started, finished = kinds.index(E.NODE_STARTED), kinds.index(E.NODE_FINISHED)
    assert all(started < events.index(e) < finished for e in streamed)


def test_a_fleet_items_events_carry_what_an_agent_nodes_events_carry_and_the_item() -> None:
    events: list[FormationEvent] = []
    fleet(Researcher()).run(["only"], on_event=events.append)
    single: list[FormationEvent] = []
    agent = Agent("researcher", provider=Researcher().provider, tools=[look])
    Formation("one").add_agent("research", agent).run("only", on_event=single.append)

    by_kind = {e.type: set(e.data) for e in agent_events(single)}
    assert set(by_kind) == {e.type for e in agent_events(events)} == {E.AGENT_TEXT, E.AGENT_TOOL_CALL, E.AGENT_TOOL_RESULT}
    for e in agent_events(events):
        assert set(e.data) == by_kind[e.type] | {"item"}
        assert (e.run_id, e.node, e.data["item"]) == (events[0].run_id, "research", 0)


def test_two_fleet_items_events_interleave_while_each_items_own_order_holds() -> None:
    # Both items are inside their tool at once (a barrier): item 1's call comes between
    # item 0's call and its result, or the other way round.
    both = threading.Barrier(2, timeout=5)

    @tool
    def look(topic: str) -> str:  # this test's own "look": it waits for the other item
        """Look a topic up."""
        both.wait()
        return f"notes on {topic}"

    model = Researcher()
    agent = Agent("researcher", provider=model.provider, tools=[look])
    events = list(Formation("pair").add_fleet("research", agent, max_workers=2).run_stream(["a", "b"]))

    streamed = agent_events(events)
    calls = [streamed.index(e) for e in streamed if e.type is E.AGENT_TOOL_CALL]
    results = [streamed.index(e) for e in streamed if e.type is E.AGENT_TOOL_RESULT]
    assert len(calls) == len(results) == 2
    assert max(calls) < min(results)  # interleaved: both called before either got its result
    assert story(of_item(events, 0)) == expected_story("a")
    assert story(of_item(events, 1)) == expected_story("b")


def test_a_fleet_run_without_listeners_streams_no_model_call_and_builds_no_agent_event(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emitted: list[FormationEventType] = []
    real_emit = _agent_events.emit

    def spy(listeners: Any, type: FormationEventType, *args: Any) -> None:
        emitted.append(type)
        real_emit(listeners, type, *args)

    monkeypatch.setattr(_agent_events, "emit", spy)

    class Counting(ScriptedProvider):
        streamed = 0

        def stream_inference(self, request: InferenceRequest) -> Iterator[StreamEvent]:  # type: ignore[override]
            Counting.streamed += 1
            return super().stream_inference(request)  # type: ignore[return-value]

    model = Researcher()
    provider = Counting([model.reply], cycle=True, stream_chunk=4)
    f = Formation("quiet").add_fleet("research", Agent("researcher", provider=provider, tools=[look]))

    assert f.run(["a", "b", "c"]).output == ["answer about a", "answer about b", "answer about c"]
    assert (Counting.streamed, emitted) == (0, [])  # every item took the plain path

    seen: list[FormationEvent] = []  # the spy and the counter do see a run that listens
    f.run(["a"], on_event=seen.append)
    assert Counting.streamed == 2 and E.AGENT_TOOL_CALL in emitted


def test_astream_of_a_formation_with_a_fleet_yields_each_items_agent_events() -> None:
    f = fleet(Researcher())

    async def collect() -> list[FormationEvent]:
        return [e async for e in f.astream(["x", "y"])]

    events = asyncio.run(collect())
    assert events[-1].type is E.RUN_FINISHED
    assert story(of_item(events, 0)) == expected_story("x")
    assert story(of_item(events, 1)) == expected_story("y")


def test_a_fleet_item_that_fails_and_is_retried_streams_each_attempt_the_failed_one_first() -> None:
    # The failed attempt's events were streamed as they happened and stand; the retry
    # reruns only the failed item, whose events follow node_retry; every event says
    # its attempt.
    events = list(fleet(Researcher(fail_once=frozenset({"b"})), retries=1, backoff=0.01).run_stream(["a", "b"]))

    assert events[-1].data["result"].output == ["answer about a", "answer about b"]
    retry = next(i for i, e in enumerate(events) if e.type is E.NODE_RETRY)
    first = [e for e in agent_events(events) if events.index(e) < retry]
    second = [e for e in agent_events(events) if events.index(e) > retry]
    assert {e.data["attempt"] for e in first} == {1} and {e.data["attempt"] for e in second} == {2}
    assert story(of_item(first, 0)) == expected_story("a")
    assert story(of_item(first, 1)) == expected_story("b")[:2]  # its answer failed: no text
    assert of_item(second, 0) == []  # item a finished in the first attempt: not run again
    assert story(of_item(second, 1)) == expected_story("b")
