"""A route class for the hot routes: a request whose JSON body validates skips FastAPI's
per-request solving; every other request takes FastAPI's own handling, unchanged.

``POST /formations/{id}/run`` is what clients call most. Its endpoint takes path parameters
(strings), one JSON body model and the ``Request``, and returns a ``Response``; for it,
FastAPI's request handling (reading the body, solving the parameters as dependencies,
validating each path parameter, building the exit stacks and an endpoint context) was about a
sixth of the event loop's time per run. :class:`PlainJsonRoute` is an ``APIRoute`` (FastAPI's
documented seam for custom request handling: ``APIRouter(route_class=...)``) whose handler
parses the body as FastAPI does (``json.loads``) and validates it with the model
(``model_validate``, what FastAPI's body field does with a JSON object); when both succeed it
calls the endpoint itself. Anything else, a malformed, empty or invalid body, and every
request while FastAPI's native telemetry records it, is handed to FastAPI's handler, which
reads the body FastAPI's ``Request`` cached and answers exactly as before. The OpenAPI
document comes from the route as declared, so it is unchanged.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Coroutine
from typing import Any, get_type_hints

from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response


def _no_telemetry() -> object:
    return None


try:  # FastAPI's native telemetry (0.165 and later)
    from fastapi.telemetry import get_telemetry_data

    _telemetry_data: Callable[[], object] = get_telemetry_data
except ImportError:  # an older FastAPI records no request: every valid body takes the plain path
    _telemetry_data = _no_telemetry

__all__ = ["PlainJsonRoute"]


class PlainJsonRoute(APIRoute):
    """An ``APIRoute`` for an ``async def`` endpoint whose parameters are path parameters
    annotated ``str``, one body parameter annotated with a pydantic model, and a ``Request``,
    and which returns a ``Response``: a request whose body is a JSON value the model accepts
    calls the endpoint directly; any other goes through FastAPI's handling.

    Raises:
        TypeError: at declaration, for an endpoint of another shape.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        general = super().get_route_handler()
        endpoint = self.endpoint
        hints = get_type_hints(endpoint)
        path: list[str] = []
        body: tuple[str, type[BaseModel]] | None = None
        request_name: str | None = None
        for name in inspect.signature(endpoint).parameters:
            kind = hints.get(name)
            if kind is Request:
                request_name = name
            elif kind is str and "{" + name + "}" in self.path_format:
                path.append(name)
            elif isinstance(kind, type) and issubclass(kind, BaseModel) and body is None:
                body = (name, kind)
            else:
                raise TypeError(f"PlainJsonRoute {self.path_format}: parameter {name!r} is not a str path parameter, "
                                "the body model or the Request; declare this route with APIRoute")
        if body is None or request_name is None or not inspect.iscoroutinefunction(endpoint):
            raise TypeError(f"PlainJsonRoute {self.path_format}: the endpoint must be an async def taking a body "
                            "model and the Request; declare this route with APIRoute")
        body_name, model = body
        names = tuple(path)

        async def handler(request: Request) -> Response:
            if _telemetry_data() is not None:  # FastAPI records this request: its operations included
                return await general(request)
            raw = await request.body()  # (kept by the Request: the general handler reads it again)
            try:
                value = model.model_validate(json.loads(raw))
            except (ValueError, ValidationError):  # malformed, empty or invalid: FastAPI's errors, as before
                return await general(request)
            arguments: dict[str, Any] = {name: request.path_params[name] for name in names}
            arguments[body_name] = value
            arguments[request_name] = request
            response: Response = await endpoint(**arguments)
            return response

        return handler
