"""``POST /fleets/{id}/run`` past the server's ``--request-timeout`` answers 504 ``kind:
"timeout"`` with its ``run_id``, as a formation run does, and leaves nothing running (the
suite's leak check); a task's own timeout that the request survives stays that task's error."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.harness import RunningServer, openai_agent, scripted_agent
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.server import ServerConfig

REQUEST_TIMEOUT = 1.5


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, work_root: Path) -> Iterator[RunningServer]:
    config = ServerConfig(db_path=tmp_path_factory.mktemp("db") / "w.db", work_root=work_root, entry_points=False,
                          request_timeout=REQUEST_TIMEOUT)
    running = RunningServer(config).start()
    try:
        yield running
    finally:
        running.stop()


def fleet_of(client: httpx.Client, agent: str, workers: int = 0) -> str:
    response = client.post("/fleets", json={"name": "sweep", "agent_id": agent, "worker_count": workers})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_a_fleet_run_past_the_request_timeout_is_504_with_its_run_id(client: httpx.Client) -> None:
    fleet = fleet_of(client, scripted_agent(client, name="late", options={"latency_s": 5}))
    started = time.monotonic()
    response = client.post(f"/fleets/{fleet}/run", json={"tasks": [{"message": "a"}, {"message": "b"}]})
    assert response.status_code == 504, response.text
    body = response.json()
    assert body["kind"] == "timeout"
    assert f"{REQUEST_TIMEOUT:g}s request timeout" in body["error"]
    assert time.monotonic() - started < REQUEST_TIMEOUT + 1.5  # the run's own answer, not the middleware's backstop
    run = client.get(f"/runs/{body['run_id']}").json()
    assert (run["kind"], run["status"], run["error_kind"]) == ("fleet", "failed", "timeout")
    assert len(run["output"]) == 2


def test_tasks_waiting_for_a_worker_at_the_request_timeout_do_not_start(client: httpx.Client) -> None:
    fleet = fleet_of(client, scripted_agent(client, name="one at a time", options={"latency_s": 0.5}), workers=1)
    tasks = [{"message": str(i)} for i in range(6)]
    response = client.post(f"/fleets/{fleet}/run", json={"tasks": tasks})
    assert response.status_code == 504, response.text
    results = client.get(f"/runs/{response.json()['run_id']}").json()["output"]
    assert 1 <= sum(r["error"] is None for r in results) <= 3  # ~3 fit in the time (0.5 s each, one at a time)
    assert results[-1]["error_kind"] == "cancelled"


def test_a_task_timing_out_on_its_own_within_the_request_is_its_error_in_a_200(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    loopback.handler = lambda _req: Reply.never()
    fleet = fleet_of(client, openai_agent(client, loopback.url, timeout=0.2))
    response = client.post(f"/fleets/{fleet}/run", json={"tasks": [{"message": "hangs"}]})
    assert response.status_code == 200, response.text
    assert response.json()[0]["error_kind"] == "timeout"


def test_a_fleet_run_within_the_request_timeout_is_200(client: httpx.Client) -> None:
    fleet = fleet_of(client, scripted_agent(client, "done", name="quick"))
    response = client.post(f"/fleets/{fleet}/run", json={"tasks": [{"message": "a"}]})
    assert response.status_code == 200
    assert response.json()[0]["response"] == "done"
