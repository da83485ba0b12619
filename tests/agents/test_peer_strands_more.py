"""More behaviours of Strands Agents' own tests (strands-agents/sdk-python tests/strands/agent/
test_interrupt.py, multiagent/test_swarm.py, test_graph.py), ported to our agent layer: a
batch of tool calls each approved or refused by a person, what a delegating agent's stream
carries (Strands' swarm streams each node's events), a lead that answers without handing off,
and an agent node whose structured answer never validates. Models are played by the scripted
provider."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from tests.agents.test_peer_strands import calls
from wingman_actors import Agent, Formation, Session, interrupt, tool
from wingman_actors.agents import Halt, Middleware, RunContext
from wingman_actors.core import (
    ContentBlock,
    InferenceResponse,
    Message,
    StreamEventType,
    ToolDefinition,
    Usage,
)
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.events import Event, EventBus
from wingman_actors.orchestration import AgentRegistry
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext


class ApproveEach(Middleware):
    """Asks a person about every call (Strands' BeforeToolCallEvent.interrupt per tool use)."""

    def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
        answer = interrupt({"approve": (call.input or {}).get("path")})
        if answer != "yes":
            return ContentBlock.tool_result_block(call.id or "", f"refused: {answer}", is_error=True)
        return None


def test_each_call_of_a_batch_is_put_to_the_person_in_turn_and_only_the_approved_ones_run(store: RunStore) -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_interrupt.py (interrupts raised for several
    tool uses of one message: each needs its response before the tools run; a denied one is not run)."""
    ran: list[str] = []

    @tool
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return f"deleted {path}"

    provider = ScriptedProvider([calls(("c1", "delete", {"path": "/a"}), ("c2", "delete", {"path": "/b"})), "done"])
    agent = Agent("ops", provider=provider, tools=[delete], middleware=[ApproveEach()])
    with Session(agent, store=store) as session:
        assert session.run("clean up").interrupt == {"approve": "/a"}
        second = session.resume(session.id, store=store, answer="yes")
        assert (second.interrupt, ran) == ({"approve": "/b"}, [])  # nothing runs before every call is settled
        done = session.resume(session.id, store=store, answer="no")

    assert [(c.output, c.is_error) for c in done.tool_calls] == [("deleted /a", False), ("refused: no", True)]
    assert (ran, provider.calls) == (["/a"], 2)


def test_a_delegating_agents_stream_carries_its_own_events_and_the_members_run_is_seen_on_the_bus() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_swarm.py::test_swarm_streaming_events
    (a swarm's stream forwards each node's events as multiagent_node_stream). Ours differ: a session's
    stream is its own model's and tools' events; a delegated member's run is reported live on the
    lead's event bus (subagent_start / subagent_stop), its text not mixed into the lead's stream."""
    team = AgentRegistry()
    member = ScriptedProvider(["specialist words"])
    team.register(Agent("specialist", provider=member), description="knows things")
    lead_model = ScriptedProvider([calls(("d1", "delegate", {"tasks": [{"agent": "specialist", "task": "explain"}]})),
                                   "lead words"])
    seen: list[Event] = []
    with EventBus() as bus:
        bus.subscribe(["subagent_start", "subagent_stop"], seen.append)
        stream = Session(Agent("lead", provider=lead_model, delegates=team, events=bus)).run_stream("go")
        events = list(stream)
        bus.flush()

    text = "".join(e.text or "" for e in events if e.type is StreamEventType.TEXT_DELTA)
    assert text == "lead words"
    tool_ends = [e.block.content for e in events if e.type is StreamEventType.TOOL_END and e.block is not None]
    assert json.loads(tool_ends[0] or "") == [{"agent": "specialist", "result": "specialist words"}]
    assert [(e.kind, e.agent, e.depth) for e in seen] == [("subagent_start", "specialist", 1),
                                                          ("subagent_stop", "specialist", 1)]


def test_a_lead_that_answers_without_handing_off_ends_with_its_answer_and_no_member_runs() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_swarm.py::test_swarm_auto_completion_without_handoff
    (an agent that does not hand off completes the swarm alone)."""
    member = ScriptedProvider(["never"])
    team = AgentRegistry()
    team.register(Agent("specialist", provider=member), description="knows things")
    result = Session(Agent("lead", provider=ScriptedProvider(["Done myself."]), delegates=team)).run("easy task")

    assert (result.response, result.tool_calls, member.calls) == ("Done myself.", [], 0)


class Verdict(BaseModel):
    approved: bool


def test_an_agent_node_whose_answer_never_validates_is_retried_in_a_fresh_session_and_then_fails_the_run() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py (a node whose agent raises,
    here a structured output that never validates, fails the graph) with
    test_agent_structured_output.py (StructuredOutputException after the model does not comply)."""
    provider = ScriptedProvider(["no idea"], cycle=True)
    graph = Formation("review").add_agent("judge", Agent("judge", provider=provider, output_schema=Verdict), retries=1,
                                          backoff=0.01)
    with pytest.raises(FormationRuntimeError, match="judge") as caught:
        graph.run("Is it good?")

    assert caught.value.attempts == 2 and provider.calls == 4  # two attempts, each one answer and one correction
    firsts = [r for r in provider.requests if len(r.messages) == 1]
    assert [r.messages[0].text for r in firsts] == ["Is it good?", "Is it good?"]  # each attempt starts afresh


def test_an_agent_node_whose_answer_validates_on_its_retry_hands_the_object_on() -> None:
    """From strands-agents/sdk-python tests/strands/multiagent/test_graph.py (a graph continues with the
    node's result) with test_agent_structured_output.py (the structured output is the result)."""
    provider = ScriptedProvider(["no idea", "still no idea", '{"approved": true}'])
    graph = Formation("review").add_agent("judge", Agent("judge", provider=provider, output_schema=Verdict), retries=1,
                                          backoff=0.01)
    graph.add_function("publish", lambda verdict: f"published={verdict.approved}").connect("judge", "publish")
    result = graph.run("Is it good?")

    assert (result.output, result.nodes["judge"].attempts) == ("published=True", 2)


def test_a_middleware_hook_written_as_async_def_is_refused_when_the_agent_is_made_naming_it_and_the_fix() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent_hooks.py::test_hook_retry_on_successful_call
    (hook callbacks may be ``async def``: Strands awaits them). Ours differ: middleware hooks are plain
    functions, called inline by blocking and awaited runs alike (as ``prepare`` is); an ``async def`` one
    is refused at once, where it used to fail the run with "'coroutine' object has no attribute 'content'"
    and leave an un-awaited coroutine behind."""

    class AsyncReview(Middleware):
        async def after_model(self, ctx: RunContext, response: object) -> None:  # type: ignore[override]
            return None

    with pytest.raises(TypeError, match=r"agent 'a': middleware .*AsyncReview.*after_model is async def.*plain def"):
        Agent("a", provider=ScriptedProvider(["hi"]), middleware=[AsyncReview()])


@tool
def echo(text: str) -> str:
    """Echo a text."""
    return f"echo {text}"


def test_a_conversation_saved_as_json_continues_in_a_new_session_with_its_tool_turns() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent.py (an agent restored by its session
    manager carries on the saved conversation). Ours differ on where it is kept: a finished session
    writes nothing to a store, and its ``history`` (pydantic messages) is saved and given back as
    ``Session(agent, history=...)``."""
    provider = ScriptedProvider([calls(("c1", "echo", {"text": "a"})), "first done", "second done"])
    first = Session(Agent("a", provider=provider, tools=[echo]))
    first.run("one")
    saved = TypeAdapter(list[Message]).dump_json(first.history)

    again = Session(Agent("a", provider=provider, tools=[echo]), history=TypeAdapter(list[Message]).validate_json(saved))
    assert again.run("two").response == "second done"
    sent = provider.requests[-1].messages
    assert [m.text for m in sent] == ["one", "", "", "first done", "two"]
    assert [b.content for m in sent for b in m.content if b.type == "tool_result"] == ["echo a"]


def test_a_restored_conversation_ending_in_an_unanswered_tool_call_gets_an_error_result_before_the_new_message() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent.py
    (test_agent_restored_from_session_with_orphaned_tool_use: a toolUse left without its toolResult is
    answered before the next message, so the model provider accepts the conversation)."""
    history = [Message.user("hi"), calls(("c9", "echo", {"text": "1"})).to_message()]
    provider = ScriptedProvider(["ok"])
    Session(Agent("a", provider=provider, tools=[echo]), history=history).run("next")

    sent = provider.requests[0].messages
    [result] = sent[2].tool_results_blocks
    assert (result.tool_use_id, result.is_error) == ("c9", True) and "never answered" in (result.content or "")
    assert sent[-1].text == "next"


class Lookup:
    """A tool of one's own (the Tool protocol) whose ``execute`` is ``async def``."""

    name = "lookup"
    description = "Look a key up."

    def __init__(self) -> None:
        self.keys: list[str] = []

    @property
    def definition(self) -> ToolDefinition:
        schema = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
        return ToolDefinition(name=self.name, description=self.description, input_schema=schema)

    async def execute(self, input: dict[str, Any], ctx: ToolContext) -> str:
        await asyncio.sleep(0)
        self.keys.append(input["key"])
        return f"value of {input['key']}"


@pytest.mark.parametrize("awaited", [False, True])
def test_a_tool_class_of_ones_own_whose_execute_is_async_def_is_awaited(awaited: bool) -> None:
    """From strands-agents/sdk-python tests/strands/tools/test_tools.py (a tool class of one's own, an
    AgentTool whose stream is ``async def``, is run and its result reaches the model). Ours used to hand
    the model "<coroutine object ...>" without running it."""
    lookup = Lookup()
    provider = ScriptedProvider([calls(("c1", "lookup", {"key": "k1"})), "done"])
    with Session(Agent("a", provider=provider, tools=[lookup])) as session:
        result = asyncio.run(session.arun("go")) if awaited else session.run("go")

    assert (result.tool_calls[0].output, result.tool_calls[0].is_error, lookup.keys) == ("value of k1", False, ["k1"])
    assert provider.requests[1].messages[-1].tool_results_blocks[0].content == "value of k1"


def test_an_agent_run_inside_a_plain_tool_is_not_counted_in_the_callers_usage_where_a_delegated_one_is() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent_as_tool.py (an agent wrapped as a
    tool of another runs on the call and answers it). Pinned, an open question: the inner session's
    tokens are not in the caller's ``Result.usage`` nor under its trace (only ``delegate`` reports its
    children), though a cancel or deadline of the caller does reach it."""
    inner = ScriptedProvider([InferenceResponse.of_text("facts", usage=Usage(input_tokens=100, output_tokens=50))])

    @tool
    def research(topic: str) -> str:
        """Ask the researcher agent."""
        return Session(Agent("researcher", provider=inner)).run(topic).response

    outer = ScriptedProvider([calls(("c1", "research", {"topic": "owls"})).model_copy(update={"usage": Usage(
        input_tokens=1, output_tokens=1)}), InferenceResponse.of_text("done", usage=Usage(input_tokens=2, output_tokens=2))])
    result = Session(Agent("lead", provider=outer, tools=[research])).run("go")

    assert (result.tool_calls[0].output, inner.calls) == ("facts", 1)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (3, 3)
    assert all(not step.children for step in result.trace)


def test_a_tool_that_raises_halt_does_not_stop_the_loop_its_reason_goes_to_the_model() -> None:
    """From strands-agents/sdk-python tests/strands/event_loop/test_event_loop.py::test_event_loop_cycle_stop
    (a tool sets request_state["stop_event_loop"] and the loop ends after the tool). Ours differ: a tool
    has no way to end the loop (``Halt`` is for middleware; a tool wanting a person's word calls
    ``interrupt()``); a ``Halt`` raised by a tool is that call's error result and the loop goes on.
    An open question: whether a tool's Halt should end the run, as middleware's does."""

    @tool
    def stop(reason: str) -> str:
        """Stop the loop."""
        raise Halt(reason)

    provider = ScriptedProvider([calls(("c1", "stop", {"reason": "enough"})), "after"])
    result = Session(Agent("a", provider=provider, tools=[stop])).run("go")

    assert (result.response, provider.calls, result.tool_calls[0].is_error) == ("after", 2, True)
    assert "enough" in result.tool_calls[0].output
