"""Behaviours of Hugging Face smolagents' tests/test_tools.py and test_tool_validation.py,
ported to our ``@tool`` decorator: the schema a typed function gives the model (literals,
optional and defaulted arguments, arrays, descriptions from the docstring), the checks
made before a call, and callable objects as tools."""

from __future__ import annotations

import asyncio
import typing
from typing import Any, Literal

import pytest
import typing_extensions

from wingman_actors import tool
from wingman_actors.errors import ToolError
from wingman_actors.tools import ToolContext


def props(t: Any) -> dict[str, Any]:
    return dict(t.definition.input_schema["properties"])


def test_a_decorated_function_gives_its_name_its_docstring_summary_and_each_arguments_description() -> None:
    """Ported from huggingface/smolagents tests/test_tools.py::test_tool_init_with_decorator."""

    @tool
    def coolfunc(a: str, b: int) -> float:
        """Cool function.

        Args:
            a: The first argument
            b: The second one, described on
                two lines
        """
        return b + 2

    d = coolfunc.definition
    assert (d.name, d.description) == ("coolfunc", "Cool function.")
    assert props(coolfunc) == {"a": {"type": "string", "description": "The first argument"},
                               "b": {"type": "integer", "description": "The second one, described on two lines"}}
    assert d.input_schema["required"] == ["a", "b"]


def test_a_defaulted_argument_is_optional_and_keeps_its_default() -> None:
    """Ported from huggingface/smolagents tests/test_tools.py::test_tool_default_parameters_is_nullable."""

    @tool
    def get_weather(location: str, celsius: bool = False) -> str:
        """Get weather."""
        return f"{location} {'C' if celsius else 'F'}"

    assert get_weather.definition.input_schema["required"] == ["location"]
    assert props(get_weather)["celsius"] == {"type": "boolean", "default": False}
    assert get_weather.execute({"location": "Oslo"}, ToolContext()) == "Oslo F"


def test_an_optional_argument_accepts_null_and_is_not_required() -> None:
    """Ported from huggingface/smolagents tests/test_tools.py::test_tool_from_decorator_optional_args."""

    @tool
    def greet(name: str | None = None) -> str:
        """Greet someone."""
        return f"hello {name or 'you'}"

    assert "required" not in greet.definition.input_schema
    types = {option.get("type") for option in props(greet)["name"]["anyOf"]}
    assert types == {"string", "null"}
    assert greet.execute({"name": None}, ToolContext()) == "hello you"


@pytest.mark.parametrize(("annotation", "values", "kind"), [
    (Literal["a", "b"], ["a", "b"], "string"),
    (Literal[1, 2, 3], [1, 2, 3], "integer"),
])
def test_a_literal_argument_is_an_enum_of_its_values(annotation: Any, values: list[Any], kind: str) -> None:
    """Ported from huggingface/smolagents tests/test_tools.py::test_tool_supports_string_literal
    (and numeric literals)."""

    def pick(choice: Any) -> str:
        """Pick one."""
        return str(choice)

    pick.__annotations__["choice"] = annotation
    t = tool(pick)
    schema = props(t)["choice"]
    assert schema["enum"] == values and schema["type"] == kind
    with pytest.raises(ToolError, match=r"invalid arguments for tool 'pick'.*choice"):
        t.execute({"choice": "z"}, ToolContext())


def test_a_list_argument_is_an_array_of_its_item_type_and_its_items_are_checked() -> None:
    """Ported from huggingface/smolagents tests/test_tools.py::test_tool_supports_array."""

    @tool
    def total(numbers: list[float]) -> float:
        """Sum numbers."""
        return sum(numbers)

    assert props(total)["numbers"] == {"type": "array", "items": {"type": "number"}}
    assert total.execute({"numbers": [1, 2.5]}, ToolContext()) == "3.5"
    with pytest.raises(ToolError, match=r"numbers\.1"):
        total.execute({"numbers": [1, "many"]}, ToolContext())


def test_a_missing_argument_and_an_unknown_one_are_refused_before_the_call_naming_both() -> None:
    """Ported from huggingface/smolagents tests/test_tools.py::test_validate_tool_arguments."""
    called: list[Any] = []

    @tool
    def search(query: str) -> str:
        """Search."""
        called.append(query)
        return query

    with pytest.raises(ToolError) as caught:
        search.execute({"querry": "typo"}, ToolContext())
    message = str(caught.value)
    assert "query" in message and "querry" in message and called == []
    assert "Call it again with arguments matching its input schema" in message


def test_a_tool_name_that_is_not_an_identifier_is_refused_with_the_rule() -> None:
    """Ported from huggingface/smolagents tests/test_tools.py::test_tool_init_decorator_raises_issues
    (a declaration the decorator cannot use is refused: here a name)."""

    def fn() -> str:
        """A tool."""
        return ""

    with pytest.raises(ValueError, match=r"tool name 'web search' must be 1-64 characters of letters, digits"):
        tool(name="web search")(fn)


def test_a_tool_with_star_args_is_refused_when_it_is_made() -> None:
    """Ported from huggingface/smolagents tests/test_tools.py::test_tool_init_decorator_raises_issues
    (every argument needs a name and a type the schema can say)."""
    with pytest.raises(TypeError, match=r"\*args/\*\*kwargs are not supported"):
        @tool
        def spread(*items: str) -> str:
            """Join items."""
            return "".join(items)


class Multiplier:
    """Multiply two numbers.

    Args:
        a: the first factor
        b: the second factor
    """

    def __call__(self, a: int, b: int) -> int:
        return a * b


def test_a_callable_object_becomes_a_tool_with_its_calls_arguments_and_its_class_docstring() -> None:
    """Ported from huggingface/smolagents tests/test_tools.py::test_tool_init_vanilla (a Tool subclass with forward)."""
    t = tool(Multiplier(), name="multiply")
    assert t.definition.description == "Multiply two numbers."
    assert props(t)["a"] == {"type": "integer", "description": "the first factor"}
    assert t.execute({"a": 6, "b": 7}, ToolContext()) == "42"


def test_a_tool_can_still_be_called_as_the_plain_function_it_wraps() -> None:
    """Ported from huggingface/smolagents tests/test_async_tools.py::TestAsyncToolDecorator::test_sync_decorated_tool_still_works
    (a decorated tool called directly)."""

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert add(2, 3) == 5 and add.execute({"a": 2, "b": 3}, ToolContext()) == "5"


def test_tuples_dicts_and_nested_lists_get_their_json_schema_shapes() -> None:
    """Ported from huggingface/smolagents tests/test_function_type_hints_utils.py::TestGetJsonSchema::test_complex_types
    and ::test_nested_types."""

    @tool
    def process_data(items: list[str], config: dict[str, float], point: tuple[int, int],
                     data: list[dict[str, Any]]) -> dict[str, bool]:
        """Process some data."""
        return {"result": True}

    p = props(process_data)
    assert p["items"] == {"type": "array", "items": {"type": "string"}}
    assert p["config"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert p["point"]["type"] == "array" and p["point"]["prefixItems"] == [{"type": "integer"}, {"type": "integer"}]
    assert p["data"]["type"] == "array" and p["data"]["items"]["type"] == "object"
    assert process_data.execute({"items": [], "config": {}, "point": [1, 2], "data": []}, ToolContext()) == (
        '{"result": true}')


def test_types_written_in_the_docstring_are_left_out_of_the_descriptions_and_the_hints_win() -> None:
    """Ported from huggingface/smolagents tests/test_function_type_hints_utils.py::TestGetJsonSchema::test_typed_docstring_parsing
    and ::test_mismatched_docstring_types."""

    @tool
    def calculate(x: int, y: float) -> float:
        """Calculate something.

        Args:
            x (str): An integer parameter with type in docstring.
            y (float): A float parameter with type in docstring.

        Returns:
            float: The calculated result.
        """
        return x * y

    assert props(calculate) == {
        "x": {"type": "integer", "description": "An integer parameter with type in docstring."},
        "y": {"type": "number", "description": "A float parameter with type in docstring."}}
    assert calculate.definition.description == "Calculate something."


def test_section_words_inside_the_summary_do_not_cut_it() -> None:
    """Ported from huggingface/smolagents tests/test_function_type_hints_utils.py::TestGetJsonSchema::test_with_special_words_in_description_func."""

    @tool
    def process(value: str) -> str:
        """Function with Args: or Returns: keywords in its description.

        Args:
            value: A string value.
        """
        return value.upper()

    assert process.definition.description == "Function with Args: or Returns: keywords in its description."
    assert props(process)["value"]["description"] == "A string value."


class Point(typing_extensions.TypedDict):
    x: int
    y: int


class PlainPoint(typing.TypedDict):
    x: int


def test_a_typeddict_argument_is_an_object_and_a_typing_one_on_python_3_11_is_refused_saying_why() -> None:
    """Ported from huggingface/smolagents tests/test_function_type_hints_utils.py::TestGetJsonSchema::test_complex_types
    (structured arguments). pydantic, which checks our arguments, takes a ``typing.TypedDict``
    only from Python 3.12: the refusal says so and names ``typing_extensions.TypedDict``."""

    @tool
    def move(to: Point) -> str:
        """Move to a point."""
        return f"{to['x']},{to['y']}"

    assert move.execute({"to": {"x": 1, "y": 2}}, ToolContext()) == "1,2"

    def jump(to: PlainPoint) -> str:
        """Jump to a point."""
        return ""

    with pytest.raises(TypeError, match=r"parameter 'to' \(PlainPoint\).*typing_extensions\.TypedDict") as caught:
        tool(jump)
    assert "a dataclass or a TypedDict" not in str(caught.value)  # not advice to use what it already is


def test_calling_an_async_tool_directly_gives_the_coroutine_and_execute_awaits_it() -> None:
    """Ported from huggingface/smolagents tests/test_async_tools.py::TestAsyncToolDecorator::test_async_decorated_tool.
    smolagents runs an async tool's coroutine when the tool is called and returns its
    result; ours calls the function as it is (no validation), so an ``async def`` one gives
    its coroutine to await, and ``execute`` (what a session calls) awaits it."""

    @tool
    async def async_greet(name: str) -> str:
        """Greets someone asynchronously."""
        await asyncio.sleep(0.01)
        return f"Hello, {name}!"

    assert asyncio.run(async_greet("World")) == "Hello, World!"
    ctx = ToolContext()
    try:
        assert async_greet.execute({"name": "World"}, ctx) == "Hello, World!"
    finally:
        ctx.close()
