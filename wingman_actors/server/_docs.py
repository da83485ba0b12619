"""``/docs`` (Swagger UI) and ``/redoc`` that work with no internet.

FastAPI's own pages load Swagger UI from a CDN: a blank page on an airgapped machine. Here
the pages load the assets that the ``fastapi-offline`` package ships (kept current with
Swagger UI 5 and ReDoc 2), served by the server itself from memory, so no thread is
needed to read them. The pages and assets, like ``/openapi.json``, need no token.
"""

from __future__ import annotations

import functools
from importlib.resources import files

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from starlette.responses import HTMLResponse, Response

from ._errors import ApiError
from ._middleware import DOCS_ASSETS

__all__ = ["ASSET_TYPES", "install_docs"]

ASSET_TYPES = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
    "favicon.png": "image/png",
}
"""The assets served under :data:`~wingman_actors.server._middleware.DOCS_ASSETS`, with their types."""


@functools.cache
def _asset(name: str) -> bytes:
    return (files("fastapi_offline") / "static" / name).read_bytes()


def install_docs(app: FastAPI) -> None:
    """Add ``/docs``, ``/docs/oauth2-redirect``, ``/redoc`` and their assets to ``app``
    (built with ``docs_url=None, redoc_url=None``)."""
    title = app.title

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json", title=f"{title} - Swagger UI", oauth2_redirect_url="/docs/oauth2-redirect",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js", swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png",
        )

    @app.get("/docs/oauth2-redirect", include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url="/openapi.json", title=f"{title} - ReDoc", redoc_js_url=f"{DOCS_ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{DOCS_ASSETS}/favicon.png", with_google_fonts=False,
        )

    @app.get(DOCS_ASSETS + "/{name}", include_in_schema=False)
    async def asset(name: str) -> Response:
        if name not in ASSET_TYPES:
            raise ApiError(404, f"no documentation asset {name!r}; the assets are: {', '.join(ASSET_TYPES)}")
        return Response(_asset(name), media_type=ASSET_TYPES[name], headers={"Cache-Control": "public, max-age=86400"})
