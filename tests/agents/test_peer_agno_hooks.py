"""Behaviours of agno's own test suite (libs/agno/tests/unit/agent/test_hooks*.py,
test_input_check_error_propagation.py, cancellation tests), ported to our agent layer:
pre and post hooks (our middleware's before_agent / after_agent), guardrails (Halt,
OutputGuardrail), hook events on an EventBus, run metadata reaching tools (agno's
dependencies), and cancelling or timing out a run in the middle of a tool call. Models are
played by the scripted provider."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.agents.test_peer_agno import DRIVERS, calls, drive, get_weather, text
from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Halt, Middleware, OutputGuardrail, RunContext
from wingman_actors.agents import Result as AgentResult
from wingman_actors.core import ContentBlock, Message, StreamEventType, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.events import Event, EventBus
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext


@pytest.fixture
def bus() -> Iterator[EventBus]:
    with EventBus() as events:
        yield events


class NoPII(Middleware):
    """A pre-hook guardrail: refuses messages holding a card number."""

    def before_agent(self, ctx: RunContext, message: Message) -> Message | None:
        if "4111" in message.text:
            raise Halt("the message holds a card number; remove it and send again")
        return None


# -- pre and post hooks ----------------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_pre_hook_guardrail_fails_the_run_before_any_model_call(driver: str) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_hooks_guardrails.py (an input guardrail
    raising InputCheckError ends the run with an error, the model never called)."""
    provider = ScriptedProvider(["never"])
    session = Session(Agent("a", provider=provider, middleware=[NoPII()]))
    with pytest.raises(Halt, match=r"card number") as caught:
        drive(driver, session, "my card is 4111 1111")

    assert caught.value.kind is ErrorKind.INVALID and provider.calls == 0
    assert session.run("no card here").response == "never"  # the session takes the next message


def test_a_pre_hook_may_rewrite_the_message_the_model_is_sent_and_the_history_keeps() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_hooks.py (a pre-hook that transforms
    the run input)."""

    class Redact(Middleware):
        def before_agent(self, ctx: RunContext, message: Message) -> Message | None:
            return Message.user(message.text.replace("Ada", "[name]"))

    provider = ScriptedProvider(["ok"])
    session = Session(Agent("a", provider=provider, middleware=[Redact()]))
    session.run("I am Ada")

    assert provider.requests[0].messages[-1].text == "I am [name]"
    assert session.history[0].text == "I am [name]"


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_post_hook_may_replace_the_final_content(driver: str) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_hooks.py (a post-hook that transforms
    the run output)."""

    class Sign(Middleware):
        def after_agent(self, ctx: RunContext, result: AgentResult) -> AgentResult | None:
            return result.model_copy(update={"response": result.response + " -- checked"})

    result, _ = drive(driver, Session(Agent("a", provider=ScriptedProvider(["fine"]), middleware=[Sign()])))
    assert result.response == "fine -- checked"


def test_an_output_guardrail_that_rejects_the_answer_fails_the_run_with_its_reason_and_usage() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_hooks_guardrails.py (an output check
    raising OutputCheckError turns the run into an error)."""
    guard = OutputGuardrail(lambda answer: "password" not in answer or "it gives a password away")
    provider = ScriptedProvider([text("the password is hunter2", 7, 3)])
    with pytest.raises(Halt, match=r"it gives a password away") as caught:
        Session(Agent("a", provider=provider, middleware=[guard])).run("go")
    assert caught.value.usage is not None and caught.value.usage.input_tokens == 7


def test_hooks_of_several_middleware_run_in_list_order_at_each_stage() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_hooks_normalised.py (several pre and
    post hooks run in the order given)."""
    seen: list[str] = []

    class Mark(Middleware):
        def __init__(self, name: str) -> None:
            self.name = name

        def before_agent(self, ctx: RunContext, message: Message) -> Message | None:
            seen.append(f"{self.name}:before_agent")
            return None

        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            seen.append(f"{self.name}:before_tool")
            return None

        def after_agent(self, ctx: RunContext, result: AgentResult) -> AgentResult | None:
            seen.append(f"{self.name}:after_agent")
            return None

    provider = ScriptedProvider([calls(("c1", "get_weather", {"city": "Rome"})), "ok"])
    Session(Agent("a", provider=provider, tools=[get_weather], middleware=[Mark("one"), Mark("two")])).run("go")
    assert seen == ["one:before_agent", "two:before_agent", "one:before_tool", "two:before_tool",
                    "one:after_agent", "two:after_agent"]


def test_a_hook_that_raises_an_error_of_its_own_fails_the_run_with_that_error() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_input_check_error_propagation.py (an
    error raised in a hook is not swallowed)."""

    class Broken(Middleware):
        def before_model(self, ctx: RunContext, request: Any) -> None:
            raise LookupError("hook could not find its table")

    with pytest.raises(LookupError, match=r"hook could not find its table"):
        Session(Agent("a", provider=ScriptedProvider(["never"]), middleware=[Broken()])).run("go")


def test_a_before_tool_hook_may_answer_a_call_in_place_of_the_tool() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_hooks.py (tool hooks wrap a tool call:
    one may return its own result)."""
    ran: list[str] = []

    @tool
    def charge(amount: int) -> str:
        """Charge a card."""
        ran.append("charged")
        return "charged"

    class DryRun(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            return ContentBlock.tool_result_block(call.id or "", f"dry run: would charge {call.input['amount']}")

    provider = ScriptedProvider([calls(("c1", "charge", {"amount": 5})), "ok"])
    result = Session(Agent("a", provider=provider, tools=[charge], middleware=[DryRun()])).run("go")
    assert ran == [] and result.tool_calls[0].output == "dry run: would charge 5"


# -- hook events -------------------------------------------------------------------------


def test_the_events_of_a_tool_calling_run_arrive_in_the_order_things_happened(bus: EventBus) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_continue_run_event_ordering.py (run
    started, model, tool started and completed, model, run completed)."""
    seen: list[Event] = []
    bus.subscribe(["session_start", "model_start", "model_end", "tool_start", "tool_end", "session_stop"], seen.append)
    provider = ScriptedProvider([calls(("c1", "get_weather", {"city": "Rome"}), usage=Usage(input_tokens=3, output_tokens=4)),
                                 text("Sunny.", 5, 6)])
    result = Session(Agent("a", provider=provider, tools=[get_weather], events=bus)).run("go")
    bus.close()

    assert [e.kind for e in seen] == ["session_start", "model_start", "model_end", "tool_start", "tool_end",
                                     "model_start", "model_end", "session_stop"]
    assert [e.step for e in seen if e.kind != "session_start" and e.kind != "session_stop"] == [1, 1, 1, 1, 2, 2]
    model_usage = [e.usage for e in seen if e.kind == "model_end"]
    assert sum(u.input_tokens for u in model_usage if u is not None) == result.usage.input_tokens == 8
    assert seen[-1].status == "succeeded" and seen[-1].result is not None


def test_a_subscriber_that_raises_does_not_fail_the_run_and_still_gets_the_next_events(bus: EventBus) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_hooks.py (a failing hook is logged, the
    run goes on)."""
    seen: list[str] = []

    def flaky(event: Event) -> None:
        seen.append(event.kind)
        if event.kind == "session_start":
            raise RuntimeError("subscriber broke")

    bus.subscribe(["session_start", "session_stop"], flaky)
    result = Session(Agent("a", provider=ScriptedProvider(["fine"]), events=bus)).run("go")
    bus.close()
    assert result.response == "fine" and seen == ["session_start", "session_stop"]


# -- run context (agno's dependencies) ---------------------------------------------------


def test_run_metadata_reaches_the_tools_and_the_hooks_of_that_run_only() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_dependencies_context.py (dependencies
    given to one run are what its tools see)."""
    seen: list[Any] = []

    @tool
    def whoami(ctx: ToolContext) -> str:
        """Who is asking."""
        seen.append(ctx.metadata.get("user"))
        return str(ctx.metadata.get("user"))

    class Look(Middleware):
        def before_model(self, ctx: RunContext, request: Any) -> None:
            seen.append(("hook", ctx.metadata.get("user")))

    provider = ScriptedProvider([calls(("c1", "whoami", {})), "ok", calls(("c2", "whoami", {})), "ok"])
    session = Session(Agent("a", provider=provider, tools=[whoami], middleware=[Look()]))
    session.run("go", metadata={"user": "ada"})
    session.run("go")

    assert seen == [("hook", "ada"), "ada", ("hook", "ada"), ("hook", None), None, ("hook", None)]


# -- cancelling a run in the middle of a tool -------------------------------------------


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at teardown: lets a stuck tool's abandoned thread end, so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def stuck_tool(started: threading.Event, release: threading.Event) -> Any:
    @tool
    def search(query: str) -> str:
        """Search the catalogue (stuck until released)."""
        started.set()
        release.wait(5)
        return "late"

    return search


@pytest.mark.parametrize("driver", ["run", "arun", "run_stream"])
def test_cancelling_a_run_stuck_in_a_tool_returns_at_once_and_counts_what_was_spent(
    driver: str, release: threading.Event
) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_cancelled_run_partial_content.py::test_sync_run_preserves_partial_content_on_cancellation.
    agno returns a RunOutput with status cancelled; ours raises AgentError(kind=cancelled)
    carrying the usage of the model calls made."""
    started = threading.Event()
    provider = ScriptedProvider([calls(("c1", "search", {"query": "gpu"}), usage=Usage(input_tokens=4, output_tokens=5))])
    session = Session(Agent("a", provider=provider, tools=[stuck_tool(started, release)]))
    stopped_at: list[float] = []

    def cancel() -> None:
        started.wait(5)
        stopped_at.append(time.perf_counter())
        session.cancel("user pressed stop")

    canceller = threading.Thread(target=cancel)
    canceller.start()
    try:
        with pytest.raises(AgentError, match=r"user pressed stop") as caught:
            drive(driver, session)
    finally:
        canceller.join()

    assert time.perf_counter() - stopped_at[0] < 0.5
    assert caught.value.kind is ErrorKind.CANCELLED
    assert caught.value.usage is not None and (caught.value.usage.input_tokens, caught.value.usage.output_tokens) == (4, 5)


def test_a_cancelled_runs_open_tool_call_is_closed_in_the_history_so_the_next_run_can_be_sent(
    release: threading.Event,
) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_cancelled_runs_in_context.py::test_flag_on_includes_cancelled_and_closes_tool_call
    (ours always keeps the cancelled run, as agno's add_cancelled_runs_to_context=True does)."""
    started = threading.Event()
    provider = ScriptedProvider([calls(("tc_partial", "search", {"query": "RTX 4090"})), "Next answer."])
    session = Session(Agent("a", provider=provider, tools=[stuck_tool(started, release)]))
    canceller = threading.Thread(target=lambda: (started.wait(5), session.cancel("stop")))
    canceller.start()
    with pytest.raises(AgentError):
        session.run("Find the price of the RTX 4090.")
    canceller.join()

    assert session.run("hello").response == "Next answer."
    sent = provider.requests[-1].messages
    [closing] = sent[2].tool_results_blocks
    assert closing.tool_use_id == "tc_partial" and closing.is_error and "stopped" in (closing.content or "")
    assert sent[0].text == "Find the price of the RTX 4090." and sent[-1].text == "hello"


def test_a_streamed_run_cancelled_mid_tool_ends_with_an_error_event_after_the_tool_start(
    release: threading.Event,
) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_parallel_stream_cancellation.py (a
    cancelled stream ends with a cancellation event, not silently)."""
    started = threading.Event()
    provider = ScriptedProvider([calls(("c1", "search", {"query": "x"}))])
    session = Session(Agent("a", provider=provider, tools=[stuck_tool(started, release)]))
    canceller = threading.Thread(target=lambda: (started.wait(5), session.cancel("stop")))
    canceller.start()
    events = []
    stream = session.run_stream("go")
    with pytest.raises(AgentError):
        for event in stream:
            events.append(event)
    canceller.join()

    kinds = [e.type for e in events]
    assert StreamEventType.TOOL_START in kinds and kinds[-1] is StreamEventType.ERROR
    assert events[-1].error_kind == "cancelled"


def test_a_run_timeout_cuts_a_stuck_async_tool_within_its_limit() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_parallel_cancel_async.py (an async
    step is cancelled, not waited for)."""
    cancelled = threading.Event()

    @tool
    async def crawl(url: str) -> str:
        """Crawl a site (slow)."""
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    provider = ScriptedProvider([calls(("c1", "crawl", {"url": "https://example.org"}))])
    started = time.perf_counter()
    with pytest.raises(AgentError) as caught:
        asyncio.run(Session(Agent("a", provider=provider, tools=[crawl])).arun("go", timeout=0.3))

    assert caught.value.kind is ErrorKind.TIMEOUT and time.perf_counter() - started < 1.5
    assert cancelled.wait(2)
