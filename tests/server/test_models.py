"""``GET /provider/{id}/models`` and ``/models/{model}``: asked of the provider's own endpoint
(loopback servers speaking Anthropic's, OpenAI's and Ollama's wire formats)."""

from __future__ import annotations

import httpx

from tests.support.loopback import LoopbackServer, Reply, Request, free_port

ANTHROPIC_MODELS = {
    "data": [
        {"type": "model", "id": "claude-sonnet-4-6", "display_name": "Claude Sonnet 4.6",
         "created_at": "2026-02-17T00:00:00Z"},
        {"type": "model", "id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5",
         "created_at": "2025-10-01T00:00:00Z"},
    ],
    "has_more": False, "first_id": "claude-sonnet-4-6", "last_id": "claude-haiku-4-5",
}
OPENAI_MODELS = {"object": "list", "data": [
    {"id": "qwen2.5-7b", "object": "model", "created": 1721596428, "owned_by": "vllm"},
    {"id": "meta-llama/Llama-3.1-8B", "object": "model", "created": 1721596429, "owned_by": "vllm"},
]}
OLLAMA_TAGS = {"models": [
    {"name": "llama3.2:latest", "model": "llama3.2:latest", "modified_at": "2025-05-01T12:00:00.123456-07:00",
     "size": 2019393189, "digest": "a80c4f17acd5", "details": {"family": "llama"}},
]}


def agent(client: httpx.Client, provider: str, base_url: str, **options: object) -> str:
    body = {"name": "m", "provider": provider, "model": "x", "options": {"base_url": base_url, **options}}
    response = client.post("/agents", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_anthropic_models_come_from_its_models_list_with_the_stored_key(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    def answer(request: Request) -> Reply:
        assert request.path.startswith("/v1/models"), request.path
        return Reply.json(ANTHROPIC_MODELS)

    loopback.handler = answer
    client.put("/provider/auth", json={"providers": {"anthropic": {"key": "sk-ant-stored-key-1"}}})
    response = client.get("/provider/anthropic/models", params={"agent_id": agent(client, "anthropic", loopback.url)})
    assert response.status_code == 200, response.text
    assert response.json() == [
        {"id": "claude-haiku-4-5", "name": "Claude Haiku 4.5", "provider": "anthropic",
         "created_at": "2025-10-01T00:00:00.000Z"},
        {"id": "claude-sonnet-4-6", "name": "Claude Sonnet 4.6", "provider": "anthropic",
         "created_at": "2026-02-17T00:00:00.000Z"},
    ]
    headers = loopback.requests[-1].headers  # the SDK sends the key as x-api-key or as a bearer token
    assert "sk-ant-stored-key-1" in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))


def test_openai_compatible_models_come_from_v1_models(client: httpx.Client, loopback: LoopbackServer) -> None:
    loopback.handler = lambda req: Reply.json(OPENAI_MODELS) if req.path == "/v1/models" else Reply(404)
    aid = agent(client, "openai", loopback.url + "/v1")
    listed = client.get("/provider/openai/models", params={"agent_id": aid})
    assert [m["id"] for m in listed.json()] == ["meta-llama/Llama-3.1-8B", "qwen2.5-7b"]
    assert listed.json()[1]["created_at"] == "2024-07-21T21:13:48.000Z"
    one = client.get("/provider/openai/models/meta-llama/Llama-3.1-8B", params={"agent_id": aid})
    assert one.status_code == 200
    assert one.json()["id"] == "meta-llama/Llama-3.1-8B"


def test_ollama_models_come_from_api_tags(client: httpx.Client, loopback: LoopbackServer) -> None:
    loopback.handler = lambda req: Reply.json(OLLAMA_TAGS) if req.path == "/api/tags" else Reply(404)
    response = client.get("/provider/ollama/models", params={"agent_id": agent(client, "ollama", loopback.url)})
    assert response.json() == [{"id": "llama3.2:latest", "name": "llama3.2:latest", "provider": "ollama",
                                "created_at": "2025-05-01T19:00:00.123Z"}]


def test_a_model_the_provider_does_not_offer_is_404_listing_those_it_does(
    client: httpx.Client, loopback: LoopbackServer
) -> None:
    loopback.handler = lambda req: Reply.json(OLLAMA_TAGS)
    aid = agent(client, "ollama", loopback.url)
    response = client.get("/provider/ollama/models/mistral", params={"agent_id": aid})
    assert response.status_code == 404
    assert "llama3.2:latest" in response.json()["error"]


def test_unreachable_provider_is_502(client: httpx.Client) -> None:
    aid = agent(client, "ollama", f"http://127.0.0.1:{free_port()}")
    response = client.get("/provider/ollama/models", params={"agent_id": aid})
    assert response.status_code == 502
    assert response.json()["kind"] == "network"


def test_a_provider_refusing_the_key_is_502_invalid(client: httpx.Client, loopback: LoopbackServer) -> None:
    loopback.handler = lambda req: Reply.json({"error": {"message": "bad key"}}, status=401)
    aid = agent(client, "openai", loopback.url)
    response = client.get("/provider/openai/models", params={"agent_id": aid})
    assert response.status_code == 502
    assert (response.json()["kind"], response.json()["provider_status"]) == ("invalid", 401)


def test_offline_providers_offer_their_one_model(client: httpx.Client) -> None:
    assert [m["id"] for m in client.get("/provider/scripted/models").json()] == ["scripted"]


def test_unknown_provider_and_mismatched_agent_are_refused(client: httpx.Client, loopback: LoopbackServer) -> None:
    assert client.get("/provider/acme/models").status_code == 404
    response = client.get("/provider/openai/models", params={"agent_id": agent(client, "ollama", loopback.url)})
    assert response.status_code == 400
    assert response.json()["fields"] == ["agent_id"]
    assert client.get("/provider/openai/models", params={"agent_id": "nope"}).status_code == 404
