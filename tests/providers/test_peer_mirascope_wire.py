"""Behaviours of Mirascope's own provider tests (Mirascope/mirascope: python/tests/llm/
content/test_empty_tool_call_args.py, providers/anthropic/test_anthropic_encoding.py,
providers/openai/test_completions_errors.py and the call scenarios of
clients/scenarios.py, which Mirascope replays from recorded cassettes), ported to whole
sessions of our agents against loopback servers speaking the OpenAI-compatible,
Anthropic and Ollama wire formats: what our client sends back after a tool call (empty
arguments, dict and text results), multi-turn histories, call parameters, structured
output over the wire, streamed tool calls, and errors that keep their cause. Status-code
kinds are pinned in test_peer_litellm_errors.py and not repeated here.

Deliberately different: Mirascope raises one exception class per failure
(``AuthenticationError``, ``RateLimitError``, ``ConnectionError``...); we raise one
``AgentError`` whose ``kind`` sorts them, chained to the transport's exception.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from tests.providers.test_anthropic import (
    block_start,
    block_stop,
    delta,
    message_end,
    message_json,
    message_start,
)
from tests.providers.test_ollama import chat_reply
from tests.providers.test_openai import chunk, completion, sse, tool_call, usage_chunk
from tests.support.loopback import LoopbackServer, Reply, free_port
from tests.support.provider_fixtures import providers
from wingman_actors import Agent, Session, tool
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import new_provider

__all__ = ["providers"]  # fixture

EMPTY_ARGS = "Mirascope/mirascope python/tests/llm/content/test_empty_tool_call_args.py"
ANTHROPIC_ENCODING = "Mirascope/mirascope python/tests/llm/providers/anthropic/test_anthropic_encoding.py"
SCENARIOS = "Mirascope/mirascope python/tests/llm/clients/scenarios.py"


@tool
def ping() -> str:
    """No-arg health check."""
    return "pong"


@tool
def search(query: str) -> dict[str, Any]:
    """Search the index."""
    return {"ok": True, "n": 1}


@tool
def lookup(query: str) -> str:
    """Look a word up."""
    return "not found"


class Book(BaseModel):
    title: str
    author: str


def openai_agent(url: str, providers: list[Any], **options: Any) -> Agent:
    provider = new_provider("openai", {"model": "gpt-4o", "base_url": f"{url}/v1", "api_key": "sk-test", "max_retries": 0, **options})
    providers.append(provider)
    tools = options.pop("tools", None)
    return Agent("assistant", instructions="Be brief.", provider=provider, tools=tools or [ping, search, lookup])


def anthropic_agent(url: str, providers: list[Any], output_schema: Any = None, **options: Any) -> Agent:
    provider = new_provider("anthropic", {"model": "claude-test", "base_url": url, "api_key": "k", "max_retries": 0, **options})
    providers.append(provider)
    return Agent("assistant", instructions="Be brief.", provider=provider, tools=[ping, search, lookup], output_schema=output_schema)


def ollama_agent(url: str, providers: list[Any]) -> Agent:
    provider = new_provider("ollama", {"model": "llama3.2", "base_url": url, "max_retries": 0})
    providers.append(provider)
    return Agent("assistant", provider=provider, tools=[ping, search])


def bodies(loopback: LoopbackServer) -> list[Any]:
    return [r.json() for r in loopback.requests]


# --- empty tool arguments ----------------------------------------------------------------


@pytest.mark.parametrize("arguments", ["", "   ", "{}"])
def test_an_openai_tool_call_with_empty_arguments_runs_and_is_sent_back_as_an_empty_object(
    loopback: LoopbackServer, providers: list[Any], arguments: str
) -> None:
    """From Mirascope/mirascope python/tests/llm/content/test_empty_tool_call_args.py::test_openai_completions_decode_normalizes_empty_args
    and ::test_normalize_tool_call_args."""
    loopback.queue(
        Reply.json(completion(None, tool_calls=[tool_call("call_empty", "ping", arguments)], finish_reason="tool_calls")),
        Reply.json(completion("pong it is")),
    )
    result = Session(openai_agent(loopback.url, providers)).run("ping")
    [call] = result.tool_calls
    assert (call.input, call.output, call.is_error) == ({}, "pong", False)
    sent = bodies(loopback)[1]["messages"]
    [assistant] = [m for m in sent if m["role"] == "assistant"]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {}
    assert result.response == "pong it is"


def test_a_streamed_openai_tool_call_without_argument_chunks_runs_with_empty_arguments(
    loopback: LoopbackServer, providers: list[Any]
) -> None:
    """From Mirascope/mirascope python/tests/llm/content/test_empty_tool_call_args.py (streamed decode)."""
    loopback.queue(
        sse(chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_empty", "type": "function",
                                                        "function": {"name": "ping", "arguments": ""}}]}),
            chunk({}, "tool_calls"), usage_chunk()),
        sse(chunk({"role": "assistant", "content": "pong it is"}), chunk({}, "stop"), usage_chunk()),
    )
    stream = Session(openai_agent(loopback.url, providers)).run_stream("ping")
    list(stream)
    [call] = stream.result().tool_calls
    assert (call.input, call.output) == ({}, "pong")


def test_an_empty_argument_call_made_on_openai_is_sent_to_anthropic_as_an_empty_input(
    loopback: LoopbackServer, providers: list[Any]
) -> None:
    """From Mirascope/mirascope python/tests/llm/content/test_empty_tool_call_args.py::test_anthropic_and_google_encode_empty_tool_args
    (a history made with one provider, continued with another)."""
    loopback.queue(
        Reply.json(completion(None, tool_calls=[tool_call("call_empty", "ping", "")], finish_reason="tool_calls")),
        Reply.json(completion("pong it is")),
    )
    session = Session(openai_agent(loopback.url, providers))
    session.run("ping")
    loopback.queue(Reply.json(message_json([{"type": "text", "text": "again"}])))
    follow = Session(anthropic_agent(loopback.url, providers))
    follow.history.extend(session.history)
    assert follow.run("once more").response == "again"
    sent = bodies(loopback)[2]["messages"]
    uses = [b for m in sent if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_use"]
    assert [(u["id"], u["name"], u["input"]) for u in uses] == [("call_empty", "ping", {})]


def test_an_ollama_tool_call_without_arguments_runs(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/content/test_empty_tool_call_args.py (a provider that sends no arguments)."""
    loopback.queue(
        Reply.json(chat_reply("", message={"role": "assistant", "content": "",
                                          "tool_calls": [{"function": {"name": "ping", "arguments": {}}}]})),
        Reply.json(chat_reply("pong it is")),
    )
    result = Session(ollama_agent(loopback.url, providers)).run("ping")
    [call] = result.tool_calls
    assert (call.input, call.output, result.response) == ({}, "pong", "pong it is")


# --- tool results on the wire ------------------------------------------------------------


def test_a_dict_tool_result_reaches_anthropic_as_json_not_a_python_repr(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/providers/anthropic/test_anthropic_encoding.py::test_tool_output_dict_result_encodes_as_json_not_python_repr."""
    loopback.queue(
        Reply.json(message_json([{"type": "tool_use", "id": "t1", "name": "search", "input": {"query": "x"}}], stop_reason="tool_use")),
        Reply.json(message_json([{"type": "text", "text": "found"}])),
    )
    Session(anthropic_agent(loopback.url, providers)).run("search")
    [result] = [b for m in bodies(loopback)[1]["messages"] if isinstance(m["content"], list)
                for b in m["content"] if b["type"] == "tool_result"]
    assert result["tool_use_id"] == "t1" and json.loads(result["content"]) == {"ok": True, "n": 1}
    assert result["content"] != str({"ok": True, "n": 1})


def test_a_text_tool_result_reaches_anthropic_unquoted(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/providers/anthropic/test_anthropic_encoding.py::test_tool_output_string_result_is_not_requoted."""
    loopback.queue(
        Reply.json(message_json([{"type": "tool_use", "id": "t1", "name": "lookup", "input": {"query": "x"}}], stop_reason="tool_use")),
        Reply.json(message_json([{"type": "text", "text": "nothing"}])),
    )
    Session(anthropic_agent(loopback.url, providers)).run("look up")
    [result] = [b for m in bodies(loopback)[1]["messages"] if isinstance(m["content"], list)
                for b in m["content"] if b["type"] == "tool_result"]
    assert result["content"] == "not found"


def test_a_dict_tool_result_reaches_openai_as_json_in_the_tool_message(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/providers/anthropic/test_anthropic_encoding.py::test_tool_output_dict_result_encodes_as_json_not_python_repr (OpenAI's shape)."""
    loopback.queue(
        Reply.json(completion(None, tool_calls=[tool_call("t1", "search", '{"query": "x"}')], finish_reason="tool_calls")),
        Reply.json(completion("found")),
    )
    Session(openai_agent(loopback.url, providers)).run("search")
    [message] = [m for m in bodies(loopback)[1]["messages"] if m["role"] == "tool"]
    assert message["tool_call_id"] == "t1" and json.loads(message["content"]) == {"ok": True, "n": 1}


def test_parallel_anthropic_tool_calls_answer_in_one_user_message_in_call_order(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/clients/scenarios.py (tool_parallel_output_scenario)."""
    loopback.queue(
        Reply.json(message_json([
            {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"query": "a"}},
            {"type": "tool_use", "id": "t2", "name": "ping", "input": {}},
        ], stop_reason="tool_use")),
        Reply.json(message_json([{"type": "text", "text": "both"}])),
    )
    Session(anthropic_agent(loopback.url, providers)).run("go")
    last = bodies(loopback)[1]["messages"][-1]
    assert last["role"] == "user"
    assert [(b["tool_use_id"], b["content"]) for b in last["content"]] == [("t1", "not found"), ("t2", "pong")]


# --- conversations and parameters --------------------------------------------------------


def test_a_multi_turn_anthropic_session_sends_the_system_prompt_on_top_and_the_turns_in_order(
    loopback: LoopbackServer, providers: list[Any]
) -> None:
    """From Mirascope/mirascope python/tests/llm/providers/anthropic/test_anthropic_encoding.py::test_encode_document_with_cache_control_in_multi_turn
    (the multi-turn shape) and scenarios.py (multi_turn_scenario)."""
    loopback.queue(Reply.json(message_json([{"type": "text", "text": "OK, send it."}])),
                   Reply.json(message_json([{"type": "text", "text": "Got it."}])))
    session = Session(anthropic_agent(loopback.url, providers))
    session.run("Read this")
    session.run("Here it is")
    body = bodies(loopback)[1]
    assert body["system"] == "Be brief."
    turns = [(m["role"], m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]) for m in body["messages"]]
    assert turns == [("user", "Read this"), ("assistant", "OK, send it."), ("user", "Here it is")]


def test_a_multi_turn_openai_session_sends_system_user_assistant_user(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/clients/scenarios.py (multi_turn_scenario, system_message_scenario)."""
    loopback.queue(Reply.json(completion("Hi Ada.")), Reply.json(completion("Ada.")))
    session = Session(openai_agent(loopback.url, providers))
    session.run("My name is Ada.")
    assert session.run("What is my name?").response == "Ada."
    roles = [m["role"] for m in bodies(loopback)[1]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


def test_call_parameters_reach_the_openai_body_and_an_unknown_one_passes_through(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/providers/base/test_params.py (temperature, max_tokens, top_p, seed, stop_sequences)."""
    loopback.queue(Reply.json(completion("ok")))
    agent = openai_agent(loopback.url, providers, temperature=0.3, max_tokens=64, top_p=0.9, stop=["END"], seed=7)
    Session(agent).run("Hi")
    body = bodies(loopback)[0]
    assert (body["temperature"], body["top_p"], body["stop"], body["seed"]) == (0.3, 0.9, ["END"], 7)
    assert body.get("max_tokens", body.get("max_completion_tokens")) == 64


def test_call_parameters_reach_the_anthropic_body_with_top_k_and_stop_sequences(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/providers/base/test_params.py (top_k, stop_sequences on Anthropic)."""
    loopback.queue(Reply.json(message_json([{"type": "text", "text": "ok"}])))
    Session(anthropic_agent(loopback.url, providers, temperature=0.2, max_tokens=32, top_k=5, stop=["END"])).run("Hi")
    body = bodies(loopback)[0]
    assert (body["temperature"], body["max_tokens"], body["top_k"], body["stop_sequences"]) == (0.2, 32, 5, ["END"])


# --- structured output over the wire -----------------------------------------------------


def test_a_streamed_anthropic_answer_validates_into_the_output_schema(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/clients/scenarios.py (test_stream[structured_output_scenario])."""
    pieces = ['{"title": "Mist', 'born", "author": ', '"Brandon Sanderson"}']
    loopback.queue(Reply.sse([
        message_start(), block_start(0, {"type": "text", "text": ""}),
        *[delta(0, {"type": "text_delta", "text": p}) for p in pieces],
        block_stop(0), *message_end(),
    ]))
    stream = Session(anthropic_agent(loopback.url, providers, output_schema=Book)).run_stream("Recommend a book")
    list(stream)
    assert stream.result().output == Book(title="Mistborn", author="Brandon Sanderson")


def test_an_invalid_structured_answer_is_sent_back_over_the_wire_with_the_validation_error(
    loopback: LoopbackServer, providers: list[Any]
) -> None:
    """From Mirascope/mirascope python/tests/llm/clients/scenarios.py (structured_output_scenario, a wrong answer corrected)."""
    loopback.queue(Reply.json(message_json([{"type": "text", "text": '{"title": "Mistborn"}'}])),
                   Reply.json(message_json([{"type": "text", "text": '{"title": "Mistborn", "author": "B. S."}'}])))
    result = Session(anthropic_agent(loopback.url, providers, output_schema=Book)).run("Recommend a book")
    assert result.output == Book(title="Mistborn", author="B. S.")
    correction = json.dumps(bodies(loopback)[1]["messages"][-1])
    assert "author" in correction


def test_a_structured_answer_after_a_tool_call_over_openai(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/clients/scenarios.py (structured_output_calls_tool_scenario)."""
    loopback.queue(
        Reply.json(completion(None, tool_calls=[tool_call("c1", "lookup", '{"query": "mistborn"}')], finish_reason="tool_calls")),
        Reply.json(completion('{"title": "Mistborn", "author": "Brandon Sanderson"}')),
    )
    provider = new_provider("openai", {"model": "gpt-4o", "base_url": f"{loopback.url}/v1", "api_key": "sk", "max_retries": 0})
    providers.append(provider)
    result = Session(Agent("librarian", provider=provider, tools=[lookup], output_schema=Book)).run("Recommend")
    assert result.output == Book(title="Mistborn", author="Brandon Sanderson")
    assert [c.output for c in result.tool_calls] == ["not found"]


# --- async calls -------------------------------------------------------------------------


def test_an_async_session_runs_a_tool_call_over_openai(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/clients/scenarios.py (test_call_async[tool_output_scenario])."""
    loopback.queue(
        Reply.json(completion(None, tool_calls=[tool_call("c1", "lookup", '{"query": "x"}')], finish_reason="tool_calls")),
        Reply.json(completion("nothing there")),
    )

    async def main() -> Any:
        agent = openai_agent(loopback.url, providers)
        try:
            return await Session(agent).arun("look up")
        finally:
            await agent.provider.aclose()  # type: ignore[union-attr]

    result = asyncio.run(main())
    assert (result.response, [c.output for c in result.tool_calls]) == ("nothing there", ["not found"])


def test_an_async_stream_yields_text_deltas_from_anthropic(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/clients/scenarios.py (test_stream_async[simple_message_scenario])."""
    loopback.queue(Reply.sse([
        message_start(), block_start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "Hello"}), delta(0, {"type": "text_delta", "text": " there"}),
        block_stop(0), *message_end(),
    ]))

    async def main() -> list[str]:
        agent = anthropic_agent(loopback.url, providers)
        try:
            return [e.text or "" async for e in Session(agent).astream("Hi") if e.text]
        finally:
            await agent.provider.aclose()  # type: ignore[union-attr]

    assert "".join(asyncio.run(main())) == "Hello there"


# --- errors keep their cause -------------------------------------------------------------


def test_a_refused_connection_is_a_network_error_chained_to_the_transports_exception(providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/providers/openai/test_completions_errors.py::test_handle_connection_error.

    Mirascope wraps in its ``ConnectionError`` with ``__cause__`` the SDK's error; ours is
    an ``AgentError(kind=network)`` chained to httpx's."""
    agent = openai_agent(f"http://127.0.0.1:{free_port()}", providers)
    with pytest.raises(AgentError) as caught:
        Session(agent).run("Hi")
    assert caught.value.kind is ErrorKind.NETWORK
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_a_read_timeout_is_a_timeout_error_chained_to_the_transports_exception(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/providers/openai/test_completions_errors.py::test_handle_timeout_error."""
    loopback.queue(Reply.never())
    agent = openai_agent(loopback.url, providers, timeout=0.2)
    with pytest.raises(AgentError) as caught:
        Session(agent).run("Hi")
    assert caught.value.kind is ErrorKind.TIMEOUT
    assert isinstance(caught.value.__cause__, httpx.TimeoutException)


@pytest.mark.parametrize(("status", "kind"), [(401, ErrorKind.INVALID), (409, ErrorKind.INVALID), (422, ErrorKind.INVALID),
                                              (429, ErrorKind.RATE_LIMIT), (500, ErrorKind.AGENT)])
def test_an_error_status_in_a_session_raises_with_the_apis_message_and_its_status(
    loopback: LoopbackServer, providers: list[Any], status: int, kind: ErrorKind
) -> None:
    """From Mirascope/mirascope python/tests/llm/providers/openai/test_completions_errors.py (one test per status:
    ``test_handle_authentication_error``, ``..._conflict_error``, ``..._unprocessable_entity_error``,
    ``..._rate_limit_error``, ``..._internal_server_error``), through a whole session."""
    loopback.queue(Reply.json({"error": {"message": f"the server says {status}", "type": "x", "code": None}}, status=status))
    with pytest.raises(AgentError) as caught:
        Session(openai_agent(loopback.url, providers)).run("Hi")
    assert (caught.value.kind, caught.value.status) == (kind, status)
    assert f"the server says {status}" in str(caught.value)


# --- finish reasons ----------------------------------------------------------------------


def test_an_openai_content_filter_finish_is_a_refusal_with_what_was_said(loopback: LoopbackServer, providers: list[Any]) -> None:
    """From Mirascope/mirascope python/tests/llm/responses/test_finish_reason.py::test_finish_reason_values (``REFUSAL``).

    Mirascope reports a refusal as its own finish reason; ours keeps DESIGN's three stop
    reasons (``end_turn`` here) and says so in ``Result.refused`` (it ended silently before;
    tests/agents/test_refusals.py pins the rest): the turn ends with whatever text came
    before the filter, possibly none."""
    loopback.queue(Reply.json(completion("", finish_reason="content_filter")))
    result = Session(openai_agent(loopback.url, providers)).run("Hi")
    assert (result.response, result.stop_reason, result.refused) == ("", "end_turn", True)
