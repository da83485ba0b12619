"""The shared data model: messages, blocks, requests, responses, usage, stream events."""

from __future__ import annotations

import json
import random

import pytest
from pydantic import ValidationError

from wingman_actors.core import (
    ContentBlock,
    InferenceRequest,
    InferenceResponse,
    Message,
    Role,
    StreamEvent,
    StreamEventType,
    ToolDefinition,
    Usage,
)

# --- content blocks -------------------------------------------------------------------------


def test_block_constructors_set_type_and_fields() -> None:
    assert ContentBlock.text_block("hi").model_dump(exclude_defaults=True) == {"type": "text", "text": "hi"}
    assert ContentBlock.tool_use_block("c1", "add", {"a": 1}).input == {"a": 1}
    assert ContentBlock.tool_result_block("c1", "oops", is_error=True).is_error
    assert ContentBlock.image_block("AAAA", "image/png").media_type == "image/png"


def test_a_tool_use_block_without_input_gets_an_empty_dict() -> None:
    assert ContentBlock.tool_use_block("c1", "now").input == {}


def test_a_tool_use_block_copies_its_input() -> None:
    args = {"a": 1}
    block = ContentBlock.tool_use_block("c1", "add", args)
    args["a"] = 2

    assert block.input == {"a": 1}


@pytest.mark.parametrize(
    ("fields", "missing"),
    [
        ({"type": "text"}, "text"),
        ({"type": "tool_use", "id": "c1"}, "name"),
        ({"type": "tool_use"}, "id, name"),
        ({"type": "tool_result"}, "tool_use_id"),
        ({"type": "image", "data": "AAAA"}, "media_type"),
    ],
)
def test_a_block_missing_a_required_field_is_refused_naming_it(fields: dict[str, str], missing: str) -> None:
    with pytest.raises(ValidationError, match=f"needs {missing}"):
        ContentBlock(**fields)  # type: ignore[arg-type]


def test_an_unknown_block_type_is_refused() -> None:
    with pytest.raises(ValidationError):
        ContentBlock(type="video")  # type: ignore[arg-type]


def test_an_unknown_block_field_is_refused() -> None:
    with pytest.raises(ValidationError, match="Extra inputs"):
        ContentBlock(type="text", text="x", colour="red")  # type: ignore[call-arg]


def test_blocks_are_frozen() -> None:
    block = ContentBlock.text_block("hi")

    with pytest.raises(ValidationError):
        block.text = "changed"  # type: ignore[misc]


# --- messages -------------------------------------------------------------------------------


def test_user_and_assistant_messages_accept_text() -> None:
    assert (Message.user("hi").role, Message.user("hi").text) == (Role.USER, "hi")
    assert (Message.assistant("yo").role, Message.assistant("yo").text) == (Role.ASSISTANT, "yo")


def test_a_message_accepts_one_block_or_many() -> None:
    one = Message.user(ContentBlock.text_block("a"))
    many = Message.assistant([ContentBlock.text_block("a"), ContentBlock.text_block("b")])

    assert (len(one.content), len(many.content)) == (1, 2)


def test_message_text_joins_only_the_text_blocks() -> None:
    message = Message.assistant(
        [
            ContentBlock.text_block("Let me "),
            ContentBlock.tool_use_block("c1", "add", {}),
            ContentBlock.text_block("add."),
        ]
    )

    assert message.text == "Let me add."


def test_message_tool_calls_are_the_tool_use_blocks_in_order() -> None:
    message = Message.assistant(
        [
            ContentBlock.tool_use_block("c1", "a"),
            ContentBlock.text_block("and"),
            ContentBlock.tool_use_block("c2", "b"),
        ]
    )

    assert [b.id for b in message.tool_calls] == ["c1", "c2"]


def test_tool_results_makes_a_user_message_of_result_blocks() -> None:
    message = Message.tool_results(
        [ContentBlock.tool_result_block("c1", "3"), ContentBlock.tool_result_block("c2", "4")]
    )

    assert message.role is Role.USER
    assert [b.tool_use_id for b in message.tool_results_blocks] == ["c1", "c2"]


def test_tool_results_refuses_other_blocks() -> None:
    with pytest.raises(ValueError, match="tool_result blocks only"):
        Message.tool_results([ContentBlock.text_block("x")])


# --- JSON -----------------------------------------------------------------------------------


def test_json_uses_snake_case_field_names() -> None:
    request = InferenceRequest(
        messages=[Message.tool_results([ContentBlock.tool_result_block("c1", "3", is_error=True)])],
        output_schema={"type": "object"},
        max_tokens=10,
    )

    data = json.loads(request.model_dump_json())

    block = data["messages"][0]["content"][0]
    assert (block["tool_use_id"], block["is_error"]) == ("c1", True)
    assert {"output_schema", "max_tokens"} <= set(data)


def test_a_request_survives_a_json_round_trip() -> None:
    request = InferenceRequest(
        messages=[
            Message.user([ContentBlock.text_block("look"), ContentBlock.image_block("AAAA", "image/png")]),
            Message.assistant(ContentBlock.tool_use_block("c1", "add", {"a": [1, {"b": None}]})),
            Message.tool_results([ContentBlock.tool_result_block("c1", "3")]),
        ],
        tools=[ToolDefinition(name="add", description="adds")],
        instructions="be brief",
        temperature=0.0,
    )

    again = InferenceRequest.model_validate_json(request.model_dump_json())

    assert again == request
    assert again.fingerprint() == request.fingerprint()


def test_a_response_survives_a_json_round_trip() -> None:
    response = InferenceResponse.of_tool_calls([("c1", "add", {"a": 1})], text="adding", model="m")

    assert InferenceResponse.model_validate_json(response.model_dump_json()) == response


def test_a_tool_definition_defaults_to_an_empty_object_schema() -> None:
    assert ToolDefinition(name="t").input_schema == {"type": "object", "properties": {}}


@pytest.mark.parametrize("fields", [{"max_tokens": 0}, {"temperature": 2.5}, {"temperature": -0.1}])
def test_a_request_refuses_out_of_range_overrides(fields: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        InferenceRequest(messages=[], **fields)  # type: ignore[arg-type]


# --- usage ----------------------------------------------------------------------------------


def test_usages_add_field_by_field() -> None:
    a = Usage(input_tokens=1, output_tokens=2, cache_creation_input_tokens=3, cache_read_input_tokens=4)
    b = Usage(input_tokens=10, output_tokens=20, cache_creation_input_tokens=30, cache_read_input_tokens=40)

    assert a + b == Usage(
        input_tokens=11, output_tokens=22, cache_creation_input_tokens=33, cache_read_input_tokens=44
    )


def test_usages_sum_from_zero() -> None:
    usages = [Usage(input_tokens=i, output_tokens=2 * i) for i in range(1, 4)]

    assert sum(usages) == Usage(input_tokens=6, output_tokens=12)


def test_summing_no_usages_from_an_empty_usage_gives_an_empty_usage() -> None:
    assert sum([], Usage()) == Usage()


def test_usage_sum_adds_every_usage_field() -> None:
    fields = list(Usage.model_fields)  # a field added to Usage and forgotten by Usage.sum fails here
    one = Usage(**{f: i + 1 for i, f in enumerate(fields)})
    two = Usage(**{f: 10 * (i + 1) for i, f in enumerate(fields)})

    assert Usage.sum([one, two, one]) == Usage(**{f: 12 * (i + 1) for i, f in enumerate(fields)})


def test_usage_sum_of_no_usages_is_an_empty_usage() -> None:
    assert Usage.sum([]) == Usage()


def test_usage_sum_is_what_adding_the_usages_one_by_one_gives() -> None:
    rng = random.Random(23)
    for _ in range(50):
        usages = [Usage(**{f: rng.randrange(1000) for f in Usage.model_fields}) for _ in range(rng.randrange(8))]

        assert Usage.sum(usages) == sum(usages, Usage())


def test_adding_a_non_usage_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        Usage() + 1  # type: ignore[operator]
    with pytest.raises(TypeError):
        1 + Usage()


def test_total_tokens_is_input_plus_output() -> None:
    assert Usage(input_tokens=3, output_tokens=4, cache_read_input_tokens=100).total_tokens == 7


# --- responses ------------------------------------------------------------------------------


def test_of_text_makes_an_end_turn_text_answer() -> None:
    response = InferenceResponse.of_text("4", model="m", usage=Usage(output_tokens=1))

    assert (response.text, response.stop_reason, response.model, response.usage.output_tokens) == (
        "4",
        "end_turn",
        "m",
        1,
    )
    assert response.tool_calls == []


def test_of_tool_calls_puts_text_first_and_stops_for_tool_use() -> None:
    response = InferenceResponse.of_tool_calls([("c1", "add", {"a": 1}), ("c2", "mul", {})], text="ok")

    assert [b.type for b in response.content] == ["text", "tool_use", "tool_use"]
    assert response.stop_reason == "tool_use"
    assert [(b.id, b.name, b.input) for b in response.tool_calls] == [
        ("c1", "add", {"a": 1}),
        ("c2", "mul", {}),
    ]


def test_of_tool_calls_without_text_has_no_text_block() -> None:
    response = InferenceResponse.of_tool_calls([("c1", "add", {})])

    assert [b.type for b in response.content] == ["tool_use"]
    assert response.text == ""


def test_to_message_makes_the_assistant_message_of_the_content() -> None:
    response = InferenceResponse.of_tool_calls([("c1", "add", {})], text="ok")

    message = response.to_message()

    assert (message.role, message.content) == (Role.ASSISTANT, response.content)


def test_a_message_from_a_response_has_a_content_list_of_its_own() -> None:
    response = InferenceResponse.of_text("ok")

    message = response.to_message()

    assert message.content is not response.content
    assert message.content == response.content


def test_a_request_keeps_the_messages_it_was_made_with_when_their_list_grows() -> None:
    history = [Message.user("hi")]

    request = InferenceRequest(messages=history)
    history.append(Message.assistant("hello"))

    assert [m.text for m in request.messages] == ["hi"]


# --- stream events --------------------------------------------------------------------------


def test_a_stream_event_type_accepts_its_string_value() -> None:
    event = StreamEvent(type="text_delta", index=0, text="hi")  # type: ignore[arg-type]

    assert event.type is StreamEventType.TEXT_DELTA


def test_a_message_stop_event_survives_a_json_round_trip() -> None:
    event = StreamEvent(type=StreamEventType.MESSAGE_STOP, response=InferenceResponse.of_text("hi"))

    again = StreamEvent.model_validate_json(event.model_dump_json())

    assert again == event
    assert json.loads(event.model_dump_json())["type"] == "message_stop"


def test_a_stream_event_refuses_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        StreamEvent(type=StreamEventType.ERROR, message="x")  # type: ignore[call-arg]


def test_a_message_records_its_sender_and_omits_none_from_stored_json() -> None:
    from wingman_actors.core import Message

    assert Message.user("task", sender="boss").sender == "boss"
    assert Message.assistant("answer", sender="critic").sender == "critic"
    assert "sender" not in Message.user("hi").model_dump(exclude_none=True)


def test_the_sender_does_not_change_a_requests_fingerprint() -> None:
    from wingman_actors.core import InferenceRequest, Message

    plain = InferenceRequest(messages=[Message.user("hi")])
    signed = InferenceRequest(messages=[Message.user("hi", sender="boss")])

    assert plain.fingerprint() == signed.fingerprint()
