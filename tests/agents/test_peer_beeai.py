"""Behaviours of IBM BeeAI framework's own test suite (i-am-bee/beeai-framework python/tests/agents/
and python/tests/tools/), ported to our agent layer: the tool-calling and lite agents (an answer at
once, a tool then an answer, the iteration limit, the conversation kept), the requirement agent's
conditional requirements (our ``prepare``: which tools a step offers) and the ``@tool`` decorator
(no parameters, keyword-only defaults, nested models, async tools, the run context, a tool's own
errors). Models are played by the scripted provider; the wire format is in
test_peer_beeai_wire.py, memory (our context budget) and events in test_peer_beeai_memory.py.

Deliberately different (each test that touches one says so):
- BeeAI's ToolCallingAgent ends with a ``final_answer`` tool; ours ends with an answer without
  tool calls, so no extra tool is offered.
- BeeAI raises ``AgentError`` past ``max_iterations``; our ``max_steps`` makes one last call
  without tools asking for the answer, and flags ``max_steps_reached``.
- BeeAI's ``@tool`` refuses a function without a docstring and forwards ``**kwargs``; ours makes
  a tool with an empty description (an open question) and refuses ``*args/**kwargs``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Prepared, RunContext
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.errors import ToolError
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext

BEEAI = "i-am-bee/beeai-framework python/tests"


@tool
def weather_tool(city: str) -> str:
    """The weather in a city (BeeAI's tests/agents/_scripted.py weather_tool)."""
    return f"sunny in {city}"


@tool
def real_tool() -> str:
    """A real tool used for tests."""
    return "real"


@tool
def other_tool() -> str:
    """Another real tool used for tests."""
    return "other"


def call(name: str, args: dict[str, Any], call_id: str = "c1") -> InferenceResponse:
    return InferenceResponse.of_tool_calls([(call_id, name, args)])


def offered(request: InferenceRequest) -> list[str]:
    return sorted(t.name for t in request.tools or [])


# -- the tool-calling agent and the lite agent -------------------------------------------------


def test_an_answer_without_tool_calls_ends_the_run_after_one_model_call() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_tool_calling_agent.py::
    test_returns_final_answer_directly and test_lite_agent.py::test_returns_text_answer_without_tools."""
    model = ScriptedProvider(["The answer is 42"])
    result = Session(Agent("a", provider=model)).run("What is the answer?")

    assert (result.response, result.output, result.steps, model.calls) == ("The answer is 42", "The answer is 42", 1, 1)


def test_a_tool_call_runs_the_tool_and_its_result_reaches_the_next_model_call() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_tool_calling_agent.py::
    test_executes_tool_then_final_answer (the tool result is in the memory, two model calls)."""
    model = ScriptedProvider([call("weather_tool", {"city": "Prague"}), "It is sunny in Prague"])
    session = Session(Agent("a", provider=model, tools=[weather_tool]))
    result = session.run("What is the weather in Prague?")

    assert (result.response, model.calls) == ("It is sunny in Prague", 2)
    results = [b.content for m in session.history for b in m.tool_results_blocks]
    assert results == ["sunny in Prague"]
    [sent] = model.requests[1].messages[-1].tool_results_blocks
    assert (sent.tool_use_id, sent.content, sent.is_error) == ("c1", "sunny in Prague", False)


def test_every_model_call_is_offered_the_agents_tools_and_no_final_answer_tool() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_tool_calling_agent.py::
    test_final_answer_tool_is_always_offered. Ours differ on purpose: an answer without tool calls
    ends the run, so there is no ``final_answer`` tool; the agent's own tools are offered at every step."""
    model = ScriptedProvider([call("weather_tool", {"city": "Brno"}), "done"])
    Session(Agent("a", provider=model, tools=[weather_tool, real_tool])).run("anything")

    assert [offered(r) for r in model.requests] == [["real_tool", "weather_tool"]] * 2


def test_past_max_steps_a_last_call_without_tools_asks_for_the_answer() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_tool_calling_agent.py::
    test_raises_when_max_iterations_exceeded (and test_lite_agent.py's). Ours differ on purpose: a
    model that keeps calling tools gets one last call without tools (documented for ``max_steps``)
    instead of an error, and the result says the limit was reached."""
    answers: list[Any] = [call("weather_tool", {"city": "Prague"}, "c1"), call("weather_tool", {"city": "Brno"}, "c2"),
               "Prague and Brno are sunny."]
    model = ScriptedProvider(answers)
    result = Session(Agent("a", provider=model, tools=[weather_tool], max_steps=2)).run("solve this")

    assert result.max_steps_reached and result.response == "Prague and Brno are sunny."
    assert [offered(r) for r in model.requests] == [["weather_tool"], ["weather_tool"], []]
    assert [c.input["city"] for c in result.tool_calls] == ["Prague", "Brno"]


def test_the_conversation_is_kept_in_the_session_history_and_sent_on_the_next_turn() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_lite_agent.py::
    test_conversation_is_persisted_to_memory (and test_tool_calling_agent.py's)."""
    model = ScriptedProvider(["hello there", "you said hi"])
    session = Session(Agent("a", provider=model))
    assert session.history == []
    session.run("hi")
    session.run("what did I say?")

    assert [(m.role.value, m.text) for m in session.history] == [
        ("user", "hi"), ("assistant", "hello there"), ("user", "what did I say?"), ("assistant", "you said hi")]
    assert [m.text for m in model.requests[1].messages] == ["hi", "hello there", "what did I say?"]


def test_two_sessions_of_one_agent_share_no_conversation() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_lite_agent.py::
    test_cloning_the_agent_does_not_share_model_state (a clone runs on its own state). Ours: an agent
    is an immutable configuration; each session holds its own conversation."""
    agent = Agent("a", provider=ScriptedProvider(["from the first", "from the second"]))
    first, second = Session(agent), Session(agent)
    first.run("one")
    second.run("two")

    assert [m.text for m in first.history] == ["one", "from the first"]
    assert [m.text for m in second.history] == ["two", "from the second"]


# -- bad tool calls: the model is told and may try again ------------------------------------------


def test_a_tool_call_with_bad_arguments_comes_back_as_an_error_and_the_model_retries() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_tool_calling_agent.py (tool calls that
    fail validation go back to the model, which retries) and tests/backend/test_chatmodel_retry_cache.py."""
    ran: list[str] = []

    @tool
    def book(city: str, nights: int) -> str:
        """Book a hotel."""
        ran.append(city)
        return f"booked {nights} nights in {city}"

    model = ScriptedProvider([call("book", {"city": "Prague", "nights": "many"}, "c1"),
                              call("book", {"city": "Prague", "nights": 2}, "c2"), "Booked."])
    result = Session(Agent("a", provider=model, tools=[book])).run("book me Prague")

    assert [c.is_error for c in result.tool_calls] == [True, False]
    assert "nights" in result.tool_calls[0].output  # says which argument was wrong
    assert ran == ["Prague"] and result.response == "Booked."
    [sent] = model.requests[1].messages[-1].tool_results_blocks
    assert sent.is_error and "nights" in str(sent.content)


def test_a_call_to_an_unknown_tool_is_an_error_result_naming_the_tools_there_are() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_requirements_reasoner.py (a tool the
    agent does not have is refused, and the agent goes on)."""
    model = ScriptedProvider([call("wether_tool", {"city": "Prague"}), "sorry"])
    result = Session(Agent("a", provider=model, tools=[weather_tool])).run("weather?")

    [bad] = result.tool_calls
    assert bad.is_error and "wether_tool" in bad.output and "weather_tool" in bad.output
    assert result.response == "sorry"


def test_a_tool_error_reaches_the_model_with_its_message_and_the_run_goes_on() -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_tool_timeout.py::
    test_tool_internal_timeout_error_propagates_unchanged (the tool's own error is what the caller sees,
    not a framework message)."""

    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        raise TimeoutError("internal tool operation timeout")

    @tool
    def strict(query: str) -> str:
        """Refuse everything."""
        raise ToolError(f"cannot look up {query!r}")

    model = ScriptedProvider([InferenceResponse.of_tool_calls([("c1", "lookup", {"query": "x"}),
                                                                ("c2", "strict", {"query": "y"})]), "gave up"])
    result = Session(Agent("a", provider=model, tools=[lookup, strict])).run("go")

    first, second = result.tool_calls
    assert first.is_error and "internal tool operation timeout" in first.output
    assert second.is_error and "cannot look up 'y'" in second.output
    assert result.response == "gave up"


# -- conditional requirements: which tools a step offers (our ``prepare``) -----------------------------


def test_a_tool_forced_first_is_the_only_one_offered_at_the_first_step() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_requirements_reasoner.py
    (ConditionalRequirement(force_at_step=1): only the target tool is allowed at that step).
    Ours: ``prepare`` returns the tools of a step."""

    def first_real(ctx: RunContext) -> Prepared | None:
        return Prepared(tools=["real_tool"]) if ctx.step == 1 else None

    model = ScriptedProvider([call("real_tool", {}), call("other_tool", {}, "c2"), "done"])
    result = Session(Agent("a", provider=model, tools=[real_tool, other_tool], prepare=first_real)).run("go")

    assert [offered(r) for r in model.requests] == [["real_tool"], ["other_tool", "real_tool"],
                                                    ["other_tool", "real_tool"]]
    assert [(c.name, c.output) for c in result.tool_calls] == [("real_tool", "real"), ("other_tool", "other")]


def test_a_tool_allowed_only_before_another_is_withdrawn_once_that_one_ran() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_conditional_requirement.py
    (ConditionalRequirement(target=real_tool, only_before=["other_tool"])): real_tool may be used
    only until other_tool was called; a call to it afterwards is refused."""

    def only_before(ctx: RunContext) -> Prepared | None:
        used = {b.name for m in ctx.messages for b in m.tool_calls}
        return Prepared(tools=["other_tool"]) if "other_tool" in used else None

    model = ScriptedProvider([call("other_tool", {}, "c1"), call("real_tool", {}, "c2"), "done"])
    result = Session(Agent("a", provider=model, tools=[real_tool, other_tool], prepare=only_before)).run("go")

    assert [offered(r) for r in model.requests][1:] == [["other_tool"], ["other_tool"]]
    assert [(c.name, c.is_error) for c in result.tool_calls] == [("other_tool", False), ("real_tool", True)]


def test_a_step_allowing_a_tool_the_agent_does_not_have_fails_naming_it() -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_conditional_requirement.py::
    test_init_raises_on_unknown_tool_in_only_before (a requirement naming an unknown tool raises a
    ValueError naming it) and test_init_accepts_known_tool_in_only_before."""
    model = ScriptedProvider(["never"], cycle=True)
    good = Agent("a", provider=model, tools=[real_tool, other_tool],
                 prepare=lambda ctx: Prepared(tools=["other_tool"]))
    assert Session(good).run("go").response == "never"

    bad = Agent("a", provider=model, tools=[real_tool],
                prepare=lambda ctx: Prepared(tools=["this_tool_does_not_exist"]))
    with pytest.raises(Exception, match="this_tool_does_not_exist") as caught:
        Session(bad).run("go")
    assert "real_tool" in str(caught.value)


# -- the @tool decorator ---------------------------------------------------------------------------


def run_tool(fn: Any, args: dict[str, Any]) -> Any:
    """``fn``'s one call with ``args`` through a session, as the model would make it."""
    model = ScriptedProvider([call(fn.name, args), "ok"])
    [made] = Session(Agent("a", provider=model, tools=[fn])).run("go").tool_calls
    return made


def test_a_decorated_function_runs_with_the_models_arguments() -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_decorator.py::test_tool_annotation
    (name from the function, description from the docstring, the result as text)."""

    @tool
    def search(query: str) -> str:
        """Search factual and historical information.

        Args:
            query: The topic or question to search for.
        """
        return query

    schema = search.definition.input_schema
    assert (search.name, search.description) == ("search", "Search factual and historical information.")
    assert schema["properties"]["query"]["description"] == "The topic or question to search for."
    assert run_tool(search, {"query": "Hello!"}).output == "Hello!"


def test_a_tool_without_parameters_runs_with_no_arguments() -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_decorator.py::test_tool_annotation_no_params."""

    @tool
    def hello() -> str:
        """Say hello."""
        return "Hello!"

    assert hello.definition.input_schema.get("properties", {}) == {}
    made = run_tool(hello, {})
    assert (made.output, made.is_error) == ("Hello!", False)


def test_keyword_only_parameters_are_required_unless_they_have_a_default() -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_decorator.py::test_tool_keyword_only_schema
    and test_tool_runs_with_keyword_only_default_arguments."""

    @tool
    def render(*, label: str, limit: int = 3) -> str:
        """Return the label and its limit."""
        return f"{label}:{limit}"

    assert render.definition.input_schema["required"] == ["label"]
    assert run_tool(render, {"label": "notebook"}).output == "notebook:3"
    missing = run_tool(render, {})
    assert missing.is_error and "label" in missing.output
    wrong = run_tool(render, {"label": "notebook", "limit": "invalid"})
    assert wrong.is_error and "limit" in wrong.output


class Record(BaseModel):
    label: str


@pytest.mark.parametrize("asynchronous", [False, True])
def test_nested_models_in_arguments_reach_the_tool_as_model_instances(asynchronous: bool) -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_decorator.py::
    test_tool_preserves_nested_model_argument and test_tool_preserves_models_in_containers."""

    def render(records: list[Record], indexed: dict[str, Record]) -> str:
        """Labels from a list and a mapping."""
        assert isinstance(records[0], Record) and isinstance(indexed["selected"], Record)
        return f"{records[0].label}:{indexed['selected'].label}"

    async def render_async(records: list[Record], indexed: dict[str, Record]) -> str:
        """Labels from a list and a mapping, asynchronously."""
        await asyncio.sleep(0)
        return render(records, indexed)

    made = run_tool(tool(render_async if asynchronous else render),
                    {"records": [{"label": "notebook"}], "indexed": {"selected": {"label": "pencil"}}})
    assert (made.output, made.is_error) == ("notebook:pencil", False)


def test_a_tool_taking_the_run_context_gets_it_and_the_model_does_not_see_it() -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_decorator.py::
    test_tool_injects_run_context_with_custom_schema (``with_context=True``). Ours: a parameter
    annotated ``ToolContext``."""

    @tool
    def whoami(label: str, ctx: ToolContext) -> str:
        """Say which agent runs this."""
        return f"{label} by {ctx.agent} for {ctx.metadata.get('user')}"

    assert list(whoami.definition.input_schema["properties"]) == ["label"]
    model = ScriptedProvider([call("whoami", {"label": "notebook"}), "ok"])
    result = Session(Agent("clerk", provider=model, tools=[whoami])).run("go", metadata={"user": "ana"})
    assert result.tool_calls[0].output == "notebook by clerk for ana"


def test_a_tool_taking_kwargs_is_refused_when_it_is_made_naming_the_fix() -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_decorator.py::
    test_tool_forwards_extra_keyword_arguments. Ours differ on purpose: every argument the model may
    send is a named, typed parameter in the schema, so ``**kwargs`` is refused when the tool is made."""

    def render(label: str, **kwargs: Any) -> str:
        """Return the label and extras."""
        return label

    with pytest.raises(TypeError, match=r"\*\*kwargs.*name each parameter"):
        tool(render)


def test_a_tool_without_a_docstring_is_made_with_an_empty_description_and_runs() -> None:
    """From i-am-bee/beeai-framework python/tests/tools/test_decorator.py::test_tool_annotation_no_desc
    and test_tool_annotation_empty_desc. Ours differ: BeeAI refuses a function without a docstring
    (ValueError); ours makes the tool with an empty description (the model sees only its name and
    schema). Pinned as ours; an open question whether it should warn or refuse."""

    @tool
    def shout(query: str) -> str:
        return query.upper()

    assert (shout.name, shout.description) == ("shout", "")
    assert run_tool(shout, {"query": "hi"}).output == "HI"
