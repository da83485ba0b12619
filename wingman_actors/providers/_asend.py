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
request's ``timeout`` extension, as the client sets them; a request that is not streamed
asks the aiohttp transport to read the answer before it returns (``READ_WHOLE``), so it
comes back as bytes rather than through four layers of async iterators. A user's own
``async_http_client`` is sent through as it is (``client.send``): its auth, hooks and
cookies are the user's.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from ._aiohttp import READ_WHOLE

__all__ = ["OwnAsyncClient", "json_body"]


def json_body(body: Any) -> bytes:
    """``body`` as httpx encodes ``json=``: compact UTF-8 JSON, NaN refused (``ValueError``)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


class OwnAsyncClient:
    """A provider's async client on one event loop, and the transport under it.

    Args:
        client: the ``httpx.AsyncClient`` (closed with :meth:`aclose`).
        transport: the transport the client was given.
        base_url: the provider's base URL (no trailing slash).
    """

    __slots__ = ("_base_url", "_prepared", "client", "transport")

    def __init__(self, client: httpx.AsyncClient, transport: httpx.AsyncBaseTransport, base_url: str) -> None:
        self.client = client
        self.transport = transport
        self._base_url = base_url
        # (path, extra headers) -> (URL, raw headers): a provider posts to one or two paths
        self._prepared: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[httpx.URL, list[tuple[bytes, bytes]]]] = {}

    def _prepare(self, path: str, headers: dict[str, str] | None) -> tuple[httpx.URL, list[tuple[bytes, bytes]]]:
        key = (path, tuple(headers.items()) if headers else ())
        prepared = self._prepared.get(key)
        if prepared is None:
            url = httpx.URL(self._base_url + path)
            merged = httpx.Headers(self.client.headers)  # the client's defaults and the provider's
            merged.update(headers or {})
            # as httpx sets them: only where the provider's headers have none
            merged.setdefault("Content-Type", "application/json")
            merged.setdefault("Host", url.netloc.decode("ascii"))
            merged.pop("Content-Length", None)  # each request's own
            prepared = self._prepared[key] = (url, merged.raw)
        return prepared

    async def post(self, path: str, content: bytes, headers: dict[str, str] | None, timeout: httpx.Timeout, *,
                   stream: bool = False) -> httpx.Response:
        """POST ``content`` (JSON) to ``path`` through the transport. Without ``stream``
        the answer is read and closed; with it, the caller closes it (``aclose``)."""
        url, prepared = self._prepare(path, headers)
        # stream=, not content=: the headers are complete (Content-Length added here), so
        # httpx adds none; read() then holds the body as content= would.
        request = httpx.Request("POST", url, headers=[*prepared, (b"Content-Length", str(len(content)).encode())],
                                stream=httpx.ByteStream(content),
                                extensions={"timeout": timeout.as_dict(), READ_WHOLE: not stream})
        request.read()
        response = await self.transport.handle_async_request(request)
        response.request = request
        if not stream and not response.is_closed:  # a transport that streamed it anyway
            try:
                await response.aread()
            finally:
                await response.aclose()
        return response

    async def aclose(self) -> None:
        """Close the client (and so its transport and connections)."""
        await self.client.aclose()
