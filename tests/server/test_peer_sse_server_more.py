"""More of sse-starlette's stream tests (see test_peer_sse_server.py): streams that outlive the
request timeout, a server that stops while streams are open, errors raised by a provider in
the middle of a session stream, fleet streams with a failing task, methods a streaming route
does not take, and the viewer's stream of a suspended run."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse

from tests.providers.test_openai import chunk
from tests.server import functions_fixture as fx
from tests.server.harness import (
    FUNCTIONS_MODULE,
    RunningServer,
    completion,
    openai_agent,
    scripted_agent,
    sse_events,
)
from tests.server.test_peer_sse_server import formation
from tests.support.loopback import LoopbackServer, Reply
from tests.support.peers import until
from wingman_actors.server import ServerConfig


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[Any]:
    """Start servers of this test's own configuration; each is stopped at the end."""
    started: list[RunningServer] = []

    def start(**config: Any) -> RunningServer:
        graceful = config.pop("graceful", None)
        cfg = ServerConfig(db_path=tmp_path / f"db{len(started)}.db", work_root=tmp_path,
                           functions=(FUNCTIONS_MODULE,), entry_points=False, **config)
        server = RunningServer(cfg, graceful_timeout=graceful).start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        fx.GATE.set()
        for server in started:
            server.stop()  # again for one a test stopped: nothing happens


def test_a_streamed_run_may_last_longer_than_the_request_timeout(
    own_server: Any, gate: threading.Event
) -> None:
    """From sysid/sse-starlette tests/test_event_source_response.py (a stream lives as long as its generator):
    ``request_timeout`` bounds non-streaming requests only, as ServerConfig says."""
    server = own_server(request_timeout=0.5)
    with server.client() as client:
        fid = formation(client, "clean", "gated", name="long")
        with connect_sse(client, "POST", f"/formations/{fid}/run/stream", json={"input": "a"}) as source:
            names: list[str] = []
            for event in source.iter_sse():
                names.append(event.event)
                if event.event == "node_started" and event.json()["node"] == "gated":
                    threading.Timer(1.5, gate.set).start()  # well past the 0.5 s timeout
            last = event.json()
        assert names[-1] == "done" and last["status"] == "succeeded"
        plain = client.post(f"/formations/{fid}/run", json={"input": "b"})  # the gate is open now
        assert plain.status_code == 200


def test_stopping_the_server_ends_its_open_viewer_streams(own_server: Any, gate: threading.Event) -> None:
    """From sysid/sse-starlette tests/load/test_shutdown.py and tests/test_appstatus.py (streams end when the
    server shuts down, instead of holding it open)."""
    server = own_server(graceful=2.0)
    client = server.client()
    fid = formation(client, "clean", "gated", name="shutdown")
    done: list[Any] = []

    def post() -> None:
        try:
            with server.client() as own:
                done.append(own.post(f"/formations/{fid}/run", json={"input": "x"}).status_code)
        except httpx.HTTPError as exc:
            done.append(exc)

    poster = threading.Thread(target=post)
    poster.start()
    assert until(lambda: fx.CALLS["gated"] > 0, within=10)
    (run,) = client.get("/runs", params={"formation_id": fid}).json()
    ended: list[Any] = []

    def watch() -> None:
        try:
            with server.client() as own, own.stream("GET", f"/ui/api/runs/{run['id']}/stream") as response:
                ended.extend(line for line in response.iter_lines() if line.startswith("event: "))
        except httpx.HTTPError as exc:
            ended.append(exc)
        ended.append("closed")

    watcher = threading.Thread(target=watch)
    watcher.start()
    assert until(lambda: "event: run_started" in ended, within=10)
    client.close()
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    watcher.join(20)
    gate.set()
    stopper.join(20)
    poster.join(20)
    assert not watcher.is_alive() and ended[-1] == "closed"
    assert not stopper.is_alive()


def test_a_provider_failing_in_the_middle_of_a_session_stream_ends_it_with_an_error_event(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    """From sysid/sse-starlette tests/test_event_source_response.py (an exception in the generator after the
    stream started): the text streamed so far, then ``error`` saying what went wrong; the session keeps nothing."""
    head = "".join(f"data: {json.dumps(c)}\n\n" for c in [chunk({"role": "assistant", "content": "Hal"}),
                                                           chunk({"content": "f a"})])
    loopback.queue(Reply(200, head.encode(), {"content-type": "text/event-stream"}))
    agent = openai_agent(client, f"{loopback.url}/v1")
    sid = client.post("/sessions").json()["id"]
    events = sse_events(client, f"/sessions/{sid}/message/stream", {"agent_id": agent, "message": "hi"})
    names = [name for name, _ in events]
    assert names[-1] == "error" and "done" not in names
    assert "[DONE]" in events[-1][1]["error"]
    text = "".join(d.get("text") or "" for name, d in events if name == "text_delta")
    assert text == "Half a"
    assert client.get(f"/sessions/{sid}").json()["history"] == []


def test_a_session_streams_text_deltas_that_add_up_to_the_done_response(client: httpx.Client) -> None:
    """From sysid/sse-starlette tests/test_sse.py (a generator's items arrive as events, in order, then the end)."""
    agent = scripted_agent(client, "the whole answer, streamed")
    sid = client.post("/sessions").json()["id"]
    events = sse_events(client, f"/sessions/{sid}/message/stream", {"agent_id": agent, "message": "hi"})
    assert events[-1][0] == "done"
    text = "".join(d.get("text") or "" for name, d in events if name == "text_delta")
    assert text == events[-1][1]["response"] == "the whole answer, streamed"


def test_a_fleet_stream_reports_a_failing_task_as_its_result_and_counts_it_in_done(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    """From sysid/sse-starlette tests/test_event_source_response.py (an error for one item does not end the stream
    of the others)."""
    loopback.handler = lambda request: (
        Reply.json({"error": {"message": "bad task", "type": "invalid_request_error"}}, status=400)
        if "poison" in json.dumps(request.json()) else Reply.json(completion("ok")))
    agent = openai_agent(client, f"{loopback.url}/v1")
    fleet = client.post("/fleets", json={"name": "f", "agent_id": agent, "worker_count": 1}).json()["id"]
    tasks = [{"message": "fine 1"}, {"message": "poison"}, {"message": "fine 2"}]
    events = sse_events(client, f"/fleets/{fleet}/run/stream", {"tasks": tasks})
    results = [d for name, d in events if name == "result"]
    assert len(results) == 3 and events[-1][0] == "done"
    failed = [r for r in results if r.get("error")]
    assert len(failed) == 1 and "bad task" in json.dumps(failed[0])
    assert events[-1][1]["failed"] == 1
    assert sorted(r["response"] for r in results) == ["", "ok", "ok"]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_a_streaming_route_asked_with_another_method_is_a_405_json_error(client: httpx.Client, method: str) -> None:
    """From sysid/sse-starlette tests/test_sse.py (the endpoint answers its own method only)."""
    fid = formation(client, "clean", name=f"method-{method.lower()}")
    response = client.request(method, f"/formations/{fid}/run/stream")
    assert response.status_code == 405
    assert "error" in response.json()


def test_the_viewers_stream_of_a_suspended_run_ends_and_one_after_resume_shows_the_rest(client: httpx.Client) -> None:
    """From sysid/sse-starlette tests/test_event_source_response.py (a finished generator ends the response; a new
    request streams anew): a suspended run has ended for now; its resumed run streams again."""
    fid = formation(client, "clean", "ask", name="suspends")
    run = client.post(f"/formations/{fid}/run", json={"input": "draft"}).json()
    assert run["status"] == "suspended"
    with client.stream("GET", f"/ui/api/runs/{run['id']}/stream") as response:
        before = [line for line in response.iter_lines() if line.startswith("event: ")]
    assert before[-1] == "event: end" and "event: run_finished" in before
    resumed = client.post(f"/runs/{run['id']}/resume", json={"answer": "yes"}).json()
    assert (resumed["status"], resumed["output"]) == ("succeeded", "draft: yes")
    with client.stream("GET", f"/ui/api/runs/{run['id']}/stream") as response:
        after = [line for line in response.iter_lines() if line.startswith("event: ")]
    assert after[-1] == "event: end" and after.count("event: node_finished") >= 1


def test_an_error_event_mid_stream_names_its_kind_and_masks_the_providers_key(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    """From sysid/sse-starlette tests/test_event_source_response.py (an exception in the generator after the
    stream started becomes what the stream sends): the provider repeats the key in its error event."""
    key = "sk-sse27-very-secret-key"
    assert client.put("/provider/auth", json={"providers": {"openai": {"key": key}}}).status_code == 200
    try:
        loopback.queue(Reply.sse([(None, chunk({"role": "assistant", "content": "Hal"})),
                                  ("error", {"message": f"upstream rejected key {key}", "code": 502})]))
        agent = openai_agent(client, f"{loopback.url}/v1")
        sid = client.post("/sessions").json()["id"]
        with client.stream("POST", f"/sessions/{sid}/message/stream", json={"agent_id": agent, "message": "hi"}) as r:
            text = "".join(r.iter_text())
    finally:
        client.put("/provider/auth", json={"providers": {"openai": {"key": ""}}})
    assert key not in text and "[redacted]" in text
    last = [line for line in text.splitlines() if line.startswith("event: ")][-1]
    assert last == "event: error"
    error = json.loads([line for line in text.splitlines() if line.startswith("data: ")][-1].removeprefix("data: "))
    assert "upstream rejected key" in error["error"] and error["error_kind"] == "agent"


def test_two_streams_of_one_session_at_once_run_one_after_the_other_and_both_are_kept(
    client: httpx.Client, server: RunningServer
) -> None:
    """From sysid/sse-starlette tests/integration/test_multiple_consumers.py (several streams open at once):
    a session runs one message at a time, so the second waits its turn; both end ``done`` and both turns are
    in the history."""
    agent = scripted_agent(client, "first answer", "second answer", options={"latency_s": 0.2})
    sid = client.post("/sessions").json()["id"]

    def one(message: str) -> list[tuple[str, Any]]:
        with server.client() as own:
            return sse_events(own, f"/sessions/{sid}/message/stream", {"agent_id": agent, "message": message})

    with ThreadPoolExecutor(2) as pool:
        streams = list(pool.map(one, ["one", "two"]))
    assert [events[-1][0] for events in streams] == ["done", "done"]
    assert sorted(events[-1][1]["response"] for events in streams) == ["first answer", "second answer"]
    history = client.get(f"/sessions/{sid}").json()["history"]
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]


def test_the_viewers_stream_of_a_failed_run_ends_with_run_failed_then_end(client: httpx.Client) -> None:
    """From sysid/sse-starlette tests/test_event_source_response.py (the response ends once the source is done,
    failed or not)."""
    fid = formation(client, "clean", "explode", name="viewed-failure")
    client.post(f"/formations/{fid}/run", json={"input": "a"})
    (run,) = client.get("/runs", params={"formation_id": fid}).json()
    assert run["status"] == "failed"
    with client.stream("GET", f"/ui/api/runs/{run['id']}/stream") as response:
        names = [line for line in response.iter_lines() if line.startswith("event: ")]
    assert names[-2:] == ["event: run_failed", "event: end"]
