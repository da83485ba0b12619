"""sse-starlette's own tests of an event stream as a server sends it (its headers, the
framing of each event and of data with line breaks, errors raised after the stream started,
several consumers, a client that leaves), ported to our streaming routes: formation, session
and fleet streams and the run viewer's live events, over a real server on 127.0.0.1, read
with httpx-sse as a client would."""

from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from httpx_sse import connect_sse

from tests.server import functions_fixture as fx
from tests.server.harness import RunningServer, scripted_agent, sse_events
from tests.support.peers import until


def formation(client: httpx.Client, *functions: str, name: str = "sse") -> str:
    """A chain of function nodes named after their functions; its id."""
    nodes = [{"name": f, "kind": "function", "function": f} for f in functions]
    edges = [{"from": a, "to": b} for a, b in itertools.pairwise(functions)]
    response = client.post("/formations", json={"name": name, "nodes": nodes, "edges": edges})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def raw(client: httpx.Client, method: str, path: str, body: Any = None) -> tuple[httpx.Headers, str]:
    with client.stream(method, path, json=body) as response:
        assert response.status_code == 200, response.read()
        return response.headers, "".join(response.iter_text())


def gated_run(client: httpx.Client, server: RunningServer, fid: str) -> tuple[str, threading.Thread, list[Any]]:
    """POST a run of ``fid`` on a thread (its own client); once its gated node runs: its id, the thread, its answer."""
    answers: list[Any] = []

    def post() -> None:
        with server.client() as own:
            answers.append(own.post(f"/formations/{fid}/run", json={"input": "x"}))

    thread = threading.Thread(target=post)
    thread.start()
    runs: list[Any] = []

    def running() -> bool:
        runs[:] = client.get("/runs", params={"formation_id": fid, "status": "running"}).json()
        return bool(runs) and fx.CALLS["gated"] > 0

    assert until(running, within=10), "the run never started"
    return str(runs[0]["id"]), thread, answers


# --- headers and framing ---------------------------------------------------------------------


def test_a_formation_stream_says_event_stream_no_cache_and_no_proxy_buffering(client: httpx.Client) -> None:
    """From sysid/sse-starlette tests/test_event_source_response.py (the default headers: content type,
    ``Cache-Control: no-cache``, ``X-Accel-Buffering: no``)."""
    fid = formation(client, "clean", name="headers")
    headers, _ = raw(client, "POST", f"/formations/{fid}/run/stream", {"input": " a "})
    assert headers["content-type"].startswith("text/event-stream")
    assert headers["cache-control"] == "no-cache" and headers["x-accel-buffering"] == "no"


def test_session_and_fleet_streams_send_the_same_headers(client: httpx.Client) -> None:
    """From sysid/sse-starlette tests/test_event_source_response.py (every event-source response has its headers)."""
    agent = scripted_agent(client, "hello")
    sid = client.post("/sessions").json()["id"]
    fleet = client.post("/fleets", json={"name": "f", "agent_id": agent, "worker_count": 1}).json()["id"]
    for path, body in [(f"/sessions/{sid}/message/stream", {"agent_id": agent, "message": "hi"}),
                       (f"/fleets/{fleet}/run/stream", {"tasks": [{"message": "t"}]})]:
        headers, _ = raw(client, "POST", path, body)
        assert headers["content-type"].startswith("text/event-stream"), path
        assert (headers["cache-control"], headers["x-accel-buffering"]) == ("no-cache", "no"), path


def test_every_event_is_one_event_line_one_data_line_and_a_blank_line(client: httpx.Client) -> None:
    """From sysid/sse-starlette tests/test_event.py (an event's encoding: ``event:``, ``data:``, the blank line)."""
    fid = formation(client, "clean", "shout", name="framing")
    _, text = raw(client, "POST", f"/formations/{fid}/run/stream", {"input": "  many\nlines\r\nhere "})
    assert text.endswith("\n\n")
    blocks = text[:-2].split("\n\n")
    assert len(blocks) >= 6
    for block in blocks:
        lines = block.split("\n")
        assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), block


def test_output_with_line_breaks_and_a_fake_event_cannot_add_events_to_the_stream(client: httpx.Client) -> None:
    """From sysid/sse-starlette tests/test_event.py (multi-line data is split into ``data:`` lines, so it cannot
    end the event): ours JSON-escapes every line break, so text like an event stays data."""
    fid = formation(client, "clean", name="injection")
    sneaky = "one\n\nevent: done\ndata: {}\r\rtwo\u2028three\u0085four"
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": sneaky})
    names = [name for name, _ in events]
    assert names.count("done") == 1 and names[-1] == "done"
    [finished] = [data for name, data in events if name == "node_finished"]
    assert finished["data"]["output"] == sneaky.strip()


def test_the_last_event_is_done_with_the_run_id_and_the_connection_then_ends(client: httpx.Client) -> None:
    """From sysid/sse-starlette tests/test_sse.py (the response ends when the generator is exhausted)."""
    fid = formation(client, "clean", name="ends")
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": "a"})
    name, data = events[-1]
    assert name == "done" and data["status"] == "succeeded"
    assert {d.get("run_id") for _, d in events} == {data["run_id"]}
    assert client.get(f"/runs/{data['run_id']}").json()["status"] == "succeeded"


def test_a_failure_after_the_stream_started_is_told_in_the_stream_and_the_run_recorded_failed(
    client: httpx.Client,
) -> None:
    """From sysid/sse-starlette tests/test_event_source_response.py (an exception raised by the generator after
    the first event): the status is already 200, so the stream says it and ends."""
    fid = formation(client, "clean", "explode", name="fails-late")
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": "a"})
    names = [name for name, _ in events]
    assert names[0] == "run_started" and "node_finished" in names
    assert "run_failed" in names or "error" in names
    assert names[-1] == "done" and events[-1][1]["status"] == "failed"
    assert client.get(f"/runs/{events[-1][1]['run_id']}").json()["status"] == "failed"


def test_a_stream_of_an_unknown_formation_is_a_json_404_not_an_event_stream(client: httpx.Client) -> None:
    """From sysid/sse-starlette tests/test_sse.py (an error before the response starts is an ordinary answer)."""
    response = client.post("/formations/01NOSUCHFORMATION/run/stream", json={"input": "a"})
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/json") and "error" in response.json()


def test_non_ascii_output_arrives_as_the_same_text(client: httpx.Client) -> None:
    """From florimondmanca/httpx-sse tests/test_event_source.py::test_unicode_line_separator_not_parsed_as_newline
    (here the server's side: what the run returned is what the client parses)."""
    fid = formation(client, "clean", name="unicode")
    text = "h\u00e9llo \u4f60\u597d \U0001f600 Hello\u2028World"
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": text})
    [finished] = [data for name, data in events if name == "node_finished"]
    assert finished["data"]["output"] == text


def test_a_client_reading_one_byte_at_a_time_gets_every_event_in_order(client: httpx.Client) -> None:
    """From sysid/sse-starlette tests/load/test_backpressure.py (a slow consumer loses nothing)."""
    fid = formation(client, "clean", "shout", "counted", name="slow-reader")
    with client.stream("POST", f"/formations/{fid}/run/stream", json={"input": " slow "}) as response:
        text = b"".join(response.iter_bytes(chunk_size=1)).decode()
    names = [line.removeprefix("event: ") for line in text.splitlines() if line.startswith("event: ")]
    started = [n for n in names if n == "node_started"]
    assert names[0] == "run_started" and names[-1] == "done" and len(started) == 3
    assert '"output":"SLOW"' in text


def test_concurrent_streams_of_one_formation_each_carry_only_their_own_run(
    client: httpx.Client, server: RunningServer
) -> None:
    """From sysid/sse-starlette tests/integration/test_multiple_consumers.py (several clients stream at once)."""
    fid = formation(client, "clean", "shout", name="many-streams")

    def one(i: int) -> list[tuple[str, Any]]:
        with server.client() as own:
            return sse_events(own, f"/formations/{fid}/run/stream", {"input": f"run {i}"})

    with ThreadPoolExecutor(4) as pool:
        streams = list(pool.map(one, range(6)))
    ids = set()
    for i, events in enumerate(streams):
        run_ids = {d.get("run_id") for _, d in events}
        assert len(run_ids) == 1, run_ids
        ids |= run_ids
        assert events[-1] == ("done", {"run_id": events[-1][1]["run_id"], "status": "succeeded"})
        outputs = [d["data"]["output"] for name, d in events if name == "node_finished"]
        assert outputs[-1] == f"RUN {i}"
    assert len(ids) == 6


# --- clients that leave -----------------------------------------------------------------------


def test_after_a_client_left_a_stream_the_next_run_of_the_formation_succeeds(
    client: httpx.Client, gate: threading.Event
) -> None:
    """From sysid/sse-starlette tests/test_event_source_response.py (a disconnected client stops the generator
    and the app keeps serving): the left run is cancelled, its formation still runs."""
    fid = formation(client, "clean", "gated", name="left")
    with connect_sse(client, "POST", f"/formations/{fid}/run/stream", json={"input": "a"}) as source:
        for event in source.iter_sse():
            if event.event == "node_started" and event.json()["node"] == "gated":
                break
    (run,) = client.get("/runs", params={"formation_id": fid}).json()
    assert until(lambda: client.get(f"/runs/{run['id']}").json()["status"] == "cancelled", within=10)
    gate.set()
    answer = client.post(f"/formations/{fid}/run", json={"input": " b "})
    assert (answer.status_code, answer.json()["status"], answer.json()["output"]) == (200, "succeeded", "b")


def test_closing_the_viewers_live_stream_does_not_cancel_the_run_it_watches(
    client: httpx.Client, server: RunningServer, gate: threading.Event
) -> None:
    """From sysid/sse-starlette tests/test_event_source_response.py (a client disconnect ends that response only).
    Differs from POST .../run/stream on purpose: the viewer watches a run, it does not own it."""
    fid = formation(client, "clean", "gated", name="watched")
    run_id, thread, answers = gated_run(client, server, fid)
    with client.stream("GET", f"/ui/api/runs/{run_id}/stream") as response:
        for line in response.iter_lines():
            if line == "event: node_started":
                break
    time.sleep(0.3)  # a cancel, were there one, would have reached the run by now
    assert client.get(f"/runs/{run_id}").json()["status"] == "running"
    gate.set()
    thread.join(20)
    assert answers[0].json()["status"] == "succeeded"


def test_two_viewers_of_one_live_run_get_the_same_events_in_the_same_order(
    client: httpx.Client, server: RunningServer, gate: threading.Event
) -> None:
    """From sysid/sse-starlette tests/integration/test_multiple_consumers.py (every consumer gets every event)."""
    fid = formation(client, "clean", "gated", "shout", name="two-viewers")
    run_id, thread, _ = gated_run(client, server, fid)
    seen: list[list[tuple[str, Any]]] = [[], []]
    opened = threading.Barrier(3)

    def watch(i: int) -> None:
        with server.client() as own, connect_sse(own, "GET", f"/ui/api/runs/{run_id}/stream") as source:
            events = source.iter_sse()
            seen[i].append((next(events).event, None))
            opened.wait(10)
            seen[i] += [(e.event, e.json().get("node")) for e in events]

    viewers = [threading.Thread(target=watch, args=(i,)) for i in range(2)]
    for viewer in viewers:
        viewer.start()
    opened.wait(10)
    gate.set()
    for viewer in viewers:
        viewer.join(20)
    thread.join(20)
    assert seen[0] == seen[1]
    assert seen[0][0][0] == "run_started" and seen[0][-1][0] == "end"
    assert ("node_finished", "shout") in seen[0]


def test_a_viewer_reconnecting_with_last_event_id_gets_the_whole_run_again(client: httpx.Client) -> None:
    """From sysid/sse-starlette tests/test_event.py (events carry an ``id``; a client resumes after the last one).
    Differs: our events carry no ``id``, so a reconnecting page (``Last-Event-ID``) is sent the run's events from
    its start again, and the page replaces what it drew."""
    fid = formation(client, "clean", "shout", name="reconnect")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "a"}).json()["id"]
    with client.stream("GET", f"/ui/api/runs/{run_id}/stream", headers={"Last-Event-ID": "3"}) as response:
        text = "".join(response.iter_text())
    assert "\nid:" not in text and not text.startswith("id:")
    names = [line.removeprefix("event: ") for line in text.splitlines() if line.startswith("event: ")]
    assert names[0] == "run_started" and names[-1] == "end" and names.count("node_finished") == 2
