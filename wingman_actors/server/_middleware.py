"""ASGI middleware: 404 for a path no route has (a trailing slash included), 405 for a
method a path does not have and ``HEAD`` wherever ``GET`` is, bearer-token check, JSON-only bodies (and what they may hold),
the request timeout of non-streaming routes, and a last-resort 500 in the ``{"error"}`` shape."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Sequence

import anyio
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._body import body_problems, scrub
from ._config import DEFAULT_MAX_BODY_BYTES

__all__ = [
    "DOCS_ASSETS", "OPEN_PATHS", "CatchAllMiddleware", "JsonBodyMiddleware", "MethodMiddleware", "TimeoutMiddleware",
    "TokenMiddleware", "is_open_path",
]

log = logging.getLogger("wingman_actors.server")

OPEN_PATHS = frozenset({"/health", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
"""Paths served without a token: they hold no data."""

DOCS_ASSETS = "/static-offline-docs"
"""Where the Swagger UI and ReDoc assets are served from (no token needed)."""

VIEWER_PAGE = frozenset({"/ui", "/ui/"})
VIEWER_ASSETS = "/ui/assets/"
"""The run viewer's page and assets: no data, no token (its JSON routes, /ui/api/, need it)."""


def is_open_path(path: str) -> bool:
    """Whether ``path`` is served without a token."""
    return (path in OPEN_PATHS or path in VIEWER_PAGE or path.startswith(DOCS_ASSETS + "/")
            or path.startswith(VIEWER_ASSETS))


class MethodMiddleware:
    """Answers, before any other check, 404 for a path no route has and 405 with ``Allow``
    (every method of the path) for a method none of its routes has: a PUT on ``/agents`` is a
    405, and a POST on ``/agents/`` a 404, not a 415 for a missing body type nor a 401 for a
    missing token.

    Paths take no trailing slash: ``/agents/`` is not ``/agents``, for every route alike. It
    is a 404 naming the route without the slash rather than the router's redirect, which
    clients follow with a GET or drop a POST's body on, and which hides the mistake.

    Starlette's own 405 names only the first route matching the path, and FastAPI makes one
    route per method, so its ``Allow`` would miss the others. The routes are asked through
    their public ``matches``; the answers for the last :data:`CACHED` paths are kept.

    ``HEAD`` is answered wherever ``GET`` is (RFC 9110 asks it of every general-purpose
    server; FastAPI's routes, unlike Starlette's, do not add it): as the ``GET``, every check
    within included, without its body (see :func:`answer_head`). ``Allow`` and the OpenAPI
    document list the routes' declared methods, ``HEAD`` implied by ``GET``.
    """

    METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")
    CACHED = 4096

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.routes = routes
        self._cache: dict[tuple[str, str], tuple[str, ...] | None] = {}

    def _has(self, method: str, path: str) -> bool:
        scope = {"type": "http", "path": path, "method": method, "root_path": ""}
        return any(route.matches(scope)[0] is Match.FULL for route in self.routes)

    def refused(self, method: str, path: str) -> tuple[str, ...] | None:
        """The methods ``path`` allows when ``method`` is not one of them; empty when it is;
        None when no route has the path."""
        found = self._lookup(method, path)
        return () if found is _AS_GET else found

    def _lookup(self, method: str, path: str) -> tuple[str, ...] | None:
        """As :meth:`refused`, but :data:`_AS_GET` for a HEAD that only a GET route takes."""
        key = (method, path)
        found = self._cache.get(key, _UNSEEN)
        if found is _UNSEEN:
            if self._has(method, path):
                found = ()
            elif method == "HEAD" and self._has("GET", path):
                found = _AS_GET
            else:
                found = tuple(m for m in self.METHODS if self._has(m, path)) or None
            if len(self._cache) >= self.CACHED:
                self._cache.clear()
            self._cache[key] = found
        return found

    def _no_route(self, method: str, path: str) -> str:
        bare = path.rstrip("/")
        allowed = self.refused(method, bare) if bare and bare != path else None
        hint = "" if allowed is None else "; paths take no trailing slash: " + (
            f"{method} {bare} is a route" if not allowed else f"{bare} is a route for {', '.join(allowed)}")
        return f"no route {method} {path}{hint}; see GET /openapi.json for the routes"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            allowed = self._lookup(scope["method"], scope["path"])
            if allowed is _AS_GET:
                await answer_head(self.app, scope, receive, send)
                return
            if allowed:
                listed = ", ".join(allowed)
                response = JSONResponse(
                    {"error": scrub(f"method {scope['method']} is not allowed on {scope['path']}; it allows {listed}")},
                    status_code=405, headers={"Allow": listed},
                )
                await response(scope, receive, send)
                return
            if allowed is None:
                response = JSONResponse({"error": scrub(self._no_route(scope["method"], scope["path"]))},
                                        status_code=404)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


_UNSEEN: tuple[str, ...] = ("(not asked yet)",)  # (compared by identity)
_AS_GET: tuple[str, ...] = ("(HEAD, answered as the GET)",)  # (compared by identity)
_END: Message = {"type": "http.response.body", "body": b"", "more_body": False}


async def answer_head(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Answer a ``HEAD`` request as ``app`` answers the same ``GET``, without the body.

    The status and headers are the ``GET``'s, ``Content-Length`` and ``Content-Type``
    included. A response with no ``Content-Length`` is a stream (the servers' SSE routes):
    its headers are all a ``HEAD`` gets, so the response ends with them and what ``app`` is
    still doing for it is cancelled, as if the client had left; a stream never starts for a
    request that reads none.
    """
    ended = False
    with anyio.CancelScope() as cancelled:

        async def headers_only(message: Message) -> None:
            nonlocal ended
            if ended:
                return
            if message["type"] == "http.response.start":
                await send(message)
                if not any(k.lower() == b"content-length" for k, _ in message.get("headers", ())):
                    ended = True
                    await send(_END)
                    cancelled.cancel()
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                ended = True
                await send(_END)

        await app({**scope, "method": "GET"}, receive, headers_only)


class TokenMiddleware:
    """Requires ``Authorization: Bearer <token>`` on every path but :data:`OPEN_PATHS`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_open_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        if not hmac.compare_digest(given, self.expected):
            why = "missing" if not given else "invalid"
            response = JSONResponse(
                {"error": f"{why} bearer token: send the header 'Authorization: Bearer <token>' "
                          "with the token the server was started with (--token or WINGMAN_TOKEN)"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class JsonBodyMiddleware:
    """Bodies are JSON: a POST, PUT or PATCH must say ``Content-Type: application/json``
    (or another ``+json`` type), even with an empty body, else 415 (a 415 too for a body with a
    ``Content-Encoding``: none is decoded); a body larger than
    ``max_bytes`` is a 413, refused by its ``Content-Length`` before it is read or as soon
    as what was read passes the limit (a chunked body), so no more than ``max_bytes`` is
    ever held; a JSON body holding what cannot be stored (see
    :func:`~wingman_actors.server._body.body_problems`) is a 400 naming the fields.

    Refusing every other type, a missing one included, matters: a web page can send a form,
    text or an untyped ``Blob`` (``sendBeacon``, ``fetch`` in ``no-cors`` mode) cross-origin
    without a CORS preflight, so accepting them would let any site drive a server on
    localhost. ``application/json`` always needs a preflight, which the CORS policy refuses.

    Args:
        app: the app within.
        max_bytes: the largest body read (``ServerConfig.max_body_bytes``; default 4 MiB).
    """

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            types = []
            codings: list[str] = []
            length = b""
            for k, v in scope["headers"]:
                if k == b"content-type":
                    types.append(v.decode("latin-1").lower())
                elif k == b"content-length":
                    length = v
                elif k == b"content-encoding":
                    codings += [c.strip() for c in v.decode("latin-1").lower().split(",") if c.strip() != "identity"]
            if not types or not any(_is_json(t) for t in types):
                got = f"Content-Type {types[0]!r}" if types else "no Content-Type"
                response = JSONResponse(
                    {"error": f"request bodies must be JSON, got {got}: send 'Content-Type: application/json', "
                              "even with an empty body (curl: -H 'Content-Type: application/json')"},
                    status_code=415,
                )
                await response(scope, receive, send)
                return
            if codings:  # no content coding is decoded: a compressed body would be read as if it were plain
                response = JSONResponse(
                    {"error": f"request bodies must be sent uncompressed, got Content-Encoding {', '.join(codings)!r}: "
                              "send the JSON as is, without a Content-Encoding header"},
                    status_code=415,
                )
                await response(scope, receive, send)
                return
            body = None if length.isdigit() and int(length) > self.max_bytes else await _read_body(receive, self.max_bytes)
            if body is None:
                await self._too_large(scope, receive, send)
                return
            problems = body_problems(body) if body.strip() else []
            if problems:
                response = JSONResponse(
                    {"error": "invalid request: " + "; ".join(f"{f}: {m}" for f, m in problems),
                     "fields": [f for f, _ in problems]},
                    status_code=400,
                )
                await response(scope, receive, send)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        """413; the connection is closed after it, the rest of the body unread."""
        limit = self.max_bytes
        shown = f" ({limit / 1048576:g} MiB)" if limit >= 1048576 else ""
        response = JSONResponse(
            {"error": f"the request body is larger than the server's limit of {limit} bytes{shown}: send a smaller "
                      "one, or start the server with a higher --max-body-bytes (ServerConfig.max_body_bytes)"},
            status_code=413, headers={"Connection": "close"},
        )
        await response(scope, receive, send)


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The request's body, or None as soon as it is longer than ``limit`` bytes (the rest unread)."""
    chunks = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` that gives the already read ``body`` first, then what the client sends
    next (a disconnect: streaming responses listen for it)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


class TimeoutMiddleware:
    """Answers 504 when a non-streaming request takes longer than ``timeout`` seconds.

    Runs also carry their own deadline (so they stop, store nothing, and answer 504
    themselves); this is the backstop for everything else.
    """

    def __init__(self, app: ASGIApp, timeout: float) -> None:
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/").endswith("/stream"):
            await self.app(scope, receive, send)
            return
        tracking_send = _StartTracker(send)

        try:
            async with asyncio.timeout(self.timeout):
                await self.app(scope, receive, tracking_send)
        except TimeoutError:
            if tracking_send.started:
                raise
            response = JSONResponse(
                {"error": f"the request took longer than the server's {self.timeout:g}s request timeout",
                 "kind": "timeout"},
                status_code=504,
            )
            await response(scope, receive, send)


class _StartTracker:
    """Wraps ``send`` and remembers whether the response has started (after that, an
    error can no longer become a JSON error response)."""

    __slots__ = ("send", "started")

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self.send(message)


class CatchAllMiddleware:
    """Turns an unexpected exception into ``500 {"error": ...}`` (and logs it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tracking_send = _StartTracker(send)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            log.exception("unexpected error on %s %s", scope["method"], scope["path"])
            if tracking_send.started:
                raise
            response = JSONResponse(
                {"error": f"internal server error: {type(exc).__name__}: {exc}"}, status_code=500
            )
            await response(scope, receive, send)
