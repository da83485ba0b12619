"""Behaviours of Strands Agents' own test suite (strands-agents/sdk-python tests/strands/agent/,
hooks/, tools/executors/, event_loop/), ported to our agent layer: hooks (our middleware and
event bus) that change a tool call, answer it, review its result or ask a person first
(Strands' hook interrupts: our ``interrupt()`` in middleware with a session store), tool
executors (concurrent and sequential: ``tool_concurrency``), an answer cut at ``max_tokens``,
cancellation and one session used from two threads. Models are played by the scripted
provider. Context managers, structured output and streaming are in
test_peer_strands_context.py; graphs and swarms in test_peer_strands_multiagent.py."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.support.peers import InFlight, until
from wingman_actors import Agent, Session, interrupt, tool
from wingman_actors.agents import Halt, Middleware, RunContext
from wingman_actors.core import ContentBlock, InferenceResponse, StreamEventType
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.events import Event, EventBus
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider

STRANDS = "strands-agents/sdk-python"


def calls(*specs: tuple[str, str, dict[str, Any]]) -> InferenceResponse:
    """One model answer calling the tools ``specs`` (id, name, input)."""
    return InferenceResponse.of_tool_calls(list(specs))


@tool
def reverse(text: str) -> str:
    """Reverse a string (Strands' tool_decorated fixture)."""
    return text[::-1]


class Stages(Middleware):
    """Records every stage it sees, with a label, into a shared list."""

    def __init__(self, label: str, seen: list[str]) -> None:
        self.label, self.seen = label, seen

    def before_agent(self, ctx: RunContext, message: Any) -> None:
        self.seen.append(f"{self.label}.before_agent")

    def before_model(self, ctx: RunContext, request: Any) -> None:
        self.seen.append(f"{self.label}.before_model")

    def after_model(self, ctx: RunContext, response: Any) -> None:
        self.seen.append(f"{self.label}.after_model")

    def before_tool(self, ctx: RunContext, call: ContentBlock) -> None:
        self.seen.append(f"{self.label}.before_tool")

    def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> None:
        self.seen.append(f"{self.label}.after_tool")

    def after_agent(self, ctx: RunContext, result: Any) -> None:
        self.seen.append(f"{self.label}.after_agent")


# -- hooks: their order, and what they may change -------------------------------------------


def test_the_stages_of_a_tool_calling_run_come_in_the_order_strands_hooks_fire() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent_hooks.py::test_agent__call__hooks
    (BeforeInvocation, BeforeModelCall, AfterModelCall, BeforeToolCall, AfterToolCall, BeforeModelCall,
    AfterModelCall, AfterInvocation)."""
    seen: list[str] = []
    provider = ScriptedProvider([calls(("123", "reverse", {"text": "I invoked a tool!"})), "I invoked a tool!"])
    result = Session(Agent("a", provider=provider, tools=[reverse], middleware=[Stages("m", seen)])).run("go")

    assert seen == ["m.before_agent", "m.before_model", "m.after_model", "m.before_tool", "m.after_tool",
                    "m.before_model", "m.after_model", "m.after_agent"]
    assert result.tool_calls[0].output == "!loot a dekovni I"


def test_the_after_stages_of_several_middleware_run_in_list_order_not_reversed() -> None:
    """From strands-agents/sdk-python tests/strands/hooks/test_registry.py (After* callbacks are invoked
    in reverse registration order). Ours differ on purpose: every stage of several middleware runs in
    list order (the middleware module's documented rule), after stages included."""
    seen: list[str] = []
    provider = ScriptedProvider([calls(("c1", "reverse", {"text": "ab"})), "ba"])
    agent = Agent("a", provider=provider, tools=[reverse], middleware=[Stages("first", seen), Stages("second", seen)])
    Session(agent).run("go")

    afters = [s for s in seen if ".after_" in s]
    assert afters[:2] == ["first.after_model", "second.after_model"]
    assert afters[2:4] == ["first.after_tool", "second.after_tool"]
    assert afters[-2:] == ["first.after_agent", "second.after_agent"]


def test_a_before_tool_hook_may_change_the_arguments_the_tool_runs_with() -> None:
    """From strands-agents/sdk-python tests/strands/tools/executors/test_executor.py
    (test_executor_stream_with_hooks_modifying_tool_use: a BeforeToolCallEvent hook replaces
    the tool use's input and the tool runs with it)."""

    class Shout(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            return call.model_copy(update={"input": {"text": str((call.input or {})["text"]).upper()}})

    provider = ScriptedProvider([calls(("c1", "reverse", {"text": "abc"})), "done"])
    result = Session(Agent("a", provider=provider, tools=[reverse], middleware=[Shout()])).run("go")

    assert (result.tool_calls[0].input, result.tool_calls[0].output) == ({"text": "ABC"}, "CBA")
    [sent] = provider.requests[1].messages[-1].tool_results_blocks
    assert (sent.tool_use_id, sent.content) == ("c1", "CBA")


def test_a_before_tool_hook_that_cancels_a_call_sends_its_message_as_an_error_result() -> None:
    """From strands-agents/sdk-python tests/strands/tools/executors/test_executor.py
    (test_executor_stream_cancel: BeforeToolCallEvent.cancel_tool = "message" skips the tool and the
    model gets an error result carrying that message)."""
    ran: list[str] = []

    @tool
    def drop_table(name: str) -> str:
        """Drop a table."""
        ran.append(name)
        return "dropped"

    class NoDrops(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            if call.name == "drop_table":
                return ContentBlock.tool_result_block(call.id or "", "tool cancelled by policy", is_error=True)
            return None

    provider = ScriptedProvider([calls(("c1", "drop_table", {"name": "users"}), ("c2", "reverse", {"text": "ok"})),
                                 "I may not drop tables."])
    agent = Agent("a", provider=provider, tools=[drop_table, reverse], middleware=[NoDrops()])
    result = Session(agent).run("clean up")

    assert ran == []
    assert [(c.name, c.output, c.is_error) for c in result.tool_calls] == [
        ("drop_table", "tool cancelled by policy", True), ("reverse", "ko", False)]
    sent = provider.requests[1].messages[-1].tool_results_blocks
    assert [(b.tool_use_id, b.is_error) for b in sent] == [("c1", True), ("c2", False)]


def test_an_after_tool_hook_may_rewrite_the_result_the_model_sees() -> None:
    """From strands-agents/sdk-python tests/strands/tools/executors/test_executor.py
    (test_executor_stream_with_hooks: AfterToolCallEvent's result is writable and what it is set to
    is the tool result)."""

    class Redact(Middleware):
        def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
            return result.model_copy(update={"content": (result.content or "").replace("terces", "[redacted]")})

    provider = ScriptedProvider([calls(("c1", "reverse", {"text": "a secret"})), "done"])
    result = Session(Agent("a", provider=provider, tools=[reverse], middleware=[Redact()])).run("go")

    assert result.tool_calls[0].output == "[redacted] a"
    assert provider.requests[1].messages[-1].tool_results_blocks[0].content == "[redacted] a"


def test_a_hook_that_halts_at_a_tool_fails_the_run_and_leaves_a_history_the_next_run_can_send() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent_hooks.py (an exception raised in a
    BeforeToolCallEvent callback propagates out of the invocation) and test_agent.py
    (test_agent__call__ ... the conversation stays valid: every toolUse has its toolResult)."""

    class NoTools(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            raise Halt("no tools today")

    provider = ScriptedProvider([calls(("c1", "reverse", {"text": "ab"})), "fine"])
    session = Session(Agent("a", provider=provider, tools=[reverse], middleware=[NoTools()]))
    with pytest.raises(Halt, match="no tools today"):
        session.run("go")

    assert session.run("again").response == "fine"
    sent = provider.requests[1].messages
    uses = [b.id for m in sent for b in m.content if b.type == "tool_use"]
    answered = [b.tool_use_id for m in sent for b in m.content if b.type == "tool_result"]
    assert uses == answered == ["c1"]


def test_the_bus_sees_the_call_a_before_tool_hook_rewrote_and_the_result_an_after_tool_hook_rewrote() -> None:
    """From strands-agents/sdk-python tests/strands/agent/hooks/test_agent_events.py (the events a stream
    reports for a tool are those of the tool use and result the hooks settled on)."""

    class Both(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            return call.model_copy(update={"input": {"text": "xyz"}})

        def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
            return result.model_copy(update={"content": f"<{result.content}>"})

    seen: list[tuple[str, Any]] = []
    provider = ScriptedProvider([calls(("c1", "reverse", {"text": "abc"})), "done"])
    with EventBus() as bus:
        bus.subscribe("tool_start", lambda e: seen.append(("start", e.call and e.call.input)))
        bus.subscribe("tool_end", lambda e: seen.append(("end", e.result and e.result.content)))
        Session(Agent("a", provider=provider, tools=[reverse], middleware=[Both()], events=bus)).run("go")
        bus.flush()

    assert sorted(seen) == [("end", "<zyx>"), ("start", {"text": "xyz"})]


# -- hooks that ask a person first: interrupts ----------------------------------------------


class Approval(Middleware):
    """Asks a person before every call of ``delete`` (Strands' BeforeToolCallEvent.interrupt)."""

    def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
        if call.name != "delete":
            return None
        answer = interrupt({"approve": call.name, "input": call.input})
        if answer != "yes":
            return ContentBlock.tool_result_block(call.id or "", f"the user refused: {answer}", is_error=True)
        return None


def deleter(ran: list[str]) -> Any:
    @tool
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    return delete


@pytest.mark.parametrize(("answer", "output", "runs"), [("yes", "deleted /tmp/x", 1), ("no", "the user refused: no", 0)])
def test_a_before_tool_hook_that_interrupts_waits_for_approval_and_the_tool_runs_only_if_approved(
    store: RunStore, answer: str, output: str, runs: int
) -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_interrupt.py and hooks/test_events.py
    (BeforeToolCallEvent.interrupt: the agent stops with stop_reason "interrupt"; resumed with the
    response, the hook reads it and the tool runs or is cancelled)."""
    ran: list[str] = []
    provider = ScriptedProvider([calls(("c1", "delete", {"path": "/tmp/x"})), "ok"])
    session = Session(Agent("ops", provider=provider, tools=[deleter(ran)], middleware=[Approval()]), store=store)

    waiting = session.run("delete /tmp/x")
    assert (waiting.status, waiting.interrupt, ran) == (
        "suspended", {"approve": "delete", "input": {"path": "/tmp/x"}}, [])

    done = session.resume(session.id, store=store, answer=answer)
    assert (done.status, done.response, done.tool_calls[0].output, len(ran)) == ("succeeded", "ok", output, runs)
    assert provider.calls == 2  # the tool-calling answer was replayed, not asked again


def test_an_after_tool_hook_that_interrupts_runs_the_tool_again_on_resume_and_keeps_the_review(store: RunStore) -> None:
    """From strands-agents/sdk-python tests/strands/tools/executors/test_after_tool_call_interrupt.py
    (an AfterToolCallEvent interrupt; resumed, the result carries the person's answer). Ours
    differ on resume: the tool itself runs again (tools before an interrupt are at-least-once, as the
    docs say), where Strands keeps the result it had."""
    ran: list[str] = []

    class Review(Middleware):
        def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
            note = interrupt({"review": result.content})
            return result.model_copy(update={"content": f"{result.content} (reviewed: {note})"})

    provider = ScriptedProvider([calls(("c1", "delete", {"path": "/a"})), "done"])
    session = Session(Agent("ops", provider=provider, tools=[deleter(ran)], middleware=[Review()]), store=store)
    assert session.run("go").interrupt == {"review": "deleted /a"}

    done = session.resume(session.id, store=store, answer="fine")
    assert done.tool_calls[0].output == "deleted /a (reviewed: fine)"
    assert provider.requests[-1].messages[-1].tool_results_blocks[0].content == "deleted /a (reviewed: fine)"
    assert ran == ["/a", "/a"]


def test_two_tools_of_one_step_that_both_interrupt_are_answered_in_turn(store: RunStore) -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_interrupt.py (several interrupts raised
    by the tools of one step: each is answered, then the agent goes on with every answer)."""

    @tool
    def ask(question: str) -> str:
        """Ask the user."""
        return f"{question} -> {interrupt({'question': question})}"

    provider = ScriptedProvider([calls(("c1", "ask", {"question": "city"}), ("c2", "ask", {"question": "date"})),
                                 "Booked."])
    session = Session(Agent("booker", provider=provider, tools=[ask]), store=store)
    assert session.run("book").interrupt == {"question": "city"}

    second = session.resume(session.id, store=store, answer="Lima")
    assert (second.status, second.interrupt) == ("suspended", {"question": "date"})
    done = session.resume(session.id, store=store, answer="May 1")
    assert (done.status, done.response) == ("succeeded", "Booked.")
    assert [c.output for c in done.tool_calls] == ["city -> Lima", "date -> May 1"]
    assert provider.calls == 2


# -- tool executors: concurrent and sequential ------------------------------------------------


def test_the_concurrent_executor_reports_tool_ends_as_they_finish_but_answers_in_call_order() -> None:
    """From strands-agents/sdk-python tests/strands/tools/executors/test_concurrent.py
    (test_concurrent_executor_execute: the tools run at once, their events come as each finishes,
    and the results are the calls', each under its own id)."""
    slow_may_finish = threading.Event()

    @tool
    def slow(x: int) -> str:
        """Slow."""
        slow_may_finish.wait(10)
        return f"slow {x}"

    @tool
    def fast(x: int) -> str:
        """Fast."""
        return f"fast {x}"

    def let_slow_go(event: Any) -> None:
        if event.type is StreamEventType.TOOL_END:
            slow_may_finish.set()

    provider = ScriptedProvider([calls(("c1", "slow", {"x": 1}), ("c2", "fast", {"x": 2})), "done"])
    stream = Session(Agent("a", provider=provider, tools=[slow, fast])).run_stream("go")
    ends: list[str | None] = []
    for event in stream:
        let_slow_go(event)
        if event.type is StreamEventType.TOOL_END and event.block is not None:
            ends.append(event.block.tool_use_id)

    assert ends == ["c2", "c1"]
    sent = provider.requests[1].messages[-1].tool_results_blocks
    assert [(b.tool_use_id, b.content) for b in sent] == [("c1", "slow 1"), ("c2", "fast 2")]


def test_the_sequential_executor_runs_each_tool_after_the_previous_one_finished_in_call_order() -> None:
    """From strands-agents/sdk-python tests/strands/tools/executors/test_sequential.py
    (SequentialToolExecutor: one tool at a time, in the order the model called them):
    ``tool_concurrency=1`` here."""
    flight, order = InFlight(), []

    @tool
    def step(n: int) -> str:
        """One step."""
        with flight:
            order.append(n)
            time.sleep(0.02)
        return f"step {n}"

    provider = ScriptedProvider([calls(*[(f"c{n}", "step", {"n": n}) for n in range(4)]), "done"])
    result = Session(Agent("a", provider=provider, tools=[step], tool_concurrency=1)).run("go")

    assert (flight.peak, order) == (1, [0, 1, 2, 3])
    assert [c.output for c in result.tool_calls] == ["step 0", "step 1", "step 2", "step 3"]


def test_a_tool_that_raises_among_concurrent_ones_fails_alone_and_the_others_results_stand() -> None:
    """From strands-agents/sdk-python tests/strands/tools/executors/test_concurrent.py
    (an exception in one tool becomes that tool's error result; the other tools' results stand)."""

    @tool
    def flaky(x: int) -> str:
        """Fails on 2."""
        if x == 2:
            raise RuntimeError("disk on fire")
        return f"ok {x}"

    provider = ScriptedProvider([calls(*[(f"c{n}", "flaky", {"x": n}) for n in (1, 2, 3)]), "done"])
    result = Session(Agent("a", provider=provider, tools=[flaky])).run("go")

    assert [(c.output if not c.is_error else "error", c.is_error) for c in result.tool_calls] == [
        ("ok 1", False), ("error", True), ("ok 3", False)]
    assert "disk on fire" in result.tool_calls[1].output
    assert result.response == "done"


# -- the event loop ------------------------------------------------------------------------------


def test_a_tool_call_whose_arguments_were_complete_before_max_tokens_is_run() -> None:
    """From strands-agents/sdk-python tests/strands/event_loop/test_recover_message_on_max_tokens_reached.py
    (Strands replaces every tool use of an answer cut at max_tokens and raises
    MaxTokensReachedException). Ours differ on purpose: a call whose arguments arrived whole is run
    (the providers already refuse one cut inside its arguments, saying to raise max_tokens)."""
    cut = calls(("c1", "reverse", {"text": "ab"})).model_copy(update={"stop_reason": "max_tokens"})
    provider = ScriptedProvider([cut, "ba it is"])
    result = Session(Agent("a", provider=provider, tools=[reverse])).run("go")

    assert (result.tool_calls[0].output, result.response) == ("ba", "ba it is")


def test_a_model_error_after_a_tool_step_fails_the_run_and_the_next_run_resends_a_valid_conversation() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent.py
    (test_agent__call__ with a model exception after a tool use: the exception propagates and the
    agent's messages still pair every toolUse with its toolResult)."""
    provider = ScriptedProvider([calls(("c1", "reverse", {"text": "ab"})), RuntimeError("model down"), "back"])
    session = Session(Agent("a", provider=provider, tools=[reverse]))
    with pytest.raises(RuntimeError, match="model down"):
        session.run("go")

    assert session.run("again").response == "back"
    sent = provider.requests[-1].messages
    assert [b.tool_use_id for m in sent for b in m.content if b.type == "tool_result"] == ["c1"]
    assert sent[-1].text == "again"


# -- cancellation and concurrency ------------------------------------------------------------------


def test_a_cancel_with_no_run_in_progress_does_not_cancel_the_next_run() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent_cancellation.py
    (test_agent_cancellation_before_model_call: a token cancelled before the invocation stops it
    with stop_reason "cancelled", no model call). Ours differ on purpose: ``Session.cancel()`` stops
    the run in progress (or a stream made and not yet iterated); with none, there is nothing to stop."""
    provider = ScriptedProvider(["Hello! How can I help you?"])
    session = Session(Agent("a", provider=provider))
    session.cancel()
    session.cancel()  # idempotent

    assert session.run("Hello").response == "Hello! How can I help you?"
    assert provider.calls == 1


def test_a_cancel_from_another_thread_during_the_model_call_ends_the_run_as_cancelled() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent_cancellation.py
    (test_agent_cancellation_from_different_thread). Ours raise AgentError(kind=cancelled) where
    Strands returns a result with stop_reason "cancelled"."""
    provider = ScriptedProvider(["late"], latency_s=5)
    session = Session(Agent("a", provider=provider))

    def cancel_once_called() -> None:
        if until(lambda: provider.calls == 1):
            session.cancel()

    canceller = threading.Thread(target=cancel_once_called)
    canceller.start()
    started = time.monotonic()
    with pytest.raises(AgentError) as caught:
        session.run("Hello")

    canceller.join(5)
    assert caught.value.kind is ErrorKind.CANCELLED and time.monotonic() - started < 4


def test_a_session_used_from_two_threads_at_once_refuses_the_second_run_saying_what_to_do() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent.py
    (test_agent_concurrent_call_raises_exception: a second concurrent invocation of one agent raises
    ConcurrencyException, and the first goes on)."""
    provider = ScriptedProvider(["one"], latency_s=0.5)
    session = Session(Agent("a", provider=provider))
    first: list[str] = []
    runner = threading.Thread(target=lambda: first.append(session.run("first").response))
    runner.start()
    try:
        assert until(lambda: provider.calls == 1)
        with pytest.raises(RuntimeError, match="already running a message; use one Session per concurrent"):
            session.run("second")
    finally:
        runner.join(10)

    assert first == ["one"] and [m.text for m in session.history] == ["first", "one"]


def test_session_events_of_a_halted_run_say_it_failed_with_the_halt() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent_hooks.py (AfterInvocationEvent fires
    even when the invocation raises, so cleanup hooks run)."""
    stops: list[Event] = []

    class Refuse(Middleware):
        def before_model(self, ctx: RunContext, request: Any) -> None:
            raise Halt("budget spent")

    with EventBus() as bus:
        bus.subscribe("session_stop", stops.append)
        with pytest.raises(Halt):
            Session(Agent("a", provider=ScriptedProvider(["x"]), middleware=[Refuse()], events=bus)).run("go")
        bus.flush()

    [stop] = stops
    assert stop.status == "failed" and "budget spent" in str(stop.error)


# -- tools that yield -------------------------------------------------------------------------------


@tool
def count_sync(n: int) -> Iterator[Any]:
    """Count to n, yielding each step (a generator tool)."""
    yield from range(n)
    yield {"done": True}


@tool
async def count_async(n: int) -> AsyncIterator[Any]:
    """Count to n, yielding each step (an async generator tool)."""
    for i in range(n):
        await asyncio.sleep(0)
        yield i
    yield {"done": True}


@pytest.mark.parametrize("name", ["count_sync", "count_async"])
@pytest.mark.parametrize("awaited", [False, True])
def test_a_tool_that_yields_gives_the_model_every_value_it_yielded_as_a_json_list(name: str, awaited: bool) -> None:
    """From strands-agents/sdk-python tests/strands/tools/test_decorator.py::test_tool_async_generator
    (an async generator tool is run to its end; its yields are stream events and the last one is the
    result). Ours differ on what is kept: the model gets every yielded value as one JSON list, for an
    ``async def`` generator as for a plain one."""
    provider = ScriptedProvider([calls(("c1", name, {"n": 2})), "counted"])
    with Session(Agent("a", provider=provider, tools=[count_sync, count_async])) as session:
        result = asyncio.run(session.arun("go")) if awaited else session.run("go")

    assert (result.tool_calls[0].output, result.tool_calls[0].is_error) == ('[0, 1, {"done": true}]', False)
    assert provider.requests[1].messages[-1].tool_results_blocks[0].content == '[0, 1, {"done": true}]'


def test_a_run_timeout_stops_an_async_generator_tool_that_never_ends_and_runs_its_finally() -> None:
    """From strands-agents/sdk-python tests/strands/tools/test_decorator.py (async generator tools) with
    test_agent_cancellation.py (a cancelled invocation stops the running tool)."""
    stopped = threading.Event()

    @tool
    async def forever(n: int) -> AsyncIterator[int]:
        """Yield n for ever."""
        try:
            while True:
                await asyncio.sleep(0.01)
                yield n
        finally:
            stopped.set()

    provider = ScriptedProvider([calls(("c1", "forever", {"n": 1})), "never"])
    started = time.monotonic()
    with Session(Agent("a", provider=provider, tools=[forever])) as session, pytest.raises(AgentError) as caught:
        session.run("go", timeout=0.3)

    assert caught.value.kind is ErrorKind.TIMEOUT and time.monotonic() - started < 3
    assert stopped.wait(5) and provider.calls == 1


def test_an_async_generator_tool_may_ask_a_person_and_its_answer_is_among_its_yields(store: RunStore) -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_interrupt.py (a tool raises an interrupt;
    resumed, the tool gets the response) with an async generator tool."""

    @tool
    async def prepare_and_confirm(order: str) -> AsyncIterator[Any]:
        """Prepare an order, then confirm it with the user."""
        yield f"prepared {order}"
        yield interrupt({"confirm": order})

    provider = ScriptedProvider([calls(("c1", "prepare_and_confirm", {"order": "A7"})), "Confirmed."])
    with Session(Agent("a", provider=provider, tools=[prepare_and_confirm]), store=store) as session:
        assert session.run("go").interrupt == {"confirm": "A7"}
        done = session.resume(session.id, store=store, answer="yes")

    assert (done.response, done.tool_calls[0].output, provider.calls) == ("Confirmed.", '["prepared A7", "yes"]', 2)
