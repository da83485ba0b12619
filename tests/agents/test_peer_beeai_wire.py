"""Behaviours of IBM BeeAI framework's chat-model tests (i-am-bee/beeai-framework
python/tests/backend/test_chatmodel.py, test_chatmodel_retry_cache.py,
tests/middleware/test_stream_tool_call.py, tests/agents/test_requirements_reasoner.py), ported to
sessions over the OpenAI-compatible wire format: a loopback server on 127.0.0.1 plays the model
(BeeAI's dummy ChatModel subclasses), and our real client code speaks to it.

Deliberately different: BeeAI's ``create_structure`` is its own call; ours is an agent's
``output_schema`` (sent as a ``json_schema`` response format with ``structured_output: True``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from tests.providers.test_openai import (  # make, _no_openai_env: the providers' fixtures, shared
    _no_openai_env,
    chunk,
    completion,
    make,
    sse,
    text_stream,
    tool_call,
    usage_chunk,
)
from tests.support.loopback import LoopbackServer, Reply, Request
from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Prepared
from wingman_actors.core import StreamEventType
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers._openai import OpenAIProvider

__all__ = ["_no_openai_env", "make"]  # fixtures


def reversed_words(request: Request) -> str:
    """BeeAI's ReverseWordsDummyModel: every word of the user messages reversed."""
    users = [m["content"] for m in request.json()["messages"] if m["role"] == "user"]
    return " ".join(" ".join(word[::-1] for word in text.split()) for text in users)


@tool
def search(query: str) -> str:
    """Search (BeeAI's FakeSearchTool: returns its query)."""
    return query


@tool
def alpha_tool() -> str:
    """Dummy tool used for tests."""
    return "alpha"


@tool
def beta_tool() -> str:
    """Dummy tool used for tests."""
    return "beta"


def test_a_model_answer_over_the_wire_is_the_sessions_response(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    """From i-am-bee/beeai-framework python/tests/backend/test_chatmodel.py::test_chat_model_create
    (the reverse-words model)."""
    loopback.handler = lambda request: Reply.json(completion(reversed_words(request)))
    result = Session(Agent("a", provider=make())).run("tell me something interesting")

    assert result.response == "llet em gnihtemos gnitseretni"
    assert result.usage.input_tokens > 0 and result.steps == 1


class ReverseWords(BaseModel):
    reversed: str


def test_a_structured_answer_is_asked_for_with_its_schema_and_comes_back_validated(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    """From i-am-bee/beeai-framework python/tests/backend/test_chatmodel.py::test_chat_model_structure
    (``create_structure(schema=ReverseWordsSchema)`` gives an object the schema validates)."""
    loopback.handler = lambda request: Reply.json(completion(json.dumps({"reversed": reversed_words(request)})))
    agent = Agent("a", provider=make(structured_output=True), output_schema=ReverseWords)
    result = Session(agent).run("tell me something")

    assert result.output == ReverseWords(reversed="llet em gnihtemos")
    sent = loopback.requests[0].json()["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"]["required"] == ["reversed"]


def test_a_structured_answer_that_does_not_validate_is_corrected_once_with_the_error(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    """From i-am-bee/beeai-framework python/tests/backend/test_chatmodel.py::test_chat_model_structure
    (the object must validate against the schema) and test_chatmodel_retry_cache.py (a bad answer is
    retried, not served again)."""
    loopback.queue(Reply.json(completion('{"reverse": "oops"}')), Reply.json(completion('{"reversed": "olleh"}')))
    result = Session(Agent("a", provider=make(), output_schema=ReverseWords)).run("hello")

    assert result.output == ReverseWords(reversed="olleh") and result.steps == 2
    correction = loopback.requests[1].json()["messages"][-1]["content"]
    assert "reversed" in correction


def test_a_streamed_answer_arrives_in_its_pieces_and_joins_to_the_whole(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    """From i-am-bee/beeai-framework python/tests/backend/test_chatmodel.py::test_chat_model_stream
    (four pieces, joined: the reversed words)."""
    loopback.queue(text_stream("llet ", "em ", "gnihtemos ", "gnitseretni"))
    stream = Session(Agent("a", provider=make())).run_stream("tell me something interesting")
    pieces = [e.text or "" for e in stream if e.type is StreamEventType.TEXT_DELTA]

    assert pieces == ["llet ", "em ", "gnihtemos ", "gnitseretni"]
    assert stream.result().response == "".join(pieces)
    assert loopback.requests[0].json()["stream"] is True


def test_cancelling_a_stream_in_flight_ends_it_with_an_error_and_closes_the_request(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    """From i-am-bee/beeai-framework python/tests/backend/test_chatmodel.py::test_chat_model_abort
    (an abort signal during a stream raises AbortError). Ours: ``Session.cancel()`` from another
    thread; the stream ends with an ``error`` event and raises ``AgentError(kind=cancelled)``, and the
    provider's HTTP request is closed."""
    head = [chunk({"role": "assistant", "content": ""}), chunk({"content": "llet "})]
    loopback.queue(Reply(200, (f"data: {json.dumps(c)}\n\n".encode() for c in head),
                         {"content-type": "text/event-stream"}, hang=True))
    session = Session(Agent("a", provider=make()))
    events: list[Any] = []
    stream = session.run_stream("tell me something interesting")
    with pytest.raises(AgentError) as caught:
        for event in stream:
            events.append(event)
            if event.type is StreamEventType.TEXT_DELTA:
                threading.Thread(target=session.cancel).start()

    assert caught.value.kind is ErrorKind.CANCELLED
    assert [e.text for e in events if e.type is StreamEventType.TEXT_DELTA] == ["llet "]
    assert events[-1].type is StreamEventType.ERROR
    assert loopback.wait_closed(1, timeout=5)


def test_tool_arguments_that_are_not_json_make_the_request_again_and_the_fixed_answer_is_used(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    """From i-am-bee/beeai-framework python/tests/backend/test_chatmodel_retry_cache.py::
    test_chat_model_clears_cached_invalid_tool_call_before_retry (a tool call whose arguments are
    "not json" is retried, not served from the cache, and the fixed answer is used). Ours: the
    malformed answer is a retryable provider error, so the same request is sent again; the broken call
    never reaches the history."""
    loopback.queue(Reply.json(completion(None, tool_calls=[tool_call("call_1", "search", "not json")],
                                         finish_reason="tool_calls")),
                   Reply.json(completion(None, tool_calls=[tool_call("call_2", "search", '{"query": "fixed"}')],
                                         finish_reason="tool_calls")),
                   Reply.json(completion("fixed tool call")))
    session = Session(Agent("a", provider=make(max_retries=1), tools=[search]))
    result = session.run("call the tool")

    assert [(c.id, c.output) for c in result.tool_calls] == [("call_2", "fixed")]
    assert result.response == "fixed tool call" and len(loopback.requests) == 3
    assert loopback.requests[0].json()["messages"] == loopback.requests[1].json()["messages"]
    assert "call_1" not in json.dumps([m.model_dump(mode="json") for m in session.history])


def test_tool_arguments_that_stay_malformed_fail_the_run_naming_the_tool(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    """From i-am-bee/beeai-framework python/tests/backend/test_chatmodel_retry_cache.py (``max_retries``
    bounds the retries). Ours: past the provider's retries the run fails with a retryable error naming
    the tool."""
    loopback.handler = lambda _: Reply.json(completion(None, tool_calls=[tool_call("c", "search", "not json")],
                                                       finish_reason="tool_calls"))
    with pytest.raises(AgentError) as caught:
        Session(Agent("a", provider=make(max_retries=1), tools=[search])).run("call the tool")

    assert "malformed JSON" in str(caught.value) and "search" in str(caught.value)
    assert caught.value.retryable and len(loopback.requests) == 2


def test_a_streamed_tool_calls_arguments_arrive_as_deltas_of_that_call_only(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    """From i-am-bee/beeai-framework python/tests/middleware/test_stream_tool_call.py
    (test_process_emits_update_for_matching_tool, test_process_delta_tracks_incremental_output:
    a tool's argument is seen growing while the model streams it; only that tool's). Ours: the stream's
    ``input_json_delta`` events, at the index of the call's block."""
    head = {"role": "assistant", "content": None,
            "tool_calls": [{"index": 0, "id": "call_9", "type": "function", "function": {"name": "search", "arguments": ""}}]}
    pieces = ['{"query": "hel', 'lo', ' world"}']
    loopback.queue(sse(chunk({"role": "assistant", "content": "Looking. "}), chunk(head),
                       *(chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces),
                       chunk({}, "tool_calls"), usage_chunk()),
                   text_stream("found it"))
    stream = Session(Agent("a", provider=make(), tools=[search])).run_stream("find hello world")
    events = list(stream)

    deltas = [e for e in events if e.type is StreamEventType.INPUT_JSON_DELTA]
    assert "".join(e.partial_json or "" for e in deltas) == '{"query": "hello world"}'
    starts = {e.index: e.block for e in events if e.type is StreamEventType.CONTENT_BLOCK_START and e.block}
    assert {starts[e.index].type for e in deltas} == {"tool_use"}
    assert stream.result().tool_calls[0].output == "hello world"


def test_a_hidden_tool_is_not_sent_and_the_other_tools_still_are(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    """From i-am-bee/beeai-framework python/tests/agents/test_requirements_reasoner.py::
    test_hidden_tool_does_not_disable_other_tools (a requirement hiding beta_tool leaves alpha_tool
    allowed). Ours: ``prepare`` leaves beta out of the request the server gets."""
    loopback.queue(Reply.json(completion(None, tool_calls=[tool_call("c1", "beta_tool", "{}")], finish_reason="tool_calls")),
                   Reply.json(completion("done")))
    agent = Agent("a", provider=make(), tools=[alpha_tool, beta_tool], prepare=lambda ctx: Prepared(tools=["alpha_tool"]))
    result = Session(agent).run("go")

    assert [[t["function"]["name"] for t in r.json()["tools"]] for r in loopback.requests] == [["alpha_tool"]] * 2
    assert result.tool_calls[0].is_error and "beta_tool" in result.tool_calls[0].output
