"""instructor's tests of structured output over each provider's wire format
(instructor-ai/instructor tests/test_function_calls.py, tests/core/test_retry_json_mode.py,
tests/llm/test_openai/ and test_anthropic/ where a test runs against a given response),
ported to sessions with an ``output_schema`` talking to loopback servers that speak the
OpenAI chat-completions, Anthropic Messages and Ollama /api/chat formats.

Deliberately different (each test that touches one says so):
- instructor's TOOLS modes ask for the answer as a forced tool call; we ask for a JSON
  answer in the system prompt on every provider, and pass the schema on where the API
  takes it: OpenAI's ``response_format`` (with ``structured_output: True``, and only an
  object schema, the one kind OpenAI accepts at the root) and Ollama's ``format`` (when
  no tools are offered). The Anthropic Messages API gets it in the system prompt only.
- instructor sends OpenAI ``strict: true`` schemas (``additionalProperties: false``,
  every field required); we send pydantic's schema as it is, non-strict.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

import pytest
from pydantic import AfterValidator, BaseModel, Field

from tests.providers.test_anthropic import message_json
from tests.providers.test_ollama import chat_reply
from tests.providers.test_openai import chunk, completion, sse, usage_chunk
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors import Agent, Session, tool
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers._base import BaseProvider

PEER = "instructor-ai/instructor"


class User(BaseModel):
    name: str
    age: int


def uppercase(v: str) -> str:
    if v.islower():
        raise ValueError("All letters in the name should be in uppercase")
    return v


class UserDetail(BaseModel):
    name: Annotated[str, AfterValidator(uppercase)] = Field(description="The name of the user")
    age: int


class Address(BaseModel):
    city: str


@tool
def register(
    name: Annotated[str, Field(description="The user's full name")],
    age: Annotated[int, Field(ge=0, description="Age in years")],
    address: Address,
    plan: Literal["free", "pro"] = "free",
) -> str:
    """Register a user."""
    return f"registered {name}"


@pytest.fixture
def providers(loopback: LoopbackServer, build_provider: Callable[..., BaseProvider]) -> Callable[..., BaseProvider]:
    """``make(kind, **options)`` builds a provider of that kind on the loopback server."""
    base: dict[str, dict[str, Any]] = {
        "openai": {"model": "gpt-4o-mini", "base_url": f"{loopback.url}/v1", "api_key": "sk-test"},
        "anthropic": {"model": "claude-test-model", "base_url": loopback.url, "api_key": "k", "max_retries": 0},
        "ollama": {"model": "llama3.2", "base_url": loopback.url},
    }

    def make(kind: str, **options: Any) -> BaseProvider:
        return build_provider(kind, {**base[kind], **options})

    return make


def answer(kind: str, text: str, *, cut: bool = False, tokens: tuple[int, int] = (19, 10)) -> Reply:
    """One non-streamed answer ``text`` in ``kind``'s wire format."""
    if kind == "openai":
        usage = {"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "total_tokens": sum(tokens)}
        return Reply.json(completion(text, finish_reason="length" if cut else "stop", usage=usage))
    if kind == "anthropic":
        return Reply.json(message_json([{"type": "text", "text": text}], stop_reason="max_tokens" if cut else "end_turn",
                                       usage={"input_tokens": tokens[0], "output_tokens": tokens[1]}))
    return Reply.json(chat_reply(text, done_reason="length" if cut else "stop",
                                 prompt_eval_count=tokens[0], eval_count=tokens[1]))


def last_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)


KINDS = ["openai", "anthropic", "ollama"]


# --- answers validated, on every provider ---------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_json_answer_over_the_wire_is_the_validated_model(
    kind: str, providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/test_function_calls.py::test_anthropic_no_exception (every provider)."""
    loopback.queue(answer(kind, '{\n"name": "Claude", "age": 3\n}'))
    result = Session(Agent("x", provider=providers(kind), output_schema=User)).run("Extract")
    assert result.output == User(name="Claude", age=3)


@pytest.mark.parametrize("kind", KINDS)
def test_the_system_prompt_carries_the_schema_with_field_descriptions(
    kind: str, providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/test_function_calls.py::test_openai_schema (the schema the model sees)."""
    loopback.queue(answer(kind, '{"name": "JASON", "age": 12}'))
    Session(Agent("x", instructions="Be exact.", provider=providers(kind), output_schema=UserDetail)).run("Extract")
    body = loopback.requests[0].json()
    system = body["system"] if kind == "anthropic" else body["messages"][0]["content"]
    assert system.startswith("Be exact.\n\n")
    assert '"description":"The name of the user"' in system and '"required":["name","age"]' in system


@pytest.mark.parametrize("kind", KINDS)
def test_a_validator_error_goes_back_over_the_wire_after_the_rejected_answer(
    kind: str, providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_retries.py::test_upper_case (every provider)."""
    loopback.queue(answer(kind, '{"name": "jason", "age": 12}'), answer(kind, '{"name": "JASON", "age": 12}'))
    result = Session(Agent("x", provider=providers(kind), output_schema=UserDetail)).run("Extract `jason is 12`")
    assert result.output == UserDetail(name="JASON", age=12)
    second = loopback.requests[1].json()
    assert second["messages"][-2]["role"] == "assistant"
    assert "name: Value error, All letters in the name should be in uppercase" in last_user_text(second)


@pytest.mark.parametrize("kind", KINDS)
def test_usage_over_the_wire_sums_the_rejected_and_the_corrected_answer(
    kind: str, providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/test_utils.py::test_update_total_usage (usage across reasks)."""
    loopback.queue(answer(kind, "not json", tokens=(30, 4)), answer(kind, '{"name": "A", "age": 1}', tokens=(50, 8)))
    result = Session(Agent("x", provider=providers(kind), output_schema=User)).run("Extract")
    assert (result.usage.input_tokens, result.usage.output_tokens, result.steps) == (80, 12, 2)


@pytest.mark.parametrize("kind", KINDS)
def test_a_second_invalid_answer_over_the_wire_is_an_invalid_agent_error_with_both_calls_usage(
    kind: str, providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/core/test_retry_json_mode.py::test_json_decode_error_caught_by_retry.

    instructor retries max_retries times; we make one corrective retry."""
    loopback.queue(answer(kind, "invalid json {", tokens=(10, 2)), answer(kind, "invalid json {", tokens=(12, 2)))
    with pytest.raises(AgentError, match=r"after one corrective retry: \(root\): Invalid JSON") as info:
        Session(Agent("x", provider=providers(kind), output_schema=User)).run("Extract")
    assert info.value.kind is ErrorKind.INVALID
    assert info.value.usage is not None and info.value.usage.input_tokens == 22
    assert len(loopback.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_an_answer_cut_off_by_the_token_limit_over_the_wire_fails_at_once_naming_max_tokens(
    kind: str, providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/test_function_calls.py::test_incomplete_output_exception (every provider)."""
    loopback.queue(answer(kind, '{\n"name": "incomplete dat', cut=True))
    with pytest.raises(AgentError, match=r"cut off at max_tokens \(10 output tokens\)") as info:
        Session(Agent("x", provider=providers(kind), output_schema=User)).run("Extract")
    assert info.value.kind is ErrorKind.INVALID
    assert len(loopback.requests) == 1


# --- what each provider is sent ----------------------------------------------------------------


def test_openai_with_structured_output_sends_an_object_schema_as_response_format(
    providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_modes.py (Mode.JSON_SCHEMA's response_format).

    instructor sends strict: true with a schema rewritten for it; we send pydantic's as it is."""
    loopback.queue(answer("openai", '{"name": "A", "age": 1}'))
    Session(Agent("x", provider=providers("openai", structured_output=True), output_schema=User)).run("Extract")
    fmt = loopback.requests[0].json()["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == User.model_json_schema()


@pytest.mark.parametrize(("schema", "reply", "expected"), [
    (int, "42", 42),
    (list[User], '[{"name": "A", "age": 1}]', [User(name="A", age=1)]),
    (Literal["spam", "ham"], "spam", "spam"),
])
def test_openai_with_structured_output_sends_no_response_format_for_a_schema_that_is_not_an_object(
    schema: Any, reply: str, expected: Any, providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_simple_types.py::test_response_simple_types.

    OpenAI refuses a json_schema response_format whose root is not an object (a 400);
    instructor wraps simple types in a model, we ask for them in the system prompt."""
    loopback.queue(answer("openai", reply))
    result = Session(Agent("x", provider=providers("openai", structured_output=True), output_schema=schema)).run("Q")
    assert result.output == expected
    body = loopback.requests[0].json()
    assert "response_format" not in body
    assert "JSON Schema" in body["messages"][0]["content"]


def test_ollama_gets_the_schema_as_format_when_no_tools_are_offered(
    providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_modes.py (the JSON_SCHEMA mode, on Ollama)."""
    loopback.queue(answer("ollama", '{"name": "A", "age": 1}'))
    Session(Agent("x", provider=providers("ollama"), output_schema=User)).run("Extract")
    assert loopback.requests[0].json()["format"] == User.model_json_schema()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_tools_parameter_schema_keeps_field_descriptions_and_constraints(
    kind: str, providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/test_function_calls.py::test_openai_schema (parameter descriptions)."""
    loopback.queue(answer(kind, '{"name": "A", "age": 1}'))
    Session(Agent("x", provider=providers(kind), tools=[register], output_schema=User)).run("Register Ada, 36")
    body = loopback.requests[0].json()
    if kind == "openai":
        schema = body["tools"][0]["function"]["parameters"]
    else:
        schema = body["tools"][0]["input_schema"]
    props = schema["properties"]
    assert props["name"]["description"] == "The user's full name"
    assert props["age"] == {"description": "Age in years", "minimum": 0, "type": "integer"}
    assert props["plan"]["enum"] == ["free", "pro"] and schema["required"] == ["name", "age", "address"]
    assert schema["$defs"]["Address"]["required"] == ["city"]


def test_openai_refusal_fails_a_structured_run_at_once_naming_the_refusal(
    providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/test_function_calls.py::test_refusal_attribute.

    As instructor does, the run fails at once naming the refusal (``InferenceResponse.refused``),
    without a corrective retry and without a JSON error about the refusal's words."""
    refusal = completion(None)
    refusal["choices"][0]["message"]["refusal"] = "I can't help with that."
    loopback.queue(Reply.json(refusal), answer("openai", '{"name": "A", "age": 1}'))
    with pytest.raises(AgentError, match=r"refused to answer, saying .*I can't help with that") as caught:
        Session(Agent("x", provider=providers("openai"), output_schema=User)).run("Extract")
    assert caught.value.kind is ErrorKind.INVALID
    assert len(loopback.requests) == 1


# --- streamed and async ------------------------------------------------------------------------------


def test_a_streamed_openai_answer_is_validated_once_assembled(
    providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_stream.py::test_iterable_model (assembled answer).

    instructor's Partial yields growing partial models; our stream yields text deltas and
    the validated object comes with result()."""
    pieces = ['{"name": ', '"Jason", ', '"age": 20}']
    loopback.queue(sse(chunk({"role": "assistant", "content": ""}), *[chunk({"content": p}) for p in pieces],
                       chunk({}, "stop"), usage_chunk()))
    stream = Session(Agent("x", provider=providers("openai"), output_schema=User)).run_stream("Extract")
    deltas = [e.text for e in stream if e.type == "text_delta"]
    assert "".join(deltas) == '{"name": "Jason", "age": 20}'
    assert stream.result().output == User(name="Jason", age=20)


@pytest.mark.parametrize("kind", KINDS)
def test_an_async_session_over_the_wire_corrects_like_a_blocking_one(
    kind: str, providers: Callable[..., BaseProvider], loopback: LoopbackServer
) -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_retries.py::test_upper_case_async."""
    provider = providers(kind)
    loopback.queue(answer(kind, '{"name": "jason", "age": 12}'), answer(kind, '{"name": "JASON", "age": 12}'))

    async def main() -> Any:
        try:
            return await Session(Agent("x", provider=provider, output_schema=UserDetail)).arun("Extract")
        finally:
            await provider.aclose()

    result = asyncio.run(main())
    assert result.output == UserDetail(name="JASON", age=12) and result.steps == 2
    assert json.loads(json.dumps(loopback.requests[1].json()))["messages"][-2]["role"] == "assistant"
