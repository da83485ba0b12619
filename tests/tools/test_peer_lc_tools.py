"""Behaviours of LangChain's libs/core/tests/unit_tests/test_tools.py and
utils/test_function_calling.py, ported to our ``@tool`` decorator: the JSON schema a typed
function gives the model (docstrings, ``Annotated`` descriptions, pydantic fields,
defaults, optional, enum, union and nested-model arguments), the arguments a call
receives, and what the decorator refuses. Sessions over the providers' wire are in
tests/agents/test_peer_lc_tools_wire.py; docstring parsing in test_peer_lc_docstrings.py."""

from __future__ import annotations

import enum
import functools
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from wingman_actors import tool
from wingman_actors.errors import ToolError
from wingman_actors.tools import ToolContext

LC = "langchain-ai/langchain libs/core/tests/unit_tests"


def props(t: Any) -> dict[str, Any]:
    return dict(t.definition.input_schema["properties"])


def run(t: Any, args: dict[str, Any]) -> str:
    ctx = ToolContext()
    try:
        return str(t.execute(args, ctx))
    finally:
        ctx.close()


class SomeEnum(enum.Enum):
    A = "a"
    B = "b"


class SomeBaseModel(BaseModel):
    foo: str


class Address(BaseModel):
    street: str


class Person(BaseModel):
    name: str
    address: Address = Field(description="Home address")


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with its ``$ref`` (if any) looked up in ``schema``'s ``$defs``."""
    ref = node.get("$ref")
    if ref is None:
        return node
    prefix = "#/$defs/"
    assert ref.startswith(prefix), ref
    return dict(schema["$defs"][ref[len(prefix):]])


# -- names, descriptions, empty tools ------------------------------------------------------


def test_a_function_without_arguments_has_an_empty_object_schema_and_runs_with_no_input() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_empty_args_decorator
    (and utils/test_function_calling.py::test_function_no_params)."""

    @tool
    def empty_tool_input() -> str:
        """Return a constant."""
        return "the empty result"

    schema = empty_tool_input.definition.input_schema
    assert (schema["type"], schema["properties"], schema.get("required")) == ("object", {}, None)
    assert run(empty_tool_input, {}) == "the empty result"


def test_a_name_given_to_the_decorator_replaces_the_functions_and_the_docstring_still_describes_it() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_named_tool_decorator."""

    @tool(name="search")
    def search_api(query: str) -> str:
        """Search the API for the query."""
        return f"API result - {query}"

    assert (search_api.name, search_api.description) == ("search", "Search the API for the query.")
    assert run(search_api, {"query": "foo"}) == "API result - foo"


def test_a_name_given_positionally_is_refused_saying_to_pass_it_by_keyword() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_named_tool_decorator.
    LangChain takes the name as ``@tool("search")``; ours takes it as ``@tool(name="search")``,
    and the positional spelling is refused with the call that works, not a bare type error."""
    with pytest.raises(TypeError, match=r"@tool\(name='search'\)"):
        tool("search")  # type: ignore[call-overload]


def test_the_description_given_to_the_decorator_wins_over_the_docstring() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_decorator_description."""

    @tool(description="description")
    def foo_description(x: int) -> str:
        """Foo."""
        return "hi"

    assert foo_description.description == foo_description.definition.description == "description"


def test_a_function_without_a_docstring_is_a_tool_with_an_empty_description() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_missing_docstring.
    LangChain refuses a function without a docstring; ours makes the tool with an empty
    description (DESIGN: the description comes from the docstring; ``description=`` gives one)."""

    @tool
    def search_api(query: str) -> str:
        return "API result"

    assert search_api.description == ""
    assert run(search_api, {"query": "q"}) == "API result"


def test_a_pydantic_model_class_is_a_tool_whose_arguments_are_its_fields() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_missing_docstring
    (``@tool`` on a ``BaseModel`` class): ours calls the class, so the model sees its fields
    and gets the built object back as JSON."""
    made = tool(SomeBaseModel)
    assert made.name == "SomeBaseModel" and made.definition.input_schema["required"] == ["foo"]
    assert run(made, {"foo": "bar"}) == '{"foo":"bar"}'


class Dummy:
    def dummy_function(self, arg1: int, arg2: str) -> str:
        """Dummy function.

        Args:
            arg1: foo
            arg2: one of 'bar', 'baz'
        """
        return f"{arg1}{arg2}"

    @classmethod
    def dummy_class_function(cls, arg1: int) -> str:
        """Dummy class function."""
        return f"{cls.__name__}{arg1}"


def test_a_bound_method_and_a_classmethod_are_tools_without_self_or_cls() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/utils/test_function_calling.py::test_convert_to_openai_function
    (Dummy.dummy_function and DummyWithClassMethod.dummy_function)."""
    method, classmethod_ = tool(Dummy().dummy_function), tool(Dummy.dummy_class_function)
    assert (method.name, list(props(method))) == ("dummy_function", ["arg1", "arg2"])
    assert props(method)["arg1"] == {"type": "integer", "description": "foo"}
    assert (classmethod_.name, list(props(classmethod_))) == ("dummy_class_function", ["arg1"])
    assert (run(method, {"arg1": 1, "arg2": "bar"}), run(classmethod_, {"arg1": 2})) == ("1bar", "Dummy2")


def test_a_lambda_is_a_tool_once_named_and_unnamed_it_is_refused_saying_how_to_name_it() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_structured_tool_lambda_multi_args_schema
    (and ::test_tool_lambda_args_schema): untyped arguments take any JSON value."""
    made = tool(lambda tool_input, other_arg: f"{tool_input}{other_arg}", name="tool", description="A tool")
    assert props(made) == {"tool_input": {}, "other_arg": {}}
    assert run(made, {"tool_input": 1, "other_arg": "x"}) == "1x"
    with pytest.raises(ValueError, match=r"tool name '<lambda>' must be .*; name the tool: tool\(fn, name='lookup'\)"):
        tool(lambda tool_input: tool_input)


# -- defaults, optional and required -------------------------------------------------------


@tool
def foo(bar: str, baz: int | None = 3, buzz: str | None = "buzz") -> dict[str, Any]:
    """The foo."""
    return {"bar": bar, "baz": baz, "buzz": buzz}


@pytest.mark.parametrize(("inputs", "expected"), [
    ({"bar": "bar"}, {"bar": "bar", "baz": 3, "buzz": "buzz"}),
    ({"bar": "bar", "baz": 4, "buzz": "not-buzz"}, {"bar": "bar", "baz": 4, "buzz": "not-buzz"}),
    ({"bar": "bar", "baz": None}, {"bar": "bar", "baz": None, "buzz": "buzz"}),
])
def test_defaults_fill_omitted_arguments_and_an_explicit_null_reaches_an_optional_one(
    inputs: dict[str, Any], expected: dict[str, Any],
) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_invoke_optional_args."""
    import json

    assert json.loads(run(foo, inputs)) == expected
    assert foo.definition.input_schema["required"] == ["bar"]


@pytest.mark.parametrize(("inputs", "field"), [({}, "bar"), ({"bar": "bar", "baz": "not-an-int"}, "baz")])
def test_a_missing_or_mistyped_argument_is_a_tool_error_naming_the_field(inputs: dict[str, Any], field: str) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_invoke_optional_args
    (the cases that raise ValidationError): ours raises a ToolError the session sends the model."""
    with pytest.raises(ToolError, match=rf"invalid arguments for tool 'foo': {field}: ") as caught:
        run(foo, inputs)
    assert caught.value.tool == "foo"


def test_falsy_defaults_are_passed_when_the_arguments_are_omitted() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_args_schema_falsy_defaults."""

    @tool(name="config_tool")
    def configure(name: str, *, enabled: bool = False, count: int = 0, prefix: str = "") -> str:
        """Configure settings."""
        return f"name={name}, enabled={enabled}, count={count}, prefix={prefix!r}"

    assert run(configure, {"name": "test"}) == "name=test, enabled=False, count=0, prefix=''"
    assert {k: v.get("default") for k, v in props(configure).items()} == {
        "name": None, "enabled": False, "count": 0, "prefix": ""}


def test_an_optional_argument_without_a_default_is_required_and_takes_null() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/utils/test_function_calling.py::test_function_optional_param.
    LangChain's test (an xfail) wants ``a: str | None`` left out of ``required``; ours keeps the
    signature's word: no default means the model must send it, and null is a value it may send."""

    @tool
    def func5(a: str | None, b: str, c: list[str | None] | None) -> str:
        """A test function."""
        return f"{a}|{b}|{c}"

    assert func5.definition.input_schema["required"] == ["a", "b", "c"]
    assert props(func5)["a"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert run(func5, {"a": None, "b": "x", "c": [None, "y"]}) == "None|x|[None, 'y']"


# -- Annotated and pydantic fields -----------------------------------------------------------


def test_annotated_text_describes_its_argument() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_annotated_descriptions."""

    @tool
    def foo2(bar: Annotated[str, "this is the bar"], baz: Annotated[int, "this is the baz"]) -> str:
        """The foo.

        Returns:
            The bar only.
        """
        return bar

    assert props(foo2) == {"bar": {"type": "string", "description": "this is the bar"},
                           "baz": {"type": "integer", "description": "this is the baz"}}
    assert foo2.description == "The foo."
    assert run(foo2, {"bar": "b", "baz": 1}) == "b"


def test_an_annotated_fields_description_and_the_default_are_both_kept() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_field_description_preserved."""

    @tool
    def my_tool(
        topic: Annotated[str, Field(description="The research topic")],
        depth: Annotated[int, Field(description="Search depth level")] = 3,
    ) -> str:
        """A tool for research."""
        return f"{topic} at depth {depth}"

    assert props(my_tool) == {
        "topic": {"type": "string", "description": "The research topic"},
        "depth": {"type": "integer", "description": "Search depth level", "default": 3},
    }
    assert my_tool.definition.input_schema["required"] == ["topic"]
    assert run(my_tool, {"topic": "ants"}) == "ants at depth 3"


def test_a_pydantic_field_as_a_parameters_default_gives_the_default_and_the_description() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_args_schema_default_values
    (defaults declared with ``Field``), written on the function's own parameters."""

    @tool(name="search")
    def search_tool(
        query: str = Field(description="The search query"),
        page: int = Field(default=1, description="Page number"),
        size: int = Field(default=10, description="Results per page"),
    ) -> str:
        """Perform a search with pagination."""
        return f"query={query}, page={page}, size={size}"

    assert props(search_tool)["page"] == {"type": "integer", "description": "Page number", "default": 1}
    assert search_tool.definition.input_schema["required"] == ["query"]
    assert run(search_tool, {"query": "test"}) == "query=test, page=1, size=10"
    assert run(search_tool, {"query": "test", "page": 5}) == "query=test, page=5, size=10"


def test_a_fields_list_constraints_reach_the_schema_and_are_checked() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_args_schema_pydantic_v2_with_metadata."""

    @tool
    def take(x: Annotated[list[int], Field(description="List of integers", min_length=10, max_length=15)]) -> int:
        """Foo."""
        return len(x)

    assert props(take)["x"] == {"description": "List of integers", "items": {"type": "integer"},
                                "maxItems": 15, "minItems": 10, "type": "array"}
    assert run(take, {"x": [0] * 10}) == "10"
    with pytest.raises(ToolError, match=r"x: List should have at least 10 items"):
        run(take, {"x": [0] * 9})


# -- enum, union, nested models ----------------------------------------------------------------


def test_an_enum_and_a_model_argument_arrive_as_their_python_types() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_structured_tool_types_parsed."""
    seen: dict[str, Any] = {}

    @tool
    def structured_tool(some_enum: SomeEnum, some_base_model: SomeBaseModel) -> str:
        """Return the arguments directly."""
        seen.update(some_enum=some_enum, some_base_model=some_base_model)
        return "ok"

    schema = structured_tool.definition.input_schema
    assert resolve(schema, props(structured_tool)["some_enum"])["enum"] == ["a", "b"]
    assert run(structured_tool, {"some_enum": "a", "some_base_model": {"foo": "bar"}}) == "ok"
    assert seen == {"some_enum": SomeEnum.A, "some_base_model": SomeBaseModel(foo="bar")}


def test_a_nested_model_argument_is_described_through_defs_that_every_ref_resolves() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/utils/test_function_calling.py::test_convert_to_openai_function_nested
    (and test_tools.py::test_nested_pydantic_fields). LangChain inlines the nested objects; ours
    sends pydantic's ``$defs``/``$ref`` form, which every provider we speak to takes; what the
    model reads is the same: the nested fields, their requirements and descriptions."""

    @tool
    def register(person: Person, backup: Address | None = None) -> str:
        """Register a person."""
        return f"{person.name} at {person.address.street}"

    schema = register.definition.input_schema
    person = resolve(schema, props(register)["person"])
    assert person["required"] == ["name", "address"]
    address_field = person["properties"]["address"]
    assert address_field["description"] == "Home address"
    assert resolve(schema, address_field)["properties"] == {"street": {"title": "Street", "type": "string"}}
    assert [resolve(schema, option).get("type") for option in props(register)["backup"]["anyOf"]] == ["object", "null"]
    assert run(register, {"person": {"name": "Ada", "address": {"street": "Main"}}}) == "Ada at Main"
    with pytest.raises(ToolError, match=r"person\.address\.street: Field required"):
        run(register, {"person": {"name": "Ada", "address": {}}})


def test_a_union_argument_is_any_of_its_types() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/utils/test_function_calling.py::test_convert_union_type."""

    @tool
    def magic_function(value: int | str) -> str:
        """Compute a magic function."""
        return type(value).__name__

    assert props(magic_function)["value"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert (run(magic_function, {"value": 3}), run(magic_function, {"value": "x"})) == ("int", "str")


def test_an_argument_called_title_is_kept_in_the_schema() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_title_property_preserved."""

    @tool
    def extract_data(title: str, due_date: str = "") -> str:
        """Some documentation.

        Args:
            title: item title
            due_date: item due date
        """
        return title

    assert props(extract_data) == {"title": {"type": "string", "description": "item title"},
                                   "due_date": {"type": "string", "description": "item due date", "default": ""}}
    assert "title" not in extract_data.definition.input_schema  # the model's own title is dropped


# -- what a call receives --------------------------------------------------------------------


def func(tool_input: str, other_arg: str) -> str:
    """Join the input and another argument.

    Args:
        tool_input: the input.
        other_arg: the other one.
    """
    return tool_input + other_arg


def test_a_partial_keeps_the_wrapped_functions_types_name_and_docstring() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_partial_function_args_schema."""
    made = tool(functools.partial(func, other_arg="foo"))
    assert (made.name, made.description) == ("func", "Join the input and another argument.")
    assert props(made)["tool_input"] == {"type": "string", "description": "the input."}
    assert made.definition.input_schema["required"] == ["tool_input"]
    assert run(made, {"tool_input": "bar"}) == "barfoo"


def test_arguments_named_like_pydantic_model_attributes_are_ordinary_arguments() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_get_all_basemodel_annotations_aliases
    (argument names are the schema's, whatever the model class behind them calls its own)."""

    @tool
    def check(json: str, schema: dict[str, Any], copy: int = 1, _hint: str = "") -> str:
        """Check a JSON text against a schema."""
        return f"{json}|{sorted(schema)}|{copy}|{_hint}"

    assert list(props(check)) == ["json", "schema", "copy", "_hint"]
    assert check.definition.input_schema["required"] == ["json", "schema"]
    assert run(check, {"json": "{}", "schema": {"type": 1}, "_hint": "h"}) == "{}|['type']|1|h"
    with pytest.raises(ToolError, match=r"copy: Input should be a valid integer"):
        run(check, {"json": "{}", "schema": {}, "copy": "many"})


def test_the_context_parameter_is_left_out_of_the_schema_wherever_it_sits_and_whatever_the_docstring_says() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_injected_arg
    (InjectedToolArg: our injected argument is the ToolContext)."""

    @tool(name="foo")
    def injected_tool(x: int, *, ctx: ToolContext) -> str:
        """Foo.

        Args:
            x: abc
            ctx: 123
        """
        return f"{x} from {ctx.agent or 'no agent'}"

    assert props(injected_tool) == {"x": {"type": "integer", "description": "abc"}}
    assert injected_tool.definition.input_schema["required"] == ["x"]
    assert run(injected_tool, {"x": 5}) == "5 from no agent"
    with pytest.raises(ToolError, match=r"ctx: Extra inputs are not permitted"):
        run(injected_tool, {"x": 5, "ctx": "forged by the model"})


def test_execute_leaves_the_arguments_it_is_given_unchanged() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_invoke_does_not_mutate_inputs."""

    @tool
    def sample_tool(foo: int, items: list[int] | None = None) -> str:
        """Sample."""
        (items or []).append(foo)
        return "good"

    args = {"foo": 2, "items": [1]}
    assert run(sample_tool, args) == "good"
    assert args == {"foo": 2, "items": [1]}
