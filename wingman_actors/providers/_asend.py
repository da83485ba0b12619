"""A provider's own async client and the cheap way its requests are sent.

A built-in provider's async client is an ordinary ``httpx.AsyncClient`` over a transport
the provider made (:class:`~wingman_actors.providers._aiohttp.AiohttpPool` or
:class:`~wingman_actors.providers._lease.LeasingTransport`). Sending through the client
costs about 140 µs of CPU per request on top of the transport (measured on the
``async_sessions`` bench: merging the URL with the base URL, normalising the headers,
the auth and redirect loops, and the cookie jar's parsing of every answer), and none of
it does anything for a provider's own client: it has no auth, no cookies a provider
reads, no event hooks, it follows no redirects, and the client routes every URL to the
provider's transport (a client given a transport takes no proxy from the environment).
So a request is built once per path as far as it can be (the ``httpx.URL`` and the
headers: the client's defaults, the provider's, the content type and ``Host``), and each
request is an ``httpx.Request`` handed to the transport through httpx's documented
transport API (``AsyncBaseTransport.handle_async_request``), with the timeouts in the
request's ``timeout`` extension, as the client sets them. A request that is not streamed,
on the aiohttp transport, skips httpx's objects too: it goes to aiohttp's client with a
URL and headers made once per path, and its answer comes back as bytes
(:meth:`~wingman_actors.providers._aiohttp.AiohttpPool.read_whole`: about 110 µs of CPU
per request less). A user's own
``async_http_client`` is sent through as it is (``client.send``): its auth, hooks and
cookies are the user's.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping
from typing import Any, Protocol

import httpx

from ._aiohttp import AiohttpPool, Target

__all__ = ["Answer", "OwnAsyncClient", "json_body"]


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)  # stateless: shared


def json_body(body: Any) -> bytes:
    """``body`` as httpx encodes ``json=``: compact UTF-8 JSON, NaN refused (``ValueError``)."""
    return _ENCODER.encode(body).encode("utf-8")


class Answer(Protocol):
    """A whole answer as the providers read it: an ``httpx.Response`` that was read, or
    the aiohttp transport's :class:`~wingman_actors.providers._aiohttp.Whole`."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...  # case-insensitive

    @property
    def content(self) -> bytes: ...


class OwnAsyncClient:
    """A provider's async client on one event loop, and the transport under it.

    Args:
        client: the ``httpx.AsyncClient`` (closed with :meth:`aclose`).
        transport: the transport the client was given.
        base_url: the provider's base URL (no trailing slash).
    """

    __slots__ = ("_base_url", "_prepared", "_whole", "client", "transport")

    def __init__(self, client: httpx.AsyncClient, transport: httpx.AsyncBaseTransport, base_url: str) -> None:
        self.client = client
        self.transport = transport
        self._base_url = base_url
        # the aiohttp transport reads a whole answer without httpx's objects (read_whole)
        self._whole = transport if isinstance(transport, AiohttpPool) else None
        # (path, extra headers) -> (URL, raw headers, the aiohttp transport's target): a
        # provider posts to one or two paths
        self._prepared: dict[tuple[str, tuple[tuple[str, str], ...]], _Prepared] = {}
        if self._whole is not None:  # its session's own headers: those of a request not streamed
            self._whole.adopt_headers(self._headers(httpx.URL(base_url), None).raw)

    def _prepare(self, path: str, headers: dict[str, str] | None) -> _Prepared:
        key = (path, tuple(headers.items()) if headers else ())
        prepared = self._prepared.get(key)
        if prepared is None:
            url = httpx.URL(self._base_url + path)
            merged = self._headers(url, headers)
            target = self._whole.target(url, merged.raw) if self._whole is not None else None
            prepared = self._prepared[key] = (url, merged.raw, target)
        return prepared

    def _headers(self, url: httpx.URL, headers: dict[str, str] | None) -> httpx.Headers:
        merged = httpx.Headers(self.client.headers)  # the client's defaults and the provider's
        merged.update(headers or {})
        # as httpx sets them: only where the provider's headers have none
        merged.setdefault("Content-Type", "application/json")
        merged.setdefault("Host", url.netloc.decode("ascii"))
        merged.pop("Content-Length", None)  # each request's own
        return merged

    def read(self, path: str, content: bytes, timeout: float, connect: float) -> Awaitable[Answer]:
        """POST ``content`` (JSON) to ``path`` and read the whole answer: through the
        aiohttp transport's :meth:`~wingman_actors.providers._aiohttp.AiohttpPool.read_whole`,
        else through the transport's ``handle_async_request``. ``timeout`` and
        ``connect``: httpx's ``Timeout(timeout, connect=connect)``. (Not a coroutine of
        its own: the one it returns is awaited.)"""
        url, prepared, target = self._prepare(path, None)
        if target is not None:
            assert self._whole is not None
            return self._whole.read_whole(target, content, timeout, connect)
        return self._read(url, prepared, content, httpx.Timeout(timeout, connect=connect))

    async def _read(self, url: httpx.URL, prepared: list[tuple[bytes, bytes]], content: bytes,
                    timeout: httpx.Timeout) -> httpx.Response:
        response = await self._send(url, prepared, content, timeout)
        if not response.is_closed:
            try:
                await response.aread()
            finally:
                await response.aclose()
        return response

    async def stream(self, path: str, content: bytes, headers: dict[str, str] | None,
                     timeout: httpx.Timeout) -> httpx.Response:
        """POST ``content`` (JSON) to ``path`` through the transport; the caller reads and
        closes the answer (``aclose``)."""
        url, prepared, _ = self._prepare(path, headers)
        return await self._send(url, prepared, content, timeout)

    async def _send(self, url: httpx.URL, prepared: list[tuple[bytes, bytes]], content: bytes,
                    timeout: httpx.Timeout) -> httpx.Response:
        # stream=, not content=: the headers are complete (Content-Length added here), so
        # httpx adds none; read() then holds the body as content= would.
        request = httpx.Request("POST", url, headers=[*prepared, (b"Content-Length", str(len(content)).encode())],
                                stream=httpx.ByteStream(content), extensions={"timeout": timeout.as_dict()})
        request.read()
        response = await self.transport.handle_async_request(request)
        response.request = request
        return response

    async def aclose(self) -> None:
        """Close the client (and so its transport and connections)."""
        await self.client.aclose()


_Prepared = tuple[httpx.URL, list[tuple[bytes, bytes]], Target | None]
