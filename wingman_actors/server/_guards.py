"""Who may talk to the server from a browser: the ``Host`` and ``Origin`` checks.

A server on localhost is reachable by every web page the user opens. Two checks keep
those pages out (JSON-only bodies, in :mod:`.middleware`, are the third):

- **Host** (DNS rebinding): a page on ``evil.example`` can re-point its own name at
  127.0.0.1 and then call the server as same-origin. Its requests still carry
  ``Host: evil.example``, so only the bound address, the loopback names and names the
  operator configured (``--allowed-host``) are served; anything else is a 400.
- **Origin** (cross-site requests): a request sent by a page carries the page's origin.
  Only the server's own origin and the configured ``--cors-origin`` values are served;
  anything else (``null`` from a sandboxed frame or a file included) is a 403.

Example:
    >>> host_name("[::1]:8787"), host_name("Wingman.LAN.:80")
    ('::1', 'wingman.lan')
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["LOOPBACK_NAMES", "JsonCORSMiddleware", "OriginHostMiddleware", "host_name"]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
"""Host names always served: they cannot be re-pointed by someone else's DNS."""

_WILDCARDS = frozenset({"0.0.0.0", "::", ""})


def host_name(host: str) -> str:
    """The name part of a ``Host`` header value: port, brackets and trailing dot removed,
    lower-cased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class OriginHostMiddleware:
    """Refuses requests whose ``Host`` or ``Origin`` the server does not know.

    Args:
        app: the wrapped app.
        allowed_hosts: extra names (``*.example.com`` for subdomains, ``*`` for any).
        allowed_origins: browser origins allowed besides the server's own (``--cors-origin``).
    """

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.hosts = frozenset(allowed_hosts)
        self.origins = frozenset(allowed_origins)

    def host_allowed(self, name: str, bound: str) -> bool:
        """Whether ``name`` (from the Host header) may be served by a server bound to ``bound``."""
        if "*" in self.hosts or name in LOOPBACK_NAMES or name in self.hosts or name == bound:
            return True
        if bound in _WILDCARDS and _is_ip(name):  # bound to every interface: any of its addresses
            return True
        return any(h.startswith("*.") and name.endswith(h[1:]) for h in self.hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode(): v.decode("latin-1") for k, v in scope["headers"] if k in (b"host", b"origin")}
        host = headers.get("host")
        server = scope.get("server") or ("", None)
        bound = host_name(str(server[0] or ""))
        if host is not None and not self.host_allowed(host_name(host), bound):
            await self._refuse(scope, receive, send, 400, (
                f"Host {host!r} is not a name of this server: call it by its address or a configured name "
                f"(start the server with --allowed-host {host_name(host) or 'NAME'} to serve this name)"
            ))
            return
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin.rstrip("/"), host):
            await self._refuse(scope, receive, send, 403, origin_refused(origin))
            return
        await self.app(scope, receive, send)

    def _origin_allowed(self, origin: str, host: str | None) -> bool:
        if origin in self.origins:
            return True
        parts = urlsplit(origin)
        # The server's own pages (/docs) send their origin on POST: same scheme-less host and port.
        return host is not None and parts.scheme in ("http", "https") and parts.netloc == host.strip().lower()

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
        await JSONResponse({"error": message}, status_code=status)(scope, receive, send)


def origin_refused(origin: str) -> str:
    """The 403's message for a request from a web page at ``origin``."""
    return f"requests from web pages at {origin!r} are not allowed: start the server with --cors-origin {origin} " \
           "to let that site call it"


class JsonCORSMiddleware(CORSMiddleware):
    """Starlette's CORS middleware (``--cors-origin``), its refused preflights answered as every
    other refusal: a foreign origin is the 403 :class:`OriginHostMiddleware` gives it, a method or
    header not allowed a 400 naming those that are, both ``{"error"}`` (Starlette's are plain text,
    ``400 Disallowed CORS origin``)."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code != 400:
            return response
        cors = {k: v for k, v in response.headers.items() if k.startswith("access-control-")}
        failures = bytes(response.body).decode().removeprefix("Disallowed CORS ").split(", ")
        if "origin" in failures:
            return JSONResponse({"error": origin_refused(request_headers["origin"])}, status_code=403, headers=cors)
        allowed = {"method": f"methods {', '.join(self.allow_methods)}",
                   "headers": f"headers {', '.join(sorted(h.title() for h in self.allow_headers))}"}
        message = "; ".join(f"the {f} asked for ({request_headers.get(f'access-control-request-{f}', '')!r}) "
                            f"{'are' if f.endswith('s') else 'is'} not allowed: this server allows {allowed.get(f, f)}"
                            for f in failures)
        return JSONResponse({"error": f"CORS preflight refused: {message}"}, status_code=400, headers=cors)
