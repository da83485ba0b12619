"""The OpenAPI document tells the truth about errors, and /docs works offline."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.harness import scripted_agent


@pytest.fixture
def doc(client: httpx.Client) -> dict[str, Any]:
    return dict(client.get("/openapi.json").json())


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, ops in doc["paths"].items() for method, op in ops.items()]


def test_no_operation_documents_the_unused_422(doc: dict[str, Any]) -> None:
    assert all("422" not in op["responses"] for _, _, op in operations(doc))
    assert "HTTPValidationError" not in doc["components"]["schemas"]


def test_errors_use_the_error_schema_with_fields(doc: dict[str, Any]) -> None:
    schema = doc["components"]["schemas"]["ErrorOut"]
    assert schema["required"] == ["error"]
    assert {"fields", "problems", "kind", "run_id"} <= set(schema["properties"])
    bad = doc["paths"]["/agents"]["post"]["responses"]["400"]
    assert bad["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorOut"}


def test_each_route_lists_the_errors_it_can_answer(doc: dict[str, Any]) -> None:
    for path, method, op in operations(doc):
        codes = set(op["responses"])
        assert ("415" in codes) == (method in ("post", "put", "patch")), (method, path)
        names_a_record = (method, path) == ("post", "/fleets")  # its agent_id
        assert ("404" in codes) == ("{" in path or names_a_record), (method, path)
    message = doc["paths"]["/sessions/{id}/message"]["post"]["responses"]
    assert {"400", "404", "415", "502", "504"} <= set(message)
    assert "500" in doc["paths"]["/formations/{id}/run"]["post"]["responses"]
    assert "401" not in doc["paths"]["/agents"]["get"]["responses"]  # this server has no token


def test_cancel_and_resume_list_their_conflicts_and_resume_the_errors_of_a_run(doc: dict[str, Any]) -> None:
    cancel = doc["paths"]["/runs/{id}/cancel"]["post"]["responses"]
    resume = doc["paths"]["/runs/{id}/resume"]["post"]["responses"]
    assert {"200", "404", "409"} <= set(cancel) and "500" not in cancel
    assert {"200", "400", "404", "409", "500", "502", "503", "504"} <= set(resume)
    assert "409" in doc["paths"]["/formations/{id}/run"]["post"]["responses"]
    for responses in (cancel, resume):
        assert responses["409"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorOut"}
    assert "run_status" in doc["components"]["schemas"]["ErrorOut"]["properties"]
    statuses = doc["components"]["schemas"]["RunOut"]["properties"]["status"]["enum"]
    assert {"suspended", "interrupted", "expired"} <= set(statuses)


def test_created_records_have_a_location(doc: dict[str, Any], client: httpx.Client) -> None:
    for path in ("/agents", "/sessions", "/fleets", "/formations"):
        assert "Location" in doc["paths"][path]["post"]["responses"]["201"]["headers"], path
    agent = scripted_agent(client)
    created = {
        "/sessions": client.post("/sessions"),
        "/fleets": client.post("/fleets", json={"name": "f", "agent_id": agent}),
        "/formations": client.post("/formations", json={"name": "x", "nodes": [
            {"name": "clean", "kind": "function", "function": "clean"}]}),
        "/agents": client.post("/agents", json={"name": "a"}),
    }
    for path, response in created.items():
        assert response.status_code == 201, response.text
        assert response.headers["location"] == f"{path}/{response.json()['id']}"
        assert client.get(response.headers["location"]).json()["id"] == response.json()["id"]


def test_docs_page_loads_its_assets_from_the_server_not_a_cdn(client: httpx.Client) -> None:
    page = client.get("/docs")
    assert page.status_code == 200
    sources = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page.text)
    scripts = re.findall(r"""['"]([^'"]+\.(?:js|css))['"]""", page.text)
    assert scripts, page.text
    for url in {*sources, *scripts}:
        assert not url.startswith(("http://", "https://", "//")), url
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert len(asset.content) > 1000, url


API_MD = Path(__file__).resolve().parents[2] / "wingman_actors" / "server" / "API.md"


@pytest.mark.parametrize("schema", ["NodeDecl", "PoliciesDecl", "EdgeDecl"])
def test_api_md_documents_every_field_of_a_formation_declaration(doc: dict[str, Any], schema: str) -> None:
    fields = set(doc["components"]["schemas"][schema]["properties"])
    text = API_MD.read_text(encoding="utf-8")

    assert sorted(f for f in fields if f'`{f}`' not in text and f'"{f}"' not in text) == []
