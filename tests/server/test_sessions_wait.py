"""A session over HTTP waits for a person: a message whose tool asks (ask_human) answers
``status: "suspended"``, and ``POST /sessions/{id}/resume`` continues it with the answer."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.providers.test_openai import chunk, sse, usage_chunk
from tests.server.harness import completion, openai_agent, sse_events
from tests.support.loopback import LoopbackServer, Reply, Request


def _ask(question: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "ask_human", "arguments": f'{{"question": "{question}"}}'}}
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1721596428, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                         "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}


def _paint(request: Request) -> Reply:
    return Reply.json(completion(f"Painting it {request.json()['messages'][-1]['content']}."))


def _setup(client: httpx.Client, loopback: LoopbackServer) -> tuple[str, str]:
    agent = openai_agent(client, loopback.url)
    assert client.put(f"/agents/{agent}", json={"tools": ["ask_human"]}).status_code == 200
    session = client.post("/sessions").json()["id"]
    return agent, session


def test_a_message_whose_tool_asks_a_person_answers_suspended_with_the_question(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(_ask("Colour?")))
    agent, session = _setup(client, loopback)

    out = client.post(f"/sessions/{session}/message", json={"agent_id": agent, "message": "paint the fence"})

    assert out.status_code == 200, out.text
    assert (out.json()["status"], out.json()["interrupt"]) == ("suspended", {"question": "Colour?"})
    assert client.get(f"/sessions/{session}").json()["history"] == []  # nothing kept until answered


def test_resume_answers_the_question_without_asking_the_model_again(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(_ask("Colour?")), _paint)
    agent, session = _setup(client, loopback)
    client.post(f"/sessions/{session}/message", json={"agent_id": agent, "message": "paint the fence"})

    done = client.post(f"/sessions/{session}/resume", json={"agent_id": agent, "answer": "teal"})

    assert done.status_code == 200, done.text
    assert (done.json()["status"], done.json()["response"]) == ("succeeded", "Painting it teal.")
    assert len(loopback.requests) == 2  # the question was not asked of the model again
    history = client.get(f"/sessions/{session}").json()["history"]
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]


def test_resuming_a_session_that_does_not_wait_is_a_conflict(client: httpx.Client, loopback: LoopbackServer) -> None:
    agent, session = _setup(client, loopback)

    out = client.post(f"/sessions/{session}/resume", json={"agent_id": agent, "answer": "teal"})

    assert out.status_code == 409
    assert out.json()["kind"] == "not_suspended"


def test_a_session_answered_once_cannot_be_answered_again(client: httpx.Client, loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(_ask("Colour?")), _paint)
    agent, session = _setup(client, loopback)
    client.post(f"/sessions/{session}/message", json={"agent_id": agent, "message": "paint the fence"})
    client.post(f"/sessions/{session}/resume", json={"agent_id": agent, "answer": "teal"})

    again = client.post(f"/sessions/{session}/resume", json={"agent_id": agent, "answer": "red"})

    assert again.status_code == 409
    assert again.json()["kind"] == "not_resumable"


def test_resume_needs_an_answer(client: httpx.Client, loopback: LoopbackServer) -> None:
    agent, session = _setup(client, loopback)

    out = client.post(f"/sessions/{session}/resume", json={"agent_id": agent})

    assert out.status_code == 400
    assert out.json()["fields"] == ["answer"]


def test_a_streamed_message_whose_tool_asks_a_person_ends_done_suspended_with_the_question(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    call = {"index": 0, "id": "c1", "type": "function",
            "function": {"name": "ask_human", "arguments": json.dumps({"question": "Colour?"})}}
    loopback.queue(sse(chunk({"role": "assistant", "content": None, "tool_calls": [call]}), chunk({}, "tool_calls"),
                       usage_chunk()))
    agent, session = _setup(client, loopback)

    events = sse_events(client, f"/sessions/{session}/message/stream", {"agent_id": agent, "message": "paint"})

    name, done = events[-1]
    assert name == "done"
    assert (done["status"], done["interrupt"]) == ("suspended", {"question": "Colour?"})


def test_resuming_with_another_agent_is_a_mismatch_naming_the_agent_that_waits(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(_ask("Colour?")), _paint)
    agent, session = _setup(client, loopback)
    client.post(f"/sessions/{session}/message", json={"agent_id": agent, "message": "paint the fence"})
    other = client.post("/agents", json={"name": "critic", "provider": "openai", "model": "m",
                                         "options": {"base_url": loopback.url, "max_retries": 0}}).json()["id"]

    out = client.post(f"/sessions/{session}/resume", json={"agent_id": other, "answer": "teal"})

    assert (out.status_code, out.json()["kind"]) == (409, "mismatch")
    assert "'remote'" in out.text and "'critic'" in out.text
    done = client.post(f"/sessions/{session}/resume", json={"agent_id": agent, "answer": "teal"})
    assert done.json()["response"] == "Painting it teal."
