"""A run record's node statuses agree with the run's own traces (``FormationResult.nodes``,
the failed run's ``nodes``, ``runs show``): a node whose visit was cut short — an inner
node of a formation node cut by its timeout or by the run's end, a run's own node still
running when the run timed out or was cancelled — is ``cancelled``, with the time it was
cut as its ``finished_at``; not ``skipped`` or ``pending`` with no end."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from tests.server.harness import RunningServer
from tests.server.test_runs import in_flight

pytestmark = pytest.mark.usefixtures("gate")


def create(client: httpx.Client, body: dict[str, Any]) -> str:
    response = client.post("/formations", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def held_inside(client: httpx.Client, **policies: Any) -> str:
    """A formation whose formation node ``sub`` runs clean → gated (held until the test ends)."""
    inner = create(client, {"name": "held", "nodes": [
        {"name": "clean", "kind": "function", "function": "clean"},
        {"name": "gated", "kind": "function", "function": "gated"},
    ], "edges": [{"from": "clean", "to": "gated"}]})
    node: dict[str, Any] = {"name": "sub", "kind": "formation", "formation_id": inner}
    if policies:
        node["policies"] = policies
    return create(client, {"name": "outer", "nodes": [node]})


def assert_cut(trace: dict[str, Any]) -> None:
    assert trace["status"] == "cancelled", trace
    assert trace["started_at"] is not None and trace["finished_at"] is not None, trace
    assert trace["finished_at"] >= trace["started_at"]


def test_an_inner_node_cut_by_its_formation_nodes_timeout_is_cancelled_with_its_end(client: httpx.Client) -> None:
    fid = held_inside(client, timeout=0.3)

    response = client.post(f"/formations/{fid}/run", json={"input": " x "})

    assert response.status_code == 504, response.text
    nodes = client.get(f"/runs/{response.json()['run_id']}").json()["nodes"]
    assert_cut(nodes["sub/gated"])
    assert nodes["sub/clean"]["status"] == "succeeded"
    assert nodes["sub"]["status"] == "failed" and nodes["sub"]["finished_at"] is not None


def test_the_nodes_a_run_timeout_cut_are_cancelled_with_the_runs_end_as_their_traces_say(
    client: httpx.Client,
) -> None:
    fid = held_inside(client)

    response = client.post(f"/formations/{fid}/run", json={"input": " x ", "timeout": 0.3})

    assert response.status_code == 504, response.text
    nodes = client.get(f"/runs/{response.json()['run_id']}").json()["nodes"]
    assert_cut(nodes["sub"])
    assert_cut(nodes["sub/gated"])
    assert nodes["sub/clean"]["status"] == "succeeded"


def test_a_node_running_when_its_run_is_cancelled_is_cancelled_with_the_cancels_time(
    client: httpx.Client, server: RunningServer, gate: threading.Event
) -> None:
    fid = create(client, {"name": "two", "nodes": [
        {"name": "gated", "kind": "function", "function": "gated"},
        {"name": "counted", "kind": "function", "function": "counted"},
    ], "edges": [{"from": "gated", "to": "counted"}]})
    run_id, thread, answers = in_flight(client, fid, {"input": "x"})
    with server.client() as other:
        cancelled = other.post(f"/runs/{run_id}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    thread.join(10)
    assert answers[0].status_code == 409

    nodes = client.get(f"/runs/{run_id}").json()["nodes"]

    assert_cut(nodes["gated"])
    assert nodes["counted"] == {**nodes["counted"], "status": "pending", "started_at": None, "finished_at": None}
    assert cancelled.json()["nodes"]["gated"] == nodes["gated"]
