"""A POST whose JSON body has only optional fields takes no body at all as ``{}``: no body, or
``Content-Length: 0`` (with ``Content-Type: application/json``, which every POST needs). A body
that is there but is not a JSON object is still the documented 400."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.server.harness import scripted_agent
from tests.server.test_peer_sse_server import formation
from wingman_actors.server._viewer_store import create_store_viewer
from wingman_actors.store import RunStore

JSON = {"Content-Type": "application/json"}
EMPTY = {"no body": {}, "Content-Length 0": {"content": b""}}


def agent_formation(client: httpx.Client, name: str) -> str:
    agent = scripted_agent(client, "done", "done", "done", "done")
    response = client.post("/formations", json={"name": name, "nodes": [
        {"name": "say", "kind": "agent", "agent_id": agent}]})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@pytest.mark.parametrize("empty", EMPTY)
def test_a_formation_run_without_a_body_runs_as_with_an_empty_object(client: httpx.Client, empty: str) -> None:
    fid = agent_formation(client, f"no-body-{len(empty)}")

    response = client.post(f"/formations/{fid}/run", headers=JSON, **EMPTY[empty])

    assert response.status_code == 200, response.text
    assert (response.json()["status"], response.json()["output"]) == ("succeeded", "done")


@pytest.mark.parametrize("empty", EMPTY)
def test_a_streamed_formation_run_without_a_body_streams_as_with_an_empty_object(client: httpx.Client,
                                                                                  empty: str) -> None:
    fid = agent_formation(client, f"no-body-stream-{len(empty)}")

    with client.stream("POST", f"/formations/{fid}/run/stream", headers=JSON, **EMPTY[empty]) as response:
        text = response.read().decode()

    assert response.status_code == 200, text
    assert "event: run_finished" in text


@pytest.mark.parametrize("empty", EMPTY)
def test_a_resume_without_a_body_resumes_as_with_an_empty_object(client: httpx.Client, empty: str) -> None:
    fid = formation(client, "ask", name=f"asks-{len(empty)}")
    bare, given = (client.post(f"/formations/{fid}/run", json={"input": "draft"}).json()["id"] for _ in range(2))
    assert client.get(f"/runs/{bare}").json()["status"] == "suspended"

    resumed = client.post(f"/runs/{bare}/resume", headers=JSON, **EMPTY[empty])
    twin = client.post(f"/runs/{given}/resume", json={})

    assert resumed.status_code == twin.status_code == 200, resumed.text
    assert (resumed.json()["status"], resumed.json()["interrupt"]) == (twin.json()["status"], twin.json()["interrupt"])
    assert resumed.json()["nodes"]["ask"]["visits"] == twin.json()["nodes"]["ask"]["visits"]


@pytest.mark.parametrize("path", ["/sessions", "/runs/{run}/cancel", "/sessions/{session}/abort"])
@pytest.mark.parametrize("empty", EMPTY)
def test_the_other_posts_without_required_fields_take_no_body(client: httpx.Client, path: str, empty: str) -> None:
    session = client.post("/sessions", json={}).json()["id"]
    fid = formation(client, "ask", name=f"to-cancel-{len(empty)}-{len(path)}")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "draft"}).json()["id"]

    response = client.post(path.format(run=run_id, session=session), headers=JSON, **EMPTY[empty])

    assert response.status_code in (200, 201), response.text


@pytest.mark.parametrize("path", ["/formations/{fid}/run", "/formations/{fid}/run/stream", "/runs/{run}/resume"])
@pytest.mark.parametrize(("body", "words"), [
    (b"not json", "malformed JSON body"), (b"  ", "malformed JSON body"), (b"[]", "must be a JSON object"),
    (b"null", "must be a JSON object"),
])
def test_a_body_that_is_there_but_not_a_json_object_is_still_a_400(
    client: httpx.Client, path: str, body: bytes, words: str
) -> None:
    fid = formation(client, "ask", name=f"bad-body-{len(path)}-{len(body)}")
    run_id = client.post(f"/formations/{fid}/run", json={"input": "draft"}).json()["id"]

    response = client.post(path.format(fid=fid, run=run_id), headers=JSON, content=body)

    assert response.status_code == 400, response.text
    assert words in response.json()["error"]
    assert client.get(f"/runs/{run_id}").json()["status"] == "suspended"


def test_without_a_json_content_type_an_empty_post_is_still_a_415(client: httpx.Client) -> None:
    fid = formation(client, "clean", name="no-type")

    response = client.post(f"/formations/{fid}/run", headers={"Content-Type": ""})

    assert response.status_code == 415


# -- wingman-actors ui: the store viewer -------------------------------------------------------


@pytest.fixture
def store_viewer(tmp_path: Path) -> Iterator[TestClient]:
    RunStore(tmp_path / "runs.sqlite").close()
    with TestClient(create_store_viewer(tmp_path / "runs.sqlite"), base_url="http://127.0.0.1") as viewer:
        yield viewer


@pytest.mark.parametrize("path", ["/ui/api/formations/nothing/runs", "/ui/api/runs/01UNKNOWN/resume",
                                  "/ui/api/runs/01UNKNOWN/cancel"])
@pytest.mark.parametrize("empty", EMPTY)
def test_the_store_viewers_posts_answer_no_body_as_an_empty_object(store_viewer: TestClient, path: str,
                                                                   empty: str) -> None:
    bare = store_viewer.post(path, headers=JSON, **EMPTY[empty])
    given = store_viewer.post(path, headers=JSON, json={})

    assert bare.status_code == given.status_code != 400, bare.text
    assert bare.json() == given.json()
