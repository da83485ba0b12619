"""LangServe's runs over HTTP (langchain-ai/langserve ``tests/unit_tests/test_server_client.py``)
with what our server adds: a run in flight followed live, cancelled, left by its client, and
read back after a restart from the SQLite database; entry inputs of nested formations and map
nodes checked before a stream starts; session messages streamed as LangServe streams a chat model."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server import functions_langserve as ls
from tests.server.harness import FUNCTIONS_MODULE, RunningServer, running, scripted_agent, sse_events
from tests.server.test_peer_langserve import LANGSERVE, invoke, serve
from tests.server.test_peer_langserve_http import blocks
from wingman_actors.server import ServerConfig


def config(db: Path, work_root: Path) -> ServerConfig:
    return ServerConfig(db_path=db, work_root=work_root, functions=(FUNCTIONS_MODULE, LANGSERVE), entry_points=False)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, work_root: Path) -> Iterator[RunningServer]:
    with running(config(tmp_path_factory.mktemp("db") / "wingman.db", work_root)) as one:
        yield one


@pytest.fixture
def held() -> Iterator[threading.Event]:
    """The closed gate of ``functions_langserve.held``; opened at the end so no thread waits on."""
    ls.GATE.clear()
    ls.STARTED.clear()
    try:
        yield ls.GATE
    finally:
        ls.GATE.set()


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not reached in time"
        time.sleep(0.02)


def in_background(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    return thread, out


def run_id_of(client: httpx.Client, fid: str) -> str:
    wait_for(lambda: bool(client.get("/runs", params={"formation_id": fid}).json()), "the run's record")
    return str(client.get("/runs", params={"formation_id": fid}).json()[0]["id"])


# --- a run in flight ------------------------------------------------------------------------------


def test_a_run_in_flight_is_followed_live_then_ends(client: httpx.Client, server: RunningServer,
                                                    held: threading.Event) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_astream_log
    (a log streamed while the run goes on)."""
    fid = serve(client, "held", "passthrough", name="live")
    thread, answers = in_background(lambda: invoke(client, fid, "x"))
    wait_for(ls.STARTED.is_set, "held started")
    run_id = run_id_of(client, fid)
    with server.client() as viewer, viewer.stream("GET", f"/ui/api/runs/{run_id}/stream") as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        seen: list[str] = []
        for line in lines:
            if line.startswith("event: "):
                seen.append(line[7:])
            if seen[-1:] == ["node_started"]:
                break
        held.set()
        text = "\n".join(lines)
    thread.join(10)
    assert answers[0].json()["output"] == "x"
    assert seen == ["run_started", "node_started"]
    assert "event: run_finished" in text and text.rstrip().endswith(f'data: {{"run_id":"{run_id}"}}')


def test_cancel_over_http_answers_the_waiting_request_409_and_records_cancelled(
        client: httpx.Client, server: RunningServer, held: threading.Event) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_side_error
    (a run that does not finish answers with an error status, never a hang)."""
    fid = serve(client, "held", name="to-cancel")
    thread, answers = in_background(lambda: invoke(client, fid, "x"))
    wait_for(ls.STARTED.is_set, "held started")
    run_id = run_id_of(client, fid)
    with server.client() as other:
        cancelled = other.post(f"/runs/{run_id}/cancel")
    assert (cancelled.status_code, cancelled.json()["status"]) == (200, "cancelled")
    thread.join(10)
    assert (answers[0].status_code, answers[0].json()["kind"], answers[0].json()["run_id"]) == (409, "cancelled", run_id)
    again = client.post(f"/runs/{run_id}/cancel")
    assert (again.status_code, again.json()["run_status"]) == (409, "cancelled")


def test_a_client_leaving_a_stream_cancels_the_run_and_the_server_goes_on(
        client: httpx.Client, server: RunningServer, held: threading.Event) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_astream
    (a client that stops reading)."""
    fid = serve(client, "held", "passthrough", name="left")
    with client.stream("POST", f"/formations/{fid}/run/stream", json={"input": "x"}) as response:
        for line in response.iter_lines():
            if "node_started" in line:
                break
    run_id = run_id_of(client, fid)
    wait_for(lambda: client.get(f"/runs/{run_id}").json()["status"] == "cancelled", "the run cancelled")
    held.set()
    assert invoke(client, serve(client, "add_one"), 1).json()["output"] == 2


def test_a_stream_of_a_run_cancelled_meanwhile_ends_with_run_cancelled_then_done(
        client: httpx.Client, server: RunningServer, held: threading.Event) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_side_error
    (the stream ends with its outcome)."""
    fid = serve(client, "held", name="stream-cancelled")
    thread, streams = in_background(lambda: sse_events(client, f"/formations/{fid}/run/stream", {"input": "x"}))
    wait_for(ls.STARTED.is_set, "held started")
    run_id = run_id_of(client, fid)
    with server.client() as other:
        assert other.post(f"/runs/{run_id}/cancel").status_code == 200
    thread.join(10)
    assert [name for name, _ in streams[0]][-2:] == ["run_cancelled", "done"]
    assert streams[0][-1][1] == {"run_id": run_id, "status": "cancelled"}


# --- inputs checked before a stream starts ---------------------------------------------------------


def test_a_stream_into_a_nested_formation_refuses_an_input_its_source_would_refuse(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_input_validation
    (the served runnable's input type, here the inner formation's source)."""
    inner = serve(client, "add_one", name="inner")
    body = {"name": "outer", "nodes": [{"name": "wrapped", "kind": "formation", "formation_id": inner}]}
    fid = client.post("/formations", json=body).json()["id"]
    response = client.post(f"/formations/{fid}/run/stream", json={"input": "one"})
    assert response.status_code == 400
    refused = response.json()
    assert (refused["kind"], refused["node"], refused["fields"]) == ("input", "wrapped", ["input"])
    assert "'wrapped/add_one'" in refused["error"]
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": 1})
    assert events[-1][1]["status"] == "succeeded"


def test_a_stream_into_a_map_refuses_an_input_that_is_no_list_and_takes_a_list(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_input_validation_with_lc_types
    (``List[HumanMessage]`` refuses a single value)."""
    body = {"name": "mapped", "nodes": [{"name": "each", "kind": "map", "function": "add_one"}]}
    fid = client.post("/formations", json=body).json()["id"]
    for value in (1, ["a"]):
        response = client.post(f"/formations/{fid}/run/stream", json={"input": value})
        assert (response.status_code, response.json()["node"]) == (400, "each")
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": [1, 2]})
    assert next(d for n, d in events if n == "run_finished")["data"]["output"] == [2, 3]


def test_an_agent_entry_takes_any_input_on_a_stream(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_invoke
    (a chat model takes a message, a string or a list)."""
    agent = scripted_agent(client, "heard")
    body = {"name": "chat", "nodes": [{"name": "reply", "kind": "agent", "agent_id": agent}]}
    fid = client.post("/formations", json=body).json()["id"]
    for value in ("hi", {"role": "user", "content": "hi"}, [1, 2]):
        events = sse_events(client, f"/formations/{fid}/run/stream", {"input": value})
        assert events[-1][1]["status"] == "succeeded"


# --- sessions: a chat model's stream ------------------------------------------------------------


def test_a_session_message_streams_its_events_then_done_with_the_response(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_astream
    (a chat model's chunks, then the end)."""
    agent = scripted_agent(client, "Hello there!")
    sid = client.post("/sessions").json()["id"]
    response = client.post(f"/sessions/{sid}/message/stream", json={"agent_id": agent, "message": "hi"})
    events = blocks(response.text)
    assert events[-1][0] == "done" and events[-1][1]["response"] == "Hello there!"
    assert client.get(f"/sessions/{sid}").json()["history"][-1]["content"][0]["text"] == "Hello there!"


@pytest.mark.parametrize(("body", "field"), [({"message": "hi"}, "agent_id"), ({"message": 5}, "message")])
def test_a_session_stream_with_a_bad_body_is_a_400_naming_the_field(client: httpx.Client, body: dict[str, Any],
                                                                    field: str) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_async
    (``/stream`` with a bad body is refused before any event)."""
    agent = scripted_agent(client)
    sid = client.post("/sessions").json()["id"]
    response = client.post(f"/sessions/{sid}/message/stream", json={"agent_id": agent, **body}
                           if field != "agent_id" else body)
    assert response.status_code == 400
    assert field in response.json()["fields"]


# --- persistence --------------------------------------------------------------------------------


def test_runs_and_their_outputs_are_read_back_after_a_restart(tmp_path: Path, work_root: Path) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_invoke_returns_run_id
    (a run id that can be looked up later), across a server restart on the same SQLite file."""
    db = tmp_path / "wingman.db"
    with running(config(db, work_root)) as first, first.client() as client:
        fid = serve(client, "add_one", "mul_2", name="kept")
        done = invoke(client, fid, 4).json()
        failed = invoke(client, serve(client, "fail_with_secret_line", name="broken"), "x").json()
    with running(config(db, work_root)) as second, second.client() as client:
        record = client.get(f"/runs/{done['run_id']}").json()
        assert (record["status"], record["output"], record["input"]) == ("succeeded", 10, 4)
        assert [v["output"] for v in client.get(f"/runs/{done['run_id']}/history").json()] == [5, 10]
        assert client.get(f"/runs/{failed['run_id']}").json()["error_kind"] == "runtime"
        replay = blocks(client.get(f"/ui/api/runs/{done['run_id']}/stream").text)
        assert replay == [("end", {"run_id": done["run_id"]})]
        assert invoke(client, fid, 1).json()["output"] == 4


def test_more_streams_than_worker_threads_wait_their_turn_and_all_finish(tmp_path: Path, work_root: Path) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_abatch
    (``max_concurrency``): with two worker threads, four streamed runs and four waited-for runs
    at once all finish, none lost and none deadlocked on the database writes they need."""
    small = ServerConfig(db_path=tmp_path / "w.db", work_root=work_root, functions=(FUNCTIONS_MODULE, LANGSERVE),
                         entry_points=False, worker_threads=2)
    with running(small) as one, one.client() as client:
        fid = serve(client, "slow")
        with ThreadPoolExecutor(4) as pool:
            streams = list(pool.map(lambda x: sse_events(client, f"/formations/{fid}/run/stream", {"input": x}), range(4)))
            answers = list(pool.map(lambda x: invoke(client, fid, x).json(), range(4)))
        assert [events[-1][1]["status"] for events in streams] == ["succeeded"] * 4
        assert [a["output"] for a in answers] == [1, 2, 3, 4]
        assert len(client.get("/runs", params={"formation_id": fid}).json()) == 8


def test_a_streamed_run_past_its_timeout_ends_with_run_failed_of_kind_timeout(client: httpx.Client,
                                                                              held: threading.Event) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_side_error
    (a stream that cannot finish ends with an error, not a hang)."""
    fid = serve(client, "held", name="too-slow")
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": "x", "timeout": 0.2})
    assert [name for name, _ in events][-2:] == ["run_failed", "done"]
    assert events[-2][1]["data"]["kind"] == "timeout"
    assert client.get(f"/runs/{events[-1][1]['run_id']}").json()["error_kind"] == "timeout"
