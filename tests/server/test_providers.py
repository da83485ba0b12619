"""``/health``, the OpenAPI document, ``/provider`` and the credential store."""

from __future__ import annotations

import httpx


def test_health_answers_ok(client: httpx.Client) -> None:
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_openapi_document_lists_every_route(client: httpx.Client) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/health", "/provider", "/provider/auth", "/provider/auth/{provider}", "/provider/{id}",
                 "/agents", "/agents/{id}", "/sessions", "/sessions/{id}", "/sessions/{id}/message",
                 "/sessions/{id}/message/stream", "/sessions/{id}/abort", "/fleets", "/fleets/{id}", "/fleets/{id}/run",
                 "/fleets/{id}/run/stream", "/formations", "/formations/{id}", "/formations/{id}/run",
                 "/formations/{id}/run/stream", "/runs", "/runs/{id}"):
        assert path in paths


def test_provider_list_names_every_registered_provider(client: httpx.Client) -> None:
    providers = client.get("/provider").json()
    assert {p["id"] for p in providers} >= {"anthropic", "ollama", "openai", "scripted", "replay"}
    anthropic = next(p for p in providers if p["id"] == "anthropic")
    assert anthropic["auth_types"] == ["api_key"]
    assert set(anthropic) == {"id", "name", "auth_types", "description", "env"}


def test_provider_by_id_returns_its_metadata(client: httpx.Client) -> None:
    response = client.get("/provider/openai")
    assert response.status_code == 200
    assert response.json()["name"] == "OpenAI-compatible"


def test_unknown_provider_is_404_listing_the_known_ones(client: httpx.Client) -> None:
    response = client.get("/provider/nope")
    assert response.status_code == 404
    assert "anthropic" in response.json()["error"]


def test_stored_key_is_reported_configured_but_never_returned(client: httpx.Client) -> None:
    secret = "sk-ant-very-secret-wxyz"
    put = client.put("/provider/auth", json={"providers": {"anthropic": {"type": "api_key", "key": secret}}})
    assert put.status_code == 200
    assert put.json() == {"status": "ok"}
    response = client.get("/provider/auth")
    body = response.json()
    assert body["providers"]["anthropic"] == {"type": "api_key", "configured": True, "key_hint": "…wxyz"}
    assert body["updated_at"].endswith("Z")
    assert secret not in response.text


def test_setting_one_provider_keeps_the_others(client: httpx.Client) -> None:
    client.put("/provider/auth", json={"providers": {"openai": {"key": "sk-one"}}})
    client.put("/provider/auth", json={"providers": {"ollama": {"key": "sk-two"}}})
    assert {"openai", "ollama"} <= set(client.get("/provider/auth").json()["providers"])


def test_credential_can_be_deleted_then_is_404(client: httpx.Client) -> None:
    client.put("/provider/auth", json={"providers": {"replay": {"key": "k-1234"}}})
    assert client.delete("/provider/auth/replay").json() == {"status": "deleted"}
    assert "replay" not in client.get("/provider/auth").json()["providers"]
    again = client.delete("/provider/auth/replay")
    assert again.status_code == 404
    assert "replay" in again.json()["error"]


def test_credential_for_unknown_provider_is_400(client: httpx.Client) -> None:
    response = client.put("/provider/auth", json={"providers": {"acme": {"key": "k"}}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["providers.acme"]
    assert client.delete("/provider/auth/acme").status_code == 400


def test_credential_without_key_is_400_naming_the_field(client: httpx.Client) -> None:
    response = client.put("/provider/auth", json={"providers": {"openai": {"type": "api_key"}}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["providers.openai.key"]


def test_unknown_route_is_404_in_the_error_shape(client: httpx.Client) -> None:
    response = client.get("/nowhere")
    assert response.status_code == 404
    assert set(response.json()) == {"error"}


def test_wrong_method_is_405_in_the_error_shape(client: httpx.Client) -> None:
    response = client.delete("/health")
    assert response.status_code == 405
    assert "DELETE" in response.json()["error"]
