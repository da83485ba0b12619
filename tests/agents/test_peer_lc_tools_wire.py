"""Behaviours of LangChain's libs/core/tests/unit_tests/test_tools.py and
utils/test_function_calling.py where the model is on the other end: ``@tool`` functions
run by a real Session against loopback servers speaking the OpenAI, Anthropic and Ollama
wire formats (the real clients, never the internet). What each provider receives as the
tool's schema, what the model reads back when a tool raises, when its arguments are
wrong, and when a tool returns something that is not text; call ids, hooks and the run's
metadata; async and blocking tools in blocking and awaited runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from tests.providers.test_anthropic import message_json
from tests.providers.test_ollama import chat_reply
from tests.providers.test_openai import completion, tool_call
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors import Agent, Session, tool
from wingman_actors.errors import ToolError
from wingman_actors.events import Event, EventBus
from wingman_actors.providers._anthropic import build_anthropic
from wingman_actors.providers._ollama import build_ollama
from wingman_actors.providers._openai import build_openai
from wingman_actors.tools import ToolContext

Spec = tuple[str, str, dict[str, Any]]


class Wire:
    """One provider's wire format over the loopback server: replies to queue, and what a
    request sent (the tools offered, the tool results)."""

    def __init__(self, kind: str, loopback: LoopbackServer) -> None:
        self.kind = kind
        self.loopback = loopback
        self.made: list[Any] = []

    def provider(self) -> Any:
        url = self.loopback.url
        if self.kind == "openai":
            made = build_openai({"model": "gpt-test", "base_url": f"{url}/v1", "api_key": "sk-test", "max_retries": 0})
        elif self.kind == "anthropic":
            made = build_anthropic({"model": "claude-test-model", "base_url": url, "api_key": "k", "max_retries": 0})
        else:
            made = build_ollama({"model": "llama-test", "base_url": url, "max_retries": 0})
        self.made.append(made)
        return made

    def calls(self, *specs: Spec) -> Reply:
        if self.kind == "openai":
            wire = [tool_call(i, n, json.dumps(a)) for i, n, a in specs]
            return Reply.json(completion(None, tool_calls=wire, finish_reason="tool_calls"))
        if self.kind == "anthropic":
            blocks = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in specs]
            return Reply.json(message_json(blocks, stop_reason="tool_use"))
        wire = [{"function": {"name": n, "arguments": a}} for _, n, a in specs]
        return Reply.json(chat_reply("", message={"role": "assistant", "content": "", "tool_calls": wire}))

    def answer(self, text: str) -> Reply:
        if self.kind == "openai":
            return Reply.json(completion(text))
        if self.kind == "anthropic":
            return Reply.json(message_json([{"type": "text", "text": text}]))
        return Reply.json(chat_reply(text))

    def tools(self, request: int = 0) -> dict[str, tuple[str, dict[str, Any]]]:
        """The tools request ``request`` offered: name -> (description, JSON schema)."""
        body = self.loopback.requests[request].json()
        if self.kind == "anthropic":
            return {t["name"]: (t["description"], t["input_schema"]) for t in body["tools"]}
        assert all(t["type"] == "function" for t in body["tools"])
        return {t["function"]["name"]: (t["function"]["description"], t["function"]["parameters"]) for t in body["tools"]}

    def results(self, request: int) -> list[tuple[str | None, str, bool]]:
        """The tool results request ``request`` sent: (call id, text, flagged as an error).
        Wires without an error flag mark an error by its text, ``Error: ...``."""
        messages = self.loopback.requests[request].json()["messages"]
        if self.kind == "anthropic":
            return [(b["tool_use_id"], b["content"], b["is_error"]) for m in messages if isinstance(m["content"], list)
                    for b in m["content"] if b["type"] == "tool_result"]
        return [(m.get("tool_call_id"), m["content"], m["content"].startswith("Error: "))
                for m in messages if m["role"] == "tool"]

    def close(self) -> None:
        for made in self.made:
            made.close()


@pytest.fixture(params=["openai", "anthropic", "ollama"])
def wire(request: pytest.FixtureRequest, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Wire]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)
    made = Wire(request.param, loopback)
    yield made
    made.close()


def drive(session: Session, message: str, driver: str) -> Any:
    return session.run(message) if driver == "run" else asyncio.run(session.arun(message))


# -- the schema each provider receives -------------------------------------------------------


def dummy_documented(arg1: int, arg2: Literal["bar", "baz"]) -> None:
    """Dummy function.

    Args:
        arg1: foo
        arg2: one of 'bar', 'baz'
    """


def dummy_annotated(arg1: Annotated[int, "foo"], arg2: Annotated[Literal["bar", "baz"], "one of 'bar', 'baz'"]) -> None:
    """Dummy function."""


def dummy_fields(
    arg1: Annotated[int, Field(description="foo")],
    arg2: Literal["bar", "baz"] = Field(description="one of 'bar', 'baz'"),
) -> None:
    """Dummy function."""


EXPECTED_PARAMETERS = {
    "type": "object",
    "properties": {
        "arg1": {"description": "foo", "type": "integer"},
        "arg2": {"description": "one of 'bar', 'baz'", "enum": ["bar", "baz"], "type": "string"},
    },
    "required": ["arg1", "arg2"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("fn", [dummy_documented, dummy_annotated, dummy_fields], ids=["docstring", "annotated", "field"])
def test_each_provider_receives_the_tools_name_description_and_argument_descriptions(
    wire: Wire, fn: Callable[..., None],
) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/utils/test_function_calling.py::test_convert_to_openai_function
    (a docstring's Args, Annotated text and Field descriptions all give the same function schema)."""
    wire.loopback.queue(wire.answer("ok"))
    Session(Agent("a", provider=wire.provider(), tools=[tool(fn, name="dummy_function")])).run("go")
    assert wire.tools() == {"dummy_function": ("Dummy function.", EXPECTED_PARAMETERS)}


class Nested(BaseModel):
    nested_arg1: int = Field(description="foo")
    nested_arg2: Literal["bar", "baz"] = Field(description="one of 'bar', 'baz'")


@tool
def my_function(arg1: Nested, arg2: Nested | None = None) -> str:
    """Dummy function."""
    return f"{arg1.nested_arg1}{arg1.nested_arg2}|{arg2}"


def test_a_nested_models_definitions_reach_the_provider_and_every_ref_resolves_there(wire: Wire) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/utils/test_function_calling.py::test_convert_to_openai_function_nested
    (and ::test_convert_to_openai_function_strict_nested_required_via_defs_ref: ``$ref`` into ``$defs``).
    LangChain inlines the nested object; ours sends ``$defs``, whole, beside the properties."""
    wire.loopback.queue(wire.calls(("call_1", "my_function", {"arg1": {"nested_arg1": 1, "nested_arg2": "bar"}})))
    wire.loopback.queue(wire.answer("done"))
    Session(Agent("a", provider=wire.provider(), tools=[my_function])).run("go")

    _, sent = wire.tools()["my_function"]
    refs = [sent["properties"]["arg1"]["$ref"], *(o["$ref"] for o in sent["properties"]["arg2"]["anyOf"] if "$ref" in o)]
    assert refs == ["#/$defs/Nested", "#/$defs/Nested"]
    nested = sent["$defs"]["Nested"]
    assert nested["required"] == ["nested_arg1", "nested_arg2"]
    assert nested["properties"]["nested_arg2"]["enum"] == ["bar", "baz"]
    assert sent["required"] == ["arg1"]
    assert [text for _, text, _ in wire.results(1)] == ["1bar|None"]


# -- what the model reads back ---------------------------------------------------------------


@tool
def exception(kind: str) -> str:
    """An exception-throwing tool."""
    if kind == "tool":
        raise ToolError("the service is down, try later", tool="exception")
    raise ValueError("some error")


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_tool_error_and_any_other_exception_reach_the_model_as_error_results_and_the_run_goes_on(
    wire: Wire, driver: str,
) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_exception_handling_str
    (and ::test_exception_handling_non_tool_exception, ::test_async_exception_handling_*). LangChain
    re-raises an exception that is not a ToolException unless handle_tool_error says otherwise;
    ours sends every failure to the model as an error result (an after_tool middleware
    rewrites it, tests/agents/test_peer_toolnode.py)."""
    wire.loopback.queue(wire.calls(("call_1", "exception", {"kind": "tool"}), ("call_2", "exception", {"kind": "value"})))
    wire.loopback.queue(wire.answer("Both failed."))
    result = drive(Session(Agent("a", provider=wire.provider(), tools=[exception])), "go", driver)

    assert result.response == "Both failed."
    texts = [(text, flagged) for _, text, flagged in wire.results(1)]
    assert texts == [("Error: the service is down, try later", True),
                     ("Error: tool 'exception' raised ValueError: some error", True)]
    assert [c.is_error for c in result.tool_calls] == [True, True]


RAN: list[dict[str, Any]] = []


@tool
def search_api(query: str, limit: int = 3) -> str:
    """Search the API for the query."""
    RAN.append({"query": query, "limit": limit})
    return f"{limit} results for {query}"


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_wrong_arguments_reach_the_model_naming_the_field_and_its_corrected_call_runs_the_tool(
    wire: Wire, driver: str,
) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_validation_error_handling_bool
    (and ::test_async_validation_error_handling_*): ours always sends the validation error to
    the model (LangChain only with handle_validation_error), naming each wrong field, and
    does not call the tool."""
    RAN.clear()
    wire.loopback.queue(wire.calls(("call_1", "search_api", {"limit": "many"})))
    wire.loopback.queue(wire.calls(("call_2", "search_api", {"query": "ants", "limit": 2})))
    wire.loopback.queue(wire.answer("Two results."))
    result = drive(Session(Agent("a", provider=wire.provider(), tools=[search_api])), "go", driver)

    assert result.response == "Two results." and RAN == [{"query": "ants", "limit": 2}]
    [(_, told, flagged)] = wire.results(1)
    assert flagged and told.startswith("Error: invalid arguments for tool 'search_api': ")
    assert "query: Field required" in told and "limit: Input should be a valid integer" in told
    assert [text for _, text, _ in wire.results(2)][-1] == "2 results for ants"


# -- call ids, non-text results, hooks, metadata ---------------------------------------------


@tool
def structured_api(arg1: int, arg2: bool, arg3: dict[str, Any] | None = None) -> str:
    """A Structured Tool."""
    return f"{arg1} {arg2} {arg3}"


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_each_result_goes_back_under_its_calls_id_in_call_order(kind: str, loopback: LoopbackServer) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_call_input_tool_message_output
    (a ToolMessage carries its call's tool_call_id)."""
    wire = Wire(kind, loopback)
    try:
        loopback.queue(wire.calls(("call_b", "structured_api", {"arg1": 2, "arg2": False}),
                                  ("call_a", "structured_api", {"arg1": 1, "arg2": True, "arg3": {"img": "base64"}})))
        loopback.queue(wire.answer("ok"))
        result = Session(Agent("a", provider=wire.provider(), tools=[structured_api])).run("go")
        assert wire.results(1) == [("call_b", "2 False None", False), ("call_a", "1 True {'img': 'base64'}", False)]
        assert [(c.id, c.output) for c in result.tool_calls] == [("call_b", "2 False None"),
                                                                 ("call_a", "1 True {'img': 'base64'}")]
    finally:
        wire.close()


class Point(BaseModel):
    x: int
    y: int


@tool
def returns(kind: str) -> Any:
    """Return a value of some kind."""
    values: dict[str, Any] = {
        "dict": {"type": "image_url", "image_url": {}},
        "list": [{"type": "text", "text": "foo"}],
        "model": Point(x=1, y=2),
        "content_and_artifact": ("1 True", {"arg1": 1}),
        "none": None,
        "bytes": "héllo".encode(),
        "binary": b"\xff\xfe",
        "nan": float("nan"),
    }
    return values[kind]


@pytest.mark.parametrize(("kind", "text"), [
    ("dict", '{"type": "image_url", "image_url": {}}'),
    ("list", '[{"type": "text", "text": "foo"}]'),
    ("model", '{"x":1,"y":2}'),
    ("content_and_artifact", '["1 True", {"arg1": 1}]'),
    ("none", ""),
    ("bytes", "héllo"),
    ("binary", "\\xff\\xfe"),
    ("nan", "null"),
])
def test_a_result_that_is_not_text_reaches_the_model_as_text(kind: str, text: str, loopback: LoopbackServer) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_content_block_output
    (and ::test_tool_call_input_tool_message_with_artifact). LangChain passes content blocks on
    as blocks and keeps an artifact beside the content; ours sends a value as its JSON text
    (content blocks and (content, artifact) pairs included), bytes as their UTF-8 text
    (undecodable bytes as \\x escapes), and None as an empty result."""
    wire = Wire("openai", loopback)
    try:
        loopback.queue(wire.calls(("call_1", "returns", {"kind": kind})))
        loopback.queue(wire.answer("ok"))
        Session(Agent("a", provider=wire.provider(), tools=[returns])).run("go")
        assert wire.results(1) == [("call_1", text, False)]
    finally:
        wire.close()


@tool
def lookup(query: str, ctx: ToolContext) -> str:
    """Look something up for the run's user.

    Args:
        query: The search query.
        ctx: the session's context.
    """
    return f"{query} for {ctx.metadata.get('user_id')} by {ctx.agent}"


def test_tool_hooks_see_the_calls_id_and_the_models_arguments_and_not_the_context(loopback: LoopbackServer) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_call_id_passed_to_on_tool_start_callback
    (and ::test_filter_injected_args_from_callbacks: injected arguments stay out of the callback's inputs)."""
    wire = Wire("anthropic", loopback)
    seen: list[Event] = []
    try:
        with EventBus() as bus:
            bus.subscribe(["tool_start", "tool_end"], seen.append)
            loopback.queue(wire.calls(("toolu_123", "lookup", {"query": "test query"})))
            loopback.queue(wire.answer("ok"))
            Session(Agent("helper", provider=wire.provider(), tools=[lookup], events=bus)).run(
                "go", metadata={"user_id": 123})
            bus.flush()
        start, end = seen
        assert start.call is not None and (start.call.id, start.call.input) == ("toolu_123", {"query": "test query"})
        assert end.result is not None and (end.result.tool_use_id, end.result.content) == (
            "toolu_123", "test query for 123 by helper")
        assert wire.tools()["lookup"][1]["properties"] == {"query": {"type": "string", "description": "The search query."}}
    finally:
        wire.close()


@tool
async def afoo(bar: str, ctx: ToolContext) -> str:
    """The foo, awaited."""
    await asyncio.sleep(0)
    return f"{bar}/{ctx.metadata['foo']}"


@tool
def foo(bar: str, ctx: ToolContext) -> str:
    """The foo."""
    return f"{bar}/{ctx.metadata['foo']}"


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_async_and_blocking_tools_answer_in_blocking_and_awaited_runs_with_the_runs_metadata(
    wire: Wire, driver: str,
) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_async_tool_pass_config
    (and ::test_tool_pass_config: the run's configurable reaches sync and async tools; ours is
    the run's metadata, through the ToolContext)."""
    wire.loopback.queue(wire.calls(("c1", "afoo", {"bar": "baz"}), ("c2", "foo", {"bar": "baz"})))
    wire.loopback.queue(wire.answer("ok"))
    session = Session(Agent("a", provider=wire.provider(), tools=[afoo, foo]))
    if driver == "run":
        result = session.run("go", metadata={"foo": "not-bar"})
    else:
        result = asyncio.run(session.arun("go", metadata={"foo": "not-bar"}))
    assert [text for _, text, _ in wire.results(1)] == ["baz/not-bar", "baz/not-bar"]
    assert [c.output for c in result.tool_calls] == ["baz/not-bar", "baz/not-bar"]


@tool
def constant() -> str:
    """Return a constant."""
    return "invoke foo"


@pytest.mark.parametrize("arguments", ["{}", "", "null"])
def test_a_parameterless_tool_runs_whether_its_arguments_come_as_an_empty_object_nothing_or_null(
    arguments: str, loopback: LoopbackServer,
) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_structured_tool_from_parameterless_function
    (``run({})`` and ``run("")`` both call it): OpenAI-compatible servers send a call without
    arguments as ``{}``, as nothing or as JSON ``null``."""
    wire = Wire("openai", loopback)
    try:
        wrong = [tool_call("call_1", "constant", arguments)]
        loopback.queue(Reply.json(completion(None, tool_calls=wrong, finish_reason="tool_calls")))
        loopback.queue(wire.answer("ok"))
        result = Session(Agent("a", provider=wire.provider(), tools=[constant])).run("go")
        assert wire.results(1) == [("call_1", "invoke foo", False)]
        assert result.tool_calls[0].input == {}
    finally:
        wire.close()


@tool
def silent(kind: str) -> str:
    """A tool that fails without a message."""
    if kind == "tool":
        raise ToolError("", tool="silent")
    raise TimeoutError


def test_a_tool_failing_without_a_message_tells_the_model_which_tool_failed_and_how(loopback: LoopbackServer) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_exception_handling_bool
    (a ToolException() without a message becomes "Tool execution error"): the model is never
    sent a bare "Error: "."""
    wire = Wire("anthropic", loopback)
    try:
        loopback.queue(wire.calls(("toolu_1", "silent", {"kind": "tool"}), ("toolu_2", "silent", {"kind": "timeout"})))
        loopback.queue(wire.answer("ok"))
        Session(Agent("a", provider=wire.provider(), tools=[silent])).run("go")
        assert wire.results(1) == [("toolu_1", "Error: tool 'silent' failed without saying why", True),
                                   ("toolu_2", "Error: tool 'silent' raised TimeoutError", True)]
    finally:
        wire.close()
