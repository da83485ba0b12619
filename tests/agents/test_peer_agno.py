"""Behaviours of agno's own test suite (libs/agno/tests/unit/agent/, tools/), ported to our
agent layer: an agent's run, arun and stream (event order, final content), usage summed
over tool calls, tool calls (sync, async, parallel, unknown, bad arguments, raising, huge
results), the step limit (agno's tool_call_limit), structured outputs, history across runs
and a cancelled run's history. Models are played by the scripted provider. Hooks,
guardrails and cancellation are in test_peer_agno_hooks.py; teams in
tests/orchestration/test_peer_agno_team.py; workflows in tests/formation/test_peer_agno_workflow.py."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import InFlight
from wingman_actors import Agent, Session, tool
from wingman_actors.core import InferenceResponse, Role, StreamEvent, StreamEventType, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider

AGNO = "agno-agi/agno"
DRIVERS = ["run", "arun", "run_stream", "astream"]


def calls(*specs: tuple[str, str, dict[str, Any]], usage: Usage | None = None) -> InferenceResponse:
    """One model answer calling the tools ``specs`` (id, name, input)."""
    response = InferenceResponse.of_tool_calls(list(specs))
    return response.model_copy(update={"usage": usage}) if usage is not None else response


def text(answer: str, input_tokens: int = 10, output_tokens: int = 20) -> InferenceResponse:
    return InferenceResponse.of_text(answer, usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens))


def drive(driver: str, session: Session, message: str = "go") -> tuple[Any, list[StreamEvent]]:
    """The result of ``session``'s run of ``message`` through ``driver``, and its stream events."""
    events: list[StreamEvent] = []
    if driver == "run":
        return session.run(message), events
    if driver == "arun":
        return asyncio.run(session.arun(message)), events
    if driver == "run_stream":
        stream = session.run_stream(message)
        events.extend(stream)
        return stream.result(), events

    async def main() -> Any:
        stream = session.astream(message)
        async for event in stream:
            events.append(event)
        return stream.result()

    return asyncio.run(main()), events


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name.
    """
    return f"It is sunny in {city}."


@tool
async def get_forecast(city: str, days: int = 1) -> str:
    """The forecast for a city (an async tool)."""
    await asyncio.sleep(0.01)
    return f"{days} sunny day(s) in {city}."


@tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


class Movie(BaseModel):
    title: str
    year: int


# -- run, arun, stream: the final content -------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_every_way_of_running_gives_the_same_final_content_after_a_tool_call(driver: str) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_basic.py::test_agent_run (run, arun,
    stream and async stream of one tool-calling run)."""
    provider = ScriptedProvider([calls(("c1", "get_weather", {"city": "Paris"})), "Sunny in Paris."])
    result, _ = drive(driver, Session(Agent("weather", provider=provider, tools=[get_weather])))

    assert (result.response, result.steps) == ("Sunny in Paris.", 2)
    assert [(c.name, c.input, c.output) for c in result.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "It is sunny in Paris.")]


@pytest.mark.parametrize("driver", ["run_stream", "astream"])
def test_a_streamed_run_gives_model_events_then_tool_start_and_end_then_the_answers_events(driver: str) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/workflow/test_workflow_event_stream.py (events of a
    run come in the order things happened: the model's call, the tool, the model's answer)."""
    provider = ScriptedProvider([calls(("c1", "get_weather", {"city": "Oslo"})), "Sunny."])
    _, events = drive(driver, Session(Agent("weather", provider=provider, tools=[get_weather])))

    kinds = [e.type for e in events]
    first_stop = kinds.index(StreamEventType.MESSAGE_STOP)
    assert kinds[0] is StreamEventType.MESSAGE_START
    assert kinds[first_stop + 1:first_stop + 3] == [StreamEventType.TOOL_START, StreamEventType.TOOL_END]
    assert kinds[first_stop + 3] is StreamEventType.MESSAGE_START and kinds[-1] is StreamEventType.MESSAGE_STOP
    start, end = events[first_stop + 1], events[first_stop + 2]
    assert start.block is not None and (start.block.id, start.block.name) == ("c1", "get_weather")
    assert end.block is not None and (end.block.tool_use_id, end.block.content) == ("c1", "It is sunny in Oslo.")


@pytest.mark.parametrize("driver", ["run_stream", "astream"])
def test_the_text_deltas_of_a_stream_add_up_to_the_final_content(driver: str) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_run_response_content_not_merged.py
    (streamed pieces are the answer, not repeated or merged twice)."""
    provider = ScriptedProvider(["The quick brown fox jumps over the lazy dog."], stream_chunk=5)
    result, events = drive(driver, Session(Agent("a", provider=provider)))

    deltas = [e.text for e in events if e.type is StreamEventType.TEXT_DELTA]
    assert len(deltas) > 1 and "".join(d or "" for d in deltas) == result.response
    assert result.response == "The quick brown fox jumps over the lazy dog."


# -- usage --------------------------------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_usage_is_summed_over_every_model_call_of_a_tool_calling_run(driver: str) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_metrics.py::test_calculate_run_metrics_does_not_double_count
    (a run's metrics are the sum of its model calls', each counted once)."""
    provider = ScriptedProvider([
        calls(("c1", "get_weather", {"city": "Rome"}), usage=Usage(input_tokens=100, output_tokens=25)),
        calls(("c2", "get_weather", {"city": "Oslo"}), usage=Usage(input_tokens=150, output_tokens=30)),
        text("Both sunny.", 200, 10)])
    result, events = drive(driver, Session(Agent("a", provider=provider, tools=[get_weather])))

    assert (result.usage.input_tokens, result.usage.output_tokens) == (450, 65)
    model_steps = [s for s in result.trace if s.kind == "model"]
    assert [(s.usage.input_tokens, s.usage.output_tokens) for s in model_steps] == [(100, 25), (150, 30), (200, 10)]
    if events:  # the stream's message_delta usages are the same three calls, not more
        deltas = [e.usage for e in events if e.type is StreamEventType.MESSAGE_DELTA and e.usage is not None]
        assert sum(u.input_tokens for u in deltas) == 450


def test_each_run_of_a_session_counts_only_its_own_model_calls() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_metrics.py::test_calculate_run_metrics_does_not_double_count
    (recomputing a run's metrics does not add an earlier run's in)."""
    provider = ScriptedProvider([text("one", 100, 25), text("two", 120, 5)])
    session = Session(Agent("a", provider=provider))

    first, second = session.run("first"), session.run("second")
    assert (first.usage.input_tokens, first.usage.output_tokens) == (100, 25)
    assert (second.usage.input_tokens, second.usage.output_tokens) == (120, 5)


# -- tool calls -----------------------------------------------------------------------------


def test_an_async_tool_is_awaited_and_its_result_reaches_the_model() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/tools/test_awaitable_tool_results.py."""
    provider = ScriptedProvider([calls(("c1", "get_forecast", {"city": "Lima", "days": 3})), "ok"])
    result = Session(Agent("a", provider=provider, tools=[get_forecast])).run("go")

    assert result.tool_calls[0].output == "3 sunny day(s) in Lima."
    [sent] = provider.requests[1].messages[-1].tool_results_blocks
    assert (sent.tool_use_id, sent.content, sent.is_error) == ("c1", "3 sunny day(s) in Lima.", False)


def test_parallel_tool_calls_of_one_step_run_at_once_and_their_results_keep_the_calls_order() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_task_tools_parallel_events.py (parallel
    tool calls run concurrently; each result answers its own call)."""
    flight = InFlight()
    both_in = threading.Barrier(2, timeout=5)

    @tool
    def fetch(key: str, delay: float) -> str:
        """Fetch a key after a delay."""
        with flight:
            both_in.wait()
            time.sleep(delay)
        return f"value of {key}"

    provider = ScriptedProvider([calls(("c1", "fetch", {"key": "slow", "delay": 0.05}),
                                       ("c2", "fetch", {"key": "fast", "delay": 0.0})), "ok"])
    result = Session(Agent("a", provider=provider, tools=[fetch])).run("go")

    assert flight.peak == 2
    results = provider.requests[1].messages[-1].tool_results_blocks
    assert [(b.tool_use_id, b.content) for b in results] == [("c1", "value of slow"), ("c2", "value of fast")]
    assert [c.id for c in result.tool_calls] == ["c1", "c2"]


def test_a_call_of_an_unknown_tool_answers_the_model_with_an_error_naming_the_tools_it_has() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_continue_tool_validation.py (a call the
    agent cannot run comes back to the model as an error, the run goes on)."""
    provider = ScriptedProvider([calls(("c1", "get_wether", {"city": "Rome"})), "Sorry, let me answer myself."])
    result = Session(Agent("a", provider=provider, tools=[get_weather])).run("go")

    [call] = result.tool_calls
    assert call.is_error and "get_wether" in call.output and "get_weather" in call.output
    assert result.response == "Sorry, let me answer myself."


def test_arguments_that_do_not_match_the_schema_answer_the_model_with_each_field_at_fault() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_continue_tool_validation.py (invalid
    arguments are refused before the tool runs)."""
    ran: list[int] = []

    @tool
    def square(n: int) -> int:
        """Square a number."""
        ran.append(n)
        return n * n

    provider = ScriptedProvider([calls(("c1", "square", {"n": "many", "extra": 1})), "ok"])
    result = Session(Agent("a", provider=provider, tools=[square])).run("go")

    [call] = result.tool_calls
    assert call.is_error and ran == []
    assert "'square'" in call.output and "n:" in call.output


def test_a_tool_that_raises_answers_the_model_with_the_exception_and_the_run_goes_on() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_run_regressions.py (a tool raising does
    not fail the run: the model is told and answers)."""
    provider = ScriptedProvider([calls(("c1", "divide", {"a": 1, "b": 0})), "Cannot divide by zero."])
    result = Session(Agent("a", provider=provider, tools=[divide])).run("go")

    [call] = result.tool_calls
    assert call.is_error and "ZeroDivisionError" in call.output and "division by zero" in call.output
    assert result.response == "Cannot divide by zero."


def test_a_huge_tool_result_is_cut_in_the_history_with_a_note_and_kept_whole_in_the_result() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_max_history_tokens.py (what a tool
    returns is bounded in what the model is sent again)."""

    @tool
    def dump() -> str:
        """Dump a big table."""
        return "row\n" * 5_000

    provider = ScriptedProvider([calls(("c1", "dump", {})), "ok"])
    session = Session(Agent("a", provider=provider, tools=[dump], max_tool_result_chars=1_000))
    result = session.run("go")

    [sent] = provider.requests[1].messages[-1].tool_results_blocks
    assert len(sent.content) < 1_200 and "truncated" in sent.content
    assert len(result.tool_calls[0].output) == 20_000


# -- the step limit (agno's tool_call_limit) -----------------------------------------------


def test_the_step_limit_stops_a_model_that_keeps_calling_tools_and_asks_it_for_an_answer() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_run_options.py (tool_call_limit). agno
    counts tool calls and refuses the extra ones; ours counts model calls with tools
    (max_steps) and makes one last call without tools."""
    provider = ScriptedProvider([calls((f"c{i}", "get_weather", {"city": "Rome"})) for i in range(2)] + ["Rome: sunny."])
    result = Session(Agent("a", provider=provider, tools=[get_weather], max_steps=2)).run("go")

    assert (result.response, result.max_steps_reached, len(result.tool_calls)) == ("Rome: sunny.", True, 2)
    assert [bool(r.tools) for r in provider.requests] == [True, True, False]


# -- structured outputs -------------------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_output_schema_gives_the_validated_object_whichever_way_the_agent_is_run(driver: str) -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/team/test_streaming_output_schema_parse_response.py
    (a streamed run's output is parsed like a blocking one's)."""
    provider = ScriptedProvider(['{"title": "Up", "year": 2009}'])
    result, _ = drive(driver, Session(Agent("a", provider=provider, output_schema=Movie)))

    assert result.output == Movie(title="Up", year=2009)


def test_an_answer_that_does_not_parse_is_sent_back_once_with_the_error_and_the_fixed_one_is_used() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_output_parse_failure.py. agno keeps the
    unparsed text as the content; ours asks the model once more, naming the error."""
    provider = ScriptedProvider(['{"title": "Up", "year": "two thousand nine"}', '{"title": "Up", "year": 2009}'])
    result = Session(Agent("a", provider=provider, output_schema=Movie)).run("go")

    assert result.output == Movie(title="Up", year=2009) and result.steps == 2
    assert "year" in (provider.requests[1].messages[-1].text or "")


def test_an_answer_that_never_parses_fails_the_run_naming_the_field_and_counting_its_tokens() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_output_parse_failure.py. agno returns
    the raw text with a warning; ours fails the run (kind invalid), as DESIGN's output schema
    promises a validated object."""
    provider = ScriptedProvider([text("not json at all", 5, 5), text('{"title": "Up"}', 5, 5)])
    with pytest.raises(AgentError, match=r"output schema") as caught:
        Session(Agent("a", provider=provider, output_schema=Movie)).run("go")

    assert caught.value.kind is ErrorKind.INVALID and "year" in str(caught.value)
    assert caught.value.usage is not None and caught.value.usage.input_tokens == 10


# -- history across runs -------------------------------------------------------------------


def test_a_second_run_sends_the_first_runs_messages_tool_calls_included() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_default_tools_json_history.py (history
    added to context: earlier runs' messages, tool calls and results, go with the next request)."""
    provider = ScriptedProvider([calls(("c1", "get_weather", {"city": "Rome"})), "Sunny.", "You asked about Rome."])
    session = Session(Agent("a", provider=provider, tools=[get_weather]))
    session.run("Weather in Rome?")
    session.run("What did I ask?")

    sent = provider.requests[-1].messages
    assert [m.role for m in sent] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT, Role.USER]
    assert sent[1].tool_calls[0].id == "c1" and sent[2].tool_results_blocks[0].tool_use_id == "c1"
    assert sent[-1].text == "What did I ask?"


def test_a_session_started_from_a_stored_history_continues_that_conversation() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_run_replay.py (a session read back
    from storage carries on where it was)."""
    first = Session(Agent("a", provider=ScriptedProvider(["Nice to meet you, Ada."])))
    first.run("I am Ada.")

    provider = ScriptedProvider(["Your name is Ada."])
    again = Session(Agent("a", provider=provider), history=first.history)
    assert again.run("What is my name?").response == "Your name is Ada."
    assert [m.text for m in provider.requests[0].messages] == ["I am Ada.", "Nice to meet you, Ada.", "What is my name?"]
    assert len(first.history) == 2  # the stored history is not extended by the new session


def test_a_failed_run_leaves_its_message_out_of_the_history_and_the_next_run_sends_only_its_own() -> None:
    """Ported from agno-agi/agno libs/agno/tests/unit/agent/test_cancelled_runs_in_context.py::test_flag_on_still_excludes_paused_and_error.
    As agno does, an errored run's message is left out of later runs' context: a run that
    failed before the model answered leaves the history as it was (tests/agents/test_failed_turns.py)."""
    provider = ScriptedProvider([AgentError("provider down", kind=ErrorKind.NETWORK), "Both answered."])
    session = Session(Agent("a", provider=provider))
    with pytest.raises(AgentError, match=r"provider down"):
        session.run("first question")

    assert session.run("second question").response == "Both answered."
    assert [m.text for m in provider.requests[-1].messages] == ["second question"]
