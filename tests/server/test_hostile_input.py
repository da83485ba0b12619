"""Malformed but well-formed JSON: refused with a 400 naming the field, never stored, and
every list route still answers afterwards."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.server.harness import scripted_agent

LIST_ROUTES = ("/agents", "/sessions", "/fleets", "/formations", "/runs")


def send(client: httpx.Client, method: str, path: str, text: str) -> httpx.Response:
    """``text`` sent as the body verbatim (so it may hold what ``json=`` would refuse to encode)."""
    return client.request(method, path, content=text.encode(), headers={"Content-Type": "application/json"})


def assert_lists_answer(client: httpx.Client) -> None:
    for path in LIST_ROUTES:
        response = client.get(path)
        assert response.status_code == 200, (path, response.text)


def assert_refused(response: httpx.Response, field: str) -> None:
    assert response.status_code == 400, response.text
    assert field in response.json()["fields"], response.json()
    assert field in response.json()["error"]


def test_lone_surrogate_in_agent_options_is_400_and_not_stored(client: httpx.Client) -> None:
    before = len(client.get("/agents").json())
    response = send(client, "POST", "/agents",
                    '{"name": "a", "provider": "scripted", "options": {"replies": ["\\ud800"]}}')
    assert_refused(response, "options.replies[0]")
    assert "surrogate" in response.json()["error"]
    assert len(client.get("/agents").json()) == before
    assert_lists_answer(client)


def test_lone_surrogate_in_a_key_is_400(client: httpx.Client) -> None:
    response = send(client, "POST", "/agents", '{"name": "a", "options": {"\\udc00": 1}}')
    assert_refused(response, "options")


def test_lone_surrogate_in_agent_update_is_400_and_the_agent_unchanged(client: httpx.Client) -> None:
    agent = scripted_agent(client, name="steady")
    response = send(client, "PUT", f"/agents/{agent}", '{"instructions": "be \\udfff"}')
    assert_refused(response, "instructions")
    assert client.get(f"/agents/{agent}").json()["instructions"] == ""


def test_lone_surrogate_in_session_title_is_400_and_not_stored(client: httpx.Client) -> None:
    before = len(client.get("/sessions").json())
    assert_refused(send(client, "POST", "/sessions", '{"title": "x\\ud800"}'), "title")
    assert len(client.get("/sessions").json()) == before
    sid = client.post("/sessions").json()["id"]
    assert_refused(send(client, "PUT", f"/sessions/{sid}", '{"title": "\\ud800"}'), "title")
    assert_lists_answer(client)


def test_lone_surrogate_in_formation_input_is_400_and_records_no_run(client: httpx.Client) -> None:
    body = {"name": "one", "nodes": [{"name": "clean", "kind": "function", "function": "clean"}]}
    fid = client.post("/formations", json=body).json()["id"]
    before = len(client.get("/runs").json())
    assert_refused(send(client, "POST", f"/formations/{fid}/run", '{"input": "\\ud800"}'), "input")
    assert_refused(send(client, "POST", f"/formations/{fid}/run/stream", '{"input": {"a": ["\\ud800"]}}'),
                   "input.a[0]")
    assert len(client.get("/runs").json()) == before
    assert_lists_answer(client)


def test_lone_surrogate_in_fleet_task_data_is_400(client: httpx.Client) -> None:
    fleet = client.post("/fleets", json={"name": "f", "agent_id": scripted_agent(client)}).json()["id"]
    response = send(client, "POST", f"/fleets/{fleet}/run", '{"tasks": [{"message": "m", "data": "\\ud800"}]}')
    assert_refused(response, "tasks[0].data")


def test_a_run_whose_output_holds_a_lone_surrogate_is_still_listed(client: httpx.Client) -> None:
    body = {"name": "careless", "nodes": [{"name": "half", "kind": "function", "function": "half_character"}]}
    fid = client.post("/formations", json=body).json()["id"]
    response = client.post(f"/formations/{fid}/run", json={"input": "text"})
    assert response.status_code == 200, response.text
    assert response.json()["output"] == "text\ufffd"
    assert_lists_answer(client)


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/sessions", {"work_dir": "project\x00"}),
    ("POST", "/fleets", {"name": "f", "agent_id": "AGENT", "work_dir": "\x00"}),
])
def test_nul_in_work_dir_is_400_naming_it(client: httpx.Client, method: str, path: str, body: dict[str, Any]) -> None:
    text = json.dumps(body).replace("AGENT", scripted_agent(client))
    assert_refused(send(client, method, path, text), "work_dir")
    assert_lists_answer(client)


def test_nul_in_updated_and_task_work_dirs_is_400(client: httpx.Client) -> None:
    sid = client.post("/sessions").json()["id"]
    assert_refused(send(client, "PUT", f"/sessions/{sid}", '{"work_dir": "a\\u0000b"}'), "work_dir")
    fleet = client.post("/fleets", json={"name": "f", "agent_id": scripted_agent(client)}).json()["id"]
    assert_refused(send(client, "PUT", f"/fleets/{fleet}", '{"work_dir": "\\u0000"}'), "work_dir")
    response = send(client, "POST", f"/fleets/{fleet}/run", '{"tasks": [{"message": "m", "work_dir": "x\\u0000"}]}')
    assert_refused(response, "tasks[0].work_dir")


def test_worker_count_beyond_64_bits_is_400_naming_the_bound(client: httpx.Client) -> None:
    agent = scripted_agent(client)
    response = send(client, "POST", "/fleets", json.dumps({"name": "f", "agent_id": agent, "worker_count": 2**70}))
    assert_refused(response, "worker_count")
    assert "100" in response.json()["error"]
    assert_lists_answer(client)


@pytest.mark.parametrize(("policy", "value", "bound"), [
    ("concurrency", 1_000_000, "64"), ("retries", 10**30, "100"), ("max_visits", 10**20, "10000"),
    ("timeout", 1e300, "86400"), ("backoff", 1e9, "3600"),
])
def test_absurd_policy_values_are_400_naming_the_bound(client: httpx.Client, policy: str, value: Any,
                                                       bound: str) -> None:
    body = {"name": "x", "nodes": [{"name": "clean", "kind": "function", "function": "clean", policy: value}]}
    response = send(client, "POST", "/formations", json.dumps(body))
    assert_refused(response, f"nodes[0].{policy}")
    assert bound in response.json()["error"]


def test_nan_and_infinity_are_not_json(client: httpx.Client) -> None:
    for constant in ("NaN", "Infinity", "-Infinity"):
        response = send(client, "POST", "/sessions", f'{{"title": "t", "x": {constant}}}')
        assert response.status_code == 400, constant
        assert constant in response.json()["error"]


def test_deeply_nested_body_is_400(client: httpx.Client) -> None:
    response = send(client, "POST", "/sessions", "[" * 100_000 + "]" * 100_000)
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["error"]
