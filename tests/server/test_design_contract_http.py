"""DESIGN's HTTP bullets read literally, as a client that knows only DESIGN and the served
OpenAPI document would check them ("Limits that hold for agents; the server's agents":
"The HTTP API conforms to its OpenAPI document: a method a path does not have is a 405 with
`Allow`, before any other check; JSON types are strict (a boolean is not an integer); the
constraints the server enforces are declared in the document").

Complements tests/server/test_conformance.py (single findings) with checks driven by the
document itself: every path, every method it does not declare; every body field, every JSON
type it does not take."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from tests.providers.test_openai import completion
from tests.server.harness import FUNCTIONS_MODULE, RunningServer, running, scripted_agent
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.server import ServerConfig
from wingman_actors.server._viewer_store import create_store_viewer
from wingman_actors.store import RunStore


@pytest.mark.parametrize(("server_entry", "field"), [({"url": "http://127.0.0.1:9/mcp", "command": None}, "command"),
                                                   ({"command": [sys.executable, "-c", "pass"], "url": None}, "url")])
def test_an_mcp_servers_command_or_url_given_as_null_is_400_naming_that_field(
    client: httpx.Client, server_entry: dict[str, Any], field: str
) -> None:
    # the document declares both as non-nullable (an array, a string): null is the wrong JSON type
    response = client.post("/agents", json={"name": "a", "mcp": [server_entry]})

    assert response.status_code == 400, response.text
    assert response.json()["fields"] == [f"mcp[0].{field}"]
    assert "null" in response.json()["error"]


@pytest.mark.parametrize(("method", "path", "body", "field"), [
    ("PUT", "/fleets/{fleet}", {"agent_id": True}, "agent_id"),
    ("PUT", "/fleets/{fleet}", {"worker_count": True}, "worker_count"),
    ("PUT", "/fleets/{fleet}", {"worker_count": "4"}, "worker_count"),
    ("POST", "/formations", {"name": "f", "nodes": [{"name": "a", "kind": "function", "function": "clean",
                                                      "retry_on": 7}]}, "nodes[0].retry_on"),
    ("POST", "/formations", {"name": "f", "nodes": [{"name": "a", "kind": "function", "function": "clean",
                                                      "policies": {"retry_on": [True]}}]}, "nodes[0].policies.retry_on"),
])
def test_a_wrong_json_type_in_a_field_of_several_types_is_400_naming_the_field_not_pydantics_alternatives(
    client: httpx.Client, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    agent = scripted_agent(client)
    fleet = client.post("/fleets", json={"name": "f", "agent_id": agent}).json()["id"]

    response = client.request(method, path.format(fleet=fleet), json=body)

    assert response.status_code == 400, response.text
    assert response.json()["fields"] == [field]
    assert response.json()["error"].startswith(f"invalid request: {field}: ")
    assert "should be None" not in response.json()["error"]  # (pydantic's branch of null)




@pytest.mark.parametrize("path", ["/runs", "/ui/api/runs"])
@pytest.mark.parametrize("limit", ["0", "1001", "true", "ten"])
def test_a_query_parameter_out_of_its_declared_range_or_type_is_400_naming_the_parameter_as_status_is_named(
    client: httpx.Client, path: str, limit: str
) -> None:
    response = client.get(path, params={"limit": limit})

    assert response.status_code == 400
    assert response.json()["fields"] == ["limit"]
    assert response.json()["error"].startswith("invalid request: limit: ")
    assert client.get(path, params={"status": "lost"}).json()["fields"] == ["status"]



def string_enum(doc: dict[str, Any], model: str, field: str) -> list[str] | None:
    """The names ``model.field`` is declared to take, or None when it is declared any string."""
    prop = doc["components"]["schemas"][model]["properties"][field]
    for branch in branches(doc, prop):
        if branch.get("type") == "string":
            return list(branch["enum"]) if "enum" in branch else None
    return []


def test_an_agents_provider_is_declared_as_the_provider_ids_the_server_takes(client: httpx.Client) -> None:
    doc = client.get("/openapi.json").json()
    ids = sorted(p["id"] for p in client.get("/provider").json())

    refused = client.post("/agents", json={"name": "a", "provider": "no-such-provider"})

    assert refused.status_code == 400 and refused.json()["fields"] == ["provider"]
    for model in ("AgentCreate", "AgentUpdate"):
        assert string_enum(doc, model, "provider") == ids, model
        assert {"type": "null"} in doc["components"]["schemas"][model]["properties"]["provider"]["anyOf"]


@pytest.mark.parametrize(("model", "field", "declaration"), [
    ("NodeDecl", "function", {"name": "f", "nodes": [{"name": "a", "kind": "function", "function": "no-such"}]}),
    ("EdgeDecl", "condition", {"name": "f", "nodes": [{"name": "a", "kind": "function", "function": "clean"},
                                                      {"name": "b", "kind": "function", "function": "clean"}],
                               "edges": [{"from": "a", "to": "b", "condition": "no-such"}]}),
])
def test_a_nodes_function_and_an_edges_condition_are_declared_as_the_names_the_server_has_registered(
    client: httpx.Client, model: str, field: str, declaration: dict[str, Any]
) -> None:
    doc = client.get("/openapi.json").json()

    refused = client.post("/formations", json=declaration)

    assert refused.status_code == 400
    [problem] = refused.json()["problems"]
    registered = problem.rsplit("registered: ", 1)[1].split(", ")
    assert string_enum(doc, model, field) == registered


def node(**fields: Any) -> dict[str, Any]:
    return {"name": "a", "kind": "function", "function": "clean", **fields}


@pytest.mark.parametrize(("declaration", "field"), [
    ({"nodes": [node(function="no-such")]}, "nodes[0].function"),
    ({"nodes": [node(function=None)]}, "nodes[0].function"),
    ({"nodes": [node(), node(name="b")], "edges": [{"from": "a", "to": "b", "condition": "no-such"}]},
     "edges[0].condition"),
    ({"nodes": [node()], "edges": [{"from": "a", "to": "ghost"}]}, "edges[0].to"),
    ({"nodes": [node()], "edges": [{"from": "ghost", "to": "a"}]}, "edges[0].from"),
    ({"nodes": [{"name": "a", "kind": "agent", "agent_id": "01GHOST"}]}, "nodes[0].agent_id"),
    ({"nodes": [{"name": "a", "kind": "formation", "formation_id": "01GHOST"}]}, "nodes[0].formation_id"),
    ({"nodes": [node(retry_on=["NoSuchError"])]}, "nodes[0].retry_on"),
    ({"nodes": [node(policies={"retry_on": "NoSuchError"})]}, "nodes[0].policies.retry_on"),
])
def test_a_formation_naming_what_the_server_does_not_have_is_400_naming_the_field_besides_the_problem(
    client: httpx.Client, declaration: dict[str, Any], field: str
) -> None:
    response = client.post("/formations", json={"name": "f", **declaration})

    assert response.status_code == 400, response.text
    assert response.json()["fields"] == [field]
    [problem] = response.json()["problems"]
    assert problem.startswith(field.split(".")[0])



@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_an_agent_whose_provider_needs_a_model_is_400_naming_model_with_the_json_that_fixes_it(
    client: httpx.Client, method: str
) -> None:
    body = {"name": "a", "provider": "openai", "options": {"base_url": "http://127.0.0.1:9/v1"}}
    path = "/agents" if method == "POST" else f"/agents/{scripted_agent(client)}"

    response = client.request(method, path, json=body)

    assert response.status_code == 400
    assert response.json()["fields"] == ["model"]
    assert '"model": "' in response.json()["error"]
    assert "new_provider(" not in response.json()["error"]  # the library's call, not this API's JSON


# -- "The bash tool runs with an environment stripped of secrets" (for the server's agents too) --


def bash_output(client: httpx.Client, loopback: LoopbackServer, command: str) -> str:
    """What a server agent's bash tool answered the model for ``command``."""
    loopback.queue(Reply.json(completion(None, finish_reason="tool_calls", tool_calls=[{
        "id": "t1", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": command})}}])),
        Reply.json(completion("done")))
    agent = client.post("/agents", json={"name": "sh", "tools": ["bash"], "provider": "openai", "model": "m",
                                         "options": {"base_url": loopback.url, "max_retries": 0}}).json()["id"]
    session = client.post("/sessions").json()["id"]
    response = client.post(f"/sessions/{session}/message", json={"agent_id": agent, "message": "run it"})
    assert response.status_code == 200, response.text
    [result] = [m for m in loopback.requests[-1].json()["messages"] if m["role"] == "tool"]
    return str(result["content"])


def test_a_server_agents_bash_runs_without_the_servers_secret_variables(
    client: httpx.Client, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_SERVICE_TOKEN", "tok-in-the-servers-environment")
    monkeypatch.setenv("DEPLOY_DB_PASSWORD", "pw-in-the-servers-environment")
    monkeypatch.setenv("DEPLOY_REGION", "eu-west")

    out = bash_output(client, loopback,
                      'echo "[${DEPLOY_SERVICE_TOKEN:-unset}] [${DEPLOY_DB_PASSWORD:-unset}] [${DEPLOY_REGION:-unset}]"')

    assert out.strip() == "[unset] [unset] [eu-west]"


def test_a_secret_of_the_servers_environment_that_a_server_agents_bash_prints_is_masked(
    client: httpx.Client, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch, work_root: Path
) -> None:
    monkeypatch.setenv("DEPLOY_SERVICE_TOKEN", "tok-in-the-servers-environment")
    (work_root / "deploy-notes.txt").write_text("the token is tok-in-the-servers-environment\n", encoding="utf-8")

    out = bash_output(client, loopback, "cat deploy-notes.txt")

    assert out.startswith("the token is ") and "tok-in-the-servers-environment" not in out


# -- wingman-actors ui: the same viewer over a launcher's run store ----------------------------


@pytest.fixture
def store_viewer(tmp_path: Path) -> Iterator[TestClient]:
    """The app ``wingman-actors ui --store PATH --token secret-token`` serves."""
    RunStore(tmp_path / "runs.sqlite").close()
    app = create_store_viewer(tmp_path / "runs.sqlite", token="secret-token")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("PUT", "/ui/api/runs", "GET"),
    ("POST", "/ui/api/info", "GET"),
    ("DELETE", "/ui/api/runs/01UNKNOWN", "GET"),
    ("GET", "/ui/api/runs/01UNKNOWN/cancel", "POST"),
    ("GET", "/ui/api/formations/f/runs", "POST"),
    ("PATCH", "/ui/", "GET"),
])
def test_the_store_viewer_answers_a_method_a_path_does_not_have_with_405_and_allow_before_its_token_and_body_checks(
    store_viewer: TestClient, method: str, path: str, allow: str
) -> None:
    # no token, a body that is not JSON: the 405 comes first, as on the server
    response = store_viewer.request(method, path, content=b"x", headers={"Content-Type": "text/plain"})

    assert response.status_code == 405, response.text
    assert response.headers["allow"] == allow
    assert f"method {method} is not allowed on {path}" in response.json()["error"]


def test_a_path_the_store_viewer_does_not_have_is_a_404_in_the_error_shape(store_viewer: TestClient) -> None:
    response = store_viewer.get("/ui/api/nothing", headers={"Authorization": "Bearer secret-token"})

    assert response.status_code == 404
    assert "no route GET /ui/api/nothing" in response.json()["error"]


# -- "a method a path does not have is a 405 with Allow, before any other check" ---------------

PROBED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "TRACE")


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory, work_root: Path) -> Iterator[RunningServer]:
    """A server every other check could refuse a request of: a token, a 1 KiB body limit."""
    db = tmp_path_factory.mktemp("guarded") / "wingman.db"
    config = ServerConfig(db_path=db, work_root=work_root, functions=(FUNCTIONS_MODULE,), entry_points=False,
                          token="secret-token", max_body_bytes=1024)
    with running(config) as server:
        yield server


def concrete(path: str) -> str:
    """A documented path with its parameters filled: ids no record has, a registered provider."""
    return path.replace("{provider}", "scripted").replace("{id}/models", "scripted/models") \
        .replace("/provider/{id}", "/provider/scripted").replace("{model}", "m").replace("{id}", "01UNKNOWN")


def test_every_method_a_documented_path_does_not_declare_is_a_405_with_allow_before_any_other_check(
    guarded: RunningServer,
) -> None:
    # No token, a Host the server does not serve, another site's Origin, a body that is not JSON
    # and is over the size limit, an id no record has: each would be refused by its own check
    # (401, 400, 403, 415, 413, 404).
    hostile = {"Content-Type": "text/plain", "Origin": "https://elsewhere.example", "Host": "elsewhere.example"}
    with httpx.Client(base_url=guarded.url, timeout=30) as bare:
        doc = bare.get("/openapi.json").json()
        wrong: list[str] = []
        probed = 0
        for path, operations in doc["paths"].items():
            declared = ", ".join(sorted(m.upper() for m in operations))
            for method in PROBED_METHODS:
                if method.lower() in operations or (method == "HEAD" and "get" in operations):  # HEAD goes with GET
                    continue
                probed += 1
                response = bare.request(method, concrete(path), content=b"<" * 2048, headers=hostile)
                if response.status_code != 405 or response.headers.get("allow") != declared:
                    wrong.append(f"{method} {path}: {response.status_code}, Allow {response.headers.get('allow')!r}"
                                 f" (declared: {declared})")
                elif method != "HEAD" and f"it allows {declared}" not in response.json()["error"]:
                    wrong.append(f"{method} {path}: {response.text}")
        # the same request with a method the path has meets those checks
        control = bare.post("/agents", content=b"<" * 2048, headers=hostile)
    assert control.status_code in (400, 401, 403, 413, 415), control.text
    assert probed > 150  # every documented path, each with the methods it does not have
    assert wrong == []


def test_the_viewers_page_takes_only_get_with_a_405_naming_it(client: httpx.Client) -> None:
    response = client.post("/ui/", json={})

    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
    assert "POST" in response.json()["error"]


# -- "JSON types are strict (a boolean is not an integer)" -------------------------------------
# Every field of every request body the document describes, nested objects included, is sent
# with JSON types the document does not give it; each must be a 400 naming that field.

JSON_VALUES: dict[str, Any] = {"boolean": True, "integer": 7, "number": 2.5, "string": "7", "null": None,
                               "array": [], "object": {}}


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def branches(doc: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    schema = resolve(doc, schema)
    return [b for s in schema["anyOf"] for b in branches(doc, s)] if "anyOf" in schema else [schema]


def json_types(doc: dict[str, Any], schema: dict[str, Any]) -> set[str] | None:
    """The JSON types the document lets a value have (None: any)."""
    types: set[str] = set()
    for branch in branches(doc, schema):
        if "type" not in branch:
            return None
        types.add(branch["type"])
    if "number" in types:
        types.add("integer")
    return types


def wrong_values(doc: dict[str, Any], schema: dict[str, Any]) -> list[Any]:
    types = json_types(doc, schema)
    if types is None:
        return []
    wrong = [value for kind, value in JSON_VALUES.items() if kind not in types]
    if "integer" in types and "number" not in types:
        wrong.append(2.5)  # a fraction is not an integer
    return wrong


def objects(doc: dict[str, Any], schema: dict[str, Any], body: Any, at: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, schema)`` of the body and of each nested object ``body`` holds an example of
    (``nodes[0]``, ``nodes[0].policies``, ``mcp[0]``, ``providers.replay``)."""
    schema = resolve(doc, schema)
    yield at, schema
    for name, prop in schema.get("properties", {}).items():
        path = f"{at}.{name}" if at else name
        value = body.get(name) if isinstance(body, dict) else None
        for branch in branches(doc, prop):
            if isinstance(value, list) and value and isinstance(value[0], dict) and branch.get("type") == "array":
                yield from objects(doc, branch["items"], value[0], f"{path}[0]")
            elif isinstance(value, dict) and "properties" in branch:
                yield from objects(doc, branch, value, path)
            elif isinstance(value, dict) and isinstance(branch.get("additionalProperties"), dict):
                for key, item in value.items():
                    yield from objects(doc, branch["additionalProperties"], item, f"{path}.{key}")


def fields(doc: dict[str, Any], schema: dict[str, Any], body: Any) -> Iterator[tuple[str, Any]]:
    """``(field path, its schema)`` for every property of the body and of its nested objects."""
    for at, shape in objects(doc, schema, body):
        for name, prop in shape.get("properties", {}).items():
            yield (f"{at}.{name}" if at else name), prop


DROP = object()
"""A value :func:`put` takes as: leave the field out."""


def put(body: Any, path: str, value: Any) -> Any:
    """A copy of ``body`` whose field at ``path`` (``nodes[0].policies.retries``) is ``value``."""
    out = json.loads(json.dumps(body))
    steps = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    holder = out
    for step in steps[:-1]:
        holder = holder[int(step[1:-1])] if step.startswith("[") else holder[step]
    if value is DROP:
        del holder[steps[-1]]
    else:
        holder[steps[-1]] = value
    return out


FORMATION = {"name": "checked", "nodes": [{"name": "clean", "kind": "function", "function": "clean", "policies": {}},
                                          {"name": "shout", "kind": "function", "function": "shout"}],
             "edges": [{"from": "clean", "to": "shout"}]}


OPERATIONS: list[tuple[str, str, Any]] = [
    ("post", "/agents", {"name": "a", "mcp": [{"url": "http://127.0.0.1:9/mcp", "include": ["t"]}]}),
    ("put", "/agents/{id}", {"mcp": [{"url": "http://127.0.0.1:9/mcp"}]}),
    ("post", "/sessions", {"title": "t"}),
    ("put", "/sessions/{id}", {"title": "t"}),
    ("post", "/sessions/{id}/message", {"agent_id": "{agent}", "message": "hi"}),
    ("post", "/sessions/{id}/message/stream", {"agent_id": "{agent}", "message": "hi"}),
    ("post", "/sessions/{id}/resume", {"agent_id": "{agent}", "answer": "yes"}),
    ("post", "/fleets", {"name": "f", "agent_id": "{agent}"}),
    ("put", "/fleets/{id}", {"name": "f"}),
    ("post", "/fleets/{id}/run", {"tasks": [{"message": "m"}]}),
    ("post", "/fleets/{id}/run/stream", {"tasks": [{"message": "m"}]}),
    ("post", "/formations", FORMATION),
    ("put", "/formations/{id}", FORMATION),
    ("post", "/formations/{id}/run", {"input": "x"}),
    ("post", "/formations/{id}/run/stream", {"input": "x"}),
    ("post", "/runs/{id}/resume", {"timeout": 5}),
    ("post", "/runs/{id}/fork", {"at": "clean", "output": "y"}),
    ("put", "/provider/auth", {"providers": {"replay": {"key": "k-1"}}}),
]
"""``(method, documented path, a body the server takes)`` for every operation with a body schema;
``{id}`` is filled per request (see :func:`target`), ``{agent}`` with a scripted agent's id."""


def target(client: httpx.Client, path: str, agent: str) -> str:
    """``path`` with ``{id}`` a fresh record of its kind, so a change wrongly taken stays there."""
    if "{id}" not in path:
        return path
    kind = path.split("/")[1]
    if kind == "agents":
        record = scripted_agent(client, name="target")
    elif kind == "sessions":
        record = client.post("/sessions").json()["id"]
    elif kind == "fleets":
        record = client.post("/fleets", json={"name": "f", "agent_id": agent}).json()["id"]
    else:
        formation = client.post("/formations", json=FORMATION).json()["id"]
        record = formation if kind == "formations" else client.post(
            f"/formations/{formation}/run", json={"input": "x"}).json()["id"]
    return path.replace("{id}", record)


def probe(client: httpx.Client, choose: Any) -> list[tuple[str, bool]]:
    """Send, for every operation and body field, each value ``choose(doc, field schema)``
    gives; for each, what was sent and answered and whether it was a 400 naming the field."""
    doc = client.get("/openapi.json").json()
    agent = scripted_agent(client, "ok")
    seen: list[tuple[str, bool]] = []
    for method, path, base in OPERATIONS:
        filled = json.loads(json.dumps(base).replace("{agent}", agent))
        schema = doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
        schema = next((b for b in branches(doc, schema) if b.get("type") != "null"), schema)
        for field, prop in list(fields(doc, schema, filled)):
            for value in choose(doc, prop):
                response = client.request(method, target(client, path, agent), json=put(filled, field, value))
                named = response.status_code == 400 and field in response.json().get("fields", [])
                seen.append((f"{method.upper()} {path} {field}={json.dumps(value)[:40]}: {response.status_code} "
                             f"{response.text[:160]}", named))
    return seen


def test_every_body_field_refuses_each_json_type_the_document_does_not_give_it_with_a_400_naming_it(
    client: httpx.Client,
) -> None:
    seen = probe(client, wrong_values)

    assert len(seen) > 500
    assert [sent for sent, refused in seen if not refused] == []


def test_every_operation_with_a_body_is_probed(client: httpx.Client) -> None:
    doc = client.get("/openapi.json").json()
    with_schema = {(method, path) for path, ops in doc["paths"].items() for method, op in ops.items()
                   if op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")}

    assert with_schema == {(method, path) for method, path, _ in OPERATIONS}


# -- "the constraints the server enforces are declared in the document" ------------------------
# Each bound the document declares is where the server draws the line: a value one past it is a
# 400 naming the field; a value at it is not refused for that field.

NOT_MATCHING = (" ", "a\x00b", "not a key!", "ftp://elsewhere", "x" * 40)


def past_bounds(doc: dict[str, Any], schema: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for branch in branches(doc, schema):
        kind = branch.get("type")
        if kind in ("integer", "number"):
            out += [branch["minimum"] - 1] if "minimum" in branch else []
            out += [branch["maximum"] + 1] if "maximum" in branch else []
            out += [branch["exclusiveMinimum"]] if "exclusiveMinimum" in branch else []
        elif kind == "string":
            out += ["x" * (branch["minLength"] - 1)] if branch.get("minLength", 0) > 0 else []
            out += ["x" * (branch["maxLength"] + 1)] if "maxLength" in branch else []
            out += ["no-such-value"] if "enum" in branch or "const" in branch else []
            if "pattern" in branch:
                out += [next(t for t in NOT_MATCHING if not re.search(branch["pattern"], t))]
        elif kind == "array":
            out += [[]] if branch.get("minItems", 0) > 0 else []
            item = resolve(doc, branch.get("items", {}))
            if branch.get("uniqueItems") and "enum" in item:
                out.append([item["enum"][0]] * 2)
        elif kind == "object" and branch.get("minProperties", 0) > 0:
            out.append({})
    return out


def at_bounds(doc: dict[str, Any], schema: dict[str, Any]) -> list[Any]:
    """Numbers at their bounds (a string at its shortest often names a record or a node, which
    the server looks up: a refusal for that is no bound of the document's)."""
    out: list[Any] = []
    for branch in branches(doc, schema):
        if branch.get("type") in ("integer", "number"):
            whole = int if branch["type"] == "integer" else float
            out += [whole(branch[k]) for k in ("minimum", "maximum") if k in branch]
    return out


def test_a_value_past_each_bound_the_document_declares_is_400_naming_the_field(client: httpx.Client) -> None:
    seen = probe(client, past_bounds)

    assert len(seen) > 100
    assert [sent for sent, refused in seen if not refused] == []


def test_a_value_at_each_bound_the_document_declares_is_not_refused_for_that_field(client: httpx.Client) -> None:
    seen = probe(client, at_bounds)

    assert len(seen) > 60
    assert [sent for sent, refused in seen if refused] == []


def test_a_missing_required_field_and_an_unknown_one_are_400_naming_them(client: httpx.Client) -> None:
    doc = client.get("/openapi.json").json()
    agent = scripted_agent(client, "ok")
    sent: list[str] = []
    wrong: list[str] = []
    for method, path, base in OPERATIONS:
        filled = json.loads(json.dumps(base).replace("{agent}", agent))
        schema = doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
        schema = next((b for b in branches(doc, schema) if b.get("type") != "null"), schema)
        for at, shape in objects(doc, schema, filled):
            prefix = f"{at}." if at else ""
            probes = [(f"{prefix}{name}", put(filled, f"{prefix}{name}", DROP)) for name in shape.get("required", ())]
            if shape.get("additionalProperties") is False:
                probes.append((f"{prefix}unknown_field", put(filled, f"{prefix}unknown_field", "x")))
            for field, body in probes:
                sent.append(f"{method} {path} {field}")
                response = client.request(method, target(client, path, agent), json=body)
                if response.status_code != 400 or field not in response.json().get("fields", []):
                    wrong.append(f"{method.upper()} {path} {field}: {response.status_code} {response.text[:160]}")
    assert len(sent) > 30  # the body and its nested objects of every operation
    assert wrong == []
