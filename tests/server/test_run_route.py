"""``POST /formations/{id}/run``, declared on the app's own router (add_run_route), meets
every check in the order the other routes do, and keeps its place in the OpenAPI document."""

from __future__ import annotations

import httpx

from tests.server.test_formations import create, single


def test_another_method_on_the_run_route_is_405_with_allow_before_the_id_is_looked_up(client: httpx.Client) -> None:
    response = client.get("/formations/no-such-formation/run")
    assert response.status_code == 405, response.text
    assert response.headers["allow"] == "POST"
    assert "method GET is not allowed on /formations/no-such-formation/run" in response.json()["error"]


def test_a_run_without_a_json_body_type_is_415(client: httpx.Client) -> None:
    with httpx.Client(base_url=str(client.base_url), timeout=30) as bare:
        response = bare.post("/formations/x/run", content=b"input=1",
                             headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status_code == 415, response.text


def test_a_run_of_an_unknown_formation_is_404_and_a_bad_body_400_naming_the_field(client: httpx.Client) -> None:
    missing = client.post("/formations/no-such-formation/run", json={"input": 1})
    assert missing.status_code == 404, missing.text
    assert "no-such-formation" in missing.json()["error"]
    bad = client.post("/formations/no-such-formation/run", json={"input": 1, "timeout": False})
    assert bad.status_code == 400, bad.text
    assert bad.json()["fields"] == ["timeout"]


def test_a_run_answers_its_record(client: httpx.Client) -> None:
    fid = create(client, single())
    response = client.post(f"/formations/{fid}/run", json={"input": "  padded  "})
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "succeeded" and response.json()["formation_id"] == fid


def test_the_run_route_is_documented_first_with_its_body_and_answers(client: httpx.Client) -> None:
    document = client.get("/openapi.json").json()
    assert next(iter(document["paths"])) == "/formations/{id}/run"
    operation = document["paths"]["/formations/{id}/run"]["post"]
    assert operation["tags"] == ["formations"]
    assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/FormationRunIn")
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/RunOut")
