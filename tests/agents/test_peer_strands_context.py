"""Behaviours of Strands Agents' own test suite (strands-agents/sdk-python
tests/strands/agent/test_conversation_manager.py, test_summarizing_conversation_manager.py,
test_agent_structured_output.py, event_loop/test_streaming.py), ported to our agent layer:
the sliding window (our ``context_budget``: tool calls never parted from their results,
parallel calls included, the first and the current message kept), summarising (a
``compactor``), structured output across tools and interrupts, and what a streamed run's
events add up to. Models are played by the scripted provider."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

from tests.agents.test_peer_strands import calls
from wingman_actors import Agent, Session, interrupt, tool
from wingman_actors.agents import estimate_request
from wingman_actors.core import InferenceRequest, Role, StreamEvent, StreamEventType
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider

BUDGET = 3_000


@tool
def page(n: int) -> str:
    """Read page n of a long report."""
    return f"page {n}: " + "lorem ipsum " * 200


def pairs_are_whole(request: InferenceRequest) -> bool:
    """Every tool result of ``request`` follows its call in the same request, and every call
    is answered: what a provider insists on (Strands' dangling toolUse / toolResult rules)."""
    called: set[str] = set()
    answered: set[str] = set()
    for message in request.messages:
        for block in message.content:
            if block.type == "tool_use" and block.id:
                called.add(block.id)
            elif block.type == "tool_result" and block.tool_use_id:
                if block.tool_use_id not in called:
                    return False
                answered.add(block.tool_use_id)
    return called == answered


# -- the sliding window: context_budget --------------------------------------------------------


def test_a_window_over_steps_of_parallel_calls_keeps_or_drops_each_step_whole() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_conversation_manager.py::test_apply_management
    (cases 7-11: trimming never leaves a toolResult without its toolUse, nor a toolUse without its
    result), here with several calls per step, the results of one step in one message."""
    steps = [calls((f"a{n}", "page", {"n": 2 * n}), (f"b{n}", "page", {"n": 2 * n + 1})) for n in range(8)]
    provider = ScriptedProvider([*steps, "All lorem ipsum."])
    session = Session(Agent("reader", provider=provider, tools=[page], context_budget=BUDGET, max_steps=20))
    result = session.run("Summarise the report.")

    assert result.response == "All lorem ipsum." and len(result.tool_calls) == 16
    assert all(estimate_request(r) <= BUDGET for r in provider.requests)
    assert all(pairs_are_whole(r) for r in provider.requests)
    assert all(r.messages[0].text == "Summarise the report." for r in provider.requests)
    assert len(provider.requests[-1].messages) < len(session.history) - 1  # something was left out
    assert len(session.history) == 1 + 2 * 8 + 1  # the history keeps every turn


def test_a_long_chat_drops_its_oldest_turns_and_keeps_the_newest_in_order() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_conversation_manager.py::test_apply_management
    (case 6: over the window size, the oldest messages go and the newest stay). Ours keep the first
    user message too (DESIGN's context budget)."""
    provider = ScriptedProvider([lambda r: f"answer {len(r.messages)}: " + "blah " * 150], cycle=True)
    session = Session(Agent("chat", provider=provider, context_budget=2_000))
    for n in range(10):
        session.run(f"question {n}: " + "why " * 150)

    last = provider.requests[-1].messages
    assert estimate_request(provider.requests[-1]) <= 2_000
    assert last[0].text.startswith("question 0:") and last[-1].text.startswith("question 9:")
    kept = [m.text for m in last[1:]]
    history = [m.text for m in session.history[:-1]]  # all but the last answer, made after that request
    assert kept == history[len(history) - len(kept):]  # the newest turns, in order, nothing between dropped
    assert len(kept) < len(history) - 1


def test_a_streamed_run_is_trimmed_like_a_blocking_one() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent.py (stream_async applies the
    conversation manager as __call__ does)."""

    def requests_of(streamed: bool) -> list[list[str | None]]:
        steps = [calls((f"c{n}", "page", {"n": n})) for n in range(10)]
        provider = ScriptedProvider([*steps, "done"])
        session = Session(Agent("reader", provider=provider, tools=[page], context_budget=BUDGET, max_steps=20))
        if streamed:
            stream = session.run_stream("Read it all.")
            list(stream)
            assert stream.result().response == "done"
        else:
            assert session.run("Read it all.").response == "done"
        return [[b.id or b.tool_use_id for m in r.messages for b in m.content] for r in provider.requests]

    assert requests_of(streamed=True) == requests_of(streamed=False)


def test_a_summarising_compactor_is_given_the_dropped_turns_and_its_summary_stands_in_for_them() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_summarizing_conversation_manager.py
    (test_reduce_context_with_summarization: the oldest messages are summarised by a model and
    replaced by the summary; the recent ones stay as they were; tool pairs are not split)."""
    summariser = ScriptedProvider(["SUMMARY: pages read, all lorem ipsum."], cycle=True)
    steps = [calls((f"c{n}", "page", {"n": n})) for n in range(12)]
    provider = ScriptedProvider([*steps, "done"])
    agent = Agent("reader", provider=provider, tools=[page], context_budget=BUDGET, compactor=summariser, max_steps=20)
    Session(agent).run("Read it all.")

    assert summariser.requests  # it was asked
    asked = "\n".join(m.text for m in summariser.requests[0].messages)
    assert "page 0:" in asked  # the oldest turn's result is what it summarised
    summarised = [r for r in provider.requests if any("SUMMARY:" in m.text for m in r.messages)]
    assert summarised and all(pairs_are_whole(r) and estimate_request(r) <= BUDGET for r in provider.requests)
    last = provider.requests[-1].messages
    assert last[0].text == "Read it all." and "page 0:" not in "".join(m.text for m in last)


# -- structured output ---------------------------------------------------------------------------


class Weather(BaseModel):
    city: str
    summary: str


@tool
def forecast(city: str) -> str:
    """Today's weather in a city."""
    return f"{city}: sunny, 24C"


def test_structured_output_comes_after_the_tools_the_model_called_in_the_same_run() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent_structured_output.py
    (test_agent_structured_output_with_tools: the agent uses its tools, then its final answer is
    the structured output)."""
    provider = ScriptedProvider([calls(("c1", "forecast", {"city": "Lima"})), '{"city": "Lima", "summary": "sunny"}'])
    result = Session(Agent("w", provider=provider, tools=[forecast], output_schema=Weather)).run("Weather in Lima?")

    assert result.output == Weather(city="Lima", summary="sunny")
    assert [(c.name, c.output) for c in result.tool_calls] == [("forecast", "Lima: sunny, 24C")]
    assert [t.name for t in provider.requests[1].tools] == ["forecast"]


def test_structured_output_of_a_session_that_waited_is_validated_after_the_resume(store: RunStore) -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_interrupt.py with
    test_agent_structured_output.py (an interrupted invocation with a structured output model,
    resumed, ends with the structured output)."""

    @tool
    def ask(question: str) -> str:
        """Ask the user."""
        return str(interrupt(question))

    agent = Agent("w", provider=ScriptedProvider([calls(("c1", "ask", {"question": "Which city?"})),
                                                   '{"city": "Lima", "summary": "asked"}']),
                  tools=[ask], output_schema=Weather)
    session = Session(agent, store=store)
    assert session.run("Weather?").status == "suspended"

    done = session.resume(session.id, store=store, answer="Lima")
    assert (done.status, done.output) == ("succeeded", Weather(city="Lima", summary="asked"))


@pytest.mark.parametrize("driver", ["run_stream", "astream"])
def test_a_streamed_run_with_an_output_schema_ends_with_the_validated_object_after_its_tools(driver: str) -> None:
    """From strands-agents/sdk-python tests/strands/event_loop/test_streaming_structured_output.py
    (a streamed invocation with a structured output model: the events, then a result carrying the
    structured output)."""
    provider = ScriptedProvider([calls(("c1", "forecast", {"city": "Oslo"})), '{"city": "Oslo", "summary": "sunny"}'])
    session = Session(Agent("w", provider=provider, tools=[forecast], output_schema=Weather))
    events: list[StreamEvent] = []
    if driver == "run_stream":
        stream = session.run_stream("Weather in Oslo?")
        events.extend(stream)
        result = stream.result()
    else:
        async def main() -> Any:
            astream = session.astream("Weather in Oslo?")
            async for event in astream:
                events.append(event)
            return astream.result()

        result = asyncio.run(main())

    assert result.output == Weather(city="Oslo", summary="sunny")
    kinds = [e.type for e in events]
    assert StreamEventType.TOOL_END in kinds and kinds[-1] is StreamEventType.MESSAGE_STOP


# -- streaming: what the events add up to -------------------------------------------------------


def test_the_input_deltas_of_parallel_tool_calls_add_up_to_each_calls_input_by_block_index() -> None:
    """From strands-agents/sdk-python tests/strands/event_loop/test_streaming.py
    (test_handle_content_block_delta / test_process_stream: toolUse input arrives as JSON pieces
    per content block, joined into that block's input)."""

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    provider = ScriptedProvider([calls(("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 30, "b": 4})), "3, 34"])
    stream = Session(Agent("a", provider=provider, tools=[add])).run_stream("go")
    pieces: dict[int, str] = {}
    ids: dict[int, str | None] = {}
    for event in stream:
        block = event.block
        if event.type is StreamEventType.CONTENT_BLOCK_START and block is not None and block.type == "tool_use":
            ids[event.index or 0] = block.id
        if event.type is StreamEventType.INPUT_JSON_DELTA and event.index is not None:
            pieces[event.index] = pieces.get(event.index, "") + (event.partial_json or "")

    assert {ids[i]: json.loads(p) for i, p in pieces.items()} == {"c1": {"a": 1, "b": 2}, "c2": {"a": 30, "b": 4}}
    assert [c.output for c in stream.result().tool_calls] == ["3", "34"]


def test_each_model_call_of_a_stream_opens_and_closes_its_blocks_and_says_why_it_stopped() -> None:
    """From strands-agents/sdk-python tests/strands/event_loop/test_streaming.py::test_process_stream
    (messageStart, contentBlockStart/Stop per block, messageStop with the stop reason: tool_use for
    the call, end_turn for the answer)."""
    provider = ScriptedProvider([calls(("c1", "forecast", {"city": "Rome"})), "Sunny in Rome."], stream_chunk=4)
    stream = Session(Agent("a", provider=provider, tools=[forecast])).run_stream("go")
    events = list(stream)

    stops = [e.stop_reason for e in events if e.type is StreamEventType.MESSAGE_DELTA]
    assert stops == ["tool_use", "end_turn"]
    opened = [e.index for e in events if e.type is StreamEventType.CONTENT_BLOCK_START]
    closed = [e.index for e in events if e.type is StreamEventType.CONTENT_BLOCK_STOP]
    assert opened == closed == [0, 0]
    text = "".join(e.text or "" for e in events if e.type is StreamEventType.TEXT_DELTA)
    assert text == stream.result().response == "Sunny in Rome."


def test_a_multi_turn_streamed_session_sends_the_earlier_turns_with_the_new_message() -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_agent.py (test_agent__call__ then
    stream_async on the same agent: the conversation carries on)."""
    provider = ScriptedProvider(["Paris.", "About 2.1 million."])
    session = Session(Agent("a", provider=provider))
    session.run("Capital of France?")
    stream = session.run_stream("How many people live there?")
    list(stream)

    assert stream.result().response == "About 2.1 million."
    assert [m.text for m in provider.requests[1].messages] == ["Capital of France?", "Paris.", "How many people live there?"]
    assert [m.role for m in session.history] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT]


def test_a_resumed_session_replays_its_model_calls_but_asks_its_compactor_again(store: RunStore) -> None:
    """From strands-agents/sdk-python tests/strands/agent/test_summarizing_conversation_manager.py with
    test_interrupt.py (a summarised conversation, interrupted and resumed, goes on from its messages).
    Pinned, an open question: the agent's model calls made before the interrupt are replayed from the
    store, but the compactor's summaries are not journalled, so the resumed run asks the compactor again
    (the same number of times) before it reaches the interrupted step."""

    @tool
    def ask(question: str) -> str:
        """Ask the user."""
        return str(interrupt(question))

    def agent(model: ScriptedProvider, compactor: ScriptedProvider) -> Agent:
        return Agent("reader", provider=model, tools=[page, ask], context_budget=BUDGET, compactor=compactor,
                     max_steps=20)

    steps = [calls((f"c{n}", "page", {"n": n})) for n in range(8)]
    model = ScriptedProvider([*steps, calls(("q", "ask", {"question": "go on?"}))])
    summariser = ScriptedProvider(["SUMMARY"], cycle=True)
    session = Session(agent(model, summariser), store=store)
    assert session.run("Read it all.").interrupt == "go on?"
    assert summariser.calls >= 1

    model2, summariser2 = ScriptedProvider(["All read."]), ScriptedProvider(["SUMMARY"], cycle=True)
    done = Session(agent(model2, summariser2)).resume(session.id, store=store, answer="yes")
    assert (done.status, done.response, model2.calls) == ("succeeded", "All read.", 1)
    assert summariser2.calls == summariser.calls
