"""Started formations kept per declaration: successive runs of a formation reuse its
started actors; every run keeps its own events, blackboard, cancel and timeout; a replaced
or deleted declaration, an idle spell and the server stopping stop them."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server import functions_fixture as fx
from tests.server.harness import FUNCTIONS_MODULE, RunningServer, sse_events
from wingman_actors.server import ServerConfig
from wingman_actors.server._started import IDLE_S

pytestmark = pytest.mark.usefixtures("gate")


def chain(client: httpx.Client, *functions: str, name: str = "kept") -> str:
    """A formation chaining function nodes named after their functions; its id."""
    response = client.post("/formations", json=body(*functions, name=name))
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def body(*functions: str, name: str = "kept") -> dict[str, Any]:
    nodes = [{"name": f, "kind": "function", "function": f} for f in functions]
    edges = [{"from": a, "to": b} for a, b in itertools.pairwise(functions)]
    return {"name": name, "nodes": nodes, "edges": edges}


def run(client: httpx.Client, fid: str, input: Any = "x", **extra: Any) -> httpx.Response:
    return client.post(f"/formations/{fid}/run", json={"input": input, **extra})


def alive(node_thread: str) -> bool:
    """Whether the thread ``node_thread`` (its serial:ident) named is still running."""
    ident = int(node_thread.partition(":")[2])
    return any(t.ident == ident for t in threading.enumerate())


def gone(node_thread: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while alive(node_thread):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_successive_runs_of_a_formation_reuse_its_started_node_actors(client: httpx.Client) -> None:
    fid = chain(client, "clean", "node_thread")
    threads = {run(client, fid).json()["output"] for _ in range(5)}
    assert len(threads) == 1


def test_replacing_a_declaration_stops_its_started_actors_and_runs_the_new_one(client: httpx.Client) -> None:
    fid = chain(client, "clean", "node_thread")
    old = run(client, fid).json()["output"]
    assert client.put(f"/formations/{fid}", json=body("shout", "node_thread")).status_code == 200
    assert gone(old)
    replaced = run(client, fid, " a ")
    assert replaced.json()["output"] != old
    assert list(replaced.json()["nodes"]) == ["shout", "node_thread"]


def test_deleting_a_formation_stops_its_started_actors(client: httpx.Client) -> None:
    fid = chain(client, "clean", "node_thread")
    old = run(client, fid).json()["output"]
    assert client.delete(f"/formations/{fid}").status_code == 200
    assert gone(old)


def test_a_started_formation_left_idle_is_stopped(client: httpx.Client) -> None:
    fid = chain(client, "node_thread")
    old = run(client, fid).json()["output"]
    time.sleep(IDLE_S)
    assert gone(old, within=IDLE_S + 2)
    assert run(client, fid).json()["output"] != old


def test_runs_of_a_reused_formation_each_have_a_fresh_blackboard(client: httpx.Client) -> None:
    declared = body("peek", "remember", name="boards")
    declared["nodes"].append({"name": "node_thread", "kind": "function", "function": "node_thread"})
    declared["edges"].append({"from": "peek", "to": "node_thread"})
    fid = client.post("/formations", json=declared).json()["id"]
    runs = [run(client, fid, word).json() for word in ("one", "two", "three")]
    assert [r["outputs"]["remember"] for r in runs] == ["one (board: None)", "two (board: None)", "three (board: None)"]
    assert len({r["outputs"]["node_thread"] for r in runs}) == 1


def test_concurrent_runs_get_their_own_started_formation_and_a_cancel_stops_only_its_run(
    client: httpx.Client, server: RunningServer, gate: threading.Event
) -> None:
    fid = chain(client, "gated", "counted")
    answers: list[httpx.Response] = []

    def post() -> None:
        with server.client() as own:
            answers.append(run(own, fid))

    threads = [threading.Thread(target=post) for _ in range(2)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while fx.CALLS["gated"] < 2:  # both in flight at once: neither waits for the other's node actor
        assert time.monotonic() < deadline, "both runs never got to their gated node"
        time.sleep(0.02)
    running = client.get("/runs", params={"formation_id": fid, "status": "running"}).json()
    assert len(running) == 2
    assert client.post(f"/runs/{running[0]['id']}/cancel").status_code == 200
    gate.set()
    for t in threads:
        t.join(10)
    by_id = {a.json()["run_id" if a.status_code == 409 else "id"]: a for a in answers}
    assert by_id[running[0]["id"]].status_code == 409
    assert by_id[running[1]["id"]].status_code == 200
    assert by_id[running[1]["id"]].json()["status"] == "succeeded"
    assert fx.CALLS["counted"] == 1


def test_a_streamed_run_on_a_reused_formation_carries_only_its_own_events(client: httpx.Client) -> None:
    fid = chain(client, "clean", "node_thread")
    first = run(client, fid).json()
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": "y"})
    run_id = events[-1][1]["run_id"]
    assert run_id != first["id"]
    assert {data["run_id"] for _, data in events} == {run_id}
    assert events[-2][1]["data"]["output"] == first["output"]  # the same node actor ran it
    visits = client.get(f"/runs/{run_id}").json()["nodes"]
    assert [trace["visits"] for trace in visits.values()] == [1, 1]


def test_a_timed_out_run_does_not_hand_its_started_formation_on(client: httpx.Client, gate: threading.Event) -> None:
    fid = chain(client, "gated", "node_thread")
    timed_out = run(client, fid, timeout=0.3)
    assert timed_out.status_code == 504, timed_out.text
    gate.set()
    after = run(client, fid)
    assert after.status_code == 200, after.text
    assert after.json()["status"] == "succeeded"
    assert fx.CALLS["gated"] == 2


def test_a_suspended_run_is_answered_on_a_reused_formation(client: httpx.Client) -> None:
    fid = chain(client, "ask", "node_thread")
    suspended = run(client, fid, "post").json()
    assert suspended["status"] == "suspended"
    other = run(client, fid, "draft").json()
    assert other["status"] == "suspended"
    resumed = client.post(f"/runs/{suspended['id']}/resume", json={"answer": "yes"}).json()
    assert resumed["status"] == "succeeded"
    assert resumed["nodes"]["ask"]["status"] == "succeeded"
    assert other["id"] != resumed["id"]


def test_stopping_the_server_stops_its_idle_started_formations(tmp_path: Path, work_root: Path) -> None:
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=work_root, functions=(FUNCTIONS_MODULE,),
                          entry_points=False)
    server = RunningServer(config).start()
    try:
        with server.client() as client:
            fid = chain(client, "node_thread")
            ident = run(client, fid).json()["output"]
            assert alive(ident)
    finally:
        server.stop()
    assert not alive(ident)


def test_a_run_in_flight_on_a_reused_formation_is_interrupted_when_the_server_stops_and_resumes(
    tmp_path: Path, work_root: Path, gate: threading.Event
) -> None:
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=work_root, functions=(FUNCTIONS_MODULE,),
                          entry_points=False)
    server = RunningServer(config, graceful_timeout=0.5).start()
    answers: list[httpx.Response] = []
    try:
        with server.client() as client:
            fid = chain(client, "counted", "gated")
            gate.set()
            assert run(client, fid).json()["status"] == "succeeded"  # its started formation is kept
            gate.clear()
            waiting = threading.Thread(target=lambda: answers.append(run(client, fid)))
            waiting.start()
            deadline = time.monotonic() + 10
            while fx.CALLS["gated"] < 2:
                assert time.monotonic() < deadline, "the second run never reached its gated node"
                time.sleep(0.02)
            run_id = client.get("/runs", params={"formation_id": fid}).json()[0]["id"]
            server.stop()  # waits 0.5 s for the request, then stops the run
            waiting.join(10)
    finally:
        server.stop()
    gate.set()
    again = RunningServer(config).start()
    try:
        with again.client() as client:
            assert client.get(f"/runs/{run_id}").json()["status"] == "interrupted"
            resumed = client.post(f"/runs/{run_id}/resume", json={})
            assert (resumed.json()["status"], resumed.json()["output"]) == ("succeeded", "x")
    finally:
        again.stop()


def test_a_declaration_replaced_by_another_process_on_the_database_is_run_within_a_second(
        server: RunningServer, client: httpx.Client) -> None:
    from wingman_actors.server import Store
    from wingman_actors.server._declarations import FRESH_S

    fid = chain(client, "clean", "node_thread")
    run(client, fid)  # its declaration is now kept in memory, with a started formation
    other = Store(server.config.database)  # as another server process on the same file would
    try:
        new = body("shout", "node_thread")
        other.replace_formation(fid, new["name"], new["nodes"], new["edges"])
    finally:
        other.close()
    changed = time.monotonic()
    while list(run(client, fid, " a ").json()["nodes"]) != ["shout", "node_thread"]:
        assert time.monotonic() - changed < FRESH_S + 1.0, "the replaced declaration was not seen"
        time.sleep(0.05)



@pytest.mark.parametrize("reused", [False, True], ids=["first run", "reused formation"])
def test_a_run_is_recorded_running_before_its_first_node_starts(
        client: httpx.Client, server: RunningServer, reused: bool) -> None:
    fid = chain(client, "sees_running", "clean", name=f"sees-{reused}")
    fx.DATABASE[:] = [str(server.config.database)]
    if reused:
        assert run(client, fid).status_code == 200  # its started formation is kept: the next run reuses it
    fx.SEEN.clear()
    answer = run(client, fid, " x ")
    assert answer.status_code == 200, answer.text
    assert answer.json()["id"] in fx.SEEN[0]
