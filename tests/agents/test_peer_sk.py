"""Behaviours of Microsoft Semantic Kernel's own test suite (microsoft/semantic-kernel,
``python/tests/unit/kernel/test_kernel.py``, ``test_kernel_filter_extension.py``,
``python/tests/unit/functions/`` and ``python/tests/unit/agents/chat_completion/``), ported
to our agent layer: the auto function invocation loop (ours: the session's tool loop), its
attempt limit (``maximum_auto_invoke_attempts``; ours: ``max_steps``), function invocation
and auto-function-invocation filters (ours: middleware's ``before_tool``/``after_tool``/
``after_model`` hooks and ``Halt``), and ChatCompletionAgent's invoke and invoke_stream.
Models are played by the scripted provider.

Where we deliberately differ:
- SK's auto-function-invocation filter may set ``context.terminate = True``: the loop ends
  and the function's result is the last message of the chat, with no error. We have no
  "terminate quietly" flag: ``Halt`` ends the run as a failure (``AgentError``), and a
  quiet end is an ``after_model`` hook that drops the remaining tool calls (pinned below).
- SK's filters wrap the call (``await next(context)``, an onion); ours are stage hooks run
  in list order, so "before" hooks of the first middleware run first and so do "after"
  hooks (not reversed)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Halt, Middleware, RunContext
from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse, Message
from wingman_actors.errors import AgentError
from wingman_actors.testing import ScriptedProvider


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def broken(city: str) -> str:
    """A function that always fails."""
    raise RuntimeError(f"weather service down for {city}")


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> InferenceResponse:
    return InferenceResponse.of_tool_calls([(call_id, name, args)])


def last_tool_results(request: InferenceRequest) -> list[ContentBlock]:
    return request.messages[-1].tool_results_blocks


# -- the auto function invocation loop --------------------------------------------------


def test_a_function_the_model_calls_is_invoked_and_its_result_sent_back_before_the_answer() -> None:
    """From semantic-kernel python/tests/unit/kernel/test_kernel.py (test_invoke_function_call: the
    kernel invokes the requested function and appends its result to the chat history)."""
    provider = ScriptedProvider([call("get_weather", {"city": "Oslo"}), "It is sunny in Oslo."])
    result = Session(Agent("w", provider=provider, tools=[get_weather])).run("Weather in Oslo?")

    assert result.response == "It is sunny in Oslo." and result.steps == 2
    assert [(c.name, c.input, c.output) for c in result.tool_calls] == [("get_weather", {"city": "Oslo"}, "sunny in Oslo")]
    assert last_tool_results(provider.requests[1])[0].content == "sunny in Oslo"


def test_several_function_calls_of_one_response_are_all_invoked_and_answered_in_call_order() -> None:
    """From semantic-kernel python/tests/unit/connectors/ai/test_function_calling_utils / kernel tests
    (parallel function calls of one response each get their result)."""
    provider = ScriptedProvider(
        [InferenceResponse.of_tool_calls([("c1", "add", {"a": 1, "b": 2}), ("c2", "add", {"a": 10, "b": 20})]), "3 and 30"]
    )
    result = Session(Agent("calc", provider=provider, tools=[add])).run("sums")

    results = last_tool_results(provider.requests[1])
    assert [(b.tool_use_id, b.content) for b in results] == [("c1", "3"), ("c2", "30")]
    assert result.response == "3 and 30"


def test_a_function_that_raises_reaches_the_model_as_an_error_result_and_the_loop_goes_on() -> None:
    """From semantic-kernel python/tests/unit/kernel/test_kernel.py (test_invoke_function_call_throws_during_invoke:
    the exception becomes the function result the model sees, the chat continues)."""
    provider = ScriptedProvider([call("broken", {"city": "Oslo"}), "The service is down."])
    result = Session(Agent("w", provider=provider, tools=[broken])).run("Weather?")

    assert result.response == "The service is down."
    assert result.tool_calls[0].is_error and "weather service down for Oslo" in result.tool_calls[0].output
    assert last_tool_results(provider.requests[1])[0].is_error


def test_a_call_to_a_function_the_agent_does_not_have_is_an_error_result_naming_it() -> None:
    """From semantic-kernel python/tests/unit/kernel/test_kernel.py (test_invoke_function_call_not_enabled_tool /
    function not found: the model is told the function does not exist)."""
    provider = ScriptedProvider([call("launch_rockets", {}), "I cannot do that."])
    result = Session(Agent("w", provider=provider, tools=[get_weather])).run("Launch!")

    assert result.response == "I cannot do that."
    assert result.tool_calls[0].is_error and "launch_rockets" in result.tool_calls[0].output


def test_arguments_that_do_not_validate_are_an_error_result_and_the_function_is_not_called() -> None:
    """From semantic-kernel python/tests/unit/functions/test_kernel_function_from_method.py (arguments are
    validated and parsed to the parameter types before the call)."""
    seen: list[int] = []

    @tool
    def square(n: int) -> int:
        """Square a number."""
        seen.append(n)
        return n * n

    provider = ScriptedProvider([call("square", {"n": "not a number"}), call("square", {"n": "4"}, "c2"), "16"])
    result = Session(Agent("m", provider=provider, tools=[square])).run("4 squared?")

    assert result.tool_calls[0].is_error and "n" in result.tool_calls[0].output
    assert seen == [4] and result.tool_calls[1].output == "16"  # "4" was parsed to an int


def test_the_attempt_limit_forces_a_last_call_without_functions() -> None:
    """From semantic-kernel python/tests/unit/kernel/test_kernel.py (maximum_auto_invoke_attempts: past the
    limit the functions are no longer offered and the model must answer)."""
    provider = ScriptedProvider([call("add", {"a": 1, "b": 1}, f"c{i}") for i in range(2)] + ["enough"])
    result = Session(Agent("calc", provider=provider, tools=[add], max_steps=2)).run("loop forever")

    assert result.response == "enough" and result.max_steps_reached
    assert len(result.tool_calls) == 2 and provider.calls == 3
    assert provider.requests[0].tools and not provider.requests[2].tools


def test_an_answer_within_the_attempt_limit_does_not_report_the_limit_reached() -> None:
    """From semantic-kernel python/tests/unit/kernel/test_kernel.py (a loop that ends on its own never meets
    maximum_auto_invoke_attempts)."""
    provider = ScriptedProvider([call("add", {"a": 1, "b": 1}), "2"])
    result = Session(Agent("calc", provider=provider, tools=[add], max_steps=2)).run("1+1")

    assert result.response == "2" and not result.max_steps_reached and provider.requests[1].tools


# -- filters: function invocation and auto function invocation --------------------------


def test_a_function_filter_may_override_the_result_the_model_sees() -> None:
    """From semantic-kernel python/tests/unit/kernel/test_kernel_filter_extension.py / test_kernel.py
    (test_invoke_function_call_with_filter_override_result: a filter replaces context.function_result)."""

    class Override(Middleware):
        def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
            return ContentBlock.tool_result_block(result.tool_use_id or "", "overridden")

    provider = ScriptedProvider([call("get_weather", {"city": "Oslo"}), "ok"])
    Session(Agent("w", provider=provider, tools=[get_weather], middleware=[Override()])).run("?")

    assert last_tool_results(provider.requests[1])[0].content == "overridden"


def test_a_filter_that_answers_before_the_call_skips_the_function() -> None:
    """From semantic-kernel python/tests/unit/kernel/test_kernel.py (a function invocation filter that does
    not call next(): the function is not invoked, the filter's result is used)."""
    calls: list[str] = []

    @tool
    def expensive(q: str) -> str:
        """An expensive lookup."""
        calls.append(q)
        return "fresh"

    class Cache(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            return ContentBlock.tool_result_block(call.id or "", "cached")

    provider = ScriptedProvider([call("expensive", {"q": "x"}), "done"])
    Session(Agent("w", provider=provider, tools=[expensive], middleware=[Cache()])).run("?")

    assert calls == [] and last_tool_results(provider.requests[1])[0].content == "cached"


def test_a_filter_may_rewrite_the_arguments_before_the_call() -> None:
    """From semantic-kernel python/tests/unit/kernel/test_kernel_filter_extension.py (a filter changes
    context.arguments before next())."""

    class Capital(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            return call.model_copy(update={"input": {"city": str((call.input or {})["city"]).upper()}})

    provider = ScriptedProvider([call("get_weather", {"city": "oslo"}), "ok"])
    result = Session(Agent("w", provider=provider, tools=[get_weather], middleware=[Capital()])).run("?")

    assert result.tool_calls[0].output == "sunny in OSLO"


def test_a_filter_that_raises_halt_ends_the_run_with_its_reason_and_the_model_is_not_called_again() -> None:
    """From semantic-kernel python/tests/unit/kernel/test_kernel.py (an exception raised in a filter
    propagates out of invoke). Differs from SK's ``terminate`` (see the module docstring)."""

    class Refuse(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            raise Halt(f"{call.name} is not allowed here")

    provider = ScriptedProvider([call("get_weather", {"city": "Oslo"}), "never"])
    with pytest.raises(Halt, match="get_weather is not allowed here") as caught:
        Session(Agent("w", provider=provider, tools=[get_weather], middleware=[Refuse()])).run("?")

    assert isinstance(caught.value, AgentError) and provider.calls == 1


def test_an_after_model_filter_can_end_the_loop_quietly_by_dropping_the_function_calls() -> None:
    """From semantic-kernel python/tests/unit/kernel/test_kernel.py (test_invoke_function_call_with_filter_terminate:
    the auto-invocation loop ends without invoking the remaining functions). SK sets
    ``context.terminate``; ours drops the calls in ``after_model``, and the run ends on that answer."""

    class Terminate(Middleware):
        def after_model(self, ctx: RunContext, response: InferenceResponse) -> InferenceResponse | None:
            if response.tool_calls:
                return InferenceResponse(content=[ContentBlock.text_block("stopped by filter")], stop_reason="end_turn")
            return None

    provider = ScriptedProvider([call("get_weather", {"city": "Oslo"}), "never"])
    result = Session(Agent("w", provider=provider, tools=[get_weather], middleware=[Terminate()])).run("?")

    assert result.response == "stopped by filter" and result.tool_calls == [] and provider.calls == 1


def test_filters_run_in_the_order_they_are_given_for_every_function_call() -> None:
    """From semantic-kernel python/tests/unit/kernel/test_kernel_filter_extension.py (filters added in order
    are invoked in that order). Ours are not an onion: "after" hooks also run in list order."""
    order: list[str] = []

    class Named(Middleware):
        def __init__(self, name: str) -> None:
            self.name = name

        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            order.append(f"before {self.name}")
            return None

        def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
            order.append(f"after {self.name}")
            return None

    provider = ScriptedProvider([call("get_weather", {"city": "Oslo"}), "ok"])
    Session(Agent("w", provider=provider, tools=[get_weather], middleware=[Named("a"), Named("b")])).run("?")

    assert order == ["before a", "before b", "after a", "after b"]


def test_a_filter_sees_which_step_of_the_loop_a_call_belongs_to() -> None:
    """From semantic-kernel python/tests/unit/kernel/test_kernel.py (AutoFunctionInvocationContext carries
    request_sequence_index and function_sequence_index)."""
    seen: list[tuple[int, str]] = []

    class Watch(Middleware):
        def before_tool(self, ctx: RunContext, call: ContentBlock) -> ContentBlock | None:
            seen.append((ctx.step, call.id or ""))
            return None

    provider = ScriptedProvider([call("add", {"a": 1, "b": 1}, "c1"), call("add", {"a": 2, "b": 2}, "c2"), "done"])
    Session(Agent("w", provider=provider, tools=[add], middleware=[Watch()])).run("?")

    assert seen == [(1, "c1"), (2, "c2")]


# -- ChatCompletionAgent ---------------------------------------------------------------


def test_the_agent_instructions_are_sent_as_the_system_prompt() -> None:
    """From semantic-kernel python/tests/unit/agents/chat_completion/test_chat_completion_agent.py
    (test_get_response: the agent's instructions lead the chat history sent to the service)."""
    provider = ScriptedProvider(["Arr!"])
    Session(Agent("pirate", instructions="Speak like a pirate.", provider=provider)).run("Hello")

    assert "Speak like a pirate." in provider.requests[0].instructions
    assert provider.requests[0].messages[-1] == Message.user("Hello")


def test_a_second_invoke_on_the_same_thread_sends_the_whole_conversation() -> None:
    """From semantic-kernel python/tests/unit/agents/chat_completion/test_chat_completion_agent.py
    (invoking with the same ChatHistoryAgentThread continues the conversation)."""
    provider = ScriptedProvider(["first answer", "second answer"])
    session = Session(Agent("a", provider=provider))
    session.run("one")
    session.run("two")

    assert [m.text for m in provider.requests[1].messages] == ["one", "first answer", "two"]
    assert [m.text for m in session.history] == ["one", "first answer", "two", "second answer"]


def test_invoke_stream_yields_the_answer_in_pieces_and_then_the_same_result() -> None:
    """From semantic-kernel python/tests/unit/agents/chat_completion/test_chat_completion_agent.py
    (test_invoke_stream: streaming chunks concatenate to the full answer)."""
    provider = ScriptedProvider(["The quick brown fox jumps."], stream_chunk=4)
    stream = Session(Agent("a", provider=provider)).run_stream("?")
    pieces = [e.text for e in stream if e.type == "text_delta"]

    assert len(pieces) > 1 and "".join(p or "" for p in pieces) == "The quick brown fox jumps."
    assert stream.result().response == "The quick brown fox jumps."


def test_invoke_stream_reports_each_function_call_between_the_model_turns() -> None:
    """From semantic-kernel python/tests/unit/agents/chat_completion/test_chat_completion_agent.py
    (test_invoke_stream_tools: function call and result contents are surfaced while streaming)."""
    provider = ScriptedProvider([call("get_weather", {"city": "Oslo"}), "sunny"])
    stream = Session(Agent("w", provider=provider, tools=[get_weather])).run_stream("?")
    kinds = [e.type for e in stream if e.type in ("tool_start", "tool_end", "text_delta")]

    assert kinds[:2] == ["tool_start", "tool_end"] and "text_delta" in kinds[2:]
    assert stream.result().tool_calls[0].output == "sunny in Oslo"


class Answer(BaseModel):
    city: str
    temperature: int


def test_a_structured_response_format_gives_the_validated_object() -> None:
    """From semantic-kernel python/tests/unit/agents/chat_completion/test_chat_completion_agent.py
    (an agent with a response_format: the answer parses into that model)."""
    provider = ScriptedProvider([json.dumps({"city": "Oslo", "temperature": 12})])
    result = Session(Agent("w", provider=provider, output_schema=Answer)).run("?")

    assert result.output == Answer(city="Oslo", temperature=12)


def test_a_model_reply_with_no_content_at_all_ends_the_run_with_an_empty_answer() -> None:
    """From semantic-kernel python/tests/unit/agents/chat_completion/test_chat_completion_agent.py
    (test_get_response_exception: a service that returns no message makes get_response raise
    AgentInvokeException). Open question: ours returns an empty answer (``stop_reason`` says why
    when cut off), in a session and in a formation's agent node alike; no error tells the user."""
    provider = ScriptedProvider([InferenceResponse(content=[], stop_reason="end_turn")])
    result = Session(Agent("a", provider=provider)).run("?")

    assert (result.response, result.stop_reason, result.steps) == ("", "end_turn", 1)
