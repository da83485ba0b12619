"""FastAPI dependencies shared by the route modules, and the lighter path of the hot routes."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Depends, Request
from pydantic import BaseModel
from starlette.responses import Response

from ._context import ServerContext

__all__ = ["Ctx", "context_of", "get_context", "json_response"]


async def get_context(request: Request) -> ServerContext:
    """The :class:`ServerContext` the app's lifespan created."""
    return cast(ServerContext, request.app.state.wingman)


Ctx = Annotated[ServerContext, Depends(get_context)]
"""Route parameter type giving the server context."""


def context_of(request: Request) -> ServerContext:
    """:func:`get_context` without the dependency: for the hot routes (``POST
    /formations/{id}/run``), where FastAPI's solving of a dependency per request is a
    measurable share of the request's CPU. Neither appears in the OpenAPI document."""
    return cast(ServerContext, request.app.state.wingman)


def json_response(model: BaseModel, status_code: int = 200) -> Response:
    """``model`` as its JSON, encoded once: for a route whose ``response_model`` is
    ``model``'s class (kept in the decorator, so the OpenAPI document is unchanged), this
    skips FastAPI's validating and serialising the returned value through it again."""
    return Response(model.model_dump_json().encode(), status_code, media_type="application/json")
