"""LangServe's HTTP behaviours (langchain-ai/langserve ``tests/unit_tests/test_server_client.py``)
on our server: SSE framing of ``/run/stream``, the viewer's replay stream (LangServe's
``/stream_log``), bad bodies, wrong content types, unknown routes and methods, unicode and
large payloads.

Differences pinned here: LangServe frames SSE with ``\\r\\n`` and sends ``event: end`` with
no data; we send ``\\n`` and a ``done`` event with the run's id and status (``end`` on the
viewer stream). LangServe answers a malformed body with 422; we answer 400 ``{"error"}``."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.server.harness import RunningServer, sse_events
from tests.server.test_peer_langserve import LANGSERVE, invoke, serve

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


SERVER_FUNCTIONS = (LANGSERVE,)  # registered by the server fixture (tests/server/conftest.py)


def raw_stream(client: httpx.Client, path: str, body: Any) -> str:
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return response.text


def blocks(text: str) -> list[tuple[str, Any]]:
    """Parse an SSE body strictly: blocks of exactly one ``event:`` and one ``data:`` line."""
    assert text.endswith("\n\n"), text[-80:]
    parsed = []
    for block in text[:-2].split("\n\n"):
        event_line, data_line = block.split("\n")
        assert event_line.startswith("event: ") and data_line.startswith("data: "), block
        parsed.append((event_line[7:], json.loads(data_line[6:])))
    return parsed


# --- /stream ----------------------------------------------------------------------------------


def test_a_stream_is_event_and_data_lines_ending_with_done(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_async
    (``event: data`` ... ``event: end``)."""
    fid = serve(client, "add_one")
    events = blocks(raw_stream(client, f"/formations/{fid}/run/stream", {"input": 1}))
    names = [name for name, _ in events]
    assert names[0] == "run_started" and names[-2:] == ["run_finished", "done"]
    assert ("node_finished", 2) in [(n, d["data"].get("output")) for n, d in events if n == "node_finished"]
    run_id = events[-1][1]["run_id"]
    assert events[-1][1] == {"run_id": run_id, "status": "succeeded"}
    assert client.get(f"/runs/{run_id}").json()["output"] == 2


def test_output_over_several_lines_stays_in_one_data_line_and_injects_no_event(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_async
    (SSE framing: a value's newlines must not break the ``data:`` line)."""
    fid = serve(client, "lines")
    events = blocks(raw_stream(client, f"/formations/{fid}/run/stream", {"input": "x"}))
    assert "fake" not in [name for name, _ in events]
    finished = next(d for n, d in events if n == "node_finished")
    assert finished["data"]["output"] == "first x\nsecond\r\nthird\n\nevent: fake\ndata: injected"


def test_every_event_of_a_stream_names_its_run_and_time(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_async
    (``event: metadata`` carries the run id)."""
    fid = serve(client, "add_one", "mul_2")
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": 1})
    run_id = events[-1][1]["run_id"]
    assert all(data["run_id"] == run_id and RFC3339.match(data["timestamp"]) for _, data in events[:-1])


def test_node_events_carry_each_node_input_then_its_output(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_astream_events
    (on_chain_start with the input, on_chain_end with the output)."""
    fid = serve(client, "add_one", "mul_2")
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": 1})
    nodes = [(n, d["node"], d["data"].get("input", d["data"].get("output")))
             for n, d in events if n in ("node_started", "node_finished")]
    assert nodes == [("node_started", "add_one", 1), ("node_finished", "add_one", 2),
                     ("node_started", "mul_2", 2), ("node_finished", "mul_2", 4)]


def test_a_dict_output_is_streamed_as_a_json_object(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_streaming_dict_async."""
    fid = serve(client, "dict_chunks")
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": "1"})
    assert next(d for n, d in events if n == "run_finished")["data"]["outputs"] == {"dict_chunks": {"a": "1"}}


def test_a_failure_after_the_stream_began_ends_it_with_run_failed_then_done(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_side_error
    (the stream yields, then fails). LangServe ends with a bare 500 "Internal Server Error"; we end
    with a ``run_failed`` event naming the node and the error, then ``done``."""
    fid = serve(client, "passthrough", "fail_with_secret_line", name="late-failure")
    body = raw_stream(client, f"/formations/{fid}/run/stream", {"input": "x"})
    events = blocks(body)
    assert [n for n, _ in events][:3] == ["run_started", "node_started", "node_finished"]
    assert [n for n, _ in events][-2:] == ["run_failed", "done"]
    failed = events[-2][1]["data"]
    assert failed["kind"] == "runtime" and "second line of the error" in failed["error"]
    assert events[-1][1]["status"] == "failed"


def test_a_stream_whose_input_does_not_fit_is_a_400_before_any_event(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_astream
    (an invalid input to ``astream`` is a 422 before any chunk; we answer 400 ``kind: "input"``)."""
    fid = serve(client, "add_one")
    response = client.post(f"/formations/{fid}/run/stream", json={"input": "foo"})
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["kind"] == "input"


def test_concurrent_streams_of_one_formation_each_see_only_their_run(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_abatch (per-input runs)."""
    fid = serve(client, "slow")
    with ThreadPoolExecutor(4) as pool:
        streams = list(pool.map(lambda x: sse_events(client, f"/formations/{fid}/run/stream", {"input": x}), range(4)))
    for x, events in enumerate(streams):
        run_id = events[-1][1]["run_id"]
        assert {d["run_id"] for _, d in events} == {run_id}
        assert next(d for n, d in events if n == "run_finished")["data"]["outputs"] == {"slow": x + 1}
    assert len({events[-1][1]["run_id"] for events in streams}) == 4


# --- /stream_log: the viewer's replay -----------------------------------------------------------


def test_the_events_of_a_finished_run_are_replayed_then_end(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_astream_log
    (the whole log of a run, then the end)."""
    fid = serve(client, "add_one")
    streamed = sse_events(client, f"/formations/{fid}/run/stream", {"input": 1})
    run_id = streamed[-1][1]["run_id"]
    response = client.get(f"/ui/api/runs/{run_id}/stream")
    replayed = blocks(response.text)
    assert [n for n, _ in replayed] == [n for n, _ in streamed[:-1]] + ["end"]
    assert replayed[-1][1] == {"run_id": run_id}


def test_the_replay_stream_of_an_unknown_run_is_404(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_feedback_fails_when_endpoint_disabled
    (an unknown thing is a 404 with a JSON error)."""
    response = client.get("/ui/api/runs/01ARZ3NDEKTSV4RRFFQ69G5FAV/stream")
    assert response.status_code == 404
    assert "01ARZ3NDEKTSV4RRFFQ69G5FAV" in response.json()["error"]


# --- bad requests -------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["run", "run/stream"])
def test_a_malformed_json_body_is_a_400_saying_so(client: httpx.Client, route: str) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_async
    (``data="bad json []"`` is a 422 there; a 400 ``{"error"}`` here, as our API documents)."""
    fid = serve(client, "add_one")
    response = client.post(f"/formations/{fid}/{route}", content=b"bad json []")
    assert response.status_code == 400
    assert set(response.json()) >= {"error"} and "JSON" in response.json()["error"]


@pytest.mark.parametrize("route", ["run", "run/stream"])
def test_an_unknown_body_field_is_a_400_naming_it(client: httpx.Client, route: str) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_validation.py::test_create_invoke_and_batch_models
    (``"kwargs": "hello"`` and ``"config": "hello"`` are invalid)."""
    fid = serve(client, "add_one")
    for field in ("kwargs", "config"):
        response = client.post(f"/formations/{fid}/{route}", json={"input": 1, field: "hello"})
        assert response.status_code == 400, response.text
        assert response.json()["fields"] == [field]
    assert client.get("/runs", params={"formation_id": fid}).json() == []


@pytest.mark.parametrize("timeout", ["5", True, -1, [5]])
def test_a_timeout_that_is_not_a_positive_number_is_a_400_naming_it(client: httpx.Client, timeout: Any) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_async
    (``"config": {"tags": [[]]}``: a request option of the wrong type is refused)."""
    fid = serve(client, "add_one")
    response = client.post(f"/formations/{fid}/run", json={"input": 1, "timeout": timeout})
    assert response.status_code == 400, response.text
    assert response.json()["fields"] == ["timeout"]


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_a_body_not_sent_as_json_is_a_415(server: RunningServer, content_type: str | None) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_async (bad bodies)."""
    with server.client() as client:
        fid = serve(client, "add_one")
    headers = {"Content-Type": content_type} if content_type else {}
    with httpx.Client(base_url=server.url, timeout=30) as bare:
        response = bare.post(f"/formations/{fid}/run", content=b'{"input": 1}', headers=headers)
    assert response.status_code == 415
    assert "application/json" in response.json()["error"]


@pytest.mark.parametrize("path", ["invoke", "batch", "stream_log", "input_schema", "feedback", "c/1234/invoke"])
def test_langserve_routes_we_do_not_have_are_404(client: httpx.Client, path: str) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_endpoint_configurations
    (disabled endpoints are 404)."""
    fid = serve(client, "add_one")
    response = client.post(f"/formations/{fid}/{path}", json={"input": 1})
    assert response.status_code == 404
    assert "error" in response.json()


def test_a_method_a_route_does_not_have_is_a_405_listing_the_allowed(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_endpoint_configurations
    (``HEAD /feedback``)."""
    fid = serve(client, "add_one")
    for method in ("GET", "PUT", "DELETE"):
        response = client.request(method, f"/formations/{fid}/run")
        assert response.status_code == 405, (method, response.text)
        assert response.headers["allow"] == "POST"


def test_a_trailing_slash_is_a_404_naming_the_route_without_it(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_enforce_trailing_slash_in_client
    (LangServe's client adds a slash; our routes take none and never redirect)."""
    fid = serve(client, "add_one")
    response = client.post(f"/formations/{fid}/run/", json={"input": 1})
    assert response.status_code == 404
    assert f"/formations/{fid}/run" in response.json()["error"]


def test_the_openapi_document_serves_two_formations_of_the_same_functions(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_openapi_docs_with_identical_runnables."""
    serve(client, "add_one", name="a")
    serve(client, "add_one", name="b")
    document = client.get("/openapi.json").json()
    stream = document["paths"]["/formations/{id}/run/stream"]["post"]
    assert "text/event-stream" in stream["responses"]["200"]["content"]


# --- payloads -----------------------------------------------------------------------------------


def test_unicode_comes_back_unchanged_from_the_run_the_stream_and_the_record(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_serialization.py (round trips)."""
    text = "héllo wörld — 你好 😀 \u200b tab\t"
    fid = serve(client, "passthrough")
    run = invoke(client, fid, {text: [text]}).json()
    assert run["output"] == {text: [text]}
    assert client.get(f"/runs/{run['run_id']}").json()["input"] == {text: [text]}
    events = sse_events(client, f"/formations/{fid}/run/stream", {"input": text})
    assert next(d for n, d in events if n == "run_finished")["data"]["outputs"] == {"passthrough": text}


def test_a_large_payload_under_the_limit_round_trips_and_one_over_it_is_413(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_serialization.py (large documents)."""
    fid = serve(client, "passthrough")
    big = "x" * (1024 * 1024)
    assert invoke(client, fid, [big, big]).json()["output"] == [big, big]
    response = invoke(client, fid, "y" * (5 * 1024 * 1024))
    assert response.status_code == 413
    assert client.get("/health").status_code == 200


def strict_json(text: str) -> Any:
    """``text`` parsed as JSON proper: ``NaN`` and ``Infinity`` refused, as browsers' ``JSON.parse`` does."""
    def refuse(token: str) -> Any:
        raise AssertionError(f"{token} is not JSON: {text[:200]}")
    return json.loads(text, parse_constant=refuse)


def test_an_output_json_cannot_carry_is_never_answered_as_invalid_json(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_serialization.py (what the server
    answers, a strict JSON client can parse). We answer a NaN or infinite output as ``null``
    (pydantic's JSON mode) in the answer, the stream and the record."""
    fid = serve(client, "not_a_number")
    for value in (1, 0):
        response = invoke(client, fid, value)
        run = strict_json(response.text)
        assert (response.status_code, run["output"]) == (200, None)
        assert strict_json(client.get(f"/runs/{run['run_id']}").text)["outputs"] == {"not_a_number": None}
        assert strict_json(client.get(f"/runs/{run['run_id']}/history").text)[0]["output"] is None
        text = raw_stream(client, f"/formations/{fid}/run/stream", {"input": value})
        for line in text.splitlines():
            if line.startswith("data: "):
                strict_json(line[6:])


@pytest.mark.parametrize("literal", ["1e400", "-1e400", "1" + "0" * 400 + ".0"])
def test_a_number_too_large_for_a_float_is_refused_as_infinity_is(client: httpx.Client, literal: str) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_validation.py::test_validation (a
    float input). JSON allows ``1e400``, but Python reads it as infinity, which cannot be stored
    and answered back; as ``Infinity`` itself, it is a 400 and nothing is run or stored."""
    fid = serve(client, "passthrough")
    for route in ("run", "run/stream"):
        response = client.post(f"/formations/{fid}/{route}", content=f'{{"input": [1.5, {literal}]}}'.encode())
        assert response.status_code == 400, response.text
        assert literal[:6] in response.json()["error"] and response.json()["fields"] == ["body"]
    assert client.get("/runs", params={"formation_id": fid}).json() == []
    assert invoke(client, fid, [1.5, 1e300]).json()["output"] == [1.5, 1e300]


@pytest.mark.parametrize("route", ["run", "run/stream"])
def test_a_body_that_is_not_utf8_is_a_400_saying_so_and_how_to_fix_it(client: httpx.Client, route: str) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_async
    (``data="bad json []"``: a body the server cannot read is refused saying why). A Latin-1 body
    (``charset=latin-1``) was answered "There was an error parsing the body"."""
    fid = serve(client, "passthrough")
    response = client.post(f"/formations/{fid}/{route}", content='{"input": "café"}'.encode("latin-1"),
                           headers={"Content-Type": "application/json; charset=latin-1"})
    assert response.status_code == 400
    body = response.json()
    assert "UTF-8" in body["error"] and "0xe9" in body["error"] and body["fields"] == ["body"]
    assert client.get("/runs", params={"formation_id": fid}).json() == []
