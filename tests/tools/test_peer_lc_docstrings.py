"""LangChain's Google-style docstring parsing (libs/core/tests/unit_tests/test_tools.py's
parse_docstring tests and utils/test_function_calling.py::TestParseGoogleDocstring),
ported to what our ``@tool`` reads from a docstring: the summary as the description and
each ``Args:`` entry as its argument's description."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from wingman_actors import tool


def described(doc: str, *names: str) -> tuple[str, dict[str, str]]:
    """The description and the argument descriptions ``@tool`` gives a function with ``doc``
    and string parameters ``names``."""
    namespace: dict[str, Any] = {}
    exec(f"def fn({', '.join(f'{n}: str' for n in names)}) -> str:\n    return ''", namespace)
    fn: Callable[..., str] = namespace["fn"]
    fn.__doc__ = doc
    made = tool(fn)
    properties = made.definition.input_schema["properties"]
    return made.description, {n: p["description"] for n, p in properties.items() if "description" in p}


def test_the_summary_is_the_description_and_each_args_entry_describes_its_argument() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_docstring_parsing (simple case)."""
    assert described("The foo.\n\nArgs:\n    bar: The bar.\n    baz: The baz.\n", "bar", "baz") == (
        "The foo.", {"bar": "The bar.", "baz": "The baz."})


def test_a_summary_of_several_paragraphs_is_kept_whole_and_the_returns_section_is_left_out() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_docstring_parsing
    (multi-line description with a Returns block). LangChain joins the paragraphs with a
    space; ours keeps the blank line between them."""
    doc = ("The foo.\n\nAdditional description here.\n\nArgs:\n    bar: The bar.\n    baz: The baz.\n\n"
           "Returns:\n    description of returned value.\n")
    assert described(doc, "bar", "baz") == (
        "The foo.\n\nAdditional description here.", {"bar": "The bar.", "baz": "The baz."})


@pytest.mark.parametrize(("doc", "expected"), [
    ("Search the knowledge base.\n\nArgs:\n    query: The search query to use\n        for finding things: important ones\n"
     "    top_k: Number of results to return",
     {"query": "The search query to use for finding things: important ones", "top_k": "Number of results to return"}),
    ("Process data.\n\nArgs:\n    query: Configuration string in format\n        key1: value1\n        key2: value2\n"
     "    top_k: Enable verbose output",
     {"query": "Configuration string in format key1: value1 key2: value2", "top_k": "Enable verbose output"}),
    ("Run a query.\n\nArgs:\n    query (str): The query to run\n        details: extra info\n    top_k (int): Number of results",
     {"query": "The query to run details: extra info", "top_k": "Number of results"}),
], ids=["one-colon-line", "several-colon-lines", "typed-entries"])
def test_a_deeper_line_with_a_colon_continues_the_argument_above_it(doc: str, expected: dict[str, str]) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/utils/test_function_calling.py::TestParseGoogleDocstring::test_continuation_line_with_colon
    (and ::test_multiple_continuation_lines_with_colons, ::test_annotated_arg_with_colon_continuation)."""
    assert described(doc, "query", "top_k")[1] == expected


def test_a_colon_line_at_the_arguments_indent_starts_the_next_argument() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/utils/test_function_calling.py::TestParseGoogleDocstring::test_same_indent_colon_line_is_new_arg."""
    assert described("Do work.\n\nArgs:\n    a: first\n    b: second", "a", "b")[1] == {"a": "first", "b": "second"}


def test_args_indented_by_two_spaces_keep_their_deeper_lines_with_the_argument_above() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/utils/test_function_calling.py::TestParseGoogleDocstring::test_more_indented_second_arg_folds_into_previous
    (indentation decides: a deeper line continues the argument above it, at any indent width)."""
    doc = "Do work.\n\nArgs:\n  config: a format\n    key1: value1\n  verbose: loud"
    assert described(doc, "config", "verbose", "key1")[1] == {"config": "a format key1: value1", "verbose": "loud"}


def test_a_docstring_indented_with_tabs_describes_its_arguments() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/utils/test_function_calling.py::TestParseGoogleDocstring::test_simple_args_still_work
    (with the body indented by tabs, as some code bases write it)."""
    doc = "Do something.\n\nArgs:\n\tx: The x value\n\t\tcontinued here\n\ty: The y value"
    assert described(doc, "x", "y")[1] == {"x": "The x value continued here", "y": "The y value"}


@pytest.mark.parametrize("section", ["Returns", "Raises", "Warning", "See Also", "Todo"])
def test_a_section_after_args_stays_out_of_the_last_arguments_description(section: str) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/utils/test_function_calling.py::TestParseGoogleDocstring::test_returns_section_after_args_excluded
    (for every Google-style section, not only the ones a parser lists)."""
    doc = f"Do work.\n\nArgs:\n    x: The x value\n\n{section}:\n    result: this deletes files.\n"
    assert described(doc, "x", "result")[1] == {"x": "The x value"}


def test_keyword_args_sections_describe_their_arguments_too() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/utils/test_function_calling.py::TestParseGoogleDocstring::test_simple_args_still_work
    (Google style's ``Keyword Args:`` section lists keyword-only arguments)."""
    doc = "Do work.\n\nArgs:\n    x: the x.\n\nKeyword Args:\n    y: the y.\n"
    assert described(doc, "x", "y")[1] == {"x": "the x.", "y": "the y."}


def test_an_args_entry_for_a_parameter_the_function_lacks_is_ignored() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_invalid_docstrings.
    LangChain's ``parse_docstring=True, error_on_invalid_docstring=True`` refuses a docstring
    naming an argument the signature lacks; ours always reads the docstring and leaves
    such an entry out (the schema follows the signature)."""
    doc = "The foo.\n\nArgs:\n    banana: The bar.\n    baz: The baz.\n"
    assert described(doc, "bar", "baz") == ("The foo.", {"baz": "The baz."})


def test_a_tool_without_an_args_section_has_arguments_without_descriptions() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_tool_arg_descriptions (without parse_docstring)."""
    assert described("The foo.", "bar", "baz") == ("The foo.", {})
