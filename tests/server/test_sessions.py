"""``/sessions``: CRUD, blocking and streamed messages, provider failures, credentials."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.server.harness import RunningServer, completion, openai_agent, scripted_agent, sse_events
from tests.support.loopback import LoopbackServer, Reply, Request, free_port


def new_session(client: httpx.Client, **body: str) -> str:
    response = client.post("/sessions", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_create_without_body_uses_the_work_root(client: httpx.Client, work_root: Path) -> None:
    response = client.post("/sessions")
    assert response.status_code == 201
    session = response.json()
    assert session["work_dir"] == str(work_root.resolve())
    assert session["history"] == [] and session["title"] == ""


def test_relative_work_dir_is_taken_from_the_work_root(client: httpx.Client, work_root: Path) -> None:
    session = client.post("/sessions", json={"title": "demo", "work_dir": "project"}).json()
    assert session["work_dir"] == str((work_root / "project").resolve())
    assert session["title"] == "demo"


def test_created_session_is_listed_and_readable(client: httpx.Client) -> None:
    sid = new_session(client)
    assert sid in [s["id"] for s in client.get("/sessions").json()]
    assert client.get(f"/sessions/{sid}").json()["id"] == sid


def test_update_changes_title_and_work_dir(client: httpx.Client, work_root: Path) -> None:
    sid = new_session(client)
    updated = client.put(f"/sessions/{sid}", json={"title": "renamed", "work_dir": "project"}).json()
    assert updated["title"] == "renamed"
    assert updated["work_dir"] == str((work_root / "project").resolve())
    assert client.put(f"/sessions/{sid}", json={"title": "again"}).json()["work_dir"] == updated["work_dir"]


def test_update_refuses_history(client: httpx.Client) -> None:
    sid = new_session(client)
    response = client.put(f"/sessions/{sid}", json={"history": []})
    assert response.status_code == 400
    assert response.json()["fields"] == ["history"]


def test_delete_removes_the_session(client: httpx.Client) -> None:
    sid = new_session(client)
    assert client.delete(f"/sessions/{sid}").json() == {"status": "deleted"}
    assert client.get(f"/sessions/{sid}").status_code == 404


def test_unknown_session_is_404_on_every_route(client: httpx.Client) -> None:
    agent = scripted_agent(client)
    for response in (
        client.get("/sessions/nope"), client.put("/sessions/nope", json={"title": "x"}),
        client.delete("/sessions/nope"),
        client.post("/sessions/nope/message", json={"agent_id": agent, "message": "hi"}),
        client.post("/sessions/nope/message/stream", json={"agent_id": agent, "message": "hi"}),
    ):
        assert response.status_code == 404
        assert response.json() == {"error": "session not found: nope"}


def test_message_returns_response_tool_calls_usage_and_steps(client: httpx.Client) -> None:
    agent = scripted_agent(client, "Paris.")
    sid = new_session(client)
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "Capital of France?"})
    assert response.status_code == 200
    body = response.json()
    assert body["response"] == "Paris."
    assert body["tool_calls"] == [] and body["steps"] == 1
    assert body["usage"]["output_tokens"] >= 1
    assert body["usage"]["total_tokens"] == body["usage"]["input_tokens"] + body["usage"]["output_tokens"]


def test_messages_build_the_history_returned_by_get(client: httpx.Client) -> None:
    agent = scripted_agent(client, "one", "two")
    sid = new_session(client)
    for text in ("first", "second"):
        client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": text})
    history = client.get(f"/sessions/{sid}").json()["history"]
    assert [(m["role"], m["content"][0]["text"]) for m in history] == [
        ("user", "first"), ("assistant", "one"), ("user", "second"), ("assistant", "two"),
    ]


def test_later_messages_send_the_stored_history_to_the_model(client: httpx.Client, loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(completion("first answer")), Reply.json(completion("second answer")))
    agent = openai_agent(client, loopback.url)
    sid = new_session(client)
    client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "one"})
    client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "two"})
    sent = [m["content"] for m in loopback.requests[1].json()["messages"] if m["role"] != "system"]
    assert sent == ["one", "first answer", "two"]


def test_tool_calls_are_reported_with_their_output(client: httpx.Client, work_root: Path) -> None:
    (work_root / "project" / "notes.txt").write_text("hello\n")
    call = {"content": [{"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "notes.txt"}}],
            "stop_reason": "tool_use"}
    agent = scripted_agent(client, call, "read it", tools=["read"], options={"cycle": False})
    sid = new_session(client, work_dir="project")
    body = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "read notes"}).json()
    assert body["steps"] == 2
    (tool_call,) = body["tool_calls"]
    assert (tool_call["name"], tool_call["tool_name"], tool_call["is_error"]) == ("read", "read", False)
    assert "hello" in tool_call["output"]


def test_structured_output_is_returned_as_output(client: httpx.Client) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    agent = scripted_agent(client, '{"city": "Lima"}', output_schema=schema)
    sid = new_session(client)
    body = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "city?"}).json()
    assert body["output"] == {"city": "Lima"}


def test_stream_sends_one_event_per_stream_event_then_done(client: httpx.Client) -> None:
    agent = scripted_agent(client, "Roses are red.")
    sid = new_session(client)
    events = sse_events(client, f"/sessions/{sid}/message/stream", {"agent_id": agent, "message": "A poem?"})
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2] == "message_stop" and names[-1] == "done"
    assert all(data["type"] == name for name, data in events[:-1])
    assert "".join(d["text"] for n, d in events if n == "text_delta") == "Roses are red."
    done = events[-1][1]
    assert done["steps"] == 1 and done["usage"]["output_tokens"] >= 1 and done["response"] == "Roses are red."


def test_streamed_message_is_stored_in_the_history(client: httpx.Client) -> None:
    agent = scripted_agent(client, "streamed")
    sid = new_session(client)
    sse_events(client, f"/sessions/{sid}/message/stream", {"agent_id": agent, "message": "go"})
    history = client.get(f"/sessions/{sid}").json()["history"]
    assert [m["role"] for m in history] == ["user", "assistant"]


def test_stream_reports_tool_start_and_tool_end(client: httpx.Client) -> None:
    call = {"content": [{"type": "tool_use", "id": "c1", "name": "glob", "input": {"pattern": "*"}}],
            "stop_reason": "tool_use"}
    agent = scripted_agent(client, call, "done", tools=["glob"], options={"cycle": False})
    sid = new_session(client)
    names = [n for n, _ in sse_events(client, f"/sessions/{sid}/message/stream", {"agent_id": agent, "message": "ls"})]
    assert names.index("tool_start") < names.index("tool_end") < names.index("done")


def test_message_needs_agent_id_and_message(client: httpx.Client) -> None:
    sid = new_session(client)
    response = client.post(f"/sessions/{sid}/message", json={"prompt": "hi"})
    assert response.status_code == 400
    assert set(response.json()["fields"]) == {"agent_id", "message", "prompt"}


def test_message_with_unknown_agent_is_404(client: httpx.Client) -> None:
    sid = new_session(client)
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": "nope", "message": "hi"})
    assert response.status_code == 404
    assert response.json() == {"error": "agent not found: nope"}


def test_agent_without_provider_is_400_saying_how_to_set_one(client: httpx.Client) -> None:
    agent = client.post("/agents", json={"name": "idle"}).json()["id"]
    sid = new_session(client)
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "hi"})
    assert response.status_code == 400
    assert f"PUT /agents/{agent}" in response.json()["error"]


def test_provider_server_error_is_502_with_kind_and_the_server_keeps_serving(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    loopback.handler = lambda req: Reply.json({"error": {"message": "overloaded"}}, status=500)
    agent = openai_agent(client, loopback.url)
    sid = new_session(client)
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "hi"})
    assert response.status_code == 502
    body = response.json()
    assert body["kind"] == "agent" and body["provider"] == "openai" and body["provider_status"] == 500
    assert "overloaded" in body["error"]
    assert client.get("/health").status_code == 200
    assert client.get(f"/sessions/{sid}").json()["history"] == []  # a failed run stores nothing


def test_provider_keys_never_come_from_the_server_environment(
    client: httpx.Client, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-server-environment")
    client.delete("/provider/auth/openai")  # no stored key (404 when there was none)
    loopback.queue(Reply.json(completion("ok")))
    agent = openai_agent(client, loopback.url)
    sid = new_session(client)
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "hi"})
    assert response.status_code == 200, response.text
    assert "authorization" not in loopback.requests[-1].headers


def test_rejected_credentials_are_502_with_kind_invalid(client: httpx.Client, loopback: LoopbackServer) -> None:
    loopback.handler = lambda req: Reply.json({"error": {"message": "bad key"}}, status=401)
    agent = openai_agent(client, loopback.url)
    sid = new_session(client)
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "hi"})
    assert response.status_code == 502
    assert response.json()["kind"] == "invalid"


def test_unreachable_provider_is_502_with_kind_network(client: httpx.Client) -> None:
    agent = openai_agent(client, f"http://127.0.0.1:{free_port()}/v1")
    sid = new_session(client)
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "hi"})
    assert response.status_code == 502
    assert response.json()["kind"] == "network"


def test_provider_timeout_is_504_with_kind_timeout(client: httpx.Client, loopback: LoopbackServer) -> None:
    def slow(req: Request) -> Reply:
        time.sleep(1.0)
        return Reply.json(completion("too late"))

    loopback.handler = slow
    agent = openai_agent(client, loopback.url, timeout=0.3)
    sid = new_session(client)
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "hi"})
    assert response.status_code == 504
    assert response.json()["kind"] == "timeout"


def test_stream_that_fails_before_any_output_answers_502(client: httpx.Client, loopback: LoopbackServer) -> None:
    loopback.handler = lambda req: Reply.json({"error": {"message": "down"}}, status=503)
    agent = openai_agent(client, loopback.url)
    sid = new_session(client)
    response = client.post(f"/sessions/{sid}/message/stream", json={"agent_id": agent, "message": "hi"})
    assert response.status_code == 502
    assert response.json()["kind"] == "agent"


def test_stream_that_fails_midway_ends_with_an_error_event(client: httpx.Client, loopback: LoopbackServer) -> None:
    call = {"content": [{"type": "tool_use", "id": "c1", "name": "glob", "input": {"pattern": "*"}}],
            "stop_reason": "tool_use"}
    agent = scripted_agent(client, call, tools=["glob"], options={"cycle": False})  # no reply after the tool
    sid = new_session(client)
    events = sse_events(client, f"/sessions/{sid}/message/stream", {"agent_id": agent, "message": "go"})
    name, data = events[-1]
    assert name == "error"
    assert data["error_kind"] == "invalid" and "ran out of replies" in data["error"]
    assert [n for n, _ in events].count("error") == 1


def test_stored_key_is_sent_to_the_provider(client: httpx.Client, loopback: LoopbackServer) -> None:
    client.put("/provider/auth", json={"providers": {"openai": {"type": "api_key", "key": "sk-stored-key"}}})
    try:
        loopback.queue(Reply.json(completion("authorized")))
        agent = openai_agent(client, loopback.url)
        sid = new_session(client)
        body = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "hi"}).json()
        assert body["response"] == "authorized"
        assert loopback.requests[0].headers["authorization"] == "Bearer sk-stored-key"
    finally:
        client.delete("/provider/auth/openai")


def test_agent_options_reach_the_provider_unchanged(client: httpx.Client, loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(completion("ok")))
    agent = openai_agent(client, loopback.url, max_tokens=77, temperature=0.5)
    sid = new_session(client)
    client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "hi"})
    sent = loopback.requests[0].json()
    assert (sent["model"], sent["max_tokens"], sent["temperature"]) == ("m", 77, 0.5)


def test_anthropic_without_a_stored_key_is_400_pointing_to_the_auth_store(client: httpx.Client) -> None:
    client.delete("/provider/auth/anthropic")
    agent = client.post("/agents", json={"name": "claude", "provider": "anthropic"}).json()["id"]
    sid = new_session(client)
    response = client.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "hi"})
    assert response.status_code == 400
    assert "PUT /provider/auth" in response.json()["error"]


def test_abort_without_a_run_in_flight_is_a_no_op(client: httpx.Client) -> None:
    sid = new_session(client)
    assert client.post(f"/sessions/{sid}/abort").json() == {"session_id": sid, "aborted": 0}


def test_abort_of_an_unknown_session_is_404(client: httpx.Client) -> None:
    assert client.post("/sessions/nope/abort").status_code == 404


def test_abort_cancels_the_run_in_flight_which_stores_nothing(server: RunningServer, client: httpx.Client) -> None:
    agent = scripted_agent(client, "too slow", options={"latency_s": 10})
    sid = new_session(client)

    def send() -> httpx.Response:
        with server.client() as c:
            return c.post(f"/sessions/{sid}/message", json={"agent_id": agent, "message": "wait"})

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(send)
        deadline = time.monotonic() + 5
        while client.post(f"/sessions/{sid}/abort").json()["aborted"] == 0:
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.02)
        response = pending.result(timeout=5)
    assert response.status_code == 502
    assert response.json()["kind"] == "cancelled"
    assert client.get(f"/sessions/{sid}").json()["history"] == []
