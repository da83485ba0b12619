"""The @tool decorator and the tool registry."""

from __future__ import annotations

from typing import Literal, Optional

import pytest
from pydantic import BaseModel

from wingman_actors import tool
from wingman_actors.errors import ToolError
from wingman_actors.tools import ToolContext, ToolRegistry


@tool
def search(query: str, limit: int = 5, mode: Literal["fast", "deep"] = "fast") -> list[str]:
    """Search the index.

    Args:
        query: what to look for.
        limit: how many hits to return.
    """
    return [f"{query}-{i}" for i in range(limit)]


def test_name_and_description_come_from_the_function() -> None:
    assert search.name == "search"
    assert search.description == "Search the index."


def test_schema_comes_from_annotations_with_argument_docs() -> None:
    schema = search.definition.input_schema
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"] == {"type": "string", "description": "what to look for."}
    assert schema["properties"]["limit"]["default"] == 5
    assert schema["properties"]["mode"]["enum"] == ["fast", "deep"]
    assert schema["additionalProperties"] is False


def test_execute_validates_and_renders_json(tmp_path: object) -> None:
    out = search.execute({"query": "q", "limit": "2"}, ToolContext())
    assert out == '["q-0", "q-1"]'


def test_invalid_arguments_raise_a_tool_error_naming_the_field() -> None:
    with pytest.raises(ToolError, match="mode") as info:
        search.execute({"query": "q", "mode": "slow"}, ToolContext())
    assert info.value.tool == "search"


def test_unexpected_arguments_are_refused() -> None:
    with pytest.raises(ToolError, match="colour: Extra inputs"):
        search.execute({"query": "q", "colour": "red"}, ToolContext())


def test_context_parameter_is_injected_and_hidden_from_the_schema(tmp_path: object) -> None:
    @tool
    def where(ctx: ToolContext) -> str:
        """Where am I."""
        return str(ctx.work_dir)

    assert where.definition.input_schema["properties"] == {}
    assert where.execute({}, ToolContext(tmp_path)) == str(tmp_path)  # type: ignore[arg-type]


def test_pydantic_model_results_are_serialised() -> None:
    class Point(BaseModel):
        x: int
        y: int

    @tool(name="origin", description="The origin.")
    def make() -> Point:
        return Point(x=0, y=0)

    assert (make.name, make.description) == ("origin", "The origin.")
    assert make.execute({}, ToolContext()) == '{"x":0,"y":0}'


def test_async_functions_are_supported() -> None:
    @tool
    async def later(n: int) -> int:
        """Async."""
        return n * 2

    assert later.execute({"n": 4}, ToolContext()) == "8"


def test_bad_tool_names_are_refused() -> None:
    with pytest.raises(ValueError, match="tool name"):
        tool(name="has space")(lambda: None)


def test_var_args_are_refused() -> None:
    def f(*args: int) -> int:
        return 0

    with pytest.raises(TypeError, match="args"):
        tool(f)


def test_decorated_function_is_still_callable() -> None:
    assert search("x", limit=1) == ["x-0"]


def test_registry_refuses_duplicate_names() -> None:
    reg = ToolRegistry([search])
    with pytest.raises(ValueError, match="duplicate tool name 'search'"):
        reg.register(search)
    assert reg.names == ["search"] and "search" in reg and len(reg) == 1
    assert reg.definitions()[0].name == "search"


def test_an_optional_context_parameter_is_injected_and_hidden_from_the_schema(tmp_path: object) -> None:
    @tool
    def where(name: str, ctx: ToolContext | None = None) -> str:
        """Say where the tool works."""
        return f"{name} in {ctx.work_dir if ctx is not None else '?'}"

    @tool
    def where_too(name: str, ctx: Optional[ToolContext] = None) -> str:  # noqa: UP045 (the older spelling)
        """Say where the tool works."""
        return f"{name} in {ctx.work_dir if ctx is not None else '?'}"

    for t in (where, where_too):
        assert t.definition.input_schema["properties"].keys() == {"name"}
        assert t.execute({"name": "x"}, ToolContext(tmp_path)) == f"x in {ToolContext(tmp_path).work_dir}"  # type: ignore[arg-type]


def test_decorating_something_that_is_not_a_function_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"@tool decorates a function, got int"):
        tool(3)  # type: ignore[call-overload]
