"""Behaviours of Haystack's agent tests (test/components/agents/test_agent.py and the
ToolInvoker tests, test/components/tools/test_tool_invoker.py), ported to our agent layer:
the run loop and its exit conditions, what a run returns, tool calls of one step (in order,
concurrently, bounded), tool errors and unknown tools sent back to the model, state shared
by tools (``ToolContext.state`` for Haystack's ``State``), and streamed events. Models are
played by the scripted provider. Haystack's pipeline tests are in
tests/formation/test_peer_haystack*.py; its tool-schema tests in
tests/tools/test_peer_hsagents_tools.py."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import InFlight
from wingman_actors import Agent, Session, tool
from wingman_actors.core import ContentBlock, InferenceResponse, Role, StreamEventType
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext

WEATHER = {
    "Berlin": {"weather": "mostly sunny", "temperature": 7, "unit": "celsius"},
    "Paris": {"weather": "mostly cloudy", "temperature": 8, "unit": "celsius"},
    "Rome": {"weather": "sunny", "temperature": 14, "unit": "celsius"},
}


@tool
def weather_tool(location: str) -> dict[str, Any]:
    """Provides weather information for a given location."""
    return WEATHER.get(location, {"weather": "unknown", "temperature": 0, "unit": "celsius"})


@tool
def faulty_tool(location: str) -> str:
    """A tool that always fails when invoked."""
    raise RuntimeError("This tool always fails.")


def calls(*specs: tuple[str, str, dict[str, Any]]) -> InferenceResponse:
    return InferenceResponse.of_tool_calls(list(specs))


def results_sent(provider: ScriptedProvider, request: int = 1) -> list[ContentBlock]:
    """The tool results the model was sent with its request number ``request``."""
    return provider.requests[request].messages[-1].tool_results_blocks


# -- a run and what it returns ---------------------------------------------------------------


def test_the_instructions_go_with_every_request_and_the_user_message_is_the_first_message() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_run_with_system_prompt."""
    provider = ScriptedProvider([calls(("c1", "weather_tool", {"location": "Berlin"})), "7 degrees"])
    Session(Agent("a", provider=provider, tools=[weather_tool], instructions="This is a system prompt.")).run("Weather?")

    assert [r.instructions for r in provider.requests] == ["This is a system prompt."] * 2
    first = provider.requests[0].messages[0]
    assert (first.role, first.text) == (Role.USER, "Weather?")


def test_a_run_returns_the_last_answer_and_the_history_holds_every_message_in_order() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_run (the ``last_message``
    and ``messages`` outputs: our ``Result.response`` and ``Session.history``)."""
    provider = ScriptedProvider([calls(("c1", "weather_tool", {"location": "Berlin"})), "It is mostly sunny."])
    session = Session(Agent("a", provider=provider, tools=[weather_tool]))

    result = session.run("What is the weather in Berlin?")

    assert result.response == "It is mostly sunny." and result.steps == 2
    assert [m.role for m in session.history] == [Role.USER, Role.ASSISTANT, Role.USER, Role.ASSISTANT]
    assert session.history[-1].text == result.response


def test_an_answer_with_text_and_a_tool_call_does_not_end_the_run() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_exit_conditions_checks
    (the ``text`` exit condition holds only for a message without tool calls)."""
    said_and_called = InferenceResponse(
        content=[ContentBlock.text_block("Let me check."), *calls(("c1", "weather_tool", {"location": "Rome"})).content],
        stop_reason="tool_use",
    )
    provider = ScriptedProvider([said_and_called, "Sunny, 14 degrees."])

    result = Session(Agent("a", provider=provider, tools=[weather_tool])).run("Rome?")

    assert result.response == "Sunny, 14 degrees."
    assert [c.name for c in result.tool_calls] == ["weather_tool"]
    assert '"temperature": 14' in (results_sent(provider)[0].content or "")


def test_a_run_that_reaches_max_steps_asks_once_more_without_tools_and_returns_that_answer() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_run_with_max_agent_steps.
    Haystack stops at ``max_agent_steps`` with a warning and returns the messages so far (the last
    one a tool result); ours makes one more call without tools asking for the answer, as documented."""
    loop = calls(("c1", "weather_tool", {"location": "Paris"}))
    provider = ScriptedProvider([loop, loop, "Cloudy in Paris."])

    result = Session(Agent("a", provider=provider, tools=[weather_tool], max_steps=2)).run("Paris?")

    assert result.response == "Cloudy in Paris." and result.max_steps_reached
    assert [len(r.tools) for r in provider.requests] == [1, 1, 0]
    assert "maximum number of steps" in provider.requests[-1].messages[-1].text


def test_tool_calls_in_the_last_call_past_max_steps_are_not_run_and_its_text_is_the_answer() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_run_with_max_agent_steps
    (a model that keeps calling tools once its steps are spent: Haystack never calls it again;
    ours drops the calls of the tool-less last call and keeps its text)."""
    loop = calls(("c1", "weather_tool", {"location": "Paris"}))
    stubborn = InferenceResponse(
        content=[ContentBlock.text_block("Cloudy, I think."), *calls(("c9", "weather_tool", {"location": "Rome"})).content],
        stop_reason="tool_use",
    )
    provider = ScriptedProvider([loop, stubborn])

    result = Session(Agent("a", provider=provider, tools=[weather_tool], max_steps=1)).run("Paris?")

    assert result.response == "Cloudy, I think."
    assert [c.id for c in result.tool_calls] == ["c1"]
    assert len(provider.requests) == 2


def test_a_structured_run_whose_calls_past_max_steps_only_ask_for_tools_says_max_steps_was_reached() -> None:
    """The case the test above leaves open, with an output schema (hsagents27's note): the
    tool-less calls past ``max_steps`` answer with tool calls only, so there is no text to
    validate. The error names max_steps and the tools asked for, not "Invalid JSON: EOF"."""

    class Forecast(BaseModel):
        sky: str

    loop = calls(("c1", "weather_tool", {"location": "Paris"}))
    provider = ScriptedProvider([loop, loop, loop])
    agent = Agent("a", provider=provider, tools=[weather_tool], max_steps=1, output_schema=Forecast)

    with pytest.raises(AgentError) as caught:
        Session(agent).run("Paris?")

    message = str(caught.value)
    assert caught.value.kind is ErrorKind.INVALID
    assert "max_steps=1" in message and "weather_tool" in message and "Invalid JSON" not in message
    assert len(provider.requests) == 3  # the last call, then its one corrective retry


def test_a_tool_named_final_answer_does_not_end_the_run_the_model_is_asked_again() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_exit_conditions_checks and
    test_agent_hooks.py::TestAfterRunHook::test_runs_on_tool_based_exit (``exit_conditions=["final_answer"]``
    ends the run once that tool has run, its result the last message). Ours has no exit-on-tool
    condition: every tool step is followed by another model call, whose text is the answer."""

    @tool
    def final_answer(answer: str) -> str:
        """Provide the final answer."""
        return answer

    provider = ScriptedProvider([calls(("c1", "final_answer", {"answer": "42"})), "The answer is 42."])
    result = Session(Agent("a", provider=provider, tools=[final_answer])).run("?")

    assert len(provider.requests) == 2
    assert result.response == "The answer is 42." and result.tool_calls[0].output == "42"


def test_a_structured_output_after_tool_calls_is_the_validated_object() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_run_with_response_format
    (structured output of the agent's last message)."""

    class Forecast(BaseModel):
        city: str
        temperature: int

    provider = ScriptedProvider([calls(("c1", "weather_tool", {"location": "Rome"})), '{"city": "Rome", "temperature": 14}'])
    agent = Agent("a", provider=provider, tools=[weather_tool], output_schema=Forecast)

    result = Session(agent).run("Rome?")

    assert result.output == Forecast(city="Rome", temperature=14)
    assert provider.requests[0].output_schema is not None


# -- tool calls of one step -------------------------------------------------------------------


def test_the_results_of_several_calls_of_one_step_come_back_in_call_order_each_with_its_call_id() -> None:
    """From deepset-ai/haystack test/components/tools/test_tool_invoker.py::test_run_multiple_tool_calls."""
    provider = ScriptedProvider([
        calls(("b", "weather_tool", {"location": "Berlin"}), ("p", "weather_tool", {"location": "Paris"}),
              ("r", "weather_tool", {"location": "Rome"})),
        "done",
    ])
    result = Session(Agent("a", provider=provider, tools=[weather_tool])).run("Three cities?")

    sent = results_sent(provider)
    assert [b.tool_use_id for b in sent] == ["b", "p", "r"]
    assert [c.input["location"] for c in result.tool_calls] == ["Berlin", "Paris", "Rome"]
    assert not any(b.is_error for b in sent)


def test_calls_of_one_step_run_concurrently_and_their_results_keep_call_order() -> None:
    """From deepset-ai/haystack test/components/tools/test_tool_invoker.py::test_parallel_tool_calling_with_state_updates
    (the first call finishes last; its result is still first)."""
    started = threading.Barrier(3, timeout=10)

    @tool
    def slow(n: int) -> str:
        """Waits for the others."""
        started.wait()  # only passes when all three calls are in flight at once
        return f"done {n}"

    provider = ScriptedProvider([calls(*[(f"c{n}", "slow", {"n": n}) for n in range(3)]), "ok"])
    Session(Agent("a", provider=provider, tools=[slow])).run("go")

    assert [b.content for b in results_sent(provider)] == ["done 0", "done 1", "done 2"]


def test_tool_concurrency_bounds_the_calls_in_flight() -> None:
    """From deepset-ai/haystack test/components/tools/test_tool_invoker.py::test_parallel_tool_calling_with_max_workers
    (``max_workers`` is our ``tool_concurrency``)."""
    flight = InFlight()

    @tool
    def busy(n: int) -> int:
        """Busy for a moment."""
        with flight:
            threading.Event().wait(0.02)
        return n

    provider = ScriptedProvider([calls(*[(f"c{n}", "busy", {"n": n}) for n in range(6)]), "ok"])
    result = Session(Agent("a", provider=provider, tools=[busy], tool_concurrency=2)).run("go")

    assert flight.peak <= 2
    assert [c.output for c in result.tool_calls] == [str(n) for n in range(6)]


def test_an_unknown_tool_goes_back_to_the_model_as_an_error_naming_the_tools_that_exist() -> None:
    """From deepset-ai/haystack test/components/tools/test_tool_invoker.py::test_tool_not_found_does_not_raise_exception.
    Haystack raises ``ToolNotFoundException`` unless ``raise_on_failure=False``; an agent of ours
    always sends the error back, so the model may correct itself."""
    provider = ScriptedProvider([calls(("c1", "non_existent_tool", {"location": "Berlin"})), "sorry"])
    result = Session(Agent("a", provider=provider, tools=[weather_tool])).run("Berlin?")

    [sent] = results_sent(provider)
    assert sent.is_error and "unknown tool 'non_existent_tool'" in (sent.content or "")
    assert "weather_tool" in (sent.content or "")
    assert result.response == "sorry" and result.tool_calls[0].is_error


def test_a_tool_that_raises_goes_back_to_the_model_as_an_error_with_the_tool_and_the_cause() -> None:
    """From deepset-ai/haystack test/components/tools/test_tool_invoker.py::test_tool_invocation_error_does_not_raise_exception."""
    provider = ScriptedProvider([calls(("c1", "faulty_tool", {"location": "Berlin"})), "it failed"])
    result = Session(Agent("a", provider=provider, tools=[faulty_tool])).run("Berlin?")

    [sent] = results_sent(provider)
    assert sent.is_error
    assert "faulty_tool" in (sent.content or "") and "This tool always fails." in (sent.content or "")
    assert result.response == "it failed"


def test_one_failing_call_of_a_step_leaves_the_results_of_the_others() -> None:
    """From deepset-ai/haystack test/components/agents/test_tool_invoker.py (a failing call among
    several: the others' results are kept)."""
    provider = ScriptedProvider([
        calls(("ok1", "weather_tool", {"location": "Berlin"}), ("bad", "faulty_tool", {"location": "x"}),
              ("ok2", "weather_tool", {"location": "Rome"})),
        "partly",
    ])
    Session(Agent("a", provider=provider, tools=[weather_tool, faulty_tool])).run("go")

    assert [(b.tool_use_id, b.is_error) for b in results_sent(provider)] == [("ok1", False), ("bad", True), ("ok2", False)]


def test_arguments_that_do_not_match_the_schema_go_back_to_the_model_saying_what_to_fix() -> None:
    """From deepset-ai/haystack test/tools/test_tool.py::test_invoke_fail (a call with wrong
    arguments): ours validates before the call and tells the model how to call it again."""
    ran: list[str] = []

    @tool
    def remember(location: str) -> str:
        """Remember a place."""
        ran.append(location)
        return "ok"

    provider = ScriptedProvider([calls(("c1", "remember", {"place": "Berlin"})), calls(("c2", "remember", {"location": "Berlin"})), "ok"])
    Session(Agent("a", provider=provider, tools=[remember])).run("go")

    [sent] = results_sent(provider)
    assert sent.is_error and "location" in (sent.content or "") and "Field required" in (sent.content or "")
    assert "Call it again" in (sent.content or "")
    assert ran == ["Berlin"]  # the bad call never reached the function


def test_a_tool_result_that_is_not_text_reaches_the_model_as_json_with_non_ascii_kept() -> None:
    """From deepset-ai/haystack test/components/tools/test_tool_invoker.py::test_run (a dict result)
    and ``convert_result_to_json_string`` (Haystack's default is ``str(result)``; ours is JSON,
    as documented, without escaping non-ASCII text)."""

    @tool
    def city() -> dict[str, Any]:
        """A city."""
        return {"name": "München", "temperature": 7}

    provider = ScriptedProvider([calls(("c1", "city", {})), "ok"])
    Session(Agent("a", provider=provider, tools=[city])).run("go")

    assert results_sent(provider)[0].content == '{"name": "München", "temperature": 7}'


def test_a_tool_returning_none_gives_an_empty_result_that_is_not_an_error() -> None:
    """From deepset-ai/haystack test/components/tools/test_tool_invoker.py::test_run (a tool with no
    return value)."""

    @tool
    def noop() -> None:
        """Does nothing."""

    provider = ScriptedProvider([calls(("c1", "noop", {})), "ok"])
    Session(Agent("a", provider=provider, tools=[noop])).run("go")

    [sent] = results_sent(provider)
    assert (sent.content, sent.is_error) == ("", False)


# -- state shared by tools ---------------------------------------------------------------------


@tool
def put(key: str, value: str, ctx: ToolContext) -> str:
    """Store a value."""
    ctx.state[key] = value
    return "stored"


@tool
def get(key: str, ctx: ToolContext) -> str:
    """Read a value."""
    return str(ctx.state.get(key, "missing"))


def test_a_value_one_tool_writes_to_the_state_is_read_by_a_later_tool() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_agent_with_state_schema
    (``outputs_to_state`` then ``inputs_from_state``: ours is ``ToolContext.state``)."""
    provider = ScriptedProvider([calls(("c1", "put", {"key": "docs", "value": "three"})),
                                 calls(("c2", "get", {"key": "docs"})), "ok"])
    result = Session(Agent("a", provider=provider, tools=[put, get])).run("go")

    assert [c.output for c in result.tool_calls] == ["stored", "three"]


def test_the_state_lasts_across_runs_of_one_session_and_a_new_session_starts_empty() -> None:
    """From deepset-ai/haystack test/components/agents/test_state_class.py (a State per run).
    Haystack's State lives for one run; ``ToolContext.state`` lives for the session (documented
    as per-session storage), so a second run still sees it."""
    read = calls(("c2", "get", {"key": "k"}))
    agent = Agent("a", provider=ScriptedProvider([calls(("c1", "put", {"key": "k", "value": "v"})), "ok", read, "ok", read, "ok"]),
                  tools=[put, get])
    session = Session(agent)
    session.run("store")
    assert session.run("read").tool_calls[0].output == "v"

    assert Session(agent).run("read").tool_calls[0].output == "missing"


def test_state_written_by_concurrent_calls_of_one_step_keeps_every_write() -> None:
    """From deepset-ai/haystack test/components/tools/test_tool_invoker.py::test_parallel_tool_calling_with_state_updates."""
    provider = ScriptedProvider([calls(*[(f"c{n}", "put", {"key": f"k{n}", "value": str(n)}) for n in range(5)]),
                                 calls(*[(f"g{n}", "get", {"key": f"k{n}"}) for n in range(5)]), "ok"])
    result = Session(Agent("a", provider=provider, tools=[put, get])).run("go")

    assert [c.output for c in result.tool_calls[5:]] == ["0", "1", "2", "3", "4"]


# -- streaming ---------------------------------------------------------------------------------


def test_a_streamed_run_emits_each_tool_start_before_its_end_and_between_the_model_calls() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_run_with_streaming_callback
    (the callback sees the model's chunks and the tool results, in order)."""
    provider = ScriptedProvider([calls(("c1", "weather_tool", {"location": "Rome"})), "Sunny."])
    stream = Session(Agent("a", provider=provider, tools=[weather_tool])).run_stream("Rome?")

    kinds = [e.type for e in stream]

    starts = [i for i, k in enumerate(kinds) if k is StreamEventType.MESSAGE_START]
    assert len(starts) == 2
    tool_start, tool_end = kinds.index(StreamEventType.TOOL_START), kinds.index(StreamEventType.TOOL_END)
    assert starts[0] < tool_start < tool_end < starts[1]
    assert kinds.index(StreamEventType.TEXT_DELTA) > tool_end
    assert stream.result().response == "Sunny."


def test_the_streamed_tool_end_carries_the_result_the_model_is_sent() -> None:
    """From deepset-ai/haystack test/components/tools/test_tool_invoker.py::test_run_with_streaming_callback
    (the tool result reaches the streaming callback)."""
    provider = ScriptedProvider([calls(("c1", "faulty_tool", {"location": "x"})), "failed"])
    stream = Session(Agent("a", provider=provider, tools=[faulty_tool])).run_stream("go")

    ends = [e.block for e in stream if e.type is StreamEventType.TOOL_END]

    assert len(ends) == 1 and ends[0] is not None
    assert (ends[0].tool_use_id, ends[0].is_error) == ("c1", True)
    assert ends[0].content == results_sent(provider)[0].content


def test_a_provider_that_raises_fails_the_run_with_its_own_error_and_the_session_runs_again() -> None:
    """From deepset-ai/haystack test/components/agents/test_agent.py::test_run_with_chat_generator_failure
    (the generator raising inside the loop surfaces to the caller as it is)."""
    failures = [RuntimeError("provider down")]

    class Flaky(ScriptedProvider):
        def run_inference(self, request: Any) -> InferenceResponse:
            if failures:
                raise failures.pop()
            return super().run_inference(request)

    session = Session(Agent("a", provider=Flaky(["back"]), tools=[weather_tool]))
    with pytest.raises(RuntimeError, match="provider down"):
        session.run("go")
    assert session.run("again").response == "back"
