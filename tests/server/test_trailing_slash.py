"""A path no route has, a route's path with a trailing slash included, is a 404 in the error
shape before any other check: never a redirect (which would drop a POST's body) nor a 415."""

from __future__ import annotations

import httpx
import pytest

from tests.server.harness import scripted_agent


def assert_no_route(response: httpx.Response, method: str, path: str) -> None:
    assert response.status_code == 404, response.text
    assert "location" not in response.headers
    assert response.json()["error"].startswith(f"no route {method} {path}")


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/runs/"), ("GET", "/agents/"), ("POST", "/agents/"), ("POST", "/sessions/"), ("POST", "/fleets/"),
    ("POST", "/formations/"), ("GET", "/provider/"), ("PUT", "/provider/auth/"),
])
def test_a_collection_path_with_a_trailing_slash_is_404(client: httpx.Client, method: str, path: str) -> None:
    assert_no_route(client.request(method, path, json={}), method, path)


def test_an_item_path_with_a_trailing_slash_is_404_for_every_method(client: httpx.Client) -> None:
    agent = scripted_agent(client, name="kept")
    for method in ("GET", "PUT", "DELETE"):
        assert_no_route(client.request(method, f"/agents/{agent}/", json={"name": "x"}), method, f"/agents/{agent}/")
    assert client.get(f"/agents/{agent}").json()["name"] == "kept"


def test_a_run_path_with_a_trailing_slash_is_404(client: httpx.Client) -> None:
    assert_no_route(client.post("/formations/x/run/", json={"input": 1}), "POST", "/formations/x/run/")
    assert_no_route(client.post("/fleets/x/run/stream/", json={"tasks": []}), "POST", "/fleets/x/run/stream/")


def test_a_trailing_slash_is_404_even_without_a_json_content_type(client: httpx.Client) -> None:
    with httpx.Client(base_url=str(client.base_url), timeout=30) as bare:
        response = bare.post("/agents/", content=b"name=x", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert_no_route(response, "POST", "/agents/")


def test_the_404_names_the_route_without_the_slash(client: httpx.Client) -> None:
    assert "POST /agents" in client.post("/agents/", json={}).json()["error"].split(";", 1)[1]


def test_the_404_of_a_method_the_path_without_the_slash_lacks_names_the_methods_it_has(client: httpx.Client) -> None:
    error = client.put("/runs/", json={}).json()["error"]
    assert "/runs is a route for GET" in error and "PUT /runs is" not in error


def test_a_path_no_route_has_is_404_with_the_error_shape(client: httpx.Client) -> None:
    response = client.post("/nowhere", json={})
    assert_no_route(response, "POST", "/nowhere")
    assert "openapi.json" in response.json()["error"]
