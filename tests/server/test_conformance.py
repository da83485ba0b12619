"""The HTTP API answers as its OpenAPI document says: 405 with ``Allow`` for a method a path
does not have (before any other check), strict JSON types, and the constraints the server
enforces declared in the document. Each test reproduces a finding of schemathesis."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.server.harness import scripted_agent


@pytest.fixture
def doc(client: httpx.Client) -> dict[str, Any]:
    return dict(client.get("/openapi.json").json())


@pytest.fixture
def bare(client: httpx.Client) -> Iterator[httpx.Client]:
    """A client that sends no Content-Type, as a conformance tool probing methods does."""
    with httpx.Client(base_url=str(client.base_url), timeout=30) as c:
        yield c


def test_a_put_on_a_path_without_put_is_405_not_415(bare: httpx.Client) -> None:
    response = bare.put("/agents")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST"


def test_a_405_lists_every_method_of_the_path_in_allow(client: httpx.Client) -> None:
    agent = client.post("/agents", json={"name": "allowed"}).json()["id"]
    response = client.options(f"/agents/{agent}")
    assert response.status_code == 405
    assert response.headers["allow"] == "DELETE, GET, PUT"
    assert "OPTIONS" in response.json()["error"]


def test_a_405_comes_before_the_json_body_check(bare: httpx.Client) -> None:
    response = bare.post("/health", content=b"x", headers={"Content-Type": "text/plain"})
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"


def test_a_boolean_is_not_an_integer(client: httpx.Client) -> None:
    agent = scripted_agent(client)
    response = client.post("/fleets", json={"name": "f", "agent_id": agent, "worker_count": False})
    assert response.status_code == 400
    assert response.json()["fields"] == ["worker_count"]


def test_a_whole_number_written_with_a_point_is_an_integer(client: httpx.Client) -> None:
    agent = scripted_agent(client)
    response = client.post("/fleets", json={"name": "f", "agent_id": agent, "worker_count": 4.0})
    assert response.status_code == 201
    assert response.json()["worker_count"] == 4


def test_a_fraction_is_not_an_integer(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "a", "max_delegation_depth": 2.5})
    assert response.status_code == 400
    assert response.json()["fields"] == ["max_delegation_depth"]


def test_a_string_is_not_a_number(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "a", "max_delegation_depth": "2"})
    assert response.status_code == 400
    assert response.json()["fields"] == ["max_delegation_depth"]


def test_integer_bounds_are_declared_as_minimum_and_maximum(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    count = schemas["FleetUpdate"]["properties"]["worker_count"]
    assert (count["minimum"], count["maximum"]) == (0, 100)
    visits = next(s for s in schemas["PoliciesDecl"]["properties"]["max_visits"]["anyOf"] if s["type"] == "integer")
    assert (visits["minimum"], visits["maximum"]) == (1, 10000)
    budget = next(s for s in schemas["AgentUpdate"]["properties"]["context_budget"]["anyOf"] if s["type"] == "integer")
    assert budget["minimum"] == 256


def test_path_fields_declare_that_they_hold_no_nul(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    for model, field in (("SessionCreate", "work_dir"), ("FleetCreate", "work_dir"), ("TaskIn", "work_dir")):
        text = next(s for s in schemas[model]["properties"][field]["anyOf"] if s["type"] == "string")
        assert text["pattern"] == "^[^\\x00]*$", (model, text)


def test_provider_ids_in_paths_are_declared_as_the_registered_ids(doc: dict[str, Any]) -> None:
    param = doc["paths"]["/provider/auth/{provider}"]["delete"]["parameters"][0]
    assert param["schema"]["enum"] == ["anthropic", "ollama", "openai", "replay", "scripted"]


def test_the_run_status_filter_is_declared_as_an_enum(doc: dict[str, Any]) -> None:
    status = next(p for p in doc["paths"]["/runs"]["get"]["parameters"] if p["name"] == "status")
    schema = next(s for s in status["schema"]["anyOf"] if s.get("type") == "string")
    assert "suspended" in schema["enum"] and "" not in schema["enum"]


def test_agent_tools_are_declared_as_the_names_the_server_knows(doc: dict[str, Any]) -> None:
    tools = doc["components"]["schemas"]["AgentCreate"]["properties"]["tools"]
    assert tools["uniqueItems"] is True
    assert {"read", "bash", "ask_human"} <= set(tools["items"]["enum"])


def test_agent_delegates_are_declared_as_distinct_non_empty_ids_as_the_server_enforces(doc: dict[str, Any]) -> None:
    # the server refuses an id listed twice (400 naming delegates[i]); the document must say so
    schemas = doc["components"]["schemas"]
    create = schemas["AgentCreate"]["properties"]["delegates"]
    update = next(s for s in schemas["AgentUpdate"]["properties"]["delegates"]["anyOf"] if s.get("type") == "array")
    for declared in (create, update):
        assert declared["uniqueItems"] is True
        assert declared["items"] == {"type": "string", "minLength": 1}


def test_an_empty_delegate_id_is_400_naming_it_as_too_short(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "lead", "delegates": [""]})

    assert response.status_code == 400
    assert response.json()["fields"] == ["delegates[0]"]
    assert "itself" not in response.json()["error"]


def test_update_fields_that_cannot_be_cleared_are_not_declared_nullable(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    assert schemas["AgentUpdate"]["properties"]["name"]["type"] == "string"
    assert schemas["FleetUpdate"]["properties"]["worker_count"]["type"] == "integer"


def test_a_fleet_naming_an_unknown_agent_documents_its_404(doc: dict[str, Any]) -> None:
    assert "404" in doc["paths"]["/fleets"]["post"]["responses"]


def test_posts_without_a_body_declare_the_json_body_they_need(doc: dict[str, Any]) -> None:
    for path in ("/sessions", "/runs/{id}/cancel", "/sessions/{id}/abort"):
        body = doc["paths"][path]["post"]["requestBody"]
        assert body["required"] is True, path
        assert list(body["content"]) == ["application/json"], path


def test_streaming_routes_document_server_sent_events(doc: dict[str, Any]) -> None:
    for path in ("/sessions/{id}/message/stream", "/fleets/{id}/run/stream", "/formations/{id}/run/stream"):
        assert list(doc["paths"][path]["post"]["responses"]["200"]["content"]) == ["text/event-stream"], path


def test_streaming_routes_describe_each_event_as_its_name_and_json_data(doc: dict[str, Any]) -> None:
    import jsonschema

    # (OpenAPI 3.1: an event stream's `schema` describes one event; schemathesis checks each)
    event = {"event": "end", "data": '{"run_id": "01J"}'}
    streams = 0
    for operations in doc["paths"].values():
        for operation in operations.values():
            content = operation["responses"].get("200", {}).get("content", {})
            if "text/event-stream" in content:
                streams += 1
                jsonschema.validate(event, content["text/event-stream"]["schema"])
                with pytest.raises(jsonschema.ValidationError):
                    jsonschema.validate({"event": "end", "data": 3}, content["text/event-stream"]["schema"])
    assert streams == 4  # a session message, a fleet run, a formation run, the viewer's run events


def test_the_document_states_the_rules_of_every_body(doc: dict[str, Any]) -> None:
    assert "lone UTF-16 surrogate" in doc["info"]["description"]
    assert "64 levels" in doc["info"]["description"]


def test_an_unreachable_provider_is_a_documented_502(doc: dict[str, Any]) -> None:
    answer = doc["paths"]["/provider/{id}/models"]["get"]["responses"]["502"]
    assert "network" in answer["description"]


def test_a_formation_named_only_by_a_character_python_counts_as_whitespace_is_400_not_500(
    client: httpx.Client,
) -> None:
    # U+0085 (next line) is not whitespace to JSON Schema's patterns, but Formation() refuses it
    response = client.post("/formations", json={"name": "\u0085", "nodes": [
        {"kind": "function", "name": "a", "function": "shout"}]})
    assert response.status_code == 400
    assert "non-empty name" in response.json()["error"]


def test_the_viewers_run_filter_declares_the_run_statuses(doc: dict[str, Any]) -> None:
    params = doc["paths"]["/ui/api/runs"]["get"]["parameters"]
    status = next(p for p in params if p["name"] == "status")
    assert {"type": "string", "enum": ["running", "succeeded", "failed", "cancelled", "suspended", "interrupted",
                                       "expired"]} in status["schema"]["anyOf"]
