"""Starlette's and FastAPI's HTTP tests (encode/starlette ``tests/test_routing.py``,
``tests/test_requests.py``; fastapi/fastapi ``tests/test_query*.py``, ``tests/test_path*.py``,
``tests/test_tutorial/test_body``) ported as checks of our server: query parameters given
twice or empty, path parameters with odd characters, and what each answers.

Differences pinned here: FastAPI takes the last value of a single-valued query parameter
given twice (``?q=a&q=b`` is ``b``); we refuse it with a 400 naming the parameter, since a
filter silently narrowed to one of two values is a wrong answer. FastAPI answers a bad query
value with 422 and a ``detail`` list; we answer 400 ``{"error", "fields"}``."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from starlette.testclient import TestClient

from tests.server.harness import running, scripted_agent
from wingman_actors.server import ServerConfig
from wingman_actors.server._viewer_store import create_store_viewer
from wingman_actors.store import RunStore


def formation(client: httpx.Client, function: str, name: str = "one") -> str:
    body = {"name": name, "nodes": [{"name": "only", "kind": "function", "function": function}], "edges": []}
    response = client.post("/formations", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def assert_error(response: httpx.Response, status: int, *words: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body["error"], str)
    for word in words:
        assert word in body["error"], body
    return dict(body)


# --- repeated query parameters ------------------------------------------------------------------


def test_a_status_filter_given_twice_is_400_naming_status_never_the_last_value_alone(client: httpx.Client) -> None:
    """From fastapi tests/test_query.py::test_query_query_baz (a single-valued query parameter given
    twice; FastAPI keeps the last value, we refuse it: the list would silently hold one status's runs)."""
    ok = formation(client, "clean", name="twice-ok")
    bad = formation(client, "explode", name="twice-bad")
    assert client.post(f"/formations/{ok}/run", json={"input": "a"}).status_code == 200
    assert client.post(f"/formations/{bad}/run", json={"input": "a"}).status_code == 500

    body = assert_error(client.get("/runs?status=succeeded&status=failed"), 400, "status", "once")
    assert body["fields"] == ["status"]


def test_a_formation_filter_given_twice_is_400_naming_it(client: httpx.Client) -> None:
    """From fastapi tests/test_query.py (repeated single-valued parameter)."""
    body = assert_error(client.get("/runs", params=[("formation_id", "a"), ("formation_id", "b")]), 400,
                        "formation_id")
    assert body["fields"] == ["formation_id"]


def test_a_limit_given_twice_is_400_even_when_both_values_agree(client: httpx.Client) -> None:
    """From fastapi tests/test_query.py::test_query_int_query_42 (with ``limit`` given twice)."""
    assert_error(client.get("/runs?limit=2&limit=2"), 400, "limit")


def test_the_viewers_run_list_refuses_a_repeated_status_too(client: httpx.Client) -> None:
    """From fastapi tests/test_query.py (repeated parameter), on ``/ui/api/runs``."""
    assert_error(client.get("/ui/api/runs?status=running&status=failed"), 400, "status")


def test_a_repeated_query_parameter_a_route_does_not_read_is_ignored_as_every_unknown_one(
    client: httpx.Client,
) -> None:
    """From encode/starlette tests/test_requests.py::test_request_query_params (multi-valued params
    are the client's business): a parameter no route reads is ignored, once or twice."""
    scripted_agent(client, name="listed")
    response = client.get("/agents?tag=a&tag=b")
    assert response.status_code == 200, response.text
    assert "listed" in [a["name"] for a in response.json()]


def test_a_single_status_filter_still_lists_only_that_status(client: httpx.Client) -> None:
    """From fastapi tests/test_query.py::test_query_query_baz (one value)."""
    ok = formation(client, "clean", name="single-ok")
    bad = formation(client, "explode", name="single-bad")
    client.post(f"/formations/{ok}/run", json={"input": "a"})
    client.post(f"/formations/{bad}/run", json={"input": "a"})
    statuses = {r["status"] for r in client.get("/runs?status=failed").json()}
    assert statuses == {"failed"}


def test_an_empty_status_is_400_listing_the_statuses(client: httpx.Client) -> None:
    """From fastapi tests/test_query.py::test_query_optional (an omitted parameter is no filter;
    ``?q=``, given empty, is a value)."""
    body = assert_error(client.get("/runs?status="), 400, "unknown run status ''", "suspended")
    assert body["fields"] == ["status"]


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "abc", "1001", ""])
def test_a_limit_that_is_not_a_whole_number_in_range_is_400_naming_limit(client: httpx.Client, value: str) -> None:
    """From fastapi tests/test_query.py::test_query_int_query_42_5 and ::test_query_int_query_baz
    (FastAPI's 422; ours is a 400 naming the field)."""
    body = assert_error(client.get(f"/runs?limit={value}"), 400, "limit")
    assert body["fields"] == ["limit"]


def test_a_percent_encoded_query_value_is_decoded_before_it_is_checked(client: httpx.Client) -> None:
    """From encode/starlette tests/test_requests.py::test_request_query_params (``%20`` decoded)."""
    fid = formation(client, "clean", name="decoded")
    client.post(f"/formations/{fid}/run", json={"input": "a"})
    listed = client.get(f"/runs?status=%73ucceeded&formation_id={quote(fid)}").json()
    assert [r["formation_id"] for r in listed] == [fid]


# --- path parameters --------------------------------------------------------------------------


def test_an_id_with_percent_encoded_letters_finds_the_record(client: httpx.Client) -> None:
    """From encode/starlette tests/test_routing.py::test_url_path_for (path params are decoded)."""
    agent = scripted_agent(client, name="encoded")
    encoded = "".join(f"%{ord(ch):02X}" for ch in agent)
    response = client.get(f"/agents/{encoded}")
    assert response.status_code == 200, response.text
    assert response.json()["id"] == agent


@pytest.mark.parametrize("raw", ["a%20b", "%C3%A9", "%2E%2E", "a%00b", "x" * 300, "%F0%9F%98%80"])
def test_an_id_with_odd_characters_is_a_404_in_the_error_shape(client: httpx.Client, raw: str) -> None:
    """From fastapi tests/test_path.py (odd path parameter values): an id no record has is 404."""
    for path in (f"/agents/{raw}", f"/sessions/{raw}", f"/runs/{raw}", f"/formations/{raw}", f"/fleets/{raw}"):
        assert_error(client.get(path), 404, "not found")


def test_a_percent_encoded_slash_in_an_id_is_no_route_not_another_route(client: httpx.Client) -> None:
    """From encode/starlette tests/test_routing.py::test_router (``%2F`` in a path parameter)."""
    agent = scripted_agent(client, name="slashed")
    response = client.delete(f"/agents/{agent}%2Fx")
    assert_error(response, 404, "no route DELETE")
    assert client.get(f"/agents/{agent}").status_code == 200


def test_an_id_in_lower_case_is_another_id(client: httpx.Client) -> None:
    """From fastapi tests/test_path.py::test_path_str_foobar (a path parameter is taken as sent)."""
    agent = scripted_agent(client, name="cased")
    assert_error(client.get(f"/agents/{agent.lower()}"), 404, agent.lower())


def test_a_very_long_id_is_404_in_the_error_shape(client: httpx.Client) -> None:
    """From encode/starlette tests/test_requests.py (a long URL is still a request)."""
    assert_error(client.get("/agents/" + "A" * 20000), 404, "agent not found: AAAA")


@pytest.mark.parametrize(("path", "bare"), [
    ("/provider/scripted/models/", "/provider/scripted/models"),
    ("/provider/scripted/models/scripted/", "/provider/scripted/models/scripted"),
    ("/provider/openai/models/", "/provider/openai/models"),
])
def test_a_models_path_with_a_trailing_slash_is_the_no_route_404_naming_the_path_without_it(
    client: httpx.Client, path: str, bare: str,
) -> None:
    """From encode/starlette tests/test_routing.py::test_router (``/users/`` is not ``/users``; the
    model id is a ``{model:path}``, which a trailing slash would otherwise reach as a model ``''``, asking
    the provider first: for ``openai`` without a key a 400 about the key)."""
    assert_error(client.get(path), 404, f"no route GET {path}", f"GET {bare} is a route")


def test_the_store_viewers_run_list_refuses_a_repeated_status_as_the_servers_does(tmp_path: Path) -> None:
    """From fastapi tests/test_query.py (repeated parameter), on ``wingman-actors ui --store``'s
    ``/ui/api/runs``."""
    RunStore(tmp_path / "runs.sqlite").close()
    with TestClient(create_store_viewer(tmp_path / "runs.sqlite"), base_url="http://127.0.0.1") as viewer:
        response = viewer.get("/ui/api/runs?status=running&status=failed")
        assert response.status_code == 400, response.text
        assert response.json()["fields"] == ["status"]
        assert viewer.get("/ui/api/runs?status=running").status_code == 200


ODD_ID_ROUTES = [
    ("GET", "/provider/{odd}", None, "provider not found"), ("GET", "/provider/{odd}/models/x", None, "provider not found"),
    ("GET", "/runs/{odd}/history", None, "run not found"), ("POST", "/runs/{odd}/fork", {"at": "x", "output": 1}, "run not found"),
    ("POST", "/runs/{odd}/cancel", {}, "run not found"), ("POST", "/runs/{odd}/resume", {}, "run not found"),
    ("POST", "/sessions/{odd}/message", {"agent_id": "a", "message": "m"}, "session not found"),
    ("POST", "/sessions/{odd}/message/stream", {"agent_id": "a", "message": "m"}, "session not found"),
    ("POST", "/sessions/{odd}/abort", {}, "session not found"),
    ("POST", "/fleets/{odd}/run", {"tasks": [{"message": "x"}]}, "fleet not found"),
    ("POST", "/fleets/{odd}/run/stream", {"tasks": [{"message": "x"}]}, "fleet not found"),
    ("POST", "/formations/{odd}/run", {"input": 1}, "formation not found"),
    ("POST", "/formations/{odd}/run/stream", {"input": 1}, "formation not found"),
    ("PUT", "/sessions/{odd}", {"title": "x"}, "session not found"), ("DELETE", "/formations/{odd}", None, "formation not found"),
    ("GET", "/ui/api/runs/{odd}", None, "run not found"), ("GET", "/ui/api/runs/{odd}/stream", None, "run not found"),
]


@pytest.mark.parametrize(("method", "path", "body", "words"), ODD_ID_ROUTES)
def test_every_id_route_answers_an_odd_id_with_a_404_naming_what_was_not_found_decoded(
    client: httpx.Client, method: str, path: str, body: object, words: str,
) -> None:
    """From fastapi tests/test_path.py (path parameters with odd values) and encode/starlette
    tests/test_routing.py::test_router: the decoded id is named, streaming routes included (before any event)."""
    response = client.request(method, path.format(odd="%C3%A9%20x"), json=body)
    assert_error(response, 404, f"{words}: é x")


def test_a_formation_run_by_its_percent_encoded_id_runs_and_records_the_plain_id(client: httpx.Client) -> None:
    """From encode/starlette tests/test_routing.py::test_url_path_for (path params are decoded)."""
    fid = formation(client, "clean", name="encoded-run")
    encoded = "".join(f"%{ord(ch):02X}" for ch in fid)
    run = client.post(f"/formations/{encoded}/run", json={"input": " y "})
    assert run.status_code == 200, run.text
    assert (run.json()["formation_id"], run.json()["output"]) == (fid, "y")


def test_an_empty_body_on_resume_is_read_as_an_empty_object_and_a_body_that_is_not_json_is_400(
    client: httpx.Client,
) -> None:
    """From fastapi tests/test_tutorial/test_body/test_tutorial001.py::test_post_no_body (a 422 there: that
    body has required fields; every field of a resume is optional, so no body is ``{}``, as on POST /sessions)."""
    fid = formation(client, "ask", name="asks")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "draft"}).json()["id"]
    assert_error(client.post(f"/runs/{run_id}/resume", content=b"answer"), 400, "malformed JSON body")
    assert client.get(f"/runs/{run_id}").json()["status"] == "suspended"
    again = client.post(f"/runs/{run_id}/resume", content=b"")
    assert (again.status_code, again.json()["status"]) == (200, "suspended"), again.text  # no answer: it asks again
    resumed = client.post(f"/runs/{run_id}/resume", json={"answer": "yes"})
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["status"] == "succeeded"


CORS_ORIGIN = "http://localhost:5173"


@pytest.mark.parametrize(("headers", "status", "words"), [
    ({"Origin": "https://elsewhere.example", "Access-Control-Request-Method": "POST"}, 403,
     ("'https://elsewhere.example' are not allowed", "--cors-origin")),
    ({"Origin": CORS_ORIGIN, "Access-Control-Request-Method": "PATCH"}, 400, ("method", "GET, HEAD, POST, PUT, DELETE")),
    ({"Origin": CORS_ORIGIN, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-custom"},
     400, ("headers", "'x-custom'", "Authorization")),
])
def test_a_refused_cors_preflight_is_in_the_error_shape_a_foreign_origin_a_403(
    tmp_path: Path, headers: dict[str, str], status: int, words: tuple[str, ...],
) -> None:
    """From encode/starlette tests/middleware/test_cors.py::test_cors_disallowed_preflight (Starlette
    answers ``400 Disallowed CORS origin`` as plain text; our documented answer to a foreign origin is a
    403, and every error is ``{"error"}``)."""
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, entry_points=False,
                          cors_origins=(CORS_ORIGIN,))
    with running(config) as server, server.client() as client:
        refused = client.options("/agents", headers=headers)
        allowed = client.options("/agents", headers={"Origin": CORS_ORIGIN, "Access-Control-Request-Method": "POST"})
    assert_error(refused, status, *words)
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == CORS_ORIGIN
