"""Behaviours of Mirascope's own structured-output tests (Mirascope/mirascope: python/
tests/llm/formatting/test_primitive_types.py), ported to ``Agent(output_schema=...)``:
Mirascope wraps a primitive type in a model with one ``output`` field and validates the
model's JSON into it; we validate the answer against the type as it is. Simple types,
Literals, Enums, unions and lists of models are pinned by tests/agents/
test_peer_instructor.py; these are the types it leaves out. Models are played by the
scripted provider.

Deliberately different: Mirascope's wrapper takes ``{"output": [...]}`` and refuses the
bare list; ours takes the bare list and sends the wrapped one back for correction
(the schema the model is shown has no wrapper).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from wingman_actors import Agent, Session
from wingman_actors.testing import ScriptedProvider

PEER = "Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py"


class Book(BaseModel):
    """A book model for testing."""

    title: str
    author: str


def extract(schema: Any, *answers: str) -> tuple[Any, ScriptedProvider]:
    provider = ScriptedProvider(list(answers))
    return Session(Agent("extractor", provider=provider, output_schema=schema)).run("Extract"), provider


def test_a_dict_of_ints_output_is_validated_and_a_wrong_value_corrected() -> None:
    """From Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py::test_create_wrapper_model_dict."""
    result, provider = extract(dict[str, int], '{"a": "not an int"}', '{"a": 1, "b": 2}')
    assert result.output == {"a": 1, "b": 2}
    assert "a: Input should be a valid integer" in provider.requests[1].messages[-1].text


def test_a_dict_of_models_output_gives_model_instances() -> None:
    """From Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py::test_create_wrapper_model_dict_with_model_values."""
    result, _ = extract(dict[str, Book], '{"book1": {"title": "Title 1", "author": "Author 1"}, "book2": {"title": "Title 2", "author": "Author 2"}}')
    assert isinstance(result.output["book1"], Book) and result.output["book2"].title == "Title 2"


def test_a_set_output_is_a_set() -> None:
    """From Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py::test_create_wrapper_model_set."""
    result, _ = extract(set[str], '["a", "b", "c"]')
    assert result.output == {"a", "b", "c"} and isinstance(result.output, set)


def test_a_tuple_output_is_a_tuple_of_its_item_types() -> None:
    """From Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py::test_create_wrapper_model_tuple."""
    result, _ = extract(tuple[int, str], '[1, "test"]')
    assert result.output == (1, "test") and isinstance(result.output, tuple)


def test_a_nested_generic_output_validates_every_level() -> None:
    """From Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py::test_create_wrapper_model_nested_generics."""
    result, _ = extract(dict[str, list[int]], '{"nums1": [1, 2, 3], "nums2": [4, 5, 6]}')
    assert result.output == {"nums1": [1, 2, 3], "nums2": [4, 5, 6]}


def test_a_list_of_ints_answered_with_words_is_sent_back_for_correction() -> None:
    """From Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py::test_create_wrapper_model_list_of_ints."""
    result, provider = extract(list[int], '["not", "ints"]', "[1, 2, 3]")
    assert result.output == [1, 2, 3] and len(provider.requests) == 2


def test_an_empty_json_string_for_a_non_empty_str_is_sent_back_not_taken_as_two_quotes() -> None:
    """From Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py::test_create_wrapper_model_annotated.

    The model answered ``""``: the empty string, which ``min_length=1`` refuses. We used to
    fall back to reading the answer as plain text and returned the two quote characters
    as the output; a JSON string answer is now read only as JSON."""
    result, provider = extract(Annotated[str, Field(description="A description", min_length=1)], '""', '"test"')
    assert result.output == "test"
    assert len(provider.requests) == 2
    assert "at least 1 character" in provider.requests[1].messages[-1].text


def test_a_quoted_answer_too_long_for_its_str_is_sent_back_for_correction() -> None:
    """From Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py::test_create_wrapper_model_annotated (max_length)."""
    result, provider = extract(Annotated[str, Field(max_length=3)], '"abcd"', "abc")
    assert result.output == "abc"
    assert "at most 3 characters" in provider.requests[1].messages[-1].text


def test_plain_text_for_a_constrained_str_is_still_taken_as_it_is() -> None:
    """From Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py::test_create_wrapper_model_annotated (a valid answer)."""
    result, provider = extract(Annotated[str, Field(min_length=1)], "test")
    assert result.output == "test" and len(provider.requests) == 1


def test_a_list_answer_wrapped_in_an_output_key_is_sent_back_for_the_bare_list() -> None:
    """From Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py::test_create_wrapper_model_json_validation.

    Deliberately different: Mirascope's wrapper model takes ``{"output": [...]}`` and refuses
    the bare list; our schema is the list itself, so the wrapped answer is corrected."""
    result, provider = extract(list[Book], '{"output": [{"title": "Book", "author": "Author"}]}', '[{"title": "Book", "author": "Author"}]')
    assert result.output == [Book(title="Book", author="Author")]
    assert "valid array" in provider.requests[1].messages[-1].text


def test_bytes_output_takes_the_answer_as_its_bytes() -> None:
    """From Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py::test_create_wrapper_model_bytes."""
    result, _ = extract(bytes, "hello")
    assert result.output == b"hello"


def test_an_optional_str_output_takes_null_as_none_and_text_as_text() -> None:
    """From Mirascope/mirascope python/tests/llm/formatting/test_primitive_types.py::test_create_wrapper_model_optional."""
    assert extract(str | None, "null")[0].output is None
    assert extract(str | None, "value")[0].output == "value"
