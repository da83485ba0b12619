"""Behaviours ported from LangServe's own tests (langchain-ai/langserve
``tests/unit_tests/test_server_client.py``, ``test_validation.py``): serving a runnable over
HTTP, mapped to serving a formation. LangServe's ``/invoke`` is ``POST /formations/{id}/run``,
``/batch`` is many runs at once (or a fleet run), ``/stream`` is ``/run/stream`` and
``/stream_log`` the viewer's ``GET /ui/api/runs/{id}/stream``.

Differences pinned here: LangServe answers a malformed body or a bad input with 422 (FastAPI's
validation); we answer 400 with ``fields`` (and ``kind: "input"`` for an input that does not fit
the entry node), as the server's API documents."""

from __future__ import annotations

import itertools
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

LANGSERVE = "tests.server.functions_langserve"
ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


SERVER_FUNCTIONS = (LANGSERVE,)  # registered by the server fixture (tests/server/conftest.py)


def serve(client: httpx.Client, *functions: str, name: str = "served") -> str:
    """A formation of the registered ``functions`` in a chain (node names = function names); its id."""
    nodes = [{"name": fn, "kind": "function", "function": fn} for fn in functions]
    edges = [{"from": a, "to": b} for a, b in itertools.pairwise(functions)]
    response = client.post("/formations", json={"name": name, "nodes": nodes, "edges": edges})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def invoke(client: httpx.Client, fid: str, value: Any) -> httpx.Response:
    return client.post(f"/formations/{fid}/run", json={"input": value})


# --- invoke -----------------------------------------------------------------------------------


def test_a_served_formation_answers_its_output_for_an_input(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server."""
    fid = serve(client, "add_one")
    response = invoke(client, fid, 1)
    assert response.status_code == 200
    assert response.json()["output"] == 2
    assert response.json()["outputs"] == {"add_one": 2}


def test_an_answer_carries_the_run_id_its_record_is_read_by(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_invoke_returns_run_id."""
    run = invoke(client, serve(client, "add_one"), 1).json()
    assert ULID.match(run["run_id"]) and run["id"] == run["run_id"]
    assert client.get(f"/runs/{run['run_id']}").json()["output"] == 2


def test_a_passthrough_gives_back_any_json_value_unchanged(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_invoke
    (a HumanMessage passes through the lambda as it is)."""
    fid = serve(client, "passthrough")
    values = [{"type": "human", "content": "hello", "additional_kwargs": {}}, [1, [2, [3]]], None, True, 0, "", 1.5]
    for value in values:
        assert invoke(client, fid, value).json()["output"] == value


def test_the_input_of_each_node_and_its_output_are_in_the_record(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server
    (``callback_events``: on_chain_start then on_chain_end per run)."""
    run = invoke(client, serve(client, "add_one", "mul_2"), 3).json()
    assert run["output"] == 8
    assert [run["nodes"][n]["status"] for n in ("add_one", "mul_2")] == ["succeeded", "succeeded"]
    history = client.get(f"/runs/{run['run_id']}/history").json()
    assert [(v["node"], v["output"]) for v in history] == [("add_one", 4), ("mul_2", 8)]


def test_two_formations_are_served_side_by_side_and_compose(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_multiple_runnables."""
    add = serve(client, "add_one", name="add")
    mul = serve(client, "mul_2", name="mul")
    assert invoke(client, add, 1).json()["output"] == 2
    assert invoke(client, mul, 4).json()["output"] == 8
    assert invoke(client, mul, invoke(client, add, 3).json()["output"]).json()["output"] == 8
    body = {"name": "composite", "nodes": [
        {"name": "remote_add", "kind": "formation", "formation_id": add},
        {"name": "local_add", "kind": "function", "function": "add_one"},
        {"name": "remote_mul", "kind": "formation", "formation_id": mul},
    ], "edges": [{"from": "remote_add", "to": "local_add"}, {"from": "local_add", "to": "remote_mul"}]}
    composite = client.post("/formations", json=body).json()["id"]
    assert invoke(client, composite, 3).json()["output"] == 10


# --- batch ------------------------------------------------------------------------------------


def test_many_runs_at_once_each_answer_their_own_output(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_batch."""
    fid = serve(client, "slow")
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda x: invoke(client, fid, x).json(), range(8)))
    assert [a["output"] for a in answers] == list(range(1, 9))
    assert len({a["run_id"] for a in answers}) == 8


def test_a_fleet_run_answers_every_task_in_task_order(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_batch
    (``batch([1, 2, 3])`` in input order)."""
    agent = client.post("/agents", json={"name": "echo", "provider": "scripted",
                                         "options": {"replies": ["one", "two", "three"]}}).json()["id"]
    fleet = client.post("/fleets", json={"name": "batch", "agent_id": agent, "worker_count": 1}).json()["id"]
    results = client.post(f"/fleets/{fleet}/run", json={"tasks": [{"message": m} for m in "abc"]}).json()
    assert [r["task_index"] for r in results] == [0, 1, 2]
    assert [r["response"] for r in results] == ["one", "two", "three"]


def test_a_fleet_run_of_no_tasks_is_refused_naming_tasks(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_batch.
    LangServe differs: ``batch([])`` answers ``[]``; our fleet run needs at least one task (its
    OpenAPI document says ``minItems: 1``) and refuses none with a 400 naming ``tasks``."""
    agent = client.post("/agents", json={"name": "idle", "provider": "scripted", "options": {"replies": ["x"]}}).json()["id"]
    fleet = client.post("/fleets", json={"name": "empty", "agent_id": agent, "worker_count": 2}).json()["id"]
    response = client.post(f"/fleets/{fleet}/run", json={"tasks": []})
    assert (response.status_code, response.json()["fields"]) == (400, ["tasks"])
    assert client.get("/runs", params={"fleet_id": fleet}).json() == []


# --- errors -----------------------------------------------------------------------------------


def test_a_node_failing_in_user_code_is_a_500_naming_the_node_and_the_run(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_server_side_error
    (LangServe answers a bare "Internal Server Error"; we name the node and the run)."""
    fid = serve(client, "fail_with_secret_line")
    response = invoke(client, fid, "x")
    assert response.status_code == 500
    body = response.json()
    assert (body["kind"], body["node"]) == ("runtime", "fail_with_secret_line")
    assert "bad input 'x'" in body["error"]
    assert client.get(f"/runs/{body['run_id']}").json()["status"] == "failed"


def test_an_input_of_the_wrong_type_is_a_400_naming_the_entry_node(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_input_validation
    (LangServe: 422; we: 400 ``kind: "input"``)."""
    fid = serve(client, "add_one")
    response = invoke(client, fid, "hello")
    assert response.status_code == 400
    body = response.json()
    assert (body["kind"], body["node"], body["fields"]) == ("input", "add_one", ["input"])
    assert "int" in body["error"]


@pytest.mark.parametrize("value", [2.5, [2], {"x": 2}, None])
def test_a_value_that_is_no_int_is_refused_by_an_int_parameter(client: httpx.Client, value: Any) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_validation.py::test_validation
    (``[3.2]`` for a float is invalid)."""
    response = invoke(client, serve(client, "add_one"), value)
    assert response.status_code == 400, response.text
    assert response.json()["kind"] == "input"


def test_a_number_in_a_string_is_converted_by_an_int_entry_node_as_in_the_library(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_validation.py::test_validation.
    The entry node checks a run's input as the library's function nodes do (pydantic's lax
    mode), so ``"2"`` reaches ``add_one`` as 2; the API's strict JSON types hold for its own
    fields (``"timeout": "5"`` is a 400), not for a run's ``input`` (an open question)."""
    assert invoke(client, serve(client, "add_one"), "2").json()["output"] == 3


def test_a_whole_number_written_with_a_point_is_an_int(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_validation.py::test_validation
    (``2.0`` is an integer, as JSON Schema has it)."""
    assert invoke(client, serve(client, "add_one"), 2.0).json()["output"] == 3


@pytest.mark.parametrize(("value", "valid"), [(1.1, True), (1, True), ("name", False), ([3.2], False), (None, False)])
def test_a_float_parameter_takes_numbers_only(client: httpx.Client, value: Any, valid: bool) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_validation.py::test_validation."""
    response = invoke(client, serve(client, "halve"), value)
    assert response.status_code == (200 if valid else 400), response.text
    if valid:
        assert response.json()["output"] == value / 2


def test_an_optional_parameter_takes_null(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_validation.py::test_validation (``Optional[float]``, None)."""
    fid = serve(client, "maybe_halve")
    assert invoke(client, fid, None).json()["output"] is None
    assert invoke(client, fid, 3).json()["output"] == 1.5


@pytest.mark.parametrize(("value", "valid"), [
    ({"a": 2, "b": "hello"}, True), ({"a": 2}, True), ({"a": "qqq"}, False), ({"b": "hello"}, False), ("a=2", False),
])
def test_a_model_parameter_validates_its_fields(client: httpx.Client, value: Any, valid: bool) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_validation.py::test_create_invoke_and_batch_models."""
    response = invoke(client, serve(client, "describe"), value)
    assert response.status_code == (200 if valid else 400), response.text
    if valid:
        assert response.json()["output"] == f"{value['a']}:{value.get('b')}"
    else:
        assert response.json()["kind"] == "input"


def test_uuid_datetime_date_time_and_enum_fields_arrive_as_their_python_types(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_server_client.py::test_uuid_serialization."""
    value = {"uuid": "00000000-0000-0000-0000-000000000001", "dt": "2023-01-01T05:00:00",
             "date": "2023-01-01", "time": "05:30:00", "enum": "a"}
    response = invoke(client, serve(client, "check_types"), value)
    assert response.status_code == 200, response.text
    assert response.json()["output"] == "UUID,datetime,date,time,Colour"


def test_a_model_output_of_those_types_is_answered_as_json_strings(client: httpx.Client) -> None:
    """Ported from langchain-ai/langserve tests/unit_tests/test_serialization.py (well-known types round trip)."""
    run = invoke(client, serve(client, "make_types"), 1).json()
    assert run["output"] == {"uuid": "00000000-0000-0000-0000-000000000001", "dt": "2023-01-01T05:00:00Z",
                             "date": "2023-01-01", "time": "05:30:00", "enum": "a"}
    assert client.get(f"/runs/{run['run_id']}").json()["output"] == run["output"]
