"""``/fleets``: CRUD, blocking runs, streamed runs, per-task errors."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.server.harness import openai_agent, scripted_agent, sse_events
from tests.support.loopback import LoopbackServer, Reply


def new_fleet(client: httpx.Client, agent: str, **body: object) -> dict[str, object]:
    response = client.post("/fleets", json={"name": "sweep", "agent_id": agent, **body})
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_create_returns_the_fleet_with_reference_fields(client: httpx.Client) -> None:
    agent = scripted_agent(client)
    fleet = new_fleet(client, agent, worker_count=3)
    assert {k: fleet[k] for k in ("name", "agent_id", "worker_count", "work_dir")} == {
        "name": "sweep", "agent_id": agent, "worker_count": 3, "work_dir": None}
    assert set(fleet) == {"id", "name", "agent_id", "worker_count", "work_dir", "created_at", "updated_at"}


def test_fleet_is_listed_readable_updatable_and_deletable(client: httpx.Client, work_root: Path) -> None:
    agent = scripted_agent(client)
    fleet = new_fleet(client, agent)
    assert fleet["id"] in [f["id"] for f in client.get("/fleets").json()]
    assert client.get(f"/fleets/{fleet['id']}").json() == fleet
    updated = client.put(f"/fleets/{fleet['id']}", json={"worker_count": 5, "work_dir": "project"}).json()
    assert updated["worker_count"] == 5 and updated["name"] == "sweep"
    assert updated["work_dir"] == str((work_root / "project").resolve())
    assert client.delete(f"/fleets/{fleet['id']}").json() == {"status": "deleted"}
    assert client.get(f"/fleets/{fleet['id']}").status_code == 404


def test_fleet_with_unknown_agent_is_404(client: httpx.Client) -> None:
    response = client.post("/fleets", json={"name": "f", "agent_id": "nope"})
    assert response.status_code == 404
    assert response.json() == {"error": "agent not found: nope"}


def test_unknown_fleet_is_404_on_every_route(client: httpx.Client) -> None:
    body = {"tasks": [{"message": "x"}]}
    for response in (client.get("/fleets/nope"), client.put("/fleets/nope", json={"name": "x"}),
                     client.delete("/fleets/nope"), client.post("/fleets/nope/run", json=body),
                     client.post("/fleets/nope/run/stream", json=body)):
        assert response.status_code == 404
        assert response.json() == {"error": "fleet not found: nope"}


def test_negative_worker_count_is_400_naming_the_field(client: httpx.Client) -> None:
    agent = scripted_agent(client)
    response = client.post("/fleets", json={"name": "f", "agent_id": agent, "worker_count": -1})
    assert response.status_code == 400
    assert response.json()["fields"] == ["worker_count"]


def test_run_returns_one_result_per_task_in_task_order(client: httpx.Client) -> None:
    fleet = new_fleet(client, scripted_agent(client, "done", name="worker"), worker_count=2)
    tasks = [{"message": "auth", "data": "auth"}, {"message": "api", "data": {"id": 2}}, {"message": "db"}]
    response = client.post(f"/fleets/{fleet['id']}/run", json={"tasks": tasks})
    assert response.status_code == 200
    results = response.json()
    assert [r["task_index"] for r in results] == [0, 1, 2]
    assert [r["worker_name"] for r in results] == ["worker-0", "worker-1", "worker-2"]
    assert [r["data"] for r in results] == ["auth", {"id": 2}, None]
    assert all(r["response"] == "done" and r["steps"] == 1 and r["error"] is None for r in results)


def test_run_needs_at_least_one_task(client: httpx.Client) -> None:
    fleet = new_fleet(client, scripted_agent(client))
    response = client.post(f"/fleets/{fleet['id']}/run", json={"tasks": []})
    assert response.status_code == 400
    assert response.json()["fields"] == ["tasks"]


def test_task_without_message_is_400_naming_its_index(client: httpx.Client) -> None:
    fleet = new_fleet(client, scripted_agent(client))
    response = client.post(f"/fleets/{fleet['id']}/run", json={"tasks": [{"message": "a"}, {"data": 1}]})
    assert response.status_code == 400
    assert response.json()["fields"] == ["tasks[1].message"]


def test_failing_task_reports_its_error_and_kind_without_failing_the_run(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    loopback.handler = lambda req: Reply.json({"error": {"message": "nope"}}, status=500)
    fleet = new_fleet(client, openai_agent(client, loopback.url))
    results = client.post(f"/fleets/{fleet['id']}/run", json={"tasks": [{"message": "a"}]}).json()
    assert results[0]["error_kind"] == "agent"
    assert "nope" in results[0]["error"] and results[0]["response"] == ""


def test_stream_sends_a_result_per_task_then_done(client: httpx.Client) -> None:
    fleet = new_fleet(client, scripted_agent(client, "ok"), worker_count=2)
    tasks = [{"message": f"t{i}", "data": i} for i in range(4)]
    events = sse_events(client, f"/fleets/{fleet['id']}/run/stream", {"tasks": tasks})
    assert [n for n, _ in events] == ["result"] * 4 + ["done"]
    assert sorted(d["task_index"] for _, d in events[:-1]) == [0, 1, 2, 3]
    assert all(d["data"] == d["task_index"] for _, d in events[:-1])
    assert {k: events[-1][1][k] for k in ("tasks", "failed")} == {"tasks": 4, "failed": 0}


def test_fleet_whose_agent_was_deleted_is_404_on_run(client: httpx.Client) -> None:
    agent = scripted_agent(client)
    fleet = new_fleet(client, agent)
    client.delete(f"/agents/{agent}")
    response = client.post(f"/fleets/{fleet['id']}/run", json={"tasks": [{"message": "x"}]})
    assert response.status_code == 404
    assert response.json() == {"error": f"agent not found: {agent}"}


def test_fleet_runs_are_recorded_under_runs(client: httpx.Client) -> None:
    agent = scripted_agent(client, "fine")
    fleet = new_fleet(client, agent)
    results = client.post(f"/fleets/{fleet['id']}/run", json={"tasks": [{"message": "a", "data": 1}, {"message": "b"}]})
    assert results.status_code == 200
    runs = client.get("/runs", params={"fleet_id": fleet["id"]}).json()
    assert len(runs) == 1
    run = runs[0]
    assert (run["kind"], run["fleet_id"], run["fleet_name"], run["formation_id"]) == ("fleet", fleet["id"], "sweep", None)
    assert run["status"] == "succeeded"
    assert [t["message"] for t in run["input"]] == ["a", "b"]
    assert run["output"] == results.json()
    assert run["usage"]["total_tokens"] == sum(r["usage"]["total_tokens"] for r in results.json())
    assert run["id"] in [r["id"] for r in client.get("/runs").json()]


def test_a_fleet_run_with_a_failed_task_is_recorded_failed(client: httpx.Client, loopback: LoopbackServer) -> None:
    loopback.handler = lambda req: Reply.json({"error": {"message": "nope"}}, status=400)
    fleet = new_fleet(client, openai_agent(client, loopback.url))
    client.post(f"/fleets/{fleet['id']}/run", json={"tasks": [{"message": "a"}]})
    run = client.get("/runs", params={"fleet_id": fleet["id"]}).json()[0]
    assert (run["status"], run["error_kind"]) == ("failed", "invalid")
    assert run["error"].startswith("1 of 1 task(s) failed; task 0:")


def test_streamed_fleet_runs_are_recorded_with_their_id_in_the_events(client: httpx.Client) -> None:
    fleet = new_fleet(client, scripted_agent(client, "fine"))
    events = sse_events(client, f"/fleets/{fleet['id']}/run/stream", {"tasks": [{"message": "a"}]})
    run_id = events[-1][1]["run_id"]
    assert events[0][1]["run_id"] == run_id
    run = client.get(f"/runs/{run_id}").json()
    assert (run["kind"], run["status"], len(run["output"])) == ("fleet", "succeeded", 1)
