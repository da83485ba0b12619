"""A run in flight on the server, as the run viewer reads it (``GET /ui/api/runs/{id}``: node
traces the server builds from the run's events): a node that loops back to itself, finished
its first visit and started its second, is ``running`` again, from the second visit's start
and with no end, as a node on its first visit is; not ``succeeded`` with the first visit's
end (its start then after its end)."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from tests.server import functions_fixture as fx
from tests.support.peers import until

pytestmark = pytest.mark.usefixtures("gate")


def looping(client: httpx.Client) -> str:
    """``lap`` visited twice (its second visit held at the gate), then ``counted``; the id."""
    response = client.post("/formations", json={"name": "laps", "nodes": [
        {"name": "lap", "kind": "function", "function": "lap"},
        {"name": "counted", "kind": "function", "function": "counted"},
    ], "edges": [{"from": "lap", "to": "lap", "condition": "one_lap"},
                 {"from": "lap", "to": "counted", "otherwise": True}]})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def started(client: httpx.Client, run_id: str, node: str, count: int) -> list[dict[str, Any]]:
    """The first ``count`` ``node_started`` events of ``node``, from the run's event stream."""
    found: list[dict[str, Any]] = []
    name = ""
    with client.stream("GET", f"/ui/api/runs/{run_id}/stream") as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: ") and name == "node_started":
                event = json.loads(line.removeprefix("data: "))
                if event["node"] == node:
                    found.append(event)
                    if len(found) == count:
                        break
    return found


def test_a_looped_node_on_its_next_visit_reads_running_from_that_visits_start(
    client: httpx.Client, gate: threading.Event
) -> None:
    fid = looping(client)
    answers: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: answers.append(client.post(f"/formations/{fid}/run",
                                                                        json={"input": "go"})))
    thread.start()
    try:
        assert until(lambda: fx.CALLS["lap"] == 2, within=10), "the second lap never started"
        [run] = client.get("/runs", params={"formation_id": fid, "status": "running"}).json()
        first, second = started(client, run["id"], "lap", 2)
        assert second["timestamp"] >= first["timestamp"]

        node = client.get(f"/ui/api/runs/{run['id']}").json()["nodes"]["lap"]

        assert node["status"] == "running", node
        assert (node["started_at"], node["finished_at"], node["visits"]) == (second["timestamp"], None, 2)
    finally:
        gate.set()
        thread.join(10)
    assert answers[0].status_code == 200, answers[0].text
    lap = answers[0].json()["nodes"]["lap"]
    assert (lap["status"], lap["visits"]) == ("succeeded", 2)
    assert lap["finished_at"] >= second["timestamp"]
