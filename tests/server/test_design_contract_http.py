"""DESIGN's HTTP bullets read literally, as a client that knows only DESIGN and the served
OpenAPI document would check them ("Limits that hold for agents; the server's agents":
"The HTTP API conforms to its OpenAPI document: a method a path does not have is a 405 with
`Allow`, before any other check; JSON types are strict (a boolean is not an integer); the
constraints the server enforces are declared in the document").

Complements tests/server/test_conformance.py (single findings) with checks driven by the
document itself: every path, every method it does not declare; every body field, every JSON
type it does not take."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from tests.server.harness import scripted_agent
from wingman_actors.server._viewer_store import create_store_viewer
from wingman_actors.store import RunStore


@pytest.mark.parametrize(("server_entry", "field"), [({"url": "http://127.0.0.1:9/mcp", "command": None}, "command"),
                                                   ({"command": [sys.executable, "-c", "pass"], "url": None}, "url")])
def test_an_mcp_servers_command_or_url_given_as_null_is_400_naming_that_field(
    client: httpx.Client, server_entry: dict[str, Any], field: str
) -> None:
    # the document declares both as non-nullable (an array, a string): null is the wrong JSON type
    response = client.post("/agents", json={"name": "a", "mcp": [server_entry]})

    assert response.status_code == 400, response.text
    assert response.json()["fields"] == [f"mcp[0].{field}"]
    assert "null" in response.json()["error"]


@pytest.mark.parametrize(("method", "path", "body", "field"), [
    ("PUT", "/fleets/{fleet}", {"agent_id": True}, "agent_id"),
    ("PUT", "/fleets/{fleet}", {"worker_count": True}, "worker_count"),
    ("PUT", "/fleets/{fleet}", {"worker_count": "4"}, "worker_count"),
    ("POST", "/formations", {"name": "f", "nodes": [{"name": "a", "kind": "function", "function": "clean",
                                                      "retry_on": 7}]}, "nodes[0].retry_on"),
    ("POST", "/formations", {"name": "f", "nodes": [{"name": "a", "kind": "function", "function": "clean",
                                                      "policies": {"retry_on": [True]}}]}, "nodes[0].policies.retry_on"),
])
def test_a_wrong_json_type_in_a_field_of_several_types_is_400_naming_the_field_not_pydantics_alternatives(
    client: httpx.Client, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    agent = scripted_agent(client)
    fleet = client.post("/fleets", json={"name": "f", "agent_id": agent}).json()["id"]

    response = client.request(method, path.format(fleet=fleet), json=body)

    assert response.status_code == 400, response.text
    assert response.json()["fields"] == [field]
    assert response.json()["error"].startswith(f"invalid request: {field}: ")
    assert "should be None" not in response.json()["error"]  # (pydantic's branch of null)


# -- wingman-actors ui: the same viewer over a launcher's run store ----------------------------


@pytest.fixture
def store_viewer(tmp_path: Path) -> Iterator[TestClient]:
    """The app ``wingman-actors ui --store PATH --token secret-token`` serves."""
    RunStore(tmp_path / "runs.sqlite").close()
    app = create_store_viewer(tmp_path / "runs.sqlite", token="secret-token")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("PUT", "/ui/api/runs", "GET"),
    ("POST", "/ui/api/info", "GET"),
    ("DELETE", "/ui/api/runs/01UNKNOWN", "GET"),
    ("GET", "/ui/api/runs/01UNKNOWN/cancel", "POST"),
    ("GET", "/ui/api/formations/f/runs", "POST"),
    ("PATCH", "/ui/", "GET"),
])
def test_the_store_viewer_answers_a_method_a_path_does_not_have_with_405_and_allow_before_its_token_and_body_checks(
    store_viewer: TestClient, method: str, path: str, allow: str
) -> None:
    # no token, a body that is not JSON: the 405 comes first, as on the server
    response = store_viewer.request(method, path, content=b"x", headers={"Content-Type": "text/plain"})

    assert response.status_code == 405, response.text
    assert response.headers["allow"] == allow
    assert f"method {method} is not allowed on {path}" in response.json()["error"]


def test_a_path_the_store_viewer_does_not_have_is_a_404_in_the_error_shape(store_viewer: TestClient) -> None:
    response = store_viewer.get("/ui/api/nothing", headers={"Authorization": "Bearer secret-token"})

    assert response.status_code == 404
    assert "no route GET /ui/api/nothing" in response.json()["error"]

