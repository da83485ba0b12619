"""The event bus of agent hooks (wingman_actors.events), driven by the scripted provider."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

import pytest

from wingman_actors import Agent, Session, tool
from wingman_actors.core import InferenceResponse
from wingman_actors.events import EVENT_KINDS, Event, EventBus
from wingman_actors.testing import ScriptedProvider


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _calls(*specs: tuple[str, str, dict[str, object]]) -> InferenceResponse:
    return InferenceResponse.of_tool_calls(list(specs))


@pytest.fixture
def bus() -> Iterator[EventBus]:
    with EventBus() as bus:
        yield bus


def _record(bus: EventBus, kinds: str | list[str] = "*") -> list[Event]:
    seen: list[Event] = []
    bus.subscribe(kinds, seen.append)
    return seen


def test_a_run_with_a_tool_emits_every_kind_of_session_event_in_order(bus: EventBus) -> None:
    seen = _record(bus)
    agent = Agent("calc", provider=ScriptedProvider([_calls(("c1", "add", {"a": 2, "b": 3})), "5"]), tools=[add],
                  events=bus)
    session = Session(agent)
    session.run("2+3?")
    assert bus.flush(5)

    assert [e.kind for e in seen] == [
        "session_start", "model_start", "model_end", "tool_start", "tool_end", "model_start", "model_end",
        "session_stop",
    ]
    assert {e.session_id for e in seen} == {session.id}
    assert {e.agent for e in seen} == {"calc"}


def test_tool_events_carry_the_call_and_its_result(bus: EventBus) -> None:
    seen = _record(bus, ["tool_start", "tool_end"])
    agent = Agent("calc", provider=ScriptedProvider([_calls(("c1", "add", {"a": 2, "b": 3})), "5"]), tools=[add],
                  events=bus)
    Session(agent).run("2+3?")
    assert bus.flush(5)

    start, end = seen
    assert start.call is not None and start.call.input == {"a": 2, "b": 3}
    assert end.result.content == "5"
    assert start.step == end.step == 1


def test_session_stop_carries_the_result_and_succeeded(bus: EventBus) -> None:
    seen = _record(bus, "session_stop")
    Session(Agent("a", provider=ScriptedProvider(["hi"]), events=bus)).run("hello")
    assert bus.flush(5)

    (stop,) = seen
    assert (stop.status, stop.result.response) == ("succeeded", "hi")


def test_a_failed_run_stops_with_status_failed_and_the_error(bus: EventBus) -> None:
    seen = _record(bus, "session_stop")
    session = Session(Agent("a", provider=ScriptedProvider([RuntimeError("model down")]), events=bus))
    with pytest.raises(Exception, match="model down"):
        session.run("hello")
    assert bus.flush(5)

    (stop,) = seen
    assert stop.status == "failed" and "model down" in (stop.error or "")


def test_a_slow_subscriber_does_not_slow_the_session(bus: EventBus) -> None:
    release = threading.Event()
    bus.subscribe("*", lambda e: release.wait(5), timeout=None)
    agent = Agent("a", provider=ScriptedProvider([_calls(("c1", "add", {"a": 1, "b": 1})), "2"]), tools=[add],
                  events=bus)
    t0 = time.perf_counter()
    Session(agent).run("1+1?")
    took = time.perf_counter() - t0
    release.set()

    assert took < 0.5


def test_each_subscriber_gets_its_events_in_order_even_when_another_is_slow(bus: EventBus) -> None:
    release = threading.Event()
    bus.subscribe("*", lambda e: release.wait(5), timeout=None)
    seen = _record(bus, ["model_start", "model_end"])
    agent = Agent("a", provider=ScriptedProvider(["one", "two", "three"]), events=bus)
    session = Session(agent)
    for text in ("1", "2", "3"):
        session.run(text)
    deadline = time.monotonic() + 5
    while len(seen) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()

    assert [(e.kind, e.response.text if e.response else None) for e in seen] == [
        ("model_start", None), ("model_end", "one"), ("model_start", None), ("model_end", "two"),
        ("model_start", None), ("model_end", "three"),
    ]


def test_a_subscriber_over_its_timeout_is_skipped_for_that_event_with_one_warning(
    bus: EventBus, caplog: pytest.LogCaptureFixture
) -> None:
    release = threading.Event()
    got: list[str] = []

    def slow_on_start(event: Event) -> None:
        if event.kind == "session_start":
            release.wait(5)
        got.append(event.kind)

    sub = bus.subscribe(["session_start", "session_stop"], slow_on_start, timeout=0.1)
    with caplog.at_level(logging.WARNING, logger="wingman_actors.events"):
        Session(Agent("a", provider=ScriptedProvider(["hi"]), events=bus)).run("hello")
        deadline = time.monotonic() + 5
        while "session_stop" not in got and time.monotonic() < deadline:
            time.sleep(0.01)
    release.set()

    assert got[0] == "session_stop"  # delivered while the overrunning call still waited
    assert sub.skipped == 1
    assert len([r for r in caplog.records if "overran its timeout" in r.getMessage()]) == 1


def test_a_subscriber_that_raises_keeps_receiving_events(bus: EventBus, caplog: pytest.LogCaptureFixture) -> None:
    got: list[str] = []

    def flaky(event: Event) -> None:
        got.append(event.kind)
        if event.kind == "session_start":
            raise ValueError("subscriber bug")

    bus.subscribe(["session_start", "session_stop"], flaky)
    with caplog.at_level(logging.ERROR, logger="wingman_actors.events"):
        Session(Agent("a", provider=ScriptedProvider(["hi"]), events=bus)).run("hello")
        assert bus.flush(5)

    assert got == ["session_start", "session_stop"]
    assert any("subscriber" in r.getMessage() for r in caplog.records)


def test_subscribing_to_an_unknown_kind_names_the_known_ones(bus: EventBus) -> None:
    with pytest.raises(ValueError, match=r"unknown event kind.*'tool_begin'.*session_start"):
        bus.subscribe(["tool_begin"], print)


def test_subscribing_a_non_callable_is_refused(bus: EventBus) -> None:
    with pytest.raises(TypeError, match="callable"):
        bus.subscribe("tool_end", "print")  # type: ignore[arg-type]


def test_a_closed_bus_refuses_subscriptions_and_drops_events() -> None:
    bus = EventBus()
    bus.close()
    with pytest.raises(RuntimeError, match="closed"):
        bus.subscribe("*", print)
    Session(Agent("a", provider=ScriptedProvider(["hi"]), events=bus)).run("hello")  # no error


def test_close_delivers_what_is_queued_then_stops_the_workers() -> None:
    before = set(threading.enumerate())
    bus = EventBus()
    got: list[str] = []
    bus.subscribe("*", lambda e: (time.sleep(0.01), got.append(e.kind)))
    Session(Agent("a", provider=ScriptedProvider(["hi"]), events=bus)).run("hello")
    bus.close()

    assert got == ["session_start", "model_start", "model_end", "session_stop"]
    assert [t.name for t in threading.enumerate() if t not in before and t.name.startswith("wingman-events")] == []


def test_a_cancelled_subscription_gets_no_further_events(bus: EventBus) -> None:
    got: list[str] = []
    sub = bus.subscribe("*", lambda e: got.append(e.kind))
    sub.cancel()
    Session(Agent("a", provider=ScriptedProvider(["hi"]), events=bus)).run("hello")
    assert bus.flush(5)

    assert got == []


def test_an_agent_refuses_events_that_are_not_a_bus() -> None:
    with pytest.raises(TypeError, match="events must be an EventBus"):
        Agent("a", events=[print])  # type: ignore[arg-type]


def test_every_kind_the_design_names_is_a_kind() -> None:
    assert EVENT_KINDS == {
        "session_start", "session_stop", "model_start", "model_end", "tool_start", "tool_end", "subagent_start",
        "subagent_stop",
    }


def test_close_gives_up_on_a_stuck_subscriber_at_its_timeout() -> None:
    bus = EventBus()
    release = threading.Event()
    bus.subscribe("*", lambda e: release.wait(5), timeout=None)
    Session(Agent("a", provider=ScriptedProvider(["hi"]), events=bus)).run("hello")
    t0 = time.perf_counter()
    bus.close(timeout=0.2)
    took = time.perf_counter() - t0
    release.set()

    assert took < 1.0


def test_a_bus_knows_the_kinds_its_subscribers_want(bus: EventBus) -> None:
    first = bus.subscribe("tool_end", print)
    bus.subscribe(["model_start", "tool_end"], print)
    assert bus.kinds == {"tool_end", "model_start"}

    first.cancel()
    assert bus.kinds == {"tool_end", "model_start"}
    bus.close()
    assert bus.kinds == frozenset()
