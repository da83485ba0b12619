"""The run viewer's page and assets (``/ui/``), shipped in the package (``server/ui/``):
HTML, CSS and JavaScript modules written on Preact + htm (the view) and dagre (the graph
layout), which are vendored as their published, built files in ``server/ui/vendor/``: no
build step, no Node.js, no outside URL.

They hold no data, so they are served without a token (the page asks for it and sends it
on every call of the viewer's JSON routes).
"""

from __future__ import annotations

import functools
from importlib.resources import files

from fastapi import APIRouter
from starlette.responses import RedirectResponse, Response

from ._errors import ApiError

__all__ = ["ASSETS", "PAGE", "VENDORED", "page_router"]

PAGE = "/ui/"
"""Where the viewer is."""

_JS, _CSS = "text/javascript; charset=utf-8", "text/css; charset=utf-8"

VENDORED = ("vendor/preact.mjs", "vendor/hooks.mjs", "vendor/htm.mjs", "vendor/dagre.mjs")
"""The libraries the page imports (``vendor/README.md`` names their versions and sources)."""

ASSETS = {
    **dict.fromkeys(("app.js", "api.js", "graph.js", "run.js", "view.js", *VENDORED), _JS),
    "style.css": _CSS,
}
"""The files under ``/ui/assets/``, with their types."""

# The page may load only its own assets and call only its own server.
_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
           "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


@functools.cache
def _read(name: str) -> bytes:
    path = files("wingman_actors.server") / "ui"
    for part in name.split("/"):
        path = path / part
    return path.read_bytes()


def page_router() -> APIRouter:
    """``GET /ui``, ``GET /ui/`` and ``GET /ui/assets/{name}``."""
    router = APIRouter(include_in_schema=False)

    @router.get("/ui")
    async def to_page() -> Response:
        return RedirectResponse(PAGE)

    @router.get(PAGE)
    async def page() -> Response:
        return Response(_read("index.html"), media_type="text/html; charset=utf-8",
                        headers={"Content-Security-Policy": _POLICY, "Cache-Control": "no-cache",
                                 "X-Frame-Options": "DENY"})

    @router.get("/ui/assets/{name:path}")
    async def asset(name: str) -> Response:
        if name not in ASSETS:
            raise ApiError(404, f"no viewer asset {name!r}; the assets are: {', '.join(ASSETS)}")
        return Response(_read(name), media_type=ASSETS[name], headers={"Cache-Control": "no-cache"})

    return router
