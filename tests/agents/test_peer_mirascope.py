"""Behaviours of Mirascope's own test suite (Mirascope/mirascope: python/tests/llm/tools/
test_tool_schema.py, test_toolkit.py, content/test_empty_tool_call_args.py and the call
scenarios of clients/scenarios.py), ported to our ``@tool``, ``Agent`` and ``Session``:
Mirascope's ``ToolSchema.create_schema(fn)`` is our ``tool(fn).definition``, its
``Toolkit.execute`` is a session's tool step, and its ``ToolOutput.error`` is our tool
result with ``is_error``. Models are played by the scripted provider; the providers' wire
formats are in tests/providers/test_peer_mirascope_wire.py.

Deliberately different (each test that touches one says so):
- A function without a docstring gets an empty description; Mirascope uses the function's
  name. Ours sends nothing the author did not write.
- ``Annotated[str, "text"]`` makes "text" the argument's description (docs/agents.md
  "Tools"); Mirascope ignores metadata that is not a ``Field``.
- Pydantic's ``title`` keys are dropped from argument schemas (they repeat the name).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from wingman_actors import Agent, Session, tool
from wingman_actors.core import InferenceResponse, Role, StreamEventType, Usage
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext

PEER = "Mirascope/mirascope python/tests/llm"


class ExampleModel(BaseModel):
    """An example model for testing."""

    id: int
    name: str
    tags: list[str] = []


def complex_tool(
    basic_param: str,
    annotated_param: Annotated[int, Field(description="An annotated integer parameter")],
    model_param: ExampleModel,
    optional_param: str = "default",
    union_param: str | int = "default_union",
) -> str:
    """A comprehensive tool for testing schema generation.

    This tool exercises various parameter types to ensure our schema
    generation handles complex cases correctly.
    """
    return f"{basic_param} {annotated_param} {model_param.name} {optional_param} {union_param}"


class NonJsonableClass:
    """A class that cannot be serialized to JSON."""


def calls(*specs: tuple[str, str, dict[str, Any]]) -> InferenceResponse:
    return InferenceResponse.of_tool_calls(list(specs))


def run_tools(tools: list[Any], *specs: tuple[str, str, dict[str, Any]], metadata: dict[str, Any] | None = None) -> Any:
    """One session whose model calls ``specs`` in one step, then answers "done"."""
    provider = ScriptedProvider([calls(*specs), "done"])
    return Session(Agent("toolkit", provider=provider, tools=tools)).run("go", metadata=metadata)


# --- tool schemas from functions -----------------------------------------------------------


def test_a_complex_signature_gives_required_plain_annotated_model_optional_and_union_arguments() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_complex_tool_schema_snapshot."""
    schema = tool(complex_tool).definition.input_schema
    props = schema["properties"]
    assert schema["required"] == ["basic_param", "annotated_param", "model_param"]
    assert schema["additionalProperties"] is False
    assert props["basic_param"] == {"type": "string"}
    assert props["annotated_param"] == {"description": "An annotated integer parameter", "type": "integer"}
    assert props["model_param"] == {"$ref": "#/$defs/ExampleModel"}
    assert props["optional_param"] == {"default": "default", "type": "string"}
    assert props["union_param"] == {"anyOf": [{"type": "string"}, {"type": "integer"}], "default": "default_union"}
    model = schema["$defs"]["ExampleModel"]
    assert model["required"] == ["id", "name"] and model["description"] == "An example model for testing."


def test_a_complex_tool_runs_with_its_model_argument_validated_and_its_defaults_filled() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_toolkit.py::test_toolkit_execute (with the complex schema's tool)."""
    result = run_tools(
        [tool(complex_tool)],
        ("c1", "complex_tool", {"basic_param": "b", "annotated_param": 3, "model_param": {"id": 1, "name": "Ada"}}),
    )
    [call] = result.tool_calls
    assert (call.output, call.is_error) == ("b 3 Ada default default_union", False)


def test_a_tool_without_a_docstring_has_an_empty_description() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_default_description.

    Deliberately different: Mirascope describes such a tool by its function name."""

    def tool_no_docstring() -> str:
        return "x"

    assert tool(tool_no_docstring).definition.description == ""


def test_a_multi_line_docstring_is_dedented_into_the_description() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_docstring_cleaning."""

    def tool_with_multiline_docstring() -> str:
        """Long docstring.

        This is a multiline docstring
        with some indentation.

        It should be cleaned up properly.
        """
        return "x"

    expected = "Long docstring.\n\nThis is a multiline docstring\nwith some indentation.\n\nIt should be cleaned up properly."
    assert tool(tool_with_multiline_docstring).definition.description == expected


def test_a_tool_without_parameters_has_an_empty_object_schema() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_no_parameters."""

    def no_param_tool() -> str:
        """A tool with no parameters."""
        return "x"

    schema = tool(no_param_tool).definition.input_schema
    assert schema["type"] == "object" and schema["properties"] == {} and not schema.get("required")


def test_a_bound_method_and_a_classmethod_leave_self_and_cls_out_of_the_schema() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_self_cls_parameters_skipped."""

    class Weather:
        def instance_method(self, param: str) -> str:
            """Instance method."""
            return param

        @classmethod
        def class_method(cls, param: int) -> str:
            """Class method."""
            return str(param)

    for method in (Weather().instance_method, Weather.class_method):
        schema = tool(method).definition.input_schema
        assert list(schema["properties"]) == ["param"] and schema["required"] == ["param"]


def test_a_method_taken_from_its_class_unbound_is_refused_naming_self_and_the_fix() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_self_cls_parameters_skipped
    (``TestClass.instance_method``, the function as the class holds it).

    Mirascope leaves ``self`` out of the schema of the unbound function; we used to ask the
    model for a ``self`` argument of any type and pass it as ``self``. A tool needs the
    object: it is refused, naming the fix (bind it first)."""

    class Weather:
        def instance_method(self, param: str) -> str:
            """Instance method."""
            return param

    with pytest.raises(TypeError, match=r"'self'.*tool\(obj\.instance_method\)"):
        tool(Weather.instance_method)


def test_annotated_metadata_that_is_a_string_becomes_the_arguments_description() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_annotated_without_field_info.

    Deliberately different: Mirascope ignores non-Field metadata; ours documents the string
    as the description (docs/agents.md "Tools")."""

    def tool_with_annotated_no_field(param: Annotated[str, "some non-field annotation"]) -> str:
        """Tool with Annotated type but no Field annotation."""
        return param

    schema = tool(tool_with_annotated_no_field).definition.input_schema
    assert schema["properties"] == {"param": {"description": "some non-field annotation", "type": "string"}}


def test_annotated_metadata_that_is_neither_a_string_nor_a_field_keeps_the_core_type() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_annotated_without_field_info."""

    def tool_with_marker(param: Annotated[int, object()]) -> str:
        """Tool with opaque Annotated metadata."""
        return str(param)

    assert tool(tool_with_marker).definition.input_schema["properties"] == {"param": {"type": "integer"}}


def test_a_parameter_type_without_a_json_schema_is_refused_naming_the_parameter() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_non_jsonable_parameter_raises_error."""

    def tool_with_non_jsonable(param: NonJsonableClass) -> str:
        """Tool with unsupported parameter type."""
        return ""

    with pytest.raises(TypeError, match=r"'param' \(NonJsonableClass\) has no JSON schema"):
        tool(tool_with_non_jsonable)


def test_google_style_args_give_each_argument_its_description_typed_entries_included() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_google_style_docstring_parameter_descriptions."""

    def google_style_tool(name: str, age: int, is_active: bool = True) -> str:
        """A tool with Google-style parameter documentation.

        Args:
            name: The person's name
            age (int): The person's age in years
            is_active: Whether the person is currently active

        Returns:
            A formatted string with the information
        """
        return name

    definition = tool(google_style_tool).definition
    props = definition.input_schema["properties"]
    assert definition.description == "A tool with Google-style parameter documentation."
    assert props["name"]["description"] == "The person's name"
    assert props["age"]["description"] == "The person's age in years"
    assert props["is_active"] == {"default": True, "description": "Whether the person is currently active", "type": "boolean"}
    assert definition.input_schema["required"] == ["name", "age"]


def test_a_field_description_takes_precedence_over_the_docstring() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_field_annotation_overrides_docstring."""

    def both(param: Annotated[str, Field(description="Field description")]) -> str:
        """A tool where Field annotation should override docstring.

        Args:
            param: Docstring description that should be ignored
        """
        return param

    assert tool(both).definition.input_schema["properties"]["param"]["description"] == "Field description"


def test_arguments_without_any_documentation_have_no_description() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_no_docstring_no_descriptions."""

    def no_docs_tool(param1: str, param2: int) -> str:
        return param1

    props = tool(no_docs_tool).definition.input_schema["properties"]
    assert "description" not in props["param1"] and "description" not in props["param2"]


def test_the_same_function_gives_equal_definitions_and_different_ones_differ() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_equivalent_schemas_have_same_hash
    and ::test_different_schemas_have_different_hashes."""

    def func1(param: str) -> str:
        """First function."""
        return param

    def func2(param: int) -> str:
        """Second function."""
        return str(param)

    assert tool(func1).definition == tool(func1).definition
    assert tool(func1).definition != tool(func2).definition


def test_a_tool_named_and_described_explicitly_keeps_its_function_schema() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_schema.py::test_defines_different_descriptions."""

    def tool_v1(param: str) -> str:
        """First version of the tool."""
        return param

    renamed = tool(name="lookup", description="Updated version of the tool.")(tool_v1)
    assert (renamed.definition.name, renamed.definition.description) == ("lookup", "Updated version of the tool.")
    assert renamed.definition.input_schema == tool(tool_v1).definition.input_schema


def test_a_decorated_tool_stays_callable_as_its_function_with_or_without_parentheses() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_decorator.py::test_sync_tool_basic and ::test_tool_decorator_syntax."""

    @tool
    def add_numbers(a: int, b: int) -> int:
        """Add two numbers together."""
        return a + b

    @tool()
    def with_parens() -> str:
        """Another simple tool."""
        return "another"

    assert add_numbers(2, 3) == 5 and with_parens() == "another"
    assert (add_numbers.definition.name, add_numbers.definition.description) == ("add_numbers", "Add two numbers together.")
    assert add_numbers.definition.input_schema["required"] == ["a", "b"]
    assert with_parens.definition.name == "with_parens"


def test_an_async_tool_called_directly_gives_its_coroutine() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_decorator.py::test_async_tool_basic."""

    @tool
    async def async_add(a: int, b: int) -> int:
        """Add two numbers asynchronously."""
        return a + b

    assert asyncio.run(async_add(3, 4)) == 7
    assert async_add.definition.description == "Add two numbers asynchronously."


def test_the_bare_decorator_and_the_called_decorator_give_the_same_definition() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_decorator.py::test_decorator_modes_equivalence."""

    def base_func(x: int, y: str = "default") -> str:
        """A function to be decorated."""
        return f"{y}: {x}"

    assert tool(base_func).definition == tool()(base_func).definition


# --- toolkits: calling tools ---------------------------------------------------------------


@tool(name="test_tool")  # the peer's fixture name
def echo_tool(arg: str) -> str:
    """Echo an argument."""
    return f"result: {arg}"


@tool
def other_tool() -> int:
    """The answer."""
    return 42


@tool
async def async_tool(arg: str) -> str:
    """Echo an argument, asynchronously."""
    return f"async result: {arg}"


@tool
def deps_tool(ctx: ToolContext) -> str:
    """Report the session's context."""
    return f"deps: {ctx.metadata.get('deps')}"


@tool
def ping() -> str:
    """No-arg health check."""
    return "pong"


def test_two_tools_of_one_name_are_refused_when_the_agent_is_made() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_toolkit.py::test_toolkit_init_duplicate_names."""

    def make() -> Any:
        def dup() -> int:
            """Twice."""
            return 42

        return tool(dup)

    with pytest.raises(ValueError, match="duplicate tool name 'dup'"):
        Agent("toolkit", provider=ScriptedProvider(["x"]), tools=[make(), make()])


def test_the_called_tool_runs_with_its_arguments_and_its_result_goes_back_to_the_model() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_toolkit.py::test_toolkit_execute."""
    provider = ScriptedProvider([calls(("abc", "test_tool", {"arg": "value"})), "done"])
    result = Session(Agent("toolkit", provider=provider, tools=[echo_tool, other_tool])).run("go")
    [call] = result.tool_calls
    assert (call.name, call.output, call.is_error) == ("test_tool", "result: value", False)
    [block] = provider.requests[1].messages[-1].content
    assert (block.type, block.tool_use_id, block.content) == ("tool_result", "abc", "result: value")


def test_a_tool_returning_an_int_reaches_the_model_as_its_json_text() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_toolkit.py::tools (``other_tool`` returns 42)."""
    [call] = run_tools([echo_tool, other_tool], ("c1", "other_tool", {})).tool_calls
    assert call.output == "42"


def test_an_async_tool_is_awaited_in_a_blocking_session() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_toolkit.py::test_async_toolkit_execute."""
    [call] = run_tools([async_tool], ("c1", "async_tool", {"arg": "value"})).tool_calls
    assert call.output == "async result: value"


def test_an_async_tool_is_awaited_in_an_async_session() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_toolkit.py::test_async_toolkit_execute (async call)."""

    provider = ScriptedProvider([calls(("c1", "async_tool", {"arg": "value"}), ("c2", "test_tool", {"arg": "v"})), "done"])
    result = asyncio.run(Session(Agent("toolkit", provider=provider, tools=[async_tool, echo_tool])).arun("go"))
    assert [c.output for c in result.tool_calls] == ["async result: value", "result: v"]


def test_a_context_tool_and_a_plain_tool_run_side_by_side_the_context_left_out_of_the_schema() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_toolkit.py::test_context_toolkit_execute."""
    assert deps_tool.definition.input_schema["properties"] == {}
    result = run_tools(
        [echo_tool, deps_tool], ("abc", "test_tool", {"arg": "value"}), ("bef", "deps_tool", {}), metadata={"deps": "db"},
    )
    assert [c.output for c in result.tool_calls] == ["result: value", "deps: db"]


def test_a_call_of_a_tool_the_agent_does_not_have_goes_back_as_an_error_naming_the_available_tools() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_toolkit.py::test_toolkit_get_nonexistent_tool."""
    result = run_tools([echo_tool, other_tool], ("abc", "missing_tool", {"arg": "value"}))
    [call] = result.tool_calls
    assert call.is_error and "unknown tool 'missing_tool'" in call.output
    assert "test_tool" in call.output and "other_tool" in call.output
    assert result.response == "done"


def test_a_tool_that_raises_goes_back_to_the_model_as_an_error_result_and_the_run_goes_on() -> None:
    """From Mirascope/mirascope python/tests/llm/content/test_empty_tool_call_args.py (``ToolOutput.error``: a tool's
    failure is kept on its output, not raised)."""

    @tool
    def fails(x: int) -> str:
        """Fail."""
        raise RuntimeError("the disk is full")

    provider = ScriptedProvider([calls(("c1", "fails", {"x": 1})), "sorry"])
    result = Session(Agent("toolkit", provider=provider, tools=[fails])).run("go")
    [block] = provider.requests[1].messages[-1].content
    assert block.is_error and "RuntimeError: the disk is full" in (block.content or "")
    assert result.response == "sorry"


def test_arguments_of_the_wrong_type_go_back_naming_the_argument_without_calling_the_tool() -> None:
    """From Mirascope/mirascope python/tests/llm/tools/test_tool_decorator.py::test_sync_tool_basic (``execute`` of a
    ``ToolCall``: its arguments are validated into the parameters' types before the call)."""
    ran: list[int] = []

    @tool
    def count(n: int) -> str:
        """Count."""
        ran.append(n)
        return "ok"

    [call] = run_tools([count], ("c1", "count", {"n": "many"})).tool_calls
    assert call.is_error and "n:" in call.output and ran == []


# --- empty tool arguments -----------------------------------------------------------------


def test_a_no_argument_tool_called_with_empty_arguments_runs() -> None:
    """From Mirascope/mirascope python/tests/llm/content/test_empty_tool_call_args.py::test_openai_completions_decode_normalizes_empty_args."""
    [call] = run_tools([ping], ("call_empty", "ping", {})).tool_calls
    assert (call.input, call.output, call.is_error) == ({}, "pong", False)


def test_a_history_with_an_empty_argument_call_is_sent_again_on_the_next_turn() -> None:
    """From Mirascope/mirascope python/tests/llm/content/test_empty_tool_call_args.py::test_anthropic_and_google_encode_empty_tool_args."""
    provider = ScriptedProvider([calls(("call_empty", "ping", {})), "pong it is", "again"])
    session = Session(Agent("toolkit", provider=provider, tools=[ping]))
    session.run("ping")
    session.run("once more")
    sent = provider.requests[2].messages
    [use] = [b for m in sent for b in m.content if b.type == "tool_use"]
    assert (use.id, use.name, use.input) == ("call_empty", "ping", {})


# --- call scenarios -----------------------------------------------------------------------


def test_a_multi_turn_session_sends_the_whole_conversation_each_turn() -> None:
    """From Mirascope/mirascope python/tests/llm/clients/scenarios.py (multi_turn_scenario)."""
    provider = ScriptedProvider(["Hi Ada.", "Your name is Ada."])
    session = Session(Agent("chat", instructions="Be brief.", provider=provider))
    session.run("My name is Ada.")
    assert session.run("What is my name?").response == "Your name is Ada."
    second = provider.requests[1]
    assert [m.role for m in second.messages] == [Role.USER, Role.ASSISTANT, Role.USER]
    assert second.instructions == "Be brief."


def test_parallel_tool_calls_run_and_their_results_return_in_call_order() -> None:
    """From Mirascope/mirascope python/tests/llm/clients/scenarios.py (tool_parallel_calls_scenario)."""
    provider = ScriptedProvider([calls(("a", "test_tool", {"arg": "one"}), ("b", "test_tool", {"arg": "two"})), "both"])
    Session(Agent("toolkit", provider=provider, tools=[echo_tool])).run("go")
    results = provider.requests[1].messages[-1].content
    assert [(b.tool_use_id, b.content) for b in results] == [("a", "result: one"), ("b", "result: two")]


class Book(BaseModel):
    title: str
    author: str


def test_a_structured_output_agent_may_call_a_tool_before_answering_with_the_object() -> None:
    """From Mirascope/mirascope python/tests/llm/clients/scenarios.py (structured_output_calls_tool_scenario)."""

    @tool
    def available_book() -> str:
        """The book in stock."""
        return "Mistborn by Brandon Sanderson"

    provider = ScriptedProvider([calls(("c1", "available_book", {})), '{"title": "Mistborn", "author": "Brandon Sanderson"}'])
    result = Session(Agent("librarian", provider=provider, tools=[available_book], output_schema=Book)).run("Recommend a book")
    assert result.output == Book(title="Mistborn", author="Brandon Sanderson")
    assert [c.output for c in result.tool_calls] == ["Mistborn by Brandon Sanderson"]


def test_a_streamed_structured_run_yields_text_deltas_and_validates_the_object_at_the_end() -> None:
    """From Mirascope/mirascope python/tests/llm/clients/scenarios.py (test_stream[structured_output_scenario])."""
    answer = InferenceResponse.of_text('{"title": "Mistborn", "author": "Brandon Sanderson"}', usage=Usage(input_tokens=5, output_tokens=9))
    session = Session(Agent("librarian", provider=ScriptedProvider([answer]), output_schema=Book))
    stream = session.run_stream("Recommend a book")
    deltas = [e.text or "" for e in stream if e.type is StreamEventType.TEXT_DELTA]
    result = stream.result()
    assert "".join(deltas) == '{"title": "Mistborn", "author": "Brandon Sanderson"}'
    assert result.output == Book(title="Mistborn", author="Brandon Sanderson")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (5, 9)
