"""Names declared over HTTP (agents, fleets, formations, formation nodes) must have a visible
character: a name of whitespace only is a 400 naming the field, as the OpenAPI document says."""

from __future__ import annotations

import re
import sys
from typing import Any

import httpx
import pytest

from tests.server.harness import scripted_agent
from wingman_actors.server._names import SPACES

BLANKS = ("   ", "\t\n", "\u00a0", "\u0085", "\u3000 ")


def assert_blank_name_refused(response: httpx.Response, field: str = "name") -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["fields"] == [field]
    assert f"{field}:" in body["error"] and "whitespace" in body["error"]


@pytest.mark.parametrize("name", BLANKS)
def test_an_agent_named_by_whitespace_only_is_400_naming_the_field(client: httpx.Client, name: str) -> None:
    assert_blank_name_refused(client.post("/agents", json={"name": name, "provider": "scripted"}))


def test_renaming_an_agent_to_whitespace_is_400_and_keeps_its_name(client: httpx.Client) -> None:
    agent = scripted_agent(client, name="kept")
    assert_blank_name_refused(client.put(f"/agents/{agent}", json={"name": "  "}))
    assert client.get(f"/agents/{agent}").json()["name"] == "kept"


def test_a_fleet_named_by_whitespace_only_is_400_naming_the_field(client: httpx.Client) -> None:
    agent = scripted_agent(client)
    assert_blank_name_refused(client.post("/fleets", json={"name": " \t ", "agent_id": agent}))


def test_renaming_a_fleet_to_whitespace_is_400_and_keeps_its_name(client: httpx.Client) -> None:
    agent = scripted_agent(client)
    fleet = client.post("/fleets", json={"name": "kept", "agent_id": agent}).json()["id"]
    assert_blank_name_refused(client.put(f"/fleets/{fleet}", json={"name": "\n"}))
    assert client.get(f"/fleets/{fleet}").json()["name"] == "kept"


def test_a_formation_named_by_whitespace_only_is_refused_the_same_way(client: httpx.Client) -> None:
    node = {"kind": "function", "name": "a", "function": "shout"}
    assert_blank_name_refused(client.post("/formations", json={"name": "  ", "nodes": [node]}))


def test_a_formation_node_named_by_whitespace_only_is_400_naming_it(client: httpx.Client) -> None:
    node = {"kind": "function", "name": " ", "function": "shout"}
    response = client.post("/formations", json={"name": "ok", "nodes": [node]})
    assert_blank_name_refused(response, "nodes[0].name")


def test_a_name_with_surrounding_spaces_is_kept_as_given(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "  padded  ", "provider": "scripted"})
    assert response.status_code == 201
    assert response.json()["name"] == "  padded  "


def _name_schemas(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    schemas = doc["components"]["schemas"]
    out = {}
    for model in ("AgentCreate", "AgentUpdate", "FleetCreate", "FleetUpdate", "FormationDecl", "NodeDecl"):
        prop = schemas[model]["properties"]["name"]
        out[model] = prop.get("anyOf", [prop])[0]
    return out


def test_the_openapi_document_says_every_name_needs_a_visible_character(client: httpx.Client) -> None:
    for model, schema in _name_schemas(client.get("/openapi.json").json()).items():
        pattern = re.compile(schema["pattern"])
        assert not any(pattern.search(blank) for blank in BLANKS), model
        assert pattern.search(" a ") and schema["minLength"] == 1, model


def test_the_names_pattern_spells_out_every_character_python_counts_as_whitespace() -> None:
    assert set(SPACES) == {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
