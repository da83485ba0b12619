"""Behaviours of Hugging Face smolagents' own test suite (tests/test_agents.py,
test_monitoring.py, test_memory.py), ported to our agent layer: a tool-calling agent's
run, its memory across runs, max_steps and what a run returns when it runs out, token
counting, tool errors fed back to the model, step callbacks (our hooks and middleware)
and streamed steps. Models are played by the scripted provider. Managed agents are in
test_peer_smol_more.py; LangGraph's ToolNode behaviours in test_peer_toolnode*.py."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Halt, Middleware, OutputGuardrail, RunContext
from wingman_actors.core import InferenceRequest, InferenceResponse, Role, StreamEventType, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.events import Event, EventBus
from wingman_actors.testing import ScriptedProvider

SMOL = "huggingface/smolagents"


def calls(*specs: tuple[str, str, dict[str, Any]], usage: Usage | None = None) -> InferenceResponse:
    """One model answer calling the tools ``specs`` (id, name, input)."""
    response = InferenceResponse.of_tool_calls(list(specs))
    return response.model_copy(update={"usage": usage}) if usage is not None else response


def text(answer: str, input_tokens: int = 10, output_tokens: int = 20) -> InferenceResponse:
    return InferenceResponse.of_text(answer, usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens))


@tool
def python_interpreter(code: str) -> str:
    """Evaluate a Python arithmetic expression.

    Args:
        code: the expression to evaluate, e.g. 2*3.6452
    """
    left, right = code.split("*")
    return str(round(float(left) * float(right), 4))


@tool
def never_done() -> str:
    """A tool the model keeps calling."""
    return "not yet"


@pytest.fixture
def bus() -> Iterator[EventBus]:
    with EventBus() as events:
        yield events


# -- a tool-calling agent's run and its memory -------------------------------------------


def test_a_tool_calling_run_answers_after_its_tool_and_its_history_holds_task_call_observation_and_answer() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_fake_toolcalling_agent."""
    provider = ScriptedProvider([calls(("call_0", "python_interpreter", {"code": "2*3.6452"})), "7.2904"])
    session = Session(Agent("calc", provider=provider, tools=[python_interpreter]))

    result = session.run("What is 2 multiplied by 3.6452?")

    assert result.response == "7.2904" and result.steps == 2
    task, call, observation, answer = session.history
    assert (task.role, task.text) == (Role.USER, "What is 2 multiplied by 3.6452?")
    assert [(b.id, b.name) for b in call.tool_calls] == [("call_0", "python_interpreter")]
    assert [(b.tool_use_id, b.content) for b in observation.tool_results_blocks] == [("call_0", "7.2904")]
    assert (answer.role, answer.text, answer.sender) == (Role.ASSISTANT, "7.2904", "calc")


def test_a_second_run_on_one_session_keeps_its_memory_and_a_new_session_starts_empty() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_reset_conversations (reset=False is
    another run on the same Session; reset=True is a new Session of the same agent)."""
    provider = ScriptedProvider([calls(("c1", "python_interpreter", {"code": "2*3.6452"})), "7.2904"], cycle=True)
    agent = Agent("calc", provider=provider, tools=[python_interpreter])
    session = Session(agent)

    session.run("What is 2 multiplied by 3.6452?")
    assert len(session.history) == 4
    session.run("And again?")
    assert len(session.history) == 8
    assert len(provider.requests[-1].messages) == 7  # the earlier run was sent with the new one

    fresh = Session(agent)
    fresh.run("What is 2 multiplied by 3.6452?")
    assert len(fresh.history) == 4 and len(provider.requests[-2].messages) == 1


def test_an_agent_without_tools_offers_none_and_answers_in_one_call() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_setup_agent_with_empty_toolbox."""
    provider = ScriptedProvider(["plain answer"])
    result = Session(Agent("a", provider=provider, tools=[])).run("hi")
    assert (result.response, result.steps, result.tool_calls) == ("plain answer", 1, [])
    assert provider.requests[0].tools == []


def test_two_tools_of_one_name_are_refused_when_the_agent_is_made() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_init_agent_with_different_toolsets.
    smolagents keeps one of two tools with one name; ours refuses, naming the tool, since the
    model could not tell which one it calls."""
    with pytest.raises(ValueError, match=r"duplicate tool name 'python_interpreter'"):
        Agent("a", tools=[python_interpreter, python_interpreter])


def test_tool_descriptions_and_argument_docs_reach_the_model_with_every_request() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_tool_descriptions_get_baked_in_system_prompt
    (ours sends them as tool definitions, not in the system prompt)."""
    provider = ScriptedProvider(["ok"])
    Session(Agent("a", provider=provider, tools=[python_interpreter], instructions="Be exact.")).run("Empty task")

    [definition] = provider.requests[0].tools
    assert definition.name == "python_interpreter"
    assert definition.description == "Evaluate a Python arithmetic expression."
    code = definition.input_schema["properties"]["code"]
    assert code["type"] == "string" and code["description"] == "the expression to evaluate, e.g. 2*3.6452"
    assert provider.requests[0].instructions == "Be exact."


# -- max steps: what a run returns when it runs out --------------------------------------


def test_a_model_that_never_stops_calling_tools_ends_at_max_steps_with_a_text_answer() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_fails_max_steps (the last step
    answers without tools: smolagents' provide_final_answer)."""
    provider = ScriptedProvider([calls((f"c{i}", "never_done", {})) for i in range(5)] + ["Here is what I have."])
    result = Session(Agent("a", provider=provider, tools=[never_done], max_steps=5)).run("loop")

    assert isinstance(result.response, str) and result.response == "Here is what I have."
    assert (result.steps, result.max_steps_reached, len(result.tool_calls)) == (6, True, 5)
    assert [bool(r.tools) for r in provider.requests] == [True] * 5 + [False]


def test_max_steps_one_counts_the_tokens_of_both_the_tool_step_and_the_final_call() -> None:
    """Ported from huggingface/smolagents tests/test_monitoring.py::test_code_agent_metrics_max_steps
    (two calls of 10 in / 20 out: 20 / 40)."""
    provider = ScriptedProvider([
        calls(("c1", "never_done", {}), usage=Usage(input_tokens=10, output_tokens=20)), text("Malformed answer")])
    result = Session(Agent("a", provider=provider, tools=[never_done], max_steps=1)).run("Fake task")

    assert (result.usage.input_tokens, result.usage.output_tokens) == (20, 40)
    assert result.max_steps_reached and result.steps == 2


def test_a_run_that_answers_before_max_steps_says_it_did_not_reach_the_limit() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_fake_toolcalling_agent (a run
    that ends with its answer before the limit)."""
    provider = ScriptedProvider([calls(("c1", "never_done", {})), "done"])
    result = Session(Agent("a", provider=provider, tools=[never_done], max_steps=2)).run("go")
    assert (result.status, result.max_steps_reached, result.stop_reason) == ("succeeded", False, "end_turn")


# -- token counting ----------------------------------------------------------------------


def test_a_one_call_run_counts_that_calls_tokens() -> None:
    """Ported from huggingface/smolagents tests/test_monitoring.py::test_toolcalling_agent_metrics."""
    result = Session(Agent("a", provider=ScriptedProvider([text("final", 10, 20)]))).run("Fake task")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10, 20)


@pytest.mark.parametrize("driver", ["run", "arun", "run_stream"])
def test_the_tokens_of_a_failed_run_reach_the_session_stop_hook(bus: EventBus, driver: str) -> None:
    """Ported from huggingface/smolagents tests/test_monitoring.py::test_code_agent_metrics_generation_error
    (the monitor counts the calls made before the model failed): a provider that raises an
    exception of its own, not an AgentError, leaves the exception as it is; the hook says
    what the run spent."""
    stops: list[Event] = []
    bus.subscribe(["session_stop"], stops.append)
    provider = ScriptedProvider([
        calls(("c1", "never_done", {}), usage=Usage(input_tokens=10, output_tokens=20)), RuntimeError("Cannot generate")])
    session = Session(Agent("a", provider=provider, tools=[never_done], events=bus))
    with pytest.raises(RuntimeError, match="Cannot generate"):
        if driver == "run":
            session.run("Fake task")
        elif driver == "arun":
            asyncio.run(session.arun("Fake task"))
        else:
            list(session.run_stream("Fake task"))
    bus.close()

    [stop] = stops
    assert stop.status == "failed" and "Cannot generate" in (stop.error or "")
    assert stop.usage is not None and (stop.usage.input_tokens, stop.usage.output_tokens) == (10, 20)


def test_a_provider_failing_on_the_first_call_fails_the_run_and_the_session_takes_the_next_message() -> None:
    """Ported from huggingface/smolagents tests/test_monitoring.py::test_code_agent_metrics_generation_error."""
    provider = ScriptedProvider([AgentError("Cannot generate", kind=ErrorKind.AGENT), "second try"])
    session = Session(Agent("a", provider=provider))
    with pytest.raises(AgentError, match="Cannot generate") as caught:
        session.run("Fake task")
    assert caught.value.usage is None  # nothing was spent
    assert session.run("again").response == "second try"


# -- tool errors go back to the model ----------------------------------------------------


def test_a_tool_raising_becomes_an_error_observation_and_the_model_answers_from_it() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_code_agent_code_errors_show_offending_line_and_error
    (ours: a tool-calling agent's tool raises; the error is in the step and the next step sees it)."""

    @tool
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    provider = ScriptedProvider([calls(("c1", "divide", {"a": 1, "b": 0})), "I cannot divide by zero."])
    result = Session(Agent("a", provider=provider, tools=[divide])).run("1/0?")

    assert result.response == "I cannot divide by zero."
    [entry] = [t for t in result.trace if t.kind == "tool"]
    assert entry.is_error and "ZeroDivisionError" in entry.output
    sent = provider.requests[1].messages[-1].content[0]
    assert sent.is_error and "divide" in (sent.content or "") and "division by zero" in (sent.content or "")


def test_tool_return_values_that_are_not_text_reach_the_model_as_json() -> None:
    """Ported from huggingface/smolagents tests/test_async_tools.py::TestAsyncToolWithComplexReturn::test_async_tool_returning_list
    (non-text outputs, rendered for the model as JSON)."""

    @tool
    def facts() -> dict[str, Any]:
        """Some facts."""
        return {"city": "Paris", "population": 2_100_000, "tags": ["capital"]}

    provider = ScriptedProvider([calls(("c1", "facts", {})), "ok"])
    result = Session(Agent("a", provider=provider, tools=[facts])).run("facts?")
    assert result.tool_calls[0].output == '{"city": "Paris", "population": 2100000, "tags": ["capital"]}'


def test_an_async_tool_is_awaited_in_a_blocking_run_and_a_blocking_tool_runs_in_an_awaited_run() -> None:
    """Ported from huggingface/smolagents tests/test_async_tools.py::TestAsyncToolInsideEventLoop::test_async_tool_inside_running_loop."""

    @tool
    async def fetch(key: str) -> str:
        """Fetch a value."""
        await asyncio.sleep(0.01)
        return f"async:{key}"

    @tool
    def lookup(key: str) -> str:
        """Look a value up."""
        return f"sync:{key}"

    def script() -> ScriptedProvider:
        return ScriptedProvider([calls(("c1", "fetch", {"key": "a"}), ("c2", "lookup", {"key": "b"})), "ok"])

    blocking = Session(Agent("a", provider=script(), tools=[fetch, lookup])).run("go")
    awaited = asyncio.run(Session(Agent("a", provider=script(), tools=[fetch, lookup])).arun("go"))
    for result in (blocking, awaited):
        assert [c.output for c in result.tool_calls] == ["async:a", "sync:b"]


# -- step callbacks: hooks and middleware ------------------------------------------------


def test_step_callbacks_see_every_step_in_order_with_its_number_and_the_final_result(bus: EventBus) -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_step_callbacks (a callback is
    called after every step with the step's memory)."""
    seen: list[tuple[str, int | None]] = []
    finals: list[Any] = []
    bus.subscribe(["model_end", "tool_end"], lambda e: seen.append((e.kind, e.step)))
    bus.subscribe(["session_stop"], lambda e: finals.append(e.result))
    provider = ScriptedProvider([calls(("c1", "never_done", {})), calls(("c2", "never_done", {})), "done"])
    result = Session(Agent("a", provider=provider, tools=[never_done], events=bus)).run("go")
    bus.close()

    assert seen == [("model_end", 1), ("tool_end", 1), ("model_end", 2), ("tool_end", 2), ("model_end", 3)]
    assert finals == [result]


class StopAfterFirstStep(Middleware):
    """smolagents' ``agent.interrupt()`` from a step callback: cancel the run after step one."""

    def __init__(self) -> None:
        self.session: Session | None = None

    def after_model(self, ctx: RunContext, response: InferenceResponse) -> InferenceResponse | None:
        if ctx.step == 1 and self.session is not None:
            self.session.cancel("interrupted by a step callback")
        return None


def test_cancelling_the_session_from_a_step_callback_stops_the_run_before_its_tools_and_frees_the_session() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_interrupt."""
    ran: list[str] = []

    @tool
    def work() -> str:
        """Do some work."""
        ran.append("work")
        return "worked"

    stopper = StopAfterFirstStep()
    provider = ScriptedProvider([calls(("c1", "work", {})), "never reached", "after"])
    session = Session(Agent("a", provider=provider, tools=[work], middleware=[stopper]))
    stopper.session = session

    with pytest.raises(AgentError, match="interrupted by a step callback") as caught:
        session.run("go")
    assert caught.value.kind is ErrorKind.CANCELLED
    assert provider.calls == 1
    stopper.session = None
    assert session.run("next").response == "never reached"  # the session goes on
    assert ran == []  # the tool step never began
    [closed] = session.history[2].tool_results_blocks
    assert closed.is_error and "interrupted by a step callback" in (closed.content or "")


# -- streaming of steps ------------------------------------------------------------------


def test_a_streamed_run_yields_each_tool_call_its_result_then_the_answers_text() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_toolcalling_agent_stream_logs_multiple_tool_calls_observations
    and tests/test_monitoring.py::test_streaming_agent_text_output."""
    provider = ScriptedProvider([
        calls(("c1", "python_interpreter", {"code": "2*3"}), ("c2", "python_interpreter", {"code": "4*5"})),
        "Six and twenty.",
    ], stream_chunk=4)
    stream = Session(Agent("a", provider=provider, tools=[python_interpreter])).run_stream("go")
    events = list(stream)

    tools = [(e.type, e.block.id if e.type is StreamEventType.TOOL_START else e.block.tool_use_id)
             for e in events if e.type in (StreamEventType.TOOL_START, StreamEventType.TOOL_END) and e.block]
    # both calls start before either ends (they run together); the ends come as they finish
    assert tools[:2] == [(StreamEventType.TOOL_START, "c1"), (StreamEventType.TOOL_START, "c2")]
    assert sorted(tools[2:]) == [(StreamEventType.TOOL_END, "c1"), (StreamEventType.TOOL_END, "c2")]
    last_tool = max(i for i, e in enumerate(events) if e.type is StreamEventType.TOOL_END)
    deltas = [e.text or "" for e in events[last_tool:] if e.type is StreamEventType.TEXT_DELTA]
    assert "".join(deltas) == "Six and twenty." == stream.result().response
    assert [c.output for c in stream.result().tool_calls] == ["6.0", "20.0"]


def test_a_stream_whose_model_fails_ends_with_an_error_event_and_raises() -> None:
    """Ported from huggingface/smolagents tests/test_monitoring.py::test_streaming_with_agent_error."""
    provider = ScriptedProvider([calls(("c1", "never_done", {})), AgentError("model broke", kind=ErrorKind.AGENT)])
    session = Session(Agent("a", provider=provider, tools=[never_done]))
    events = []
    with pytest.raises(AgentError, match="model broke"):
        for event in session.run_stream("go"):
            events.append(event)
    assert events[-1].type is StreamEventType.ERROR and "model broke" in (events[-1].error or "")
    assert any(e.type is StreamEventType.TOOL_END for e in events)  # the first step was streamed


def test_an_astreamed_run_gives_the_same_steps_as_a_blocking_one() -> None:
    """Ported from huggingface/smolagents tests/test_monitoring.py::test_streaming_agent_text_output
    (awaited: the streamed run gives the steps and answer of a blocking one)."""

    def script() -> ScriptedProvider:
        return ScriptedProvider([calls(("c1", "python_interpreter", {"code": "2*3.6452"})), "7.2904"])

    async def main() -> Any:
        stream = Session(Agent("a", provider=script(), tools=[python_interpreter])).astream("go")
        kinds = [e.type async for e in stream if e.type in (StreamEventType.TOOL_START, StreamEventType.TOOL_END)]
        return kinds, stream.result()

    kinds, streamed = asyncio.run(main())
    blocking = Session(Agent("a", provider=script(), tools=[python_interpreter])).run("go")
    assert kinds == [StreamEventType.TOOL_START, StreamEventType.TOOL_END]
    assert (streamed.response, streamed.steps, streamed.tool_calls[0].output) == (
        blocking.response, blocking.steps, blocking.tool_calls[0].output)


# -- run arguments -----------------------------------------------------------------------


def test_additional_arguments_of_a_run_reach_the_agents_prepare_and_middleware() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_additional_args_added_to_task
    (ours: Session.run(..., metadata=) reaches RunContext.metadata; the prompt is the caller's)."""
    seen: list[Any] = []

    class Record(Middleware):
        def before_model(self, ctx: RunContext, request: InferenceRequest) -> InferenceRequest | None:
            seen.append(dict(ctx.metadata))
            return None

    provider = ScriptedProvider(["ok"])
    Session(Agent("a", provider=provider, middleware=[Record()])).run(
        "What is 2 multiplied by 3.6452?", metadata={"instruction": "Remember this."})
    assert seen == [{"instruction": "Remember this."}]


def test_an_agent_without_tools_whose_model_calls_one_anyway_is_told_it_has_none_and_answers_next() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_toolcalling_agent_api_misformatted_output
    (a call the agent cannot make is an error the model sees in its next step)."""
    provider = ScriptedProvider([calls(("c1", "python_interpreter", {"code": "1*1"})), "I have no tools; 1."])
    result = Session(Agent("a", provider=provider)).run("1*1?")
    [call] = result.tool_calls
    assert call.is_error and "'python_interpreter'" in call.output and "available tools: none" in call.output
    assert (result.response, result.steps) == ("I have no tools; 1.", 2)


def test_a_final_answer_check_that_fails_halts_the_run_with_its_reason() -> None:
    """Ported from huggingface/smolagents tests/test_agents.py::test_final_answer_checks. smolagents
    logs a failed check as the step's error and lets the model try again until max_steps;
    our OutputGuardrail halts the run with the check's reason (a middleware may retry instead)."""
    provider = ScriptedProvider(["2", "4"])
    guard = OutputGuardrail(lambda answer: answer == "4" or f"{answer} is wrong", name="final answer check")
    session = Session(Agent("a", provider=provider, middleware=[guard]))
    with pytest.raises(Halt, match=r"final answer check: 2 is wrong"):
        session.run("2+2?")
    assert provider.calls == 1 and session.run("2+2 again?").response == "4"
