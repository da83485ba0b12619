"""The OpenAPI document, told as the server really answers.

FastAPI documents a 422 validation error on every route with input, which this server never
sends (it answers 400 ``{"error", "fields"}``), and knows nothing of the errors middleware
gives. :func:`install_openapi` replaces the document's error responses with the real ones:
400, 401 (when a token is required), 403, 404, 409, 413, 415, 500, 502, 503 and 504 where they can happen,
all with the :class:`~wingman_actors.server._schemas.ErrorOut` schema; a bearer security
scheme when a token is required; and the ``Location`` header of every 201.

It also declares what the server enforces beyond the models' types, so a request the
document calls valid is not refused: the registered provider ids (path parameters, the keys
of ``PUT /provider/auth``, an agent's ``provider``), the run statuses ``GET /runs`` filters
by, the tool names an agent may list (each once), the registered function and predicate
names a formation's nodes and edges give, a JSON body on every POST, PUT and PATCH
(``Content-Type: application/json`` is required even where the body is ignored), and the
``text/event-stream`` answers of the streaming routes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from ..providers import list_providers
from ._config import ServerConfig
from ._middleware import is_open_path
from ._schemas import RUN_STATUSES, ErrorOut

__all__ = ["install_openapi"]

_ERROR_REF = {"$ref": "#/components/schemas/ErrorOut"}
_RUN_SUFFIXES = ("/message", "/message/stream", "/run", "/run/stream", "/runs/{id}/resume", "/runs/{id}/fork",
                 "/sessions/{id}/resume")
_PROVIDER_PARAMS = {"/provider/auth/{provider}": "provider", "/provider/{id}": "id", "/provider/{id}/models": "id",
                    "/provider/{id}/models/{model}": "id"}
_NAMES_IDS = ("/fleets",)  # bodies naming a stored record by id: 404 when it does not exist
_BODY_RULES = (
    " Every JSON body, at any depth: no string or key holding a lone UTF-16 surrogate, no NaN or Infinity, at "
    "most 64 levels of nesting (else 400 naming the field). Types are strict: a boolean is not an integer. A "
    "method a path does not have is a 405 whose Allow lists the path's methods; a path no route has (a trailing "
    "slash included: paths take none) is a 404. HEAD is answered on every path that has GET, as the GET without its "
    "body (implied by GET: not listed)."
)
_SSE_EVENT = {  # (OpenAPI 3.1: an event stream's schema describes one event)
    "type": "object",
    "description": "One server-sent event: `event: NAME` and `data: JSON` lines.",
    "properties": {"event": {"type": "string", "description": "the event's name"},
                   "data": {"type": "string", "description": "the event's JSON"}},
    "required": ["data"],
}
_OPTIONAL_BODY = ("Every field is optional: no body (or an empty one) is read as `{}`. `Content-Type: "
                  "application/json` is still required (on every POST).")
_IGNORED_BODY = {
    "description": "Ignored: send no body or `{}`, with `Content-Type: application/json` (required on every POST).",
    "required": True,
    "content": {"application/json": {"schema": {}}},
}


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ERROR_REF}}}


def _errors(path: str, method: str, operation: dict[str, Any], token: bool) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    has_input = "requestBody" in operation or bool(operation.get("parameters"))
    if has_input:
        out["400"] = _error("Malformed JSON, a failed validation or an unusable configuration; `fields` names "
                            "the fields at fault (`problems` lists a formation's problems). Also: a Host the "
                            "server does not serve.")
    else:
        out["400"] = _error("A Host the server does not serve (start it with --allowed-host NAME).")
    if token and not is_open_path(path):
        out["401"] = _error("Missing or wrong bearer token.")
    out["403"] = _error("The request's Origin is not allowed (start the server with --cors-origin ORIGIN).")
    if "{" in path or (path in _NAMES_IDS and method == "post"):
        out["404"] = _error("Unknown id (of the path, or a record the body names).")
    if method in ("post", "put", "patch"):
        out["413"] = _error("The body is larger than the server's limit (--max-body-bytes, 4 MiB unless set).")
        out["415"] = _error("The request does not say `Content-Type: application/json` (required even when "
                            "the body is empty), or sends its body compressed (a `Content-Encoding`).")
    if path in ("/runs/{id}/cancel", "/runs/{id}/resume"):
        out["409"] = _error("The run cannot be cancelled or resumed in its state (`run_status`; `kind`: the status, "
                            "`mismatch` when its formation changed shape, `formation_deleted`, `not_journalled`, `fleet`).")
    elif path == "/runs/{id}/fork":
        out["409"] = _error("The run cannot be forked (`kind`: `fleet`, `not_journalled`, `formation_deleted`, "
                            "`mismatch` when its formation changed shape; `run_status`), or the new run was cancelled "
                            "before it finished (`kind: cancelled`, with `run_id`).")
    elif path == "/runs/{id}/history":
        out["409"] = _error("The run has no journal to read (`kind`: `fleet`, or `not_journalled`).")
    elif path == "/formations/{id}" and method == "delete":
        out["409"] = _error("Other formations nest this one (`kind: in_use`; `used_by` lists their ids): remove "
                            "those nodes or delete those formations first.")
    elif path == "/formations/{id}" and method == "put":
        out["409"] = _error("Formations that nest this one would no longer validate with the new declaration "
                            "(`kind: in_use`; `used_by` lists their ids, `problems` what breaks): change them first.")
    elif path == "/sessions/{id}/resume":
        out["409"] = _error("The session is not waiting for an answer (`kind: not_suspended`), its wait expired or "
                            "it was answered already (`kind: not_resumable`), or it waits for another agent "
                            "(`kind: mismatch`).")
    elif path == "/formations/{id}/run":
        out["409"] = _error("The run was cancelled (POST /runs/{id}/cancel) before it finished (`kind: cancelled`, "
                            "with `run_id`).")
    if path in ("/runs/{id}/resume", "/runs/{id}/fork") or (path.startswith("/formations/") and path.endswith(("/run", "/run/stream"))):
        out["500"] = _error("A formation node failed in user code (`kind: runtime`, with `run_id` and `node`).")
    if path.endswith(_RUN_SUFFIXES) or path.startswith("/provider/{id}/models"):
        out["502"] = _error("The model provider failed (`kind`: agent, rate_limit, network, invalid, cancelled; "
                            "`provider`, `provider_status`).")
    if path in ("/formations/{id}/run", "/runs/{id}/resume", "/runs/{id}/fork"):
        out["503"] = _error("The server stopped while the run was in flight (`kind: interrupted`, with `run_id`): "
                            "resume it with POST /runs/{id}/resume once the server is back.")
    if path.endswith(_RUN_SUFFIXES) or path.startswith("/provider/{id}/models"):
        out["504"] = _error("The run or request ran out of time (`kind: timeout`).")
    return out


def _names(prop: dict[str, Any] | None, names: Sequence[str]) -> None:
    """Declare the string (or null) ``prop`` as one of ``names`` (or null): the string
    branch gets the enum; with no names, only null is left."""
    if prop is None:
        return
    for branch in list(prop.get("anyOf", ())):
        if branch.get("type") == "string":
            if names:
                branch["enum"] = list(names)
            else:
                prop["anyOf"].remove(branch)


def _declare(doc: dict[str, Any], tools: Sequence[str], functions: Sequence[str] = (),
             predicates: Sequence[str] = ()) -> None:
    """Write into ``doc`` the constraints the routes check themselves."""
    providers = sorted(m.id for m in list_providers())
    paths = doc.get("paths", {})
    for path, name in _PROVIDER_PARAMS.items():
        for operation in paths.get(path, {}).values():
            for param in operation.get("parameters", ()):
                if param["in"] == "path" and param["name"] == name:
                    param["schema"] = {**param["schema"], "enum": providers}
    for param in (*paths.get("/runs", {}).get("get", {}).get("parameters", ()),
                  *paths.get("/ui/api/runs", {}).get("get", {}).get("parameters", ())):
        if param["name"] == "status":
            param["schema"] = {**param["schema"],
                               "anyOf": [{"type": "string", "enum": list(RUN_STATUSES)}, {"type": "null"}]}
    schemas = doc.get("components", {}).get("schemas", {})
    for model in ("AgentCreate", "AgentUpdate"):
        _names(schemas.get(model, {}).get("properties", {}).get("provider"), providers)
    _names(schemas.get("NodeDecl", {}).get("properties", {}).get("function"), functions)
    _names(schemas.get("EdgeDecl", {}).get("properties", {}).get("condition"), predicates)
    if "AuthSetIn" in schemas:
        schemas["AuthSetIn"]["properties"]["providers"]["propertyNames"] = {"enum": providers}
        schemas["AuthSetIn"]["properties"]["providers"]["minProperties"] = 1
    for model in ("AgentCreate", "AgentUpdate"):
        prop = schemas.get(model, {}).get("properties", {}).get("tools")
        if prop is None:
            continue
        names = {"type": "array", "items": {"type": "string", "enum": list(tools)}, "uniqueItems": True}
        described = {k: v for k, v in prop.items() if k in ("description", "title", "default")}
        prop.clear()
        prop.update(described)
        if model == "AgentCreate":
            prop.update(names)
        else:
            prop["anyOf"] = [names, {"type": "null"}]
    for path, operations in paths.items():
        for method, operation in operations.items():
            if path.endswith("/stream") and "200" in operation.get("responses", {}):
                operation["responses"]["200"]["description"] = "Server-sent events, one per event of the run."
                operation["responses"]["200"]["content"] = {"text/event-stream": {"schema": _SSE_EVENT}}
            if method in ("post", "put", "patch"):
                if "requestBody" in operation:
                    if not operation["requestBody"].get("required"):  # a route's default body (empty_as_default)
                        operation["requestBody"].setdefault("description", _OPTIONAL_BODY)
                    operation["requestBody"]["required"] = True
                else:
                    operation["requestBody"] = dict(_IGNORED_BODY)


def build_openapi(app: FastAPI, config: ServerConfig, tools: Sequence[str] = (), functions: Sequence[str] = (),
                  predicates: Sequence[str] = ()) -> dict[str, Any]:
    """The OpenAPI document of ``app`` with the real error responses and the constraints
    the server enforces; ``tools`` are the tool names an agent may list, ``functions`` and
    ``predicates`` the names a formation's nodes and edges may give."""
    doc = get_openapi(title=app.title, version=app.version, summary=app.summary, description=app.description,
                      routes=app.routes)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    schemas["ErrorOut"] = ErrorOut.model_json_schema(ref_template="#/components/schemas/{model}")
    _declare(doc, tools, functions, predicates)
    doc["info"]["description"] = doc["info"].get("description", "") + _BODY_RULES
    token = config.token is not None
    if token:
        doc["components"]["securitySchemes"] = {
            "bearer": {"type": "http", "scheme": "bearer",
                       "description": "The token the server was started with (--token or WINGMAN_TOKEN)."}
        }
        doc["security"] = [{"bearer": []}]
    for path, operations in doc.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            responses.update(_errors(path, method, operation, token))
            if "201" in responses:
                responses["201"]["headers"] = {
                    "Location": {"description": "The path of the created record.", "schema": {"type": "string"}}
                }
            if token and is_open_path(path):
                operation["security"] = []
    return doc


def install_openapi(app: FastAPI, config: ServerConfig, tools: Sequence[str] = (), functions: Sequence[str] = (),
                    predicates: Sequence[str] = ()) -> None:
    """Serve :func:`build_openapi`'s document at ``/openapi.json`` (built once, on first use)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app, config, tools, functions, predicates)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
