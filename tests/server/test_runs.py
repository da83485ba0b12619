"""``/runs``: interrupts suspend a run, resume answers them, cancel stops a run in flight;
and the errors of both routes."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

import httpx
import pytest

from tests.server import functions_fixture as fx
from tests.server.harness import RunningServer, openai_agent, scripted_agent, sse_events
from tests.support.loopback import LoopbackServer, Reply, Request
from wingman_actors.cli import main

pytestmark = pytest.mark.usefixtures("gate")


def formation(client: httpx.Client, *functions: str, name: str = "durable") -> str:
    """A chain of function nodes named after their functions; its id."""
    nodes = [{"name": f, "kind": "function", "function": f} for f in functions]
    edges = [{"from": a, "to": b} for a, b in itertools.pairwise(functions)]
    response = client.post("/formations", json={"name": name, "nodes": nodes, "edges": edges})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def in_flight(client: httpx.Client, fid: str, body: dict[str, Any]) -> tuple[str, threading.Thread, list[Any]]:
    """POST a run on a thread; once it is recorded running: its id, the thread, its answer (a list)."""
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(client.post(f"/formations/{fid}/run", json=body)))
    thread.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        runs = client.get("/runs", params={"formation_id": fid, "status": "running"}).json()
        if runs and fx.CALLS["gated"]:
            return str(runs[0]["id"]), thread, answers
        time.sleep(0.02)
    raise AssertionError("the run never started")


def test_a_run_that_calls_interrupt_is_suspended_with_its_payload(client: httpx.Client) -> None:
    fid = formation(client, "clean", "ask")
    run = client.post(f"/formations/{fid}/run", json={"input": "  draft  "})
    assert run.status_code == 200, run.text
    body = run.json()
    assert body["status"] == "suspended"
    assert body["interrupt"] == {"node": "ask", "payload": {"question": "publish 'draft'?"}}
    again = client.get(f"/runs/{body['id']}").json()
    assert (again["status"], again["interrupt"]) == ("suspended", body["interrupt"])
    assert [r["id"] for r in client.get("/runs", params={"status": "suspended", "formation_id": fid}).json()] == [
        body["id"]]


def test_resume_with_an_answer_finishes_without_running_journalled_visits_again(client: httpx.Client) -> None:
    fid = formation(client, "counted", "ask")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "post"}).json()["id"]
    assert fx.CALLS["counted"] == 1
    resumed = client.post(f"/runs/{run_id}/resume", json={"answer": "yes"})
    assert resumed.status_code == 200, resumed.text
    body = resumed.json()
    assert (body["id"], body["status"], body["output"], body["interrupt"]) == (run_id, "succeeded", "post: yes", None)
    assert fx.CALLS["counted"] == 1
    assert client.get(f"/runs/{run_id}").json()["status"] == "succeeded"
    assert client.post(f"/runs/{run_id}/resume", json={}).status_code == 409


def test_the_cli_sends_a_server_run_back_to_post_runs_resume(
    client: httpx.Client, server: RunningServer, capsys: pytest.CaptureFixture[str]
) -> None:
    fid = formation(client, "clean", "ask")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "x"}).json()["id"]
    assert main(["resume", run_id, "--store", str(server.config.db_path)]) == 2
    err = capsys.readouterr().err
    assert f"formation {fid}" in err and f"POST /runs/{run_id}/resume" in err


def test_resume_without_an_answer_suspends_the_run_again(client: httpx.Client) -> None:
    fid = formation(client, "ask")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "a"}).json()["id"]
    again = client.post(f"/runs/{run_id}/resume", json={})
    assert again.status_code == 200, again.text
    assert again.json()["status"] == "suspended"
    assert again.json()["interrupt"]["node"] == "ask"


def test_cancel_stops_a_run_in_flight_and_its_request_answers_409(client: httpx.Client, server: RunningServer,
                                                                   gate: threading.Event) -> None:
    fid = formation(client, "gated", "counted")
    run_id, thread, answers = in_flight(client, fid, {"input": "x"})
    with server.client() as other:
        cancelled = other.post(f"/runs/{run_id}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert (cancelled.json()["id"], cancelled.json()["status"]) == (run_id, "cancelled")
    thread.join(10)
    assert answers[0].status_code == 409
    assert answers[0].json()["kind"] == "cancelled" and answers[0].json()["run_id"] == run_id
    gate.set()
    assert client.get(f"/runs/{run_id}").json()["status"] == "cancelled"
    assert fx.CALLS["counted"] == 0
    assert client.post(f"/runs/{run_id}/cancel").status_code == 409


def test_cancel_ends_a_streamed_run_with_run_cancelled(client: httpx.Client, server: RunningServer) -> None:
    fid = formation(client, "gated", "counted")
    events: list[tuple[str, Any]] = []
    thread = threading.Thread(target=lambda: events.extend(sse_events(client, f"/formations/{fid}/run/stream",
                                                                      {"input": "x"})))
    thread.start()
    deadline = time.monotonic() + 10
    while not fx.CALLS["gated"]:
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.02)
    run_id = client.get("/runs", params={"formation_id": fid}).json()[0]["id"]
    with server.client() as other:
        assert other.post(f"/runs/{run_id}/cancel").status_code == 200
    thread.join(10)
    assert [name for name, _ in events][-2:] == ["run_cancelled", "done"]
    assert events[-1][1] == {"run_id": run_id, "status": "cancelled"}


def test_a_cancelled_run_can_be_resumed(client: httpx.Client, server: RunningServer, gate: threading.Event) -> None:
    fid = formation(client, "counted", "gated")
    run_id, thread, _ = in_flight(client, fid, {"input": "x"})
    with server.client() as other:
        assert other.post(f"/runs/{run_id}/cancel").status_code == 200
    thread.join(10)
    gate.set()
    resumed = client.post(f"/runs/{run_id}/resume", json={})
    assert resumed.status_code == 200, resumed.text
    assert (resumed.json()["status"], resumed.json()["output"]) == ("succeeded", "x")
    assert fx.CALLS["counted"] == 1


def test_a_suspended_run_can_be_cancelled(client: httpx.Client) -> None:
    fid = formation(client, "ask")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "a"}).json()["id"]
    cancelled = client.post(f"/runs/{run_id}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    assert client.get(f"/runs/{run_id}").json()["status"] == "cancelled"


def test_cancel_and_resume_of_an_unknown_run_are_404(client: httpx.Client) -> None:
    for route in ("cancel", "resume"):
        response = client.post(f"/runs/01NOSUCHRUN/{route}", json={})
        assert response.status_code == 404, route
        assert response.json()["error"] == "run not found: 01NOSUCHRUN"


def test_cancel_and_resume_of_a_succeeded_run_are_409_naming_its_status(client: httpx.Client) -> None:
    fid = formation(client, "clean")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "a"}).json()["id"]
    for route in ("cancel", "resume"):
        response = client.post(f"/runs/{run_id}/{route}", json={})
        assert response.status_code == 409, route
        assert response.json()["run_status"] == "succeeded"
        assert response.json()["run_id"] == run_id
        assert "succeeded" in response.json()["error"]


def test_an_answer_to_a_run_with_no_pending_interrupt_is_400(client: httpx.Client) -> None:
    fid = formation(client, "explode")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "a"}).json()["run_id"]
    response = client.post(f"/runs/{run_id}/resume", json={"answer": "yes"})
    assert response.status_code == 400
    assert response.json()["fields"] == ["answer"]
    assert "no pending interrupt" in response.json()["error"]
    assert client.get(f"/runs/{run_id}").json()["status"] == "failed"


def test_a_failed_run_is_resumed_and_fails_again_as_a_run_does(client: httpx.Client) -> None:
    fid = formation(client, "counted", "explode")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "a"}).json()["run_id"]
    again = client.post(f"/runs/{run_id}/resume", json={})
    assert again.status_code == 500
    assert (again.json()["kind"], again.json()["run_id"], again.json()["node"]) == ("runtime", run_id, "explode")
    assert fx.CALLS["counted"] == 1


def test_resume_after_the_formation_changed_shape_is_409_saying_what_differs(client: httpx.Client) -> None:
    fid = formation(client, "counted", "ask")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "a"}).json()["id"]
    changed = {"name": "durable", "nodes": [{"name": "ask", "kind": "function", "function": "ask"}], "edges": []}
    assert client.put(f"/formations/{fid}", json=changed).status_code == 200
    response = client.post(f"/runs/{run_id}/resume", json={"answer": "yes"})
    assert response.status_code == 409
    assert response.json()["kind"] == "mismatch"
    assert "counted" in response.json()["error"]
    assert client.get(f"/runs/{run_id}").json()["status"] == "suspended"


def test_resume_after_the_formation_was_deleted_is_409(client: httpx.Client) -> None:
    fid = formation(client, "ask")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "a"}).json()["id"]
    assert client.delete(f"/formations/{fid}").status_code == 200
    response = client.post(f"/runs/{run_id}/resume", json={"answer": "yes"})
    assert response.status_code == 409
    assert response.json()["kind"] == "formation_deleted"
    assert "was deleted" in response.json()["error"]


def test_fleet_runs_cannot_be_cancelled_or_resumed(client: httpx.Client) -> None:
    agent = scripted_agent(client, "done")
    fleet = client.post("/fleets", json={"name": "crew", "agent_id": agent, "worker_count": 1}).json()["id"]
    assert client.post(f"/fleets/{fleet}/run", json={"tasks": [{"message": "go"}]}).status_code == 200
    run_id = client.get("/runs", params={"fleet_id": fleet}).json()[0]["id"]
    for route in ("cancel", "resume"):
        response = client.post(f"/runs/{run_id}/{route}", json={})
        assert response.status_code == 409, route
        assert response.json()["kind"] == "fleet"


def test_a_streamed_run_that_calls_interrupt_ends_suspended(client: httpx.Client) -> None:
    fid = formation(client, "ask")
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": "a"})
    names = [name for name, _ in events]
    assert names[-2:] == ["run_finished", "done"]
    finished, done = events[-2][1], events[-1][1]
    assert finished["data"]["interrupt"] == {"node": "ask", "payload": {"question": "publish 'a'?"}}
    assert done["status"] == "suspended"
    assert client.get(f"/runs/{done['run_id']}").json()["status"] == "suspended"


def test_an_unknown_status_filter_is_400(client: httpx.Client) -> None:
    response = client.get("/runs", params={"status": "paused"})
    assert response.status_code == 400
    assert response.json()["fields"] == ["status"]


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """One chat.completion.chunk (agent nodes stream their model calls)."""
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1721596428, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}


def streamed(*chunks: dict[str, Any]) -> Reply:
    return Reply.sse([*((None, c) for c in chunks), (None, "[DONE]")])


def test_an_agent_node_asks_a_person_with_ask_human_and_resumes_without_asking_the_model_again(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    call = {"index": 0, "id": "c1", "type": "function",
            "function": {"name": "ask_human", "arguments": '{"question": "Colour?"}'}}
    ask = streamed(chunk({"role": "assistant", "tool_calls": [call]}), chunk({}, "tool_calls"))

    def paint(request: Request) -> Reply:
        answer = request.json()["messages"][-1]["content"]
        return streamed(chunk({"role": "assistant", "content": f"Painting it {answer}."}), chunk({}, "stop"))

    loopback.queue(ask, paint)
    agent = openai_agent(client, loopback.url)
    assert client.put(f"/agents/{agent}", json={"tools": ["ask_human"]}).status_code == 200
    fid = client.post("/formations", json={"name": "paint", "nodes": [
        {"name": "painter", "kind": "agent", "agent_id": agent}]}).json()["id"]
    first = client.post(f"/formations/{fid}/run", json={"input": "paint the fence"}).json()
    assert (first["status"], first["interrupt"]) == ("suspended", {"node": "painter", "payload": {"question": "Colour?"}})
    done = client.post(f"/runs/{first['id']}/resume", json={"answer": "teal"})
    assert done.status_code == 200, done.text
    assert done.json()["output"] == "Painting it teal."
    assert len(loopback.requests) == 2  # the model was not asked the first question again


def test_concurrent_runs_and_resumes_share_the_database_without_losing_anything(
    client: httpx.Client, server: RunningServer
) -> None:
    fid = formation(client, "counted", "ask")
    errors: list[str] = []
    outputs: list[str] = []

    def work(i: int) -> None:
        with server.client() as own:
            for j in range(3):
                first = own.post(f"/formations/{fid}/run", json={"input": f"{i}-{j}"})
                if first.status_code != 200 or first.json()["status"] != "suspended":
                    errors.append(first.text)
                    continue
                done = own.post(f"/runs/{first.json()['id']}/resume", json={"answer": "ok"})
                if done.status_code != 200:
                    errors.append(done.text)
                    continue
                outputs.append(done.json()["output"])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(50)
    assert errors == []
    assert sorted(outputs) == sorted(f"{i}-{j}: ok" for i in range(8) for j in range(3))
    assert fx.CALLS["counted"] == 24
    runs = client.get("/runs", params={"formation_id": fid}).json()
    assert len(runs) == 24 and {r["status"] for r in runs} == {"succeeded"}


def test_a_run_record_names_its_id_run_id_too(client: httpx.Client) -> None:
    fid = formation(client, "clean", name="named")
    body = client.post(f"/formations/{fid}/run", json={"input": " a "}).json()
    assert body["run_id"] == body["id"]
    assert client.get(f"/runs/{body['id']}").json()["run_id"] == body["id"]
    assert all(r["run_id"] == r["id"] for r in client.get("/runs").json())


def test_a_run_answered_has_its_record_and_its_journal_committed_with_its_outcome(
    client: httpx.Client, server: RunningServer
) -> None:
    import sqlite3

    from wingman_actors.store import RunStore

    fid = formation(client, "clean", "shout", name="committed")
    ids = []
    for i in range(20):
        response = client.post(f"/formations/{fid}/run", json={"input": f" run {i} "})
        assert response.status_code == 200, response.text
        ids.append(response.json()["id"])
        # read at once on a connection of its own: only what is committed shows
        with sqlite3.connect(server.config.database) as conn:
            (record,) = conn.execute("SELECT status FROM run_records WHERE id = ?", (ids[-1],)).fetchone()
            (journalled,) = conn.execute("SELECT status FROM runs WHERE id = ?", (ids[-1],)).fetchone()
        assert (record, journalled) == ("succeeded", "succeeded")
    with RunStore(server.config.database, recover=False) as journal:
        assert journal.load(ids[-1]).visits == {"clean": {1: "run 19"}, "shout": {1: "RUN 19"}}


def test_the_answers_of_run_and_resume_are_the_json_of_the_run_record(client: httpx.Client) -> None:
    # both routes answer pre-encoded JSON: it must be what FastAPI's response model gave
    fid = formation(client, "clean", "ask", name="same-json")
    run = client.post(f"/formations/{fid}/run", json={"input": " é\u2028 "})
    assert run.status_code == 200, run.text
    assert run.headers["content-type"] == "application/json"
    run_id = run.json()["id"]
    assert run.json() == client.get(f"/runs/{run_id}").json()
    resumed = client.post(f"/runs/{run_id}/resume", json={"answer": "yes"})
    assert resumed.status_code == 200, resumed.text
    assert resumed.headers["content-type"] == "application/json"
    assert resumed.json() == client.get(f"/runs/{run_id}").json()
