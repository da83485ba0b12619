"""Haystack's agent hook tests (test/components/agents/test_agent_hooks.py: before_run, after_run,
before_llm, before_tool, after_tool), ported to our middleware stages (before_agent, after_agent,
before_model, before_tool, after_tool): how often each runs, in what order, and what a hook's
replacement changes. Models are played by the scripted provider."""

from __future__ import annotations

import threading

import pytest

from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Halt, Middleware, Result, RunContext
from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse, Message
from wingman_actors.errors import AgentError
from wingman_actors.events import Event, EventBus
from wingman_actors.testing import ScriptedProvider

SAVED: list[str] = []


@tool
def save(content: str) -> str:
    """Save content."""
    SAVED.append(content)
    return "saved"


def save_call(content: str = "x", id: str = "c1") -> InferenceResponse:
    return InferenceResponse.of_tool_calls([(id, "save", {"content": content})])


class Trace(Middleware):
    """Records each stage it sees under its label."""

    def __init__(self, label: str, trace: list[str]) -> None:
        self.label, self.trace = label, trace

    def before_agent(self, ctx: RunContext, message: Message) -> Message | None:
        self.trace.append(f"{self.label}:before_agent")
        return None

    def before_model(self, ctx: RunContext, request: InferenceRequest) -> InferenceRequest | None:
        self.trace.append(f"{self.label}:before_model:{ctx.step}")
        return None

    def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
        self.trace.append(f"{self.label}:before_tool:{call.name}")
        return None

    def after_agent(self, ctx: RunContext, result: Result) -> Result | None:
        self.trace.append(f"{self.label}:after_agent")
        return None


def test_before_agent_runs_once_per_run_and_before_model_once_per_step_in_list_order() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent_hooks.py::TestBeforeRunHook::test_runs_once_across_multi_step_run,
    test_hooks_run_in_list_order and TestBeforeLlmHook::test_hooks_run_in_list_order."""
    trace: list[str] = []
    provider = ScriptedProvider([save_call(), "done"])
    agent = Agent("a", provider=provider, tools=[save], middleware=[Trace("a", trace), Trace("b", trace)])

    Session(agent).run("hi")

    assert trace == [
        "a:before_agent", "b:before_agent",
        "a:before_model:1", "b:before_model:1",
        "a:before_tool:save", "b:before_tool:save",
        "a:before_model:2", "b:before_model:2",
        "a:after_agent", "b:after_agent",
    ]


def test_a_before_agent_rewrite_is_what_the_first_model_call_and_the_history_hold() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent_hooks.py::TestBeforeRunHook::test_rewrites_messages_before_first_llm_call."""

    class Brief(Middleware):
        def before_agent(self, ctx: RunContext, message: Message) -> Message | None:
            return Message.user("BRIEF")

    provider = ScriptedProvider(["done"])
    session = Session(Agent("a", provider=provider, middleware=[Brief()]))
    session.run("original query")

    assert [m.text for m in provider.requests[0].messages] == ["BRIEF"]
    assert [m.text for m in session.history] == ["BRIEF", "done"]


def test_after_agent_runs_when_max_steps_is_spent_and_its_result_is_returned() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent_hooks.py::TestAfterRunHook::test_runs_when_max_agent_steps_is_exhausted
    and test_mutations_are_reflected_in_the_returned_result."""

    class Report(Middleware):
        def after_agent(self, ctx: RunContext, result: Result) -> Result | None:
            return result.model_copy(update={"response": "REPORT"}) if result.max_steps_reached else None

    provider = ScriptedProvider([save_call(), save_call(id="c2"), "still saving"])
    result = Session(Agent("a", provider=provider, tools=[save], max_steps=2, middleware=[Report()])).run("hi")

    assert result.max_steps_reached and result.response == "REPORT"
    assert len(provider.requests) == 3


def test_before_tool_sees_each_pending_call_and_never_the_final_text_step() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent_hooks.py::TestBeforeToolHook::test_runs_before_tools_when_model_calls_a_tool."""
    trace: list[str] = []
    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "save", {"content": "x"}), ("c2", "save", {"content": "y"})]),
                                 "done"])
    Session(Agent("a", provider=provider, tools=[save], middleware=[Trace("t", trace)])).run("hi")

    assert [t for t in trace if "before_tool" in t] == ["t:before_tool:save", "t:before_tool:save"]


def test_a_before_tool_replacement_of_the_arguments_is_what_the_tool_runs_with() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent_hooks.py::TestBeforeToolHook::test_rereads_last_state_message_after_hook."""

    class Change(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            return call.model_copy(update={"input": {"content": "changed"}})

    SAVED.clear()
    provider = ScriptedProvider([save_call("original"), "done"])
    result = Session(Agent("a", provider=provider, tools=[save], middleware=[Change()])).run("hi")

    assert SAVED == ["changed"]
    assert result.tool_calls[0].input == {"content": "changed"}


def test_a_before_tool_that_answers_the_call_itself_skips_the_tool() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent_hooks.py::TestBeforeToolHook::test_skips_tool_execution_when_hook_leaves_last_message_without_tool_calls
    (ours answers the call with a result, so the conversation stays one the provider accepts)."""

    class Skip(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            return ContentBlock.tool_result_block(call.id or "", "Skipping tool execution.")

    SAVED.clear()
    provider = ScriptedProvider([save_call(), "done"])
    result = Session(Agent("a", provider=provider, tools=[save], middleware=[Skip()])).run("hi")

    assert SAVED == [] and result.response == "done"
    assert [b.content for b in provider.requests[1].messages[-1].tool_results_blocks] == ["Skipping tool execution."]


def test_an_after_tool_replacement_is_the_result_the_model_sees_keeping_its_call_id() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent_hooks.py::TestAfterToolHook (offload_tool_results:
    fresh tool results replaced by a pointer, their origin kept)."""

    class Offload(Middleware):
        def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
            return result.model_copy(update={"content": "OFFLOADED"})

    provider = ScriptedProvider([save_call(), "done"])
    Session(Agent("a", provider=provider, tools=[save], middleware=[Offload()])).run("hi")

    assert [(b.tool_use_id, b.content) for b in provider.requests[1].messages[-1].tool_results_blocks] == [("c1", "OFFLOADED")]


def test_a_hook_that_stops_for_budget_ends_the_run_with_its_reason() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent_hooks.py (stop_for_budget: ``stop_run``).
    Haystack ends the run normally with the reason in its state; ours raises ``Halt`` (an
    ``AgentError``) carrying the reason, and the model is not called again."""

    class Budget(Middleware):
        def before_model(self, ctx: RunContext, request: InferenceRequest) -> InferenceRequest | None:
            if ctx.step > 1:
                raise Halt("budget_exceeded")
            return None

    provider = ScriptedProvider([save_call(), "never"])
    with pytest.raises(AgentError, match="budget_exceeded") as caught:
        Session(Agent("a", provider=provider, tools=[save], middleware=[Budget()])).run("hi")

    assert isinstance(caught.value, Halt) and caught.value.reason == "budget_exceeded"
    assert len(provider.requests) == 1



def test_a_tool_end_hook_hears_a_fast_call_end_while_a_slow_call_of_its_step_still_runs() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent_hooks.py::TestAfterToolHook (after_tool sees the
    fresh results) with a parallel step: the hook of the call that ended first does not wait for the slow one."""
    heard = threading.Event()

    @tool
    def fetch(n: int) -> str:
        """Call 0 waits until the bus has told call 1's end."""
        if n == 0 and not heard.wait(5):
            return "call 1's end was never heard while call 0 ran"
        return f"d{n}"

    def on_end(event: Event) -> None:
        if event.call is not None and event.call.id == "c1":
            heard.set()

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c0", "fetch", {"n": 0}), ("c1", "fetch", {"n": 1})]),
                                 "done"])
    with EventBus() as bus:
        bus.subscribe(["tool_end"], on_end)
        result = Session(Agent("a", provider=provider, tools=[fetch], events=bus)).run("go")

    assert [c.output for c in result.tool_calls] == ["d0", "d1"]
