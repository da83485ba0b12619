"""Models built from values the runtime made itself (``_trusted.built`` and the builders
using it) are indistinguishable from validated ones; anything else is still validated.

These tests fail if pydantic changes what a validated instance holds (the layout
``built`` relies on)."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from wingman_actors._trusted import fields_set
from wingman_actors.agents._result import Result, StepTrace, ToolCall, model_step, run_result
from wingman_actors.core import (
    ContentBlock,
    InferenceRequest,
    InferenceResponse,
    Message,
    Role,
    ToolDefinition,
    Usage,
    session_request,
)


def _same(built: BaseModel, validated: BaseModel) -> None:
    assert type(built) is type(validated)
    assert built == validated
    assert repr(built) == repr(validated)
    assert built.model_fields_set == validated.model_fields_set
    assert built.model_dump() == validated.model_dump()
    assert built.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    assert built.model_dump_json() == validated.model_dump_json()
    # What pydantic keeps on an instance beyond its fields: the same attributes, same values.
    for attr in ("__pydantic_extra__", "__pydantic_private__"):
        assert getattr(built, attr) == getattr(validated, attr)
    assert set(vars(built)) == set(vars(validated))
    assert list(vars(built)) == list(vars(validated))  # declaration order (repr, iteration)
    assert copy.deepcopy(built) == validated
    assert pickle.loads(pickle.dumps(built)) == validated
    assert built.model_copy(update={}) == validated
    assert type(validated).model_validate(built.model_dump()) == built


def test_a_user_text_message_is_the_validated_one() -> None:
    validated = Message.model_validate({"role": "user", "content": [{"type": "text", "text": "hi"}], "sender": None})
    _same(Message.user("hi"), validated)
    _same(Message.user("hi").content[0], ContentBlock.model_validate({"type": "text", "text": "hi"}))
    _same(Message.user("hi", sender="boss"), validated.model_copy(update={"sender": "boss"}))


def test_a_user_message_with_a_bad_sender_is_still_refused() -> None:
    with pytest.raises(ValidationError):
        Message.user("hi", sender=3)  # type: ignore[arg-type]


def test_built_models_stay_frozen() -> None:
    message = Message.user("hi")
    with pytest.raises(ValidationError):
        message.sender = "x"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        message.content[0].text = "x"  # type: ignore[misc]
    assert hash(message.content[0]) == hash(ContentBlock.text_block("hi"))


def test_an_assistant_message_from_a_response_is_the_validated_one() -> None:
    response = InferenceResponse.of_text("ok", usage=Usage(input_tokens=2, output_tokens=1))
    validated = Message(role=Role.ASSISTANT, content=list(response.content), sender="agent")
    built = response.to_message(sender="agent")
    _same(built, validated)
    assert built.content is not response.content  # its own list, as before


def test_to_message_still_refuses_a_bad_sender() -> None:
    with pytest.raises(ValidationError):
        InferenceResponse.of_text("ok").to_message(sender=3)  # type: ignore[arg-type]


def test_a_session_request_is_the_validated_one() -> None:
    messages = [Message.user("hi"), Message.assistant("hello")]
    tools = [ToolDefinition(name="add")]
    built = session_request(list(messages), tools, "be brief", None, 100, 0.5)
    validated = InferenceRequest(
        messages=messages, tools=tools, instructions="be brief", output_schema=None, max_tokens=100, temperature=0.5
    )
    _same(built, validated)
    assert built.fingerprint() == validated.fingerprint()


@pytest.mark.parametrize(
    "change",
    [
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},  # a history of dicts
        {"temperature": 1},  # an int: validation makes it a float
        {"output_schema": {"type": "object"}},  # validation copies it
    ],
)
def test_a_session_request_validates_what_is_not_of_its_type(change: dict[str, Any]) -> None:
    args: dict[str, Any] = {
        "messages": [Message.user("hi")], "tools": [], "instructions": "", "output_schema": None,
        "max_tokens": None, "temperature": None,
    }
    args.update(change)
    built = session_request(**args)
    _same(built, InferenceRequest(**args))
    if "output_schema" in change:
        assert built.output_schema is not change["output_schema"]


@pytest.mark.parametrize("change", [{"max_tokens": 0}, {"temperature": 3.0}, {"instructions": None}])
def test_a_session_request_refuses_bad_settings_as_before(change: dict[str, Any]) -> None:
    args: dict[str, Any] = {
        "messages": [Message.user("hi")], "tools": [], "instructions": "", "output_schema": None,
        "max_tokens": None, "temperature": None,
    }
    args.update(change)
    with pytest.raises(ValidationError):
        session_request(**args)


def test_a_model_step_is_the_validated_trace_entry() -> None:
    usage = Usage(input_tokens=3, output_tokens=1)
    validated = StepTrace(kind="model", name="m", step=2, input=4, output="ok", usage=usage, duration_s=0.5)
    built = model_step("m", 2, 4, "ok", usage, 0.5)
    _same(built, validated)
    assert built.children == [] and built.children is not model_step("m", 2, 4, "ok", usage, 0.5).children
    _same(
        model_step("m", 1, 1, None, usage, 0.0),
        StepTrace(kind="model", name="m", step=1, input=1, output=None, usage=usage, duration_s=0.0),
    )


def test_a_model_step_validates_values_of_other_types() -> None:
    with pytest.raises(ValidationError):
        model_step(None, 1, 1, "ok", Usage(), 0.1)  # type: ignore[arg-type]  # a provider without a model name
    as_dict = model_step("m", 1, 1, "ok", {"input_tokens": 5}, 0.1)  # type: ignore[arg-type]
    assert as_dict.usage == Usage(input_tokens=5)


def test_a_run_result_is_the_validated_result() -> None:
    usage = Usage(input_tokens=3, output_tokens=1)
    trace = [model_step("m", 1, 1, "ok", usage, 0.1)]
    calls = [ToolCall(id="c1", name="add", input={"a": 1}, output="2")]
    args: dict[str, Any] = {
        "response": "ok", "output": {"x": 1}, "tool_calls": calls, "usage": usage, "steps": 1,
        "stop_reason": "end_turn", "max_steps_reached": False, "trace": trace, "duration_s": 0.2,
    }
    built = run_result(**args)
    _same(built, Result(**args))
    built.response = "changed"  # a Result is not frozen, as before
    assert built.response == "changed" and "response" in built.model_fields_set


def test_a_run_result_validates_values_of_other_types() -> None:
    args: dict[str, Any] = {
        "response": "ok", "output": None, "tool_calls": [], "usage": Usage(), "steps": 1,
        "stop_reason": "stopped", "max_steps_reached": False, "trace": [], "duration_s": 0.2,
    }
    with pytest.raises(ValidationError):
        run_result(**args)


def test_built_instances_share_their_fields_set_and_no_instance_changes_another() -> None:
    first, second = Message.user("a"), Message.user("b")
    assert first.model_fields_set is second.model_fields_set  # one set, not one per instance
    copied = first.model_copy(update={"sender": "x"})  # pydantic copies the set before changing it
    assert second.model_fields_set == {"role", "content", "sender"}
    assert copied.model_fields_set == {"role", "content", "sender"}
    usage = Usage(input_tokens=1, output_tokens=1)
    one, other = run_result("a", "a", [], usage, 1, "end_turn", False, [], 0.1), run_result(
        "b", "b", [], usage, 1, "end_turn", False, [], 0.1
    )
    one.response = "changed"  # Result is not frozen: assignment adds the name, already there
    assert other.model_fields_set == set(Result.model_fields)
    step = model_step("m", 1, 1, "x", usage, 0.1)
    assert step.model_copy(update={"is_error": True}).model_fields_set == step.model_fields_set | {"is_error"}
    assert model_step("m", 2, 1, "y", usage, 0.1).model_fields_set == step.model_fields_set


def test_a_shared_fields_set_of_a_model_that_is_not_frozen_must_name_every_field() -> None:
    with pytest.raises(ValueError, match="Result is not frozen"):
        fields_set(Result, ("response",))
    with pytest.raises(ValueError, match="has no fields"):
        fields_set(Message, ("role", "nope"))
    assert fields_set(Message, ("role",)) == {"role"}  # frozen: nothing is ever added to it
