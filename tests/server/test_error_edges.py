"""Formation declarations over HTTP: error edges (``"on_error": true``) and the retry
policy (``retry_on`` by exception name, ``max_backoff``, ``jitter``)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.server.test_formations import create


def guarded(**policies: Any) -> dict[str, Any]:
    """``boom`` (always fails) → ``shout``, and ``boom`` → ``explain`` on error."""
    return {
        "name": "guarded",
        "nodes": [
            {"name": "boom", "kind": "function", "function": "explode", **policies},
            {"name": "shout", "kind": "function", "function": "shout"},
            {"name": "explain", "kind": "function", "function": "explain_failure"},
        ],
        "edges": [{"from": "boom", "to": "shout"}, {"from": "boom", "to": "explain", "on_error": True}],
    }


def test_an_error_edge_takes_the_failure_and_the_run_succeeds(client: httpx.Client) -> None:
    fid = create(client, guarded(retries=2, backoff=0, retry_on=["ValueError"], max_backoff=1, jitter=False))
    run = client.post(f"/formations/{fid}/run", json={"input": "x"}).json()
    assert run["status"] == "succeeded"
    assert run["outputs"] == {"explain": "boom failed after 3 attempt(s): ValueError"}
    assert (run["nodes"]["boom"]["status"], run["nodes"]["shout"]["status"]) == ("failed", "skipped")


def test_an_error_retry_on_does_not_name_is_not_retried(client: httpx.Client) -> None:
    fid = create(client, guarded(retries=2, backoff=0, policies={"retry_on": "NodeTimeoutError"}))
    run = client.post(f"/formations/{fid}/run", json={"input": "x"}).json()
    assert run["outputs"] == {"explain": "boom failed after 1 attempt(s): ValueError"}


def test_the_declaration_is_stored_with_its_error_edge_and_retry_policy(client: httpx.Client) -> None:
    response = client.post("/formations", json=guarded(retry_on=["ConnectionError"], jitter=False))
    formation = response.json()
    assert formation["nodes"][0]["retry_on"] == ["ConnectionError"] and formation["nodes"][0]["jitter"] is False
    assert formation["edges"][1] == {"from": "boom", "to": "explain", "on_error": True}


def test_an_unknown_exception_name_in_retry_on_is_refused(client: httpx.Client) -> None:
    response = client.post("/formations", json=guarded(retry_on=["ValueError", "NoSuchError", "print"]))
    assert response.status_code == 400
    [problem] = response.json()["problems"]
    assert problem.startswith("nodes[0] ('boom'): retry_on names 'NoSuchError', 'print', not a built-in exception")


def test_an_error_edge_with_a_condition_is_refused(client: httpx.Client) -> None:
    body = guarded()
    body["edges"][1]["condition"] = "is_long"
    response = client.post("/formations", json=body)
    assert response.status_code == 400
    assert any("cannot also carry when=" in p for p in response.json()["problems"])


def test_a_handler_that_cannot_take_a_failure_is_refused(client: httpx.Client) -> None:
    body = guarded()
    body["edges"][1]["to"] = "shout"
    body["edges"][0]["to"] = "explain"
    response = client.post("/formations", json=body)
    assert response.status_code == 400
    assert any(p.startswith("error edge 'boom' → 'shout'") for p in response.json()["problems"])
