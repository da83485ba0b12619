"""Behaviours of Haystack's tool tests (test/tools/test_from_function.py, test/tools/test_tool.py)
and its ChatMessage tests (test/dataclasses/test_chat_message.py), ported to our ``@tool``
decorator and ``Message``: the schema a function gives the model, names and descriptions,
what cannot be a tool and how that is said, and the messages a tool loop is made of. The agent
loop's side is in tests/agents/test_peer_hsagents.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

import pytest

from wingman_actors import tool
from wingman_actors.core import ContentBlock, Message, Role
from wingman_actors.tools import ToolContext


def function_with_docstring(city: str) -> str:
    """Get weather report for a city."""
    return f"Weather report for {city}: 20°C, sunny"


def test_a_function_gives_its_name_its_docstring_and_a_schema_of_its_parameters() -> None:
    """From deepset-ai/haystack test/tools/test_from_function.py::test_from_function_description_from_docstring
    (ours also closes the object: ``additionalProperties: false``)."""
    weather = tool(function_with_docstring)

    assert (weather.name, weather.definition.description) == ("function_with_docstring", "Get weather report for a city.")
    assert weather.definition.input_schema == {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False,
    }


def test_an_empty_description_given_replaces_the_docstring() -> None:
    """From deepset-ai/haystack test/tools/test_from_function.py::test_from_function_with_empty_description."""
    assert tool(description="")(function_with_docstring).definition.description == ""


def test_a_name_and_a_description_given_replace_the_functions_own() -> None:
    """From deepset-ai/haystack test/tools/test_from_function.py::test_from_function_with_custom_name
    and test_tool_decorator_with_parameters."""
    custom = tool(name="fetch_weather", description="A tool to check the weather.")(function_with_docstring)

    assert (custom.name, custom.definition.name) == ("fetch_weather", "fetch_weather")
    assert custom.definition.description == "A tool to check the weather."


def test_annotated_descriptions_literals_defaults_and_optionals_make_the_schema() -> None:
    """From deepset-ai/haystack test/tools/test_from_function.py::test_from_function_annotated."""

    def function_with_annotations(
        city: Annotated[str, "the city for which to get the weather"] = "Munich",
        unit: Annotated[Literal["Celsius", "Fahrenheit"], "the unit for the temperature"] = "Celsius",
        nullable_param: Annotated[str | None, "a nullable parameter"] = None,
    ) -> str:
        """A simple function to get the current weather for a location."""
        return f"Weather report for {city}: 20 {unit}, sunny"

    schema = tool(function_with_annotations).definition.input_schema

    assert schema["properties"] == {
        "city": {"type": "string", "description": "the city for which to get the weather", "default": "Munich"},
        "unit": {"type": "string", "enum": ["Celsius", "Fahrenheit"], "description": "the unit for the temperature",
                 "default": "Celsius"},
        "nullable_param": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "a nullable parameter",
                           "default": None},
    }
    assert "required" not in schema


def test_a_defaulted_annotated_argument_left_out_by_the_model_takes_its_default() -> None:
    """From deepset-ai/haystack test/tools/test_from_function.py::test_tool_decorator_with_annotated_params
    (``get_weather.function("Berlin", "short")``: the defaults apply)."""

    @tool
    def get_weather(
        city: Annotated[str, "The target city"] = "Berlin",
        output_format: Annotated[Literal["short", "long"], "Output format"] = "short",
    ) -> str:
        """Get weather report for a city."""
        return f"Weather report for {city} ({output_format} format): 20°C, sunny"

    assert get_weather.execute({}, ToolContext()) == "Weather report for Berlin (short format): 20°C, sunny"
    assert get_weather.execute({"output_format": "long"}, ToolContext()).endswith("(long format): 20°C, sunny")


def test_the_decorated_function_can_still_be_called_as_a_function() -> None:
    """From deepset-ai/haystack test/tools/test_from_function.py::test_tool_decorator
    (``get_weather.function("Berlin")``)."""

    @tool
    def get_weather(city: str) -> str:
        """Get weather report for a city."""
        return f"Weather report for {city}: 20°C, sunny"

    assert get_weather("Berlin") == "Weather report for Berlin: 20°C, sunny"


def test_a_parameter_without_an_annotation_accepts_any_json_value() -> None:
    """From deepset-ai/haystack test/tools/test_from_function.py::test_from_function_missing_type_hint.
    Haystack refuses a parameter without a type hint (ValueError); ours makes it an untyped
    schema property that takes any JSON value, as pydantic does for ``Any``."""

    def function_missing_type_hint(city) -> str:  # type: ignore[no-untyped-def]
        """Weather."""
        return f"Weather report for {city}"

    untyped = tool(function_missing_type_hint)

    assert untyped.definition.input_schema["properties"] == {"city": {}}
    assert untyped.execute({"city": 7}, ToolContext()) == "Weather report for 7"


def test_an_annotation_that_does_not_resolve_is_refused_naming_the_tool_and_the_name() -> None:
    """From deepset-ai/haystack test/tools/test_from_function.py::test_from_function_schema_generation_error."""

    def function_with_invalid_type_hint(city: invalid) -> str:  # type: ignore[name-defined]  # noqa: F821
        return f"Weather report for {city}"

    with pytest.raises(TypeError, match=r"tool 'function_with_invalid_type_hint'.*'invalid' is not defined"):
        tool(function_with_invalid_type_hint)


def test_a_callable_parameter_is_refused_with_the_types_a_tool_may_take() -> None:
    """From deepset-ai/haystack test/tools/test_from_function.py::test_from_function_with_callable_params_skipped.
    Haystack leaves an optional callable out of the schema; ours refuses it when the tool is made,
    naming the parameter and the types that have a JSON schema (a model could never pass a function)."""

    def function_with_callback(query: str, callback: Callable[[str], None] | None = None) -> str:
        """A function with a callable parameter."""
        return query

    with pytest.raises(TypeError, match=r"tool 'function_with_callback': parameter 'callback'.*JSON types"):
        tool(function_with_callback)


def test_a_parameter_named_title_stays_in_the_schema_while_titles_are_left_out() -> None:
    """From deepset-ai/haystack test/tools/test_from_function.py::test_remove_title_from_schema_do_not_remove_title_property."""

    def page(parameter1: str, title: str) -> str:
        """Make a page."""
        return title

    schema = tool(page).definition.input_schema

    assert schema["properties"] == {"parameter1": {"type": "string"}, "title": {"type": "string"}}
    assert "title" not in schema


def test_an_async_function_is_a_tool_and_is_awaited() -> None:
    """From deepset-ai/haystack test/tools/test_from_function.py::test_tool_decorator_async_raises_error.
    Haystack refuses async functions as tools; ours awaits them (documented in docs/async.md)."""

    @tool
    async def async_get_weather(city: str) -> str:
        """Get weather report for a city."""
        return f"Weather report for {city}: 20°C, sunny"

    context = ToolContext()
    try:
        assert async_get_weather.execute({"city": "Rome"}, context) == "Weather report for Rome: 20°C, sunny"
    finally:
        context.close()


def test_arguments_of_the_wrong_type_are_refused_before_the_function_runs() -> None:
    """From deepset-ai/haystack test/tools/test_tool.py::test_invoke_fail (``ToolInvocationError``
    naming the tool; ours raises ``ToolError`` before the call)."""
    from wingman_actors.errors import ToolError

    ran: list[Any] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        ran.append(n)
        return n

    with pytest.raises(ToolError, match=r"invalid arguments for tool 'count': n"):
        count.execute({"n": "many"}, ToolContext())
    assert ran == []


# -- the messages of a tool loop (ChatMessage) -------------------------------------------------


def test_an_assistant_message_with_text_and_tool_calls_gives_each_in_order() -> None:
    """From deepset-ai/haystack test/dataclasses/test_chat_message.py::test_from_assistant_with_tool_calls."""
    message = Message.assistant([
        ContentBlock.text_block("Checking."),
        ContentBlock.tool_use_block("c1", "weather", {"city": "Paris"}),
        ContentBlock.tool_use_block("c2", "weather", {"city": "Rome"}),
    ])

    assert (message.role, message.text) == (Role.ASSISTANT, "Checking.")
    assert [(b.id, b.input) for b in message.tool_calls] == [("c1", {"city": "Paris"}), ("c2", {"city": "Rome"})]


def test_a_tool_results_message_holds_only_tool_results_and_says_what_else_it_was_given() -> None:
    """From deepset-ai/haystack test/dataclasses/test_chat_message.py::test_from_tool (a tool message
    carries the result and its origin call)."""
    message = Message.tool_results([ContentBlock.tool_result_block("c1", "sunny", is_error=False)])
    assert [(b.tool_use_id, b.content) for b in message.tool_results_blocks] == [("c1", "sunny")]
    assert message.role is Role.USER

    with pytest.raises(ValueError, match=r"tool_result blocks only, got \['text'\]"):
        Message.tool_results([ContentBlock.text_block("not a result")])


def test_a_message_with_several_text_blocks_gives_their_text_together() -> None:
    """From deepset-ai/haystack test/dataclasses/test_chat_message.py::test_multiple_text_contents (``texts``/``text``)."""
    message = Message.user([ContentBlock.text_block("first "), ContentBlock.text_block("second")])
    assert message.text == "first second"
    assert Message.user("only").text == "only" and Message.assistant([]).text == ""
