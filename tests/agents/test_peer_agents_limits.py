"""Cancellation, time limits, fleets, hooks and guardrails, from pydantic-ai's and the
OpenAI Agents SDK's test suites, ported to our agent layer with the scripted provider.
Each test names the peer test it comes from. (Tools, streaming and usage: test_peer_agents.py.)"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from wingman_actors import Agent, Session, Task, tool
from wingman_actors.agents import Fleet, Middleware, OutputGuardrail, RunContext
from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse, StreamEventType, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.events import Event, EventBus
from wingman_actors.testing import ScriptedProvider

LIMIT = 0.3
SLACK = 0.6  # a shared, loaded machine: DESIGN's 0.1 s is checked elsewhere, with its own margins


def calls(*specs: tuple[str, str, dict[str, Any]]) -> InferenceResponse:
    return InferenceResponse.of_tool_calls(list(specs))


@pytest.fixture
def bus() -> Iterator[EventBus]:
    events = EventBus()
    yield events
    events.close()


# -- cancellation ---------------------------------------------------------------------


def test_session_cancel_during_astream_ends_it_with_a_cancelled_error_event_and_no_more_text() -> None:
    # openai-agents tests/test_cancel_streaming.py::test_cancel_prevents_further_events
    session = Session(Agent("a", provider=ScriptedProvider(["x" * 400], stream_chunk=4)))

    async def main() -> list[Any]:
        seen: list[Any] = []
        stream = session.astream("go")
        with pytest.raises(AgentError) as caught:
            async for event in stream:
                seen.append(event)
                if event.type is StreamEventType.TEXT_DELTA and len(seen) == 4:
                    session.cancel("stop button")
        assert caught.value.kind is ErrorKind.CANCELLED
        return seen

    seen = asyncio.run(main())
    deltas_after = [e for e in seen[4:] if e.type is StreamEventType.TEXT_DELTA]
    assert deltas_after == []
    assert (seen[-1].type, seen[-1].error_kind) == (StreamEventType.ERROR, "cancelled")
    assert len([e for e in seen if e.type is StreamEventType.TEXT_DELTA]) < 100  # not the whole answer
    session.agent.provider.add_replies("again")  # type: ignore[union-attr]
    assert session.run("next").response == "again"  # the session is free


def test_session_cancel_during_run_stream_ends_it_with_a_cancelled_error_event_and_no_more_text() -> None:
    # openai-agents tests/test_cancel_streaming.py::test_multiple_events_streaming_with_cancel
    session = Session(Agent("a", provider=ScriptedProvider(["y" * 400], stream_chunk=4)))
    seen: list[Any] = []
    with pytest.raises(AgentError) as caught:
        for event in session.run_stream("go"):
            seen.append(event)
            if event.type is StreamEventType.TEXT_DELTA and len(seen) == 4:
                session.cancel("stop button")

    assert caught.value.kind is ErrorKind.CANCELLED and "stop button" in str(caught.value)
    assert [e for e in seen[4:] if e.type is StreamEventType.TEXT_DELTA] == []
    assert seen[-1].type is StreamEventType.ERROR


def test_a_cancel_while_no_run_is_in_progress_leaves_the_next_runs_alone() -> None:
    # openai-agents tests/test_cancel_streaming.py::test_cancel_is_idempotent
    session = Session(Agent("a", provider=ScriptedProvider(["one", "two"])))
    session.cancel()
    session.cancel()
    assert session.run("first").response == "one"
    session.cancel()
    assert asyncio.run(session.arun("second")).response == "two"


def test_asyncio_wait_for_on_arun_runs_the_async_tools_finally_and_frees_the_session() -> None:
    # openai-agents tests/test_cancel_streaming.py::test_cancel_cleans_up_resources
    cleaned = threading.Event()

    @tool
    async def crawl() -> str:
        """Crawl for a long time."""
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.set()
        return "never"

    provider = ScriptedProvider([calls(("c1", "crawl", {})), "Back again."])
    session = Session(Agent("a", provider=provider, tools=[crawl]))

    async def main() -> float:
        started = time.perf_counter()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(session.arun("go"), LIMIT)
        return time.perf_counter() - started

    assert asyncio.run(main()) < LIMIT + SLACK
    assert cleaned.wait(2)
    assert session.run("and now?").response == "Back again."
    session.close()


@pytest.mark.parametrize("stop", ["run timeout", "arun timeout", "cancel"])
def test_a_session_run_inside_a_blocking_tool_stops_with_the_run_that_called_the_tool(stop: str) -> None:
    # openai-agents tests/test_agent_as_tool.py (an agent run as a tool is part of its caller's run)
    inner_ended = threading.Event()
    inner_errors: list[ErrorKind] = []

    @tool
    def ask_expert(question: str) -> str:
        """Ask an expert agent (which takes a long time)."""
        try:
            return Session(Agent("expert", provider=ScriptedProvider(["late"], latency_s=30))).run(question).response
        except AgentError as exc:
            inner_errors.append(exc.kind)
            raise
        finally:
            inner_ended.set()

    outer = Session(Agent("lead", provider=ScriptedProvider([calls(("c1", "ask_expert", {"question": "?"})), "x"]),
                          tools=[ask_expert]))
    if stop == "cancel":
        threading.Timer(LIMIT, outer.cancel).start()
    with pytest.raises(AgentError):
        if stop == "arun timeout":
            asyncio.run(outer.arun("go", timeout=LIMIT))
        else:
            outer.run("go", timeout=LIMIT if stop == "run timeout" else None)

    assert inner_ended.wait(LIMIT + SLACK)  # not after the expert's 30 s
    assert inner_errors and inner_errors[0] in (ErrorKind.TIMEOUT, ErrorKind.CANCELLED)


# -- time limits ------------------------------------------------------------------------


def _timed_out(run: Callable[[Session], Any]) -> tuple[AgentError, float]:
    session = Session(Agent("a", provider=ScriptedProvider(["late"], latency_s=30)))
    started = time.perf_counter()
    with pytest.raises(AgentError) as caught:
        run(session)
    return caught.value, time.perf_counter() - started


async def _drain_astream(session: Session) -> None:
    async for _ in session.astream("go", timeout=LIMIT):
        pass


@pytest.mark.parametrize("driver", ["run", "run_stream", "arun", "astream"])
def test_the_timeout_error_of_each_driver_has_kind_timeout_and_names_the_limit(driver: str) -> None:
    # pydantic-ai tests/test_agent.py (model_settings timeout) / openai-agents tests/test_max_turns.py (the
    # error names the limit that was passed)
    runs: dict[str, Callable[[Session], Any]] = {
        "run": lambda s: s.run("go", timeout=LIMIT),
        "run_stream": lambda s: list(s.run_stream("go", timeout=LIMIT)),
        "arun": lambda s: asyncio.run(s.arun("go", timeout=LIMIT)),
        "astream": lambda s: asyncio.run(_drain_astream(s)),
    }
    error, took = _timed_out(runs[driver])
    assert error.kind is ErrorKind.TIMEOUT
    assert f"{LIMIT}s" in str(error)
    assert took < LIMIT + SLACK


# -- fleets -----------------------------------------------------------------------------


class CountingProvider:
    """Async-only answers after ``delay`` seconds, counting the calls in flight at once.
    A message ``fail`` is answered with an error; ``slow`` waits 30 s."""

    id = "counting"

    def __init__(self, delay: float = 0.1) -> None:
        self.delay = delay
        self.live = 0
        self.peak = 0

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        raise AssertionError("an awaited fleet awaits arun_inference")

    def stream_inference(self, request: InferenceRequest) -> Any:
        raise AssertionError("an awaited fleet awaits arun_inference")

    async def arun_inference(self, request: InferenceRequest) -> InferenceResponse:
        text = request.messages[-1].text or ""
        self.live += 1
        self.peak = max(self.peak, self.live)
        try:
            await asyncio.sleep(30 if text == "slow" else self.delay * (1 + (text == "t0")))
        finally:
            self.live -= 1
        if text == "fail":
            raise AgentError("the model refused", kind=ErrorKind.INVALID)
        return InferenceResponse.of_text(f"done {text}", usage=Usage(input_tokens=3, output_tokens=1))


def test_fleet_arun_never_runs_more_than_max_workers_sessions_at_once() -> None:
    # pydantic-ai tests/test_concurrency.py (a concurrency-limited model never exceeds its limit)
    provider = CountingProvider()
    results = asyncio.run(Fleet(Agent("f", provider=provider), [f"t{i}" for i in range(8)], max_workers=3).arun())

    assert provider.peak == 3
    assert [r.result.response for r in results if r.result is not None] == [f"done t{i}" for i in range(8)]


def test_fleet_arun_keeps_task_order_and_reports_a_failing_task_in_its_place() -> None:
    # openai-agents tests/test_agent_runner.py (concurrent runs; a failing run raises its own error)
    provider = CountingProvider()
    results = asyncio.run(Fleet(Agent("f", provider=provider), ["t0", "fail", "t2"]).arun())

    assert [r.task_index for r in results] == [0, 1, 2]  # t0 finished last
    assert [r.ok for r in results] == [True, False, True]
    error = results[1].error
    assert isinstance(error, AgentError) and error.kind is ErrorKind.INVALID and "refused" in str(error)
    assert results[1].result is None and results[1].worker_name == "f-1"


def test_a_fleet_arun_task_timeout_fails_only_that_task_within_its_limit() -> None:
    # pydantic-ai tests/test_agent.py (a run's timeout) over openai-agents' concurrent runs
    started = time.perf_counter()
    results = asyncio.run(Fleet(Agent("f", provider=CountingProvider(0.01)), ["a", "slow", "b"], timeout=LIMIT).arun())

    assert time.perf_counter() - started < LIMIT + SLACK
    assert [r.ok for r in results] == [True, False, True]
    error = results[1].error
    assert isinstance(error, AgentError) and error.kind is ErrorKind.TIMEOUT


# -- hooks and guardrails ---------------------------------------------------------------


KINDS = ["session_start", "model_start", "model_end", "tool_start", "tool_end", "session_stop"]


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"sunny in {city}"


def _events_of(bus: EventBus, run: Callable[[Session], Any]) -> list[Event]:
    got: list[Event] = []
    done = threading.Event()

    def keep(event: Event) -> None:
        got.append(event)
        if event.kind == "session_stop":
            done.set()

    subscription = bus.subscribe(KINDS, keep)
    provider = ScriptedProvider([calls(("c1", "weather", {"city": "Oslo"}), ("c2", "weather", {"city": "Atlantis"})),
                                 "Sunny in Oslo; Atlantis is not a city."])
    try:
        run(Session(Agent("a", provider=provider, tools=[weather], events=bus)))
        assert done.wait(5)
    finally:
        subscription.cancel()
    return got


def test_hooks_of_an_awaited_run_come_in_the_order_of_the_blocking_runs(bus: EventBus) -> None:
    # openai-agents tests/test_run_hooks.py::test_async_run_hooks_with_agent_hooks_with_llm
    awaited = [e.kind for e in _events_of(bus, lambda s: asyncio.run(s.arun("go")))]
    blocking = [e.kind for e in _events_of(bus, lambda s: s.run("go"))]

    assert awaited == blocking
    assert awaited == ["session_start", "model_start", "model_end", "tool_start", "tool_start", "tool_end",
                       "tool_end", "model_start", "model_end", "session_stop"]


def test_a_failing_tool_reaches_the_tool_end_hook_as_an_error_result_of_its_call(bus: EventBus) -> None:
    # openai-agents tests/test_run_hooks.py (on_tool_end gets the tool's result, a failure's too)
    events = _events_of(bus, lambda s: asyncio.run(s.arun("go")))
    ends = {e.call.id: e.result for e in events if e.kind == "tool_end" and e.call is not None}

    assert (ends["c1"].is_error, ends["c1"].content) == (False, "sunny in Oslo")
    assert ends["c2"].is_error and "no such city" in ends["c2"].content
    stop = events[-1]
    assert (stop.status, stop.result.response) == ("succeeded", "Sunny in Oslo; Atlantis is not a city.")


class NoAtlantis(Middleware):
    """A tool input guardrail: a call about Atlantis is answered without running the tool."""

    def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
        if (call.input or {}).get("city") == "Atlantis":
            return ContentBlock.tool_result_block(call.id or "", "refused: Atlantis is fictional", is_error=True)
        return None

    def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
        return result.model_copy(update={"content": (result.content or "").upper()})


def test_tool_guardrails_answer_a_refused_call_without_the_tool_and_rewrite_the_others_in_an_awaited_run() -> None:
    # openai-agents tests/test_tool_guardrails.py (tool input guardrail rejects; tool output guardrail)
    ran: list[str] = []

    @tool
    async def forecast(city: str) -> str:
        """The forecast for a city."""
        ran.append(city)
        return f"rain in {city}"

    provider = ScriptedProvider([calls(("c1", "forecast", {"city": "Atlantis"}), ("c2", "forecast", {"city": "Oslo"})),
                                 "ok"])
    result = asyncio.run(Session(Agent("a", provider=provider, tools=[forecast], middleware=[NoAtlantis()])).arun("go"))

    assert ran == ["Oslo"]
    assert [(c.output, c.is_error) for c in result.tool_calls] == [
        ("REFUSED: ATLANTIS IS FICTIONAL", True), ("RAIN IN OSLO", False)]


def test_an_output_guardrail_halts_an_awaited_run_with_its_reason() -> None:
    # openai-agents tests/test_guardrails.py::test_output_guardrail_tripwire_triggered
    guard = OutputGuardrail(lambda text: "secret" not in text or "the answer leaks a secret")
    session = Session(Agent("a", provider=ScriptedProvider(["the secret is 42"]), middleware=[guard]))

    with pytest.raises(AgentError, match="leaks a secret") as caught:
        asyncio.run(session.arun("go"))
    assert caught.value.kind is ErrorKind.INVALID


class Answer(BaseModel):
    city: str
    temperature: int


def test_an_output_schema_through_astream_gives_the_validated_object_after_one_correction() -> None:
    # openai-agents tests/test_agent_runner_streamed.py::test_structured_output
    provider = ScriptedProvider(['{"city": "Oslo"}', '{"city": "Oslo", "temperature": 4}'])
    session = Session(Agent("a", provider=provider, output_schema=Answer))

    async def main() -> Any:
        stream = session.astream("weather?")
        async for _ in stream:
            pass
        return stream.result()

    result = asyncio.run(main())
    assert result.output == Answer(city="Oslo", temperature=4)
    assert result.steps == 2
    assert "temperature" in (provider.requests[1].messages[-1].text or "")  # the correction names the field


def test_fleet_tasks_given_as_task_objects_reach_their_sessions_through_arun() -> None:
    # openai-agents tests/test_agent_runner.py::test_simple_first_run (input and instructions reach the model)
    provider = ScriptedProvider(["a", "b"])
    tasks = [Task("first", instructions="Be brief."), Task("second", instructions="Be thorough.")]
    results = asyncio.run(Fleet(Agent("f", provider=provider), tasks, max_workers=1).arun())

    assert [r.ok for r in results] == [True, True]
    sent = sorted((r.messages[-1].text, r.instructions) for r in provider.requests)
    assert sent == [("first", "Be brief."), ("second", "Be thorough.")]
