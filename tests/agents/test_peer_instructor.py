"""Behaviours of instructor's own test suite (instructor-ai/instructor: tests/dsl/,
tests/core/, tests/test_function_calls.py, tests/llm/test_openai/ where a test runs
against a given response), ported to our structured output: instructor's
``response_model`` is our ``Agent(output_schema=...)``, its reask on a ValidationError is
our one corrective retry. Models are played by the scripted provider; the providers'
wire formats are in tests/providers/test_peer_instructor_wire.py, and streams, fleets,
formations and durable runs in test_peer_instructor_more.py.

Deliberately different (each test that touches one says so):
- ``max_retries=N`` reasks up to N times; we make exactly one corrective retry (docs/
  agents.md "Structured output"), then raise ``AgentError(kind=invalid)``, which carries
  the usage of both calls instead of instructor's ``failed_attempts`` list.
- A simple type (``int``, ``bool``, ``Literal``...) is wrapped by instructor in a model
  with a ``content`` field; ours is validated as it is, so the model answers ``42``, not
  ``{"content": 42}``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator

from wingman_actors import Agent, Session
from wingman_actors.core import ContentBlock, InferenceResponse, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider

PEER = "instructor-ai/instructor"


def text(answer: str, output_tokens: int = 5, stop_reason: str = "end_turn") -> InferenceResponse:
    return InferenceResponse(
        content=[ContentBlock(type="text", text=answer)], stop_reason=stop_reason,  # type: ignore[arg-type]
        usage=Usage(input_tokens=10, output_tokens=output_tokens),
    )


def extract(schema: Any, *answers: str | InferenceResponse, message: str = "Extract") -> tuple[Any, ScriptedProvider]:
    """Run one session of an agent with ``schema`` whose model answers ``answers``."""
    provider = ScriptedProvider(list(answers))
    return Session(Agent("extractor", provider=provider, output_schema=schema)).run(message), provider


def output_of(schema: Any, answer: str) -> Any:
    result, _ = extract(schema, answer)
    return result.output


class User(BaseModel):
    name: str
    age: int


class Options(enum.Enum):
    A = "A"
    B = "B"
    C = "C"


def uppercase(v: str) -> str:
    if v.islower():
        raise ValueError("All letters in the name should be in uppercase (e.g. TOM, JONES)")
    return v


class UserDetail(BaseModel):
    name: Annotated[str, AfterValidator(uppercase)] = Field(description="The name of the user")
    age: int


# --- simple types -----------------------------------------------------------------------------


@pytest.mark.parametrize(("schema", "answer", "expected"), [(int, "42", 42), (bool, "true", True), (float, "2.5", 2.5)])
def test_a_simple_type_output_is_validated_into_that_type(schema: Any, answer: str, expected: Any) -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_simple_types.py::test_response_simple_types."""
    output = output_of(schema, answer)
    assert output == expected and type(output) is schema


def test_a_str_output_takes_the_answer_as_it_is() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_simple_types.py::test_response_simple_types (str)."""
    assert output_of(str, "Lima is the capital of Peru.") == "Lima is the capital of Peru."


def test_a_str_output_answered_as_a_json_string_is_unquoted() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_simple_types.py::test_response_simple_types (str)."""
    assert output_of(str, '"Lima"') == "Lima"


def test_a_literal_output_accepts_a_bare_label() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_simple_types.py::test_literal."""
    assert output_of(Literal["1231", "212", "331"], "212") == "212"


def test_a_literal_output_accepts_a_quoted_label() -> None:
    """Ported from instructor-ai/instructor tests/dsl/test_literal_comprehensive.py (a JSON string label)."""
    assert output_of(Literal["spam", "ham"], '"spam"') == "spam"


def test_an_enum_output_accepts_a_bare_value_and_gives_the_member() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_simple_types.py::test_enum."""
    assert output_of(Options, "B") is Options.B


def test_a_union_of_int_and_str_keeps_a_number_a_number_and_text_text() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_simple_types.py::test_union."""
    assert output_of(Union[int, str], "7") == 7
    assert output_of(int | str, "seven") == "seven"


def test_an_optional_output_accepts_null() -> None:
    """Ported from instructor-ai/instructor tests/dsl/test_simple_types.py::test_union_simple (Optional)."""
    assert output_of(Optional[int], "null") is None  # noqa: UP045  (the peer's spelling)


def test_an_annotated_output_with_a_field_description_validates_as_its_type() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_simple_types.py::test_annotate."""
    assert output_of(Annotated[int, Field(description="test")], "3") == 3


def test_a_label_outside_a_literal_is_sent_back_naming_the_allowed_labels() -> None:
    """Ported from instructor-ai/instructor tests/dsl/test_literal_comprehensive.py (a label outside the Literal)."""
    result, provider = extract(Literal["spam", "ham"], "eggs", "ham")
    assert result.output == "ham"
    correction = provider.requests[1].messages[-1].text
    assert "'spam'" in correction and "'ham'" in correction


def test_a_list_of_a_union_keeps_each_items_type() -> None:
    """Ported from instructor-ai/instructor tests/dsl/test_simple_types.py::test_prepare_response_model_with_list_union."""
    assert output_of(list[int | str], '[1, 2, "Fizz", 4, "Buzz"]') == [1, 2, "Fizz", 4, "Buzz"]


# --- models, lists, iterables ----------------------------------------------------------------


def test_a_model_output_is_the_validated_instance() -> None:
    """Ported from instructor-ai/instructor tests/test_function_calls.py::test_complete_output_no_exception."""
    assert output_of(User, '{"name": "Jason", "age": 25}') == User(name="Jason", age=25)


def test_a_model_answered_in_a_fenced_json_block_after_prose_is_extracted() -> None:
    """Ported from instructor-ai/instructor tests/test_utils.py::test_extract_json_from_codeblock."""
    answer = 'Here is a response\n\n```json\n{\n    "name": "Jason", "age": 25\n}\n```\n'
    assert output_of(User, answer) == User(name="Jason", age=25)


def test_json_followed_by_prose_with_braces_is_still_extracted() -> None:
    """Ported from instructor-ai/instructor tests/test_utils.py::test_extract_json_from_codeblock_ignores_brackets_in_prose."""
    answer = 'Here it is: {"name": "Jason", "age": 25}. Tell me if {anything} is missing.'
    assert output_of(User, answer) == User(name="Jason", age=25)


def test_a_nested_model_output_validates_every_level() -> None:
    """Ported from instructor-ai/instructor tests/dsl/test_partial.py::test_partial (nested models)."""

    class Address(BaseModel):
        city: str

    class Person(BaseModel):
        name: str
        address: Address

    assert output_of(Person, '{"name": "Ada", "address": {"city": "London"}}').address.city == "London"


def test_a_list_of_models_is_a_list_of_validated_instances() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_multitask.py::test_multi_user (list[User])."""
    users = output_of(list[User], '[{"name": "Jason", "age": 20}, {"name": "Sarah", "age": 30}]')
    assert users == [User(name="Jason", age=20), User(name="Sarah", age=30)]


def test_an_iterable_of_models_is_a_list_of_validated_instances() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_multitask.py::test_multi_user."""
    users = output_of(Iterable[User], '[{"name": "Jason", "age": 20}, {"name": "Sarah", "age": 30}]')
    assert users == [User(name="Jason", age=20), User(name="Sarah", age=30)]


def test_an_invalid_item_of_an_iterable_output_is_sent_back_for_correction() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_multitask.py::test_multi_user (a bad item)."""
    result, provider = extract(
        Iterable[User], '[{"name": "Jason", "age": 20}, {"name": "Sarah", "age": "thirty"}]',
        '[{"name": "Jason", "age": 20}, {"name": "Sarah", "age": 30}]',
    )
    assert result.output == [User(name="Jason", age=20), User(name="Sarah", age=30)]
    assert "1.age" in provider.requests[1].messages[-1].text


def test_a_field_constraint_violation_is_sent_back_with_the_constraint() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_retries.py::test_upper_case (Field constraints)."""

    class Rating(BaseModel):
        stars: Annotated[int, Field(ge=1, le=5)]

    result, provider = extract(Rating, '{"stars": 9}', '{"stars": 5}')
    assert result.output == Rating(stars=5)
    assert "stars: Input should be less than or equal to 5" in provider.requests[1].messages[-1].text


# --- reask: validation errors reach the model -------------------------------------------------------


def test_an_after_validators_message_reaches_the_model_and_its_corrected_answer_is_the_output() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_retries.py::test_upper_case."""
    result, provider = extract(UserDetail, '{"name": "jason", "age": 12}', '{"name": "JASON", "age": 12}')
    assert result.output == UserDetail(name="JASON", age=12)
    correction = provider.requests[1].messages[-1]
    assert correction.role == "user"
    assert "name: Value error, All letters in the name should be in uppercase" in correction.text


def test_the_corrective_request_keeps_the_rejected_answer_before_the_correction() -> None:
    """Ported from instructor-ai/instructor tests/core/test_retry_json_mode.py::test_validation_error_caught_by_retry (reask messages)."""
    _, provider = extract(User, '{"name": "John"}', '{"name": "John", "age": 3}')
    assert [m.text for m in provider.requests[1].messages[:2]] == ["Extract", '{"name": "John"}']
    assert "age: Field required" in provider.requests[1].messages[2].text


def test_a_field_validators_message_reaches_the_model() -> None:
    """Ported from instructor-ai/instructor tests/test_validators.py (a field_validator's ValueError reasks)."""

    class Event(BaseModel):
        year: int

        @field_validator("year")
        @classmethod
        def not_future(cls, v: int) -> int:
            if v > 2100:
                raise ValueError("year is in the future")
            return v

    result, provider = extract(Event, '{"year": 3000}', '{"year": 1999}')
    assert result.output == Event(year=1999)
    assert "year: Value error, year is in the future" in provider.requests[1].messages[-1].text


def test_a_model_validators_message_reaches_the_model_at_the_root() -> None:
    """Ported from instructor-ai/instructor tests/test_validators.py (a model_validator's ValueError reasks)."""

    class Span(BaseModel):
        start: int
        end: int

        @model_validator(mode="after")
        def ordered(self) -> Span:
            if self.end < self.start:
                raise ValueError("end must not come before start")
            return self

    result, provider = extract(Span, '{"start": 5, "end": 1}', '{"start": 1, "end": 5}')
    assert result.output == Span(start=1, end=5)
    assert "(root): Value error, end must not come before start" in provider.requests[1].messages[-1].text


def test_invalid_json_is_reasked_like_a_validation_error() -> None:
    """Ported from instructor-ai/instructor tests/core/test_retry_json_mode.py::test_json_decode_error_caught_by_retry."""
    result, provider = extract(User, "invalid json {", '{"name": "John", "age": 3}')
    assert result.output == User(name="John", age=3)
    assert "Invalid JSON" in provider.requests[1].messages[-1].text


def test_every_error_of_an_answer_reaches_the_model_at_once() -> None:
    """Ported from instructor-ai/instructor tests/test_function_calls.py::test_pylance_url_config (every error listed)."""

    class Frame(BaseModel):
        list_of_ints: list[int]
        a_float: float

    _, provider = extract(Frame, '{"list_of_ints": ["1", 2, "bad"], "a_float": "Not a float"}',
                          '{"list_of_ints": [1], "a_float": 1.5}')
    correction = provider.requests[1].messages[-1].text
    assert "list_of_ints.2:" in correction and "a_float:" in correction
    assert "https://errors.pydantic.dev" not in correction


# --- counts, usage, and running out ----------------------------------------------------------


def test_a_corrected_answer_counts_both_calls_in_steps_and_usage() -> None:
    """Ported from instructor-ai/instructor tests/core/test_retry_n_attempts.py::test_validation_then_api_error_reports_two (attempts counted)."""
    result, provider = extract(User, text('{"name": "J"}', output_tokens=4), text('{"name": "J", "age": 1}', output_tokens=6))
    assert len(provider.requests) == 2 and result.steps == 2
    assert (result.usage.input_tokens, result.usage.output_tokens) == (20, 10)


def test_a_second_invalid_answer_raises_an_invalid_agent_error_naming_the_agent_and_the_problem() -> None:
    """Ported from instructor-ai/instructor tests/core/test_retry_json_mode.py::test_validation_error_caught_by_retry.

    instructor retries ``max_retries`` times and raises InstructorRetryException with every
    failed attempt; we make one corrective retry and raise AgentError(kind=invalid)."""
    provider = ScriptedProvider([text('{"name": "John"}'), text('{"name": "John"}')])
    with pytest.raises(AgentError, match=r"extractor.*after one corrective retry: age: Field required") as info:
        Session(Agent("extractor", provider=provider, output_schema=User)).run("Extract")
    assert info.value.kind is ErrorKind.INVALID
    assert len(provider.requests) == 2


def test_the_error_when_correction_fails_carries_the_usage_of_both_calls() -> None:
    """Ported from instructor-ai/instructor tests/core/test_retry_n_attempts.py::test_api_error_on_first_attempt_reports_one (what was spent)."""
    provider = ScriptedProvider([text("nope", output_tokens=3), text("still nope", output_tokens=4)])
    with pytest.raises(AgentError) as info:
        Session(Agent("extractor", provider=provider, output_schema=User)).run("Extract")
    assert info.value.usage is not None
    assert (info.value.usage.input_tokens, info.value.usage.output_tokens) == (20, 7)


def test_the_error_when_correction_fails_carries_the_last_answer_and_may_be_retried() -> None:
    """Ported from instructor-ai/instructor tests/core/test_exceptions.py (InstructorRetryException.last_completion)."""
    provider = ScriptedProvider([text('{"name": "John"}'), text('{"name": "John", "age": "old"}')])
    with pytest.raises(AgentError) as info:
        Session(Agent("extractor", provider=provider, output_schema=User)).run("Extract")
    assert info.value.answer == '{"name": "John", "age": "old"}'
    assert info.value.retryable  # another session may answer differently


def test_a_provider_error_during_the_corrective_retry_is_that_error_not_a_validation_one() -> None:
    """Ported from instructor-ai/instructor tests/core/test_retry_n_attempts.py::test_validation_then_api_error_reports_two."""
    provider = ScriptedProvider([text('{"name": "J"}'), AgentError("rate limited", kind=ErrorKind.RATE_LIMIT)])
    with pytest.raises(AgentError, match="rate limited") as info:
        Session(Agent("extractor", provider=provider, output_schema=User)).run("Extract")
    assert info.value.kind is ErrorKind.RATE_LIMIT


def test_an_answer_cut_off_at_max_tokens_fails_at_once_naming_max_tokens() -> None:
    """Ported from instructor-ai/instructor tests/test_function_calls.py::test_incomplete_output_exception.

    instructor raises IncompleteOutputException; ours is AgentError(kind=invalid) saying the
    answer hit max_tokens, without a corrective retry that would be cut off again."""
    provider = ScriptedProvider([text('{"name": "incomplete dat', stop_reason="max_tokens")])
    with pytest.raises(AgentError, match=r"cut off at max_tokens") as info:
        Session(Agent("extractor", provider=provider, output_schema=User, max_tokens=64)).run("Extract")
    assert info.value.kind is ErrorKind.INVALID
    assert len(provider.requests) == 1
    # nor does a node retry: a fresh session at the same max_tokens would be cut off again
    assert info.value.answer is None and not info.value.retryable


def test_a_complete_answer_that_stopped_at_max_tokens_is_still_the_output() -> None:
    """Ported from instructor-ai/instructor tests/test_function_calls.py::test_complete_output_no_exception."""
    result, _ = extract(User, text('{"name": "J", "age": 1}', stop_reason="max_tokens"))
    assert result.output == User(name="J", age=1)


def test_a_refusal_text_is_reasked_and_a_second_refusal_fails_quoting_the_problem() -> None:
    """Ported from instructor-ai/instructor tests/test_function_calls.py::test_refusal_attribute.

    instructor raises at once naming the refusal; our providers hand a refusal over as the
    answer's text, so it gets the corrective retry like any answer that does not validate."""
    provider = ScriptedProvider(["I can't help with that.", "I can't help with that."])
    with pytest.raises(AgentError, match=r"does not match the output schema"):
        Session(Agent("extractor", provider=provider, output_schema=User)).run("Extract")
    assert len(provider.requests) == 2


# --- types refused ---------------------------------------------------------------------------


def test_an_output_schema_pydantic_cannot_validate_is_refused_naming_it_and_what_to_use() -> None:
    """Ported from instructor-ai/instructor tests/test_function_calls.py::test_openai_schema_raises_error."""

    class Dummy:
        pass

    with pytest.raises(TypeError, match=r"Dummy.*not a type pydantic can validate.*BaseModel subclass"):
        Agent("extractor", output_schema=Dummy)


def test_a_dict_that_is_not_a_json_schema_is_refused_naming_its_type() -> None:
    """Ported from instructor-ai/instructor tests/core/test_schema.py (a schema that is not one)."""
    with pytest.raises(ValueError, match=r"not a JSON Schema: type='tuple'"):
        Agent("extractor", output_schema={"type": "tuple"})
