"""Behaviours of LangGraph's prebuilt ToolNode and create_react_agent tests
(libs/prebuilt/tests/test_tool_node.py, test_react_agent.py), ported to our Session's tool
step, middleware (ours: the pre/post model hooks and tool error handlers) and prepare
(ours: the dynamic prompt and tools). Interrupts before tools and agent nodes inside a
formation are in test_peer_toolnode_formation.py. The models are played by the scripted
provider."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import typing
from typing import Any

import pytest
import typing_extensions
from pydantic import BaseModel

from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Halt, Middleware, Prepared, RunContext
from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse, StreamEventType
from wingman_actors.errors import AgentError, ErrorKind, ToolError
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext


def calls(*specs: tuple[str, str, dict[str, Any]]) -> InferenceResponse:
    return InferenceResponse.of_tool_calls(list(specs))


@tool
def tool1(some_val: int, some_other_val: str) -> str:
    """Tool 1 docstring."""
    if some_val == 0:
        raise ValueError("Test error")
    return f"{some_val} - {some_other_val}"


@tool
async def tool2(some_val: int, some_other_val: str) -> str:
    """Tool 2 docstring."""
    if some_val == 0:
        raise ToolError("Test error")
    return f"tool2: {some_val} - {some_other_val}"


@tool
async def tool3(some_val: int, some_other_val: str) -> list[dict[str, Any]]:
    """Tool 3 docstring."""
    return [{"key_1": some_val, "key_2": "foo"}, {"key_1": some_other_val, "key_2": "baz"}]


def results_sent(provider: ScriptedProvider, request: int = 1) -> list[ContentBlock]:
    """The tool results the model was sent with request ``request``."""
    return provider.requests[request].messages[-1].tool_results_blocks


# -- ToolNode: results, list outputs, errors -------------------------------------------


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_sync_and_async_tools_answer_their_calls_by_id_and_list_outputs_go_back_as_json(driver: str) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_tool_node.py::test_tool_node."""
    provider = ScriptedProvider([calls(("some 0", "tool1", {"some_val": 1, "some_other_val": "foo"}),
                                       ("some 1", "tool2", {"some_val": 2, "some_other_val": "bar"}),
                                       ("some 2", "tool3", {"some_val": 2, "some_other_val": "bar"})), "ok"])
    session = Session(Agent("a", provider=provider, tools=[tool1, tool2, tool3]))
    session.run("go") if driver == "run" else asyncio.run(session.arun("go"))

    assert [(b.tool_use_id, b.content, b.is_error) for b in results_sent(provider)] == [
        ("some 0", "1 - foo", False), ("some 1", "tool2: 2 - bar", False),
        ("some 2", '[{"key_1": 2, "key_2": "foo"}, {"key_1": "bar", "key_2": "baz"}]', False)]


def test_an_unknown_tool_among_good_calls_fails_alone_and_names_the_tools_there_are() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_tool_node.py::test_tool_node_tool_call_input."""
    provider = ScriptedProvider([calls(("some 0", "tool1", {"some_val": 1, "some_other_val": "foo"}),
                                       ("some 1", "tool9", {"some_val": 1})), "ok"])
    Session(Agent("a", provider=provider, tools=[tool1])).run("go")
    good, bad = results_sent(provider)
    assert (good.content, good.is_error) == ("1 - foo", False)
    assert bad.is_error and bad.tool_use_id == "some 1" and "'tool9'" in (bad.content or "") and "tool1" in (bad.content or "")


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_every_failure_of_a_step_goes_back_as_an_error_result_of_its_own_call(driver: str) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_tool_node.py::test_tool_node_error_handling
    (handle_tool_errors=True: a raise, a tool exception and bad arguments, one result each).
    LangGraph's default raises an exception from the tool's own code out of the graph; ours
    always hands it to the model (DESIGN: tool errors reach the model as error results)."""
    provider = ScriptedProvider([calls(("some id", "tool1", {"some_val": 0, "some_other_val": "foo"}),
                                       ("some other id", "tool2", {"some_val": 0, "some_other_val": "bar"}),
                                       ("another id", "tool3", {"some_val": 0})), "ok"])
    session = Session(Agent("a", provider=provider, tools=[tool1, tool2, tool3]))
    result = session.run("go") if driver == "run" else asyncio.run(session.arun("go"))

    first, second, third = results_sent(provider)
    assert [b.tool_use_id for b in (first, second, third)] == ["some id", "some other id", "another id"]
    assert all(b.is_error for b in (first, second, third))
    assert first.content == "Error: tool 'tool1' raised ValueError: Test error"
    assert second.content == "Error: Test error"  # a ToolError's message as written
    assert "some_other_val" in (third.content or "") and "invalid arguments for tool 'tool3'" in (third.content or "")
    assert result.response == "ok"


class ErrorHandler(Middleware):
    """LangGraph's handle_tool_errors=callable: rewrite the error results of some exceptions."""

    def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
        if result.is_error and "ValueError" in (result.content or ""):
            return result.model_copy(update={"content": "Value error"})
        return None


def test_an_after_tool_middleware_rewrites_the_errors_it_handles_and_leaves_the_rest() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_tool_node.py::test_tool_node_error_handling_callable."""
    provider = ScriptedProvider([calls(("a", "tool1", {"some_val": 0, "some_other_val": "foo"}),
                                       ("b", "tool2", {"some_val": 0, "some_other_val": "bar"}),
                                       ("c", "tool1", {"some_val": 1, "some_other_val": "ok"})), "ok"])
    Session(Agent("a", provider=provider, tools=[tool1, tool2], middleware=[ErrorHandler()])).run("go")
    assert [(b.content, b.is_error) for b in results_sent(provider)] == [
        ("Value error", True), ("Error: Test error", True), ("1 - ok", False)]


class RaiseToolErrors(Middleware):
    """LangGraph's handle_tool_errors=False: a failed tool call fails the run."""

    def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
        if result.is_error:
            raise Halt(f"tool {call.name} failed: {result.content}")
        return None


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_middleware_that_halts_on_a_tool_error_fails_the_run_with_it_and_frees_the_session(driver: str) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_tool_node.py::test_tool_node_handle_tool_errors_false.
    A tool's exception never leaves the run by itself here: to fail the run on it, a
    middleware raises Halt."""
    provider = ScriptedProvider([calls(("some id", "tool1", {"some_val": 0, "some_other_val": "foo"})), "never", "next"])
    session = Session(Agent("a", provider=provider, tools=[tool1], middleware=[RaiseToolErrors()]))
    with pytest.raises(Halt, match=r"tool tool1 failed: Error: tool 'tool1' raised ValueError: Test error"):
        session.run("go") if driver == "run" else asyncio.run(session.arun("go"))
    assert provider.calls == 1
    assert session.run("again").response == "never"  # the session is free; its history was closed
    assert session.history[2].tool_results_blocks[0].is_error


# -- parallel tool calls ---------------------------------------------------------------


def test_blocking_tools_called_in_one_step_run_together_and_answer_in_call_order() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_react_agent_parallel_tool_calls
    (ToolNode runs a message's tool calls concurrently, one thread each): each call waits
    until all three are running, which only calls run together can do."""
    all_running = threading.Barrier(3, timeout=2)

    @tool
    def rendezvous(tag: str) -> str:
        """Wait for the other calls, then say the tag."""
        all_running.wait()
        return tag

    provider = ScriptedProvider([calls(*((f"c{i}", "rendezvous", {"tag": t}) for i, t in enumerate("ABC"))), "ok"])
    result = Session(Agent("a", provider=provider, tools=[rendezvous])).run("go")
    assert [(c.output, c.is_error) for c in result.tool_calls] == [("A", False), ("B", False), ("C", False)]
    assert [b.tool_use_id for b in results_sent(provider)] == ["c0", "c1", "c2"]


def test_an_astreamed_step_starts_every_async_call_before_any_ends() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_react_agent_parallel_tool_calls
    (astream, async tools)."""
    both_started = threading.Barrier(2, timeout=2)

    @tool
    async def meet(tag: str) -> str:
        """Wait for the other call."""
        await asyncio.to_thread(both_started.wait)
        return tag

    async def main() -> list[tuple[str, str]]:
        stream = Session(Agent("a", provider=ScriptedProvider([calls(("c1", "meet", {"tag": "x"}),
                                                                     ("c2", "meet", {"tag": "y"})), "ok"]),
                               tools=[meet])).astream("go")
        seen = [(e.type.value, (e.block.id or e.block.tool_use_id or "") if e.block else "") async for e in stream
                if e.type in (StreamEventType.TOOL_START, StreamEventType.TOOL_END)]
        assert stream.result().response == "ok"
        return seen

    seen = asyncio.run(main())
    assert seen[:2] == [("tool_start", "c1"), ("tool_start", "c2")]
    assert sorted(seen[2:]) == [("tool_end", "c1"), ("tool_end", "c2")]


# -- injected state: the tool context --------------------------------------------------


@tool
def lookup(city: str, ctx: ToolContext) -> str:
    """Look a city up for the user of the run."""
    return f"{city} for {ctx.metadata['user']} by {ctx.agent}"


def test_the_injected_context_is_left_out_of_the_schema_and_its_errors_and_the_tool_gets_the_run_metadata() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_tool_node.py::test_tool_node_inject_state and
    test_tool_node_validation_error_filtering.py (injected arguments are hidden from the model,
    also in validation errors)."""
    schema = lookup.definition.input_schema
    assert list(schema["properties"]) == ["city"] and schema["required"] == ["city"]
    provider = ScriptedProvider([calls(("c1", "lookup", {"town": "Oslo"}), ("c2", "lookup", {"city": "Oslo"})), "ok"])
    Session(Agent("helper", provider=provider, tools=[lookup])).run("go", metadata={"user": "u1"})

    bad, good = results_sent(provider)
    assert bad.is_error and "city" in (bad.content or "") and "ctx" not in (bad.content or "")
    assert good.content == "Oslo for u1 by helper"


def test_a_tool_cannot_change_the_run_metadata_other_tools_see() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_tool_node.py::test_tool_node_inject_state
    (state is injected read-only; a tool changes state only through its answer)."""

    @tool
    def grab(ctx: ToolContext) -> str:
        """Try to change the run's metadata."""
        ctx.metadata["user"] = "mallory"  # type: ignore[index]
        return "changed"

    provider = ScriptedProvider([calls(("c1", "grab", {})), calls(("c2", "lookup", {"city": "Rome"})), "ok"])
    result = Session(Agent("a", provider=provider, tools=[grab, lookup])).run("go", metadata={"user": "u1"})
    first, second = result.tool_calls
    assert first.is_error and "TypeError" in first.output
    assert second.output == "Rome for u1 by a"


# -- the react agent: prompt, hooks, tools per step, structured response ----------------


def test_a_prepare_function_gives_each_model_call_its_own_prompt() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_callable_prompt."""

    def prompt(ctx: RunContext) -> Prepared:
        return Prepared(instructions=f"You are at step {ctx.step} for {ctx.metadata.get('user', 'nobody')}.")

    provider = ScriptedProvider([calls(("c1", "tool1", {"some_val": 1, "some_other_val": "x"})), "ok"])
    Session(Agent("a", provider=provider, tools=[tool1], prepare=prompt, instructions="static")).run(
        "go", metadata={"user": "ada"})
    assert [r.instructions for r in provider.requests] == ["You are at step 1 for ada.", "You are at step 2 for ada."]


def test_a_model_calling_a_tool_it_was_not_offered_this_step_gets_an_error_and_the_tool_does_not_run() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_model_with_tools
    (the model is bound to a subset of the tools; ours: per call, by prepare)."""
    ran: list[str] = []

    @tool
    def secret() -> str:
        """Only offered at step 2."""
        ran.append("secret")
        return "s"

    def offer(ctx: RunContext) -> Prepared:
        return Prepared(tools=["tool1"] if ctx.step == 1 else ["tool1", "secret"])

    provider = ScriptedProvider([calls(("c1", "secret", {})), calls(("c2", "secret", {})), "ok"])
    result = Session(Agent("a", provider=provider, tools=[tool1, secret], prepare=offer)).run("go")
    assert [[t.name for t in r.tools] for r in provider.requests] == [
        ["tool1"], ["tool1", "secret"], ["tool1", "secret"]]
    first, second = result.tool_calls
    assert first.is_error and "'secret'" in first.output and "tool1" in first.output
    assert (second.is_error, second.output) == (False, "s") and ran == ["secret"]


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_tool_call_at_a_step_offered_no_tools_is_answered_as_unknown_and_the_loop_goes_on(driver: str) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_model_with_tools
    (a call of a tool the model was not bound to reaches ToolNode, which answers "not a
    valid tool"): when prepare offers no tool at a step before the limit, a call is
    answered as one of a tool not offered, as when it offers a subset; the run neither
    drops it nor ends with an empty answer."""
    ran: list[str] = []

    @tool
    def later() -> str:
        """Offered from step 2 on."""
        ran.append("later")
        return "later ran"

    provider = ScriptedProvider([calls(("c1", "later", {})), calls(("c2", "later", {})), "done"])
    session = Session(Agent("a", provider=provider, tools=[later],
                            prepare=lambda ctx: Prepared(tools=[] if ctx.step == 1 else ["later"])))
    result = session.run("go") if driver == "run" else asyncio.run(session.arun("go"))

    assert [len(r.tools) for r in provider.requests] == [0, 1, 1]
    first, second = result.tool_calls
    assert first.is_error and "'later'" in first.output
    assert (second.is_error, second.output, ran) == (False, "later ran", ["later"])
    assert (result.response, result.steps, result.max_steps_reached) == ("done", 3, False)


class TrimToLastMessage(Middleware):
    """LangGraph's pre_model_hook with llm_input_messages: the model sees fewer messages, the
    state keeps them all."""

    def before_model(self, ctx: RunContext, request: InferenceRequest) -> InferenceRequest | None:
        return request.model_copy(update={"messages": request.messages[-1:]})


def test_a_before_model_middleware_trims_what_the_model_sees_and_the_history_keeps_everything() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_pre_model_hook."""
    provider = ScriptedProvider(["one", "two"])
    session = Session(Agent("a", provider=provider, middleware=[TrimToLastMessage()]))
    session.run("first")
    session.run("second")
    assert [m.text for m in provider.requests[1].messages] == ["second"]
    assert [m.text for m in session.history] == ["first", "one", "second", "two"]


class DropToolCalls(Middleware):
    """LangGraph's post_model_hook: a guard that removes the model's tool calls."""

    def after_model(self, ctx: RunContext, response: InferenceResponse) -> InferenceResponse | None:
        kept = [b for b in response.content if b.type != "tool_use"] or [ContentBlock.text_block("blocked")]
        return response.model_copy(update={"content": kept, "stop_reason": "end_turn"})


def test_an_after_model_middleware_that_removes_the_tool_calls_ends_the_run_without_running_them() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_post_model_hook."""
    ran: list[int] = []

    @tool
    def act(n: int) -> str:
        """Act."""
        ran.append(n)
        return "acted"

    provider = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "act", {"n": 1})], text="thinking")])
    result = Session(Agent("a", provider=provider, tools=[act], middleware=[DropToolCalls()])).run("go")
    assert (result.response, result.tool_calls, ran, result.steps) == ("thinking", [], [], 1)


class Weather(BaseModel):
    temperature: float
    city: str


@pytest.mark.parametrize("driver", ["run", "astream"])
def test_a_structured_response_after_the_tool_loop_is_the_validated_object(driver: str) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_react_agent_with_structured_response."""

    @tool
    def get_weather(city: str) -> str:
        """The weather."""
        return "The weather is sunny and 75°F."

    provider = ScriptedProvider([calls(("c1", "get_weather", {"city": "SF"})),
                                 '{"temperature": 75, "city": "SF"}'])
    session = Session(Agent("a", provider=provider, tools=[get_weather], output_schema=Weather))
    if driver == "run":
        result = session.run("What's the weather?")
    else:
        async def main() -> Any:
            stream = session.astream("What's the weather?")
            async for _ in stream:
                pass
            return stream.result()

        result = asyncio.run(main())
    assert result.output == Weather(temperature=75.0, city="SF")
    assert result.tool_calls[0].output == "The weather is sunny and 75°F."


def test_remaining_steps_run_out_mid_tool_loop_and_the_last_call_answers_without_tools() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_react_agent_parallel_tool_calls
    (with remaining_steps running out: LangGraph answers "Sorry, need more steps to process this request." itself; ours asks
    the model once more without tools, as DESIGN's max_steps says)."""
    provider = ScriptedProvider([calls(("c1", "tool1", {"some_val": 1, "some_other_val": "x"})), "Partial answer."])
    result = Session(Agent("a", provider=provider, tools=[tool1], max_steps=1)).run("go")
    assert (result.response, result.max_steps_reached, result.steps) == ("Partial answer.", True, 2)
    assert [c.id for c in result.tool_calls] == ["c1"] and provider.requests[1].tools == []


def test_tool_calls_in_the_answer_after_the_step_limit_are_dropped_unrun_and_the_session_goes_on() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_react_agent.py::test_react_agent_parallel_tool_calls
    (remaining_steps run out while a model still calls tools when it has no steps left: LangGraph answers "Sorry,
    need more steps to process this request."; ours runs none of the calls and answers
    with the text the model gave, here none, with max_steps_reached set)."""
    provider = ScriptedProvider([calls(("c1", "tool1", {"some_val": 1, "some_other_val": "x"})),
                                 calls(("c2", "tool1", {"some_val": 2, "some_other_val": "y"})), "next answer"])
    session = Session(Agent("a", provider=provider, tools=[tool1], max_steps=1))
    result = session.run("go")
    assert (result.response, result.max_steps_reached, result.stop_reason) == ("", True, "end_turn")
    assert [c.id for c in result.tool_calls] == ["c1"]
    assert not any(m.tool_calls for m in session.history[2:])  # no call left unanswered in the history
    assert session.run("again").response == "next answer"


def test_a_halt_from_a_before_tool_middleware_fails_the_run_before_any_tool_of_the_step_runs() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_tool_node.py::test_tool_node_error_handling_callable
    (an error no handler takes stops the node; ours: a before_tool middleware's Halt)."""
    ran: list[str] = []

    @tool
    def write(path: str) -> str:
        """Write a file."""
        ran.append(path)
        return "written"

    class NoEtc(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            if str((call.input or {}).get("path", "")).startswith("/etc"):
                raise Halt("refusing to write under /etc")
            return None

    provider = ScriptedProvider([calls(("c1", "write", {"path": "/tmp/a"}), ("c2", "write", {"path": "/etc/passwd"}))])
    with pytest.raises(AgentError, match="refusing to write under /etc") as caught:
        Session(Agent("a", provider=provider, tools=[write], middleware=[NoEtc()])).run("go")
    assert caught.value.kind is ErrorKind.INVALID and ran == []


class WeatherDict(typing_extensions.TypedDict):
    temperature: float
    condition: str


@dataclasses.dataclass
class WeatherDataclass:
    temperature: float
    condition: str


class Location(BaseModel):
    city: str
    country: str


class WeatherModel(BaseModel):
    temperature: float
    condition: str


WEATHER_JSON_SCHEMA = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}, "condition": {"type": "string"}},
    "required": ["temperature", "condition"],
}


@pytest.mark.parametrize(("schema", "expected"), [
    (WeatherDict, {"temperature": 75.0, "condition": "sunny"}),
    (WeatherDataclass, WeatherDataclass(temperature=75.0, condition="sunny")),
    (WEATHER_JSON_SCHEMA, {"temperature": 75, "condition": "sunny"}),
    (WeatherModel | Location, WeatherModel(temperature=75.0, condition="sunny")),
], ids=["typed_dict", "dataclass", "json_schema", "union"])
def test_each_kind_of_response_format_gives_its_validated_value_after_the_tool_loop(schema: Any, expected: Any) -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_response_format.py::TestResponseFormatAsModel
    (test_typed_dict, test_dataclass, test_json_schema) and ::TestResponseFormatAsToolOutput::test_union_of_types."""

    @tool
    def get_weather() -> str:
        """Get the weather."""
        return "The weather is sunny and 75°F."

    provider = ScriptedProvider([calls(("1", "get_weather", {})), '{"temperature": 75, "condition": "sunny"}'])
    session = Session(Agent("a", provider=provider, tools=[get_weather], output_schema=schema))
    result = session.run("What's the weather?")
    assert result.output == expected
    assert len(session.history) == 4  # the question, the call, its result, the structured answer


class PlainTypingDict(typing.TypedDict):
    temperature: float


def test_a_typing_typeddict_on_python_3_11_is_refused_saying_why_and_what_to_use() -> None:
    """Ported from langchain-ai/langgraph libs/prebuilt/tests/test_response_format.py::TestResponseFormatAsModel::test_typed_dict.
    LangGraph takes a ``typing.TypedDict``; pydantic, which validates ours, takes one only
    from Python 3.12 (before that, ``typing_extensions.TypedDict``): the agent is refused
    up front, saying so."""
    with pytest.raises(TypeError, match=r"PlainTypingDict.*typing_extensions\.TypedDict") as caught:
        Agent("a", output_schema=PlainTypingDict)
    assert "\n" not in str(caught.value)
