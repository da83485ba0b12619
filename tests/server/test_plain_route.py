"""PlainJsonRoute (the hot routes' handling) answers every request as FastAPI's own handling does."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from starlette.responses import JSONResponse, Response

from wingman_actors.server._app import validation_error
from wingman_actors.server._plain_route import PlainJsonRoute
from wingman_actors.server._schemas import FormationRunIn

calls: list[tuple[str, FormationRunIn]] = []


async def endpoint(id: str, body: FormationRunIn, request: Request) -> Response:
    calls.append((id, body))
    return JSONResponse({"id": id, "body": body.model_dump(), "path": request.url.path})


def _app() -> FastAPI:
    app = FastAPI()

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        error = validation_error(exc.errors())
        return JSONResponse(error.body(), status_code=error.status)

    app.router.add_api_route("/plain/{id}/run", endpoint, methods=["POST"], route_class_override=PlainJsonRoute)
    app.router.add_api_route("/fastapi/{id}/run", endpoint, methods=["POST"], route_class_override=APIRoute)
    return app


def _answers(client: TestClient, body: bytes) -> tuple[Any, ...]:
    answers = []
    for route in ("plain", "fastapi"):
        calls.clear()
        response = client.post(f"/{route}/f-1/run", content=body, headers={"Content-Type": "application/json"})
        text = response.text.replace(f"/{route}/", "/ROUTE/")
        answers.append((response.status_code, text, [(i, b.model_dump()) for i, b in calls]))
    return tuple(answers)


BODIES = [
    b'{"input": " abc "}', b'{"input": null, "timeout": 2}', b'{"input": [1, {"a": 2}], "timeout": 0.5}',
    b"{}", b"", b"   ", b"null", b"[]", b'"text"', b"3", b'{"input": 1,}', b"{", b'{"inputs": 1}',
    b'{"timeout": false}', b'{"timeout": "2"}', b'{"timeout": 0}', b'{"timeout": -1}', b'{"timeout": 1e9}',
    b'{"timeout": 2.0}', b'{"input": 1, "input": 2}', b"\xff\xfe", b'{"input": "\xc3\xa9"}',
]


@pytest.mark.parametrize("body", BODIES)
def test_a_plain_json_route_answers_each_body_as_fastapi_does(body: bytes) -> None:
    with TestClient(_app()) as client:
        plain, general = _answers(client, body)
    assert plain == general


def test_a_plain_json_route_answers_random_bodies_as_fastapi_does() -> None:
    rng = random.Random(23)
    values: list[Any] = [None, True, 0, 1, 2.5, -3, "", "x", [], {}, [1], {"a": None}, 10**30]
    keys = ["input", "timeout", "answer", "Input", ""]
    with TestClient(_app()) as client:
        for _ in range(150):
            body: Any = {rng.choice(keys): rng.choice(values) for _ in range(rng.randint(0, 3))}
            if rng.random() < 0.1:
                body = rng.choice(values)
            raw = json.dumps(body).encode()
            if rng.random() < 0.1:
                raw = raw[: rng.randint(0, len(raw))]
            plain, general = _answers(client, raw)
            assert plain == general, raw


def test_a_plain_json_route_refuses_an_endpoint_of_another_shape() -> None:
    async def counted(id: str, limit: int, body: FormationRunIn, request: Request) -> Response:
        return Response()

    app = FastAPI()
    with pytest.raises(TypeError, match=r"parameter 'limit' is not a str path parameter"):
        app.router.add_api_route("/x/{id}", counted, methods=["POST"], route_class_override=PlainJsonRoute)


def test_a_request_fastapi_telemetry_records_gets_the_same_spans_as_from_fastapi_s_handling() -> None:
    pytest.importorskip("fastapi.telemetry")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = FastAPI(telemetry={"tracer_provider": provider, "metrics": False, "logs": False})
    app.router.add_api_route("/plain/{id}/run", endpoint, methods=["POST"], route_class_override=PlainJsonRoute)
    app.router.add_api_route("/fastapi/{id}/run", endpoint, methods=["POST"], route_class_override=APIRoute)
    spans = {}
    with TestClient(app) as client:
        for route in ("plain", "fastapi"):
            exporter.clear()
            assert client.post(f"/{route}/f-1/run", json={"input": 1}).status_code == 200
            spans[route] = sorted(s.name.replace(f"/{route}/", "/ROUTE/") for s in exporter.get_finished_spans())
    assert spans["plain"] == spans["fastapi"]
    assert len(spans["plain"]) > 1, spans  # the request's span and its operations'
