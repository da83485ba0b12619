"""Map nodes in the server's formation declarations: ``kind: "map"`` names a registered
function, called once per item of the node's list input."""

from __future__ import annotations

from typing import Any

import httpx


def declaration(**node: Any) -> dict[str, Any]:
    return {"name": "shouting", "nodes": [
        {"name": "split", "kind": "function", "function": "words"},
        {"name": "each", "kind": "map", **node},
    ], "edges": [{"from": "split", "to": "each"}]}


def test_a_map_node_calls_its_registered_function_once_per_item(client: httpx.Client) -> None:
    created = client.post("/formations", json=declaration(function="shout", max_workers=2))
    assert created.status_code == 201, created.text
    assert created.json()["nodes"][1] == {"name": "each", "kind": "map", "function": "shout", "max_workers": 2}

    run = client.post(f"/formations/{created.json()['id']}/run", json={"input": "a bb c"}).json()

    assert run["status"] == "succeeded" and run["output"] == ["A", "BB", "C"]


def test_a_map_node_without_a_function_or_with_an_agent_is_400_naming_the_fix(client: httpx.Client) -> None:
    response = client.post("/formations", json=declaration(agent_id="someone", prompt="{input}"))

    assert response.status_code == 400
    problems = response.json()["problems"]
    assert any('a map node needs "function"' in p for p in problems)
    assert any("agent_id, prompt only apply to agent and fleet nodes" in p for p in problems)


def test_max_workers_on_a_function_node_is_400_pointing_to_map_nodes(client: httpx.Client) -> None:
    body = declaration(function="shout")
    body["nodes"][0]["max_workers"] = 3

    response = client.post("/formations", json=body)

    assert response.status_code == 400
    assert any("max_workers only applies to fleet and map nodes" in p for p in response.json()["problems"])


def test_a_map_of_a_registered_function_taking_the_blackboard_gets_the_runs_board(client: httpx.Client) -> None:
    created = client.post("/formations", json=declaration(function="remember", max_workers=1))
    assert created.status_code == 201, created.text

    run = client.post(f"/formations/{created.json()['id']}/run", json={"input": "a b"}).json()

    assert run["status"] == "succeeded" and run["output"] == ["a", "b"]  # remember() wrote to the board
