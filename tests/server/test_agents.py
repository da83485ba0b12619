"""``/agents``: create, list, get, partial update, delete, and the 400s naming fields."""

from __future__ import annotations

import re

import httpx

ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

FULL = {
    "name": "Assistant",
    "instructions": "Be helpful and concise.",
    "tools": ["read", "grep"],
    "provider": "scripted",
    "model": "scripted-1",
    "options": {"replies": ["hi"], "max_tokens": 512},
    "output_schema": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
}


def test_create_returns_201_with_every_field_an_id_and_timestamps(client: httpx.Client) -> None:
    response = client.post("/agents", json=FULL)
    assert response.status_code == 201
    agent = response.json()
    assert {k: agent[k] for k in FULL} == FULL
    assert ULID.match(agent["id"])
    assert RFC3339.match(agent["created_at"]) and agent["updated_at"] == agent["created_at"]


def test_created_agent_is_listed_and_readable(client: httpx.Client) -> None:
    agent = client.post("/agents", json={"name": "listed"}).json()
    assert agent["id"] in [a["id"] for a in client.get("/agents").json()]
    assert client.get(f"/agents/{agent['id']}").json() == agent


def test_minimal_agent_gets_empty_defaults(client: httpx.Client) -> None:
    agent = client.post("/agents", json={"name": "bare"}).json()
    assert (agent["instructions"], agent["tools"], agent["provider"], agent["options"]) == ("", [], None, {})


def test_update_changes_only_the_fields_given(client: httpx.Client) -> None:
    agent = client.post("/agents", json=FULL).json()
    response = client.put(f"/agents/{agent['id']}", json={"instructions": "Be thorough.", "tools": ["read"]})
    assert response.status_code == 200
    updated = response.json()
    assert updated["instructions"] == "Be thorough."
    assert updated["tools"] == ["read"]
    assert updated["name"] == FULL["name"] and updated["options"] == FULL["options"]
    assert client.get(f"/agents/{agent['id']}").json() == updated


def test_update_with_null_clears_the_output_schema(client: httpx.Client) -> None:
    agent = client.post("/agents", json=FULL).json()
    updated = client.put(f"/agents/{agent['id']}", json={"output_schema": None}).json()
    assert updated["output_schema"] is None


def test_update_refuses_a_null_name(client: httpx.Client) -> None:
    agent = client.post("/agents", json={"name": "named"}).json()
    response = client.put(f"/agents/{agent['id']}", json={"name": None})
    assert response.status_code == 400
    assert response.json()["fields"] == ["name"]


def test_update_is_validated_like_create(client: httpx.Client) -> None:
    agent = client.post("/agents", json={"name": "checked"}).json()
    response = client.put(f"/agents/{agent['id']}", json={"tools": ["teleport"]})
    assert response.status_code == 400
    assert client.get(f"/agents/{agent['id']}").json()["tools"] == []


def test_delete_removes_the_agent(client: httpx.Client) -> None:
    agent = client.post("/agents", json={"name": "doomed"}).json()
    assert client.delete(f"/agents/{agent['id']}").json() == {"status": "deleted"}
    assert client.get(f"/agents/{agent['id']}").status_code == 404


def test_unknown_agent_id_is_404_on_every_route(client: httpx.Client) -> None:
    for response in (client.get("/agents/nope"), client.put("/agents/nope", json={"name": "x"}),
                     client.delete("/agents/nope")):
        assert response.status_code == 404
        assert response.json() == {"error": "agent not found: nope"}


def test_malformed_json_is_400(client: httpx.Client) -> None:
    response = client.post("/agents", content=b'{"name": ', headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"].startswith("malformed JSON body")


def test_body_sent_without_content_type_is_read_as_json(client: httpx.Client) -> None:
    response = client.post("/agents", content=b'{"name": "no-header"}')
    assert response.status_code == 201


def test_body_with_a_form_or_text_content_type_is_415(client: httpx.Client) -> None:
    for content_type in ("application/x-www-form-urlencoded", "text/plain"):
        response = client.post("/agents", content=b'{"name": "csrf"}', headers={"content-type": content_type})
        assert response.status_code == 415
        assert "application/json" in response.json()["error"]


def test_json_content_type_with_charset_is_accepted(client: httpx.Client) -> None:
    response = client.post("/agents", content=b'{"name": "utf8"}',
                           headers={"content-type": "application/json; charset=utf-8"})
    assert response.status_code == 201


def test_missing_name_is_400_naming_the_field(client: httpx.Client) -> None:
    response = client.post("/agents", json={"instructions": "x"})
    assert response.status_code == 400
    assert response.json()["fields"] == ["name"]
    assert "name" in response.json()["error"]


def test_wrong_types_are_400_naming_each_field(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "x", "tools": "bash", "options": [1]})
    assert response.status_code == 400
    assert set(response.json()["fields"]) == {"tools", "options"}


def test_unknown_field_is_400_naming_it(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "x", "promt": "typo"})
    assert response.status_code == 400
    assert response.json()["fields"] == ["promt"]
    assert "unknown field" in response.json()["error"]


def test_body_that_is_not_an_object_is_400(client: httpx.Client) -> None:
    response = client.post("/agents", json=["name"])
    assert response.status_code == 400


def test_unknown_tool_is_400_listing_the_built_ins(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "x", "tools": ["read", "teleport"]})
    assert response.status_code == 400
    assert response.json()["fields"] == ["tools"]
    assert "webfetch" in response.json()["error"]


def test_unknown_provider_is_400_naming_the_field(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "x", "provider": "acme"})
    assert response.status_code == 400
    assert response.json()["fields"] == ["provider"]


def test_options_the_provider_refuses_are_400(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "x", "provider": "scripted", "options": {"bogus": 1}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["options"]
    assert "bogus" in response.json()["error"]


def test_a_boolean_option_where_the_provider_takes_a_number_is_400(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "x", "provider": "scripted", "options": {"max_tokens": True}})

    assert response.status_code == 400
    assert response.json()["fields"] == ["options"]
    assert "max_tokens: a boolean is not a number" in response.json()["error"]


def test_a_string_option_where_the_provider_takes_a_number_is_400(client: httpx.Client) -> None:
    # JSON types are strict on every route, inside options too: "0.5" is not 0.5.
    response = client.post("/agents", json={"name": "x", "provider": "openai", "model": "m",
                                            "options": {"temperature": "0.5"}})

    assert response.status_code == 400
    assert response.json()["fields"] == ["options"]
    assert "temperature: a string is not a number" in response.json()["error"]


def test_api_key_in_options_is_refused_pointing_to_the_auth_store(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "x", "provider": "anthropic", "options": {"api_key": "sk"}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["options.api_key"]
    assert "PUT /provider/auth" in response.json()["error"]


def test_output_schema_that_is_not_json_schema_is_400(client: httpx.Client) -> None:
    response = client.post("/agents", json={"name": "x", "output_schema": {"type": "banana"}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["output_schema"]
