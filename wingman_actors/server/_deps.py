"""FastAPI dependencies shared by the route modules, and the lighter path of the hot routes."""

from __future__ import annotations

import json
from typing import Annotated, Any, cast

from fastapi import Body, Depends, Request
from fastapi.routing import APIRoute
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError
from starlette.responses import JSONResponse, Response

from ._context import ServerContext
from ._errors import ApiError

__all__ = [
    "ONCE", "Ctx", "JSONBody", "context_of", "empty_as_default", "get_context", "json_response", "single_query_values",
]


async def get_context(request: Request) -> ServerContext:
    """The :class:`ServerContext` the app's lifespan created."""
    return cast(ServerContext, request.app.state.wingman)


Ctx = Annotated[ServerContext, Depends(get_context)]
"""Route parameter type giving the server context."""


async def single_query_values(request: Request) -> None:
    """400 naming a query parameter of the route given more than once: ``?status=succeeded&status=failed``
    would otherwise be read as its last value alone (Starlette's ``QueryParams``), a filter silently
    narrowed to one of the values asked for. Parameters the route does not read are ignored."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    for param in route.dependant.query_params:
        given = request.query_params.getlist(param.alias)
        if len(given) > 1:
            raise ApiError(400, f"{param.alias}: given {len(given)} times; give it once (each query parameter "
                                f"takes one value)", fields=[param.alias])


ONCE = [Depends(single_query_values)]
"""``dependencies=`` of a route with query parameters: each may be given once."""


def empty_as_default(model: type[BaseModel]) -> Any:
    """The ``Body`` of a POST whose model has only optional fields (``Annotated[Model,
    empty_as_default(Model)]``): no body, or an empty one, is read as ``{}`` is. A body that is
    there is read as before (not JSON, or not an object: the 400). The OpenAPI document still
    declares the body required: ``Content-Type: application/json`` is, even with no body."""
    return Body(default_factory=model)


def context_of(request: Request) -> ServerContext:
    """:func:`get_context` without the dependency: for the hot routes (``POST
    /formations/{id}/run``), where FastAPI's solving of a dependency per request is a
    measurable share of the request's CPU. Neither appears in the OpenAPI document."""
    return cast(ServerContext, request.app.state.wingman)


def json_response(model: BaseModel, status_code: int = 200) -> Response:
    """``model`` as its JSON, encoded once: for a route whose ``response_model`` is
    ``model``'s class (kept in the decorator, so the OpenAPI document is unchanged), this
    skips FastAPI's validating and serialising the returned value through it again."""
    try:
        body = model.model_dump_json().encode()
    except PydanticSerializationError:  # text UTF-8 cannot hold (a lone surrogate): escaped, as JSONBody does
        body = JSONBody.ascii(model.model_dump(mode="json"))
    return Response(body, status_code, media_type="application/json")


class JSONBody(JSONResponse):
    """The servers' JSON responses: Starlette's, except that text holding a lone surrogate (a
    file name decoded with ``surrogateescape``, which a run may output and journal) is sent
    as ``\\udcff`` escapes, which a JSON reader takes back as the same text, instead of
    failing the request with a 500."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return self.ascii(content)

    @staticmethod
    def ascii(content: Any) -> bytes:
        """``content`` as JSON with every non-ASCII character escaped."""
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")
