"""FastAPI dependencies shared by the route modules."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Depends, Request

from ._context import ServerContext

__all__ = ["Ctx", "get_context"]


async def get_context(request: Request) -> ServerContext:
    """The :class:`ServerContext` the app's lifespan created."""
    return cast(ServerContext, request.app.state.wingman)


Ctx = Annotated[ServerContext, Depends(get_context)]
"""Route parameter type giving the server context."""
