"""The async HTTP transport on aiohttp (the ``aiohttp`` extra): httpx's ``AsyncClient`` in
front, ``httpx_aiohttp.AiohttpTransport`` (the transport the OpenAI and Anthropic SDKs ship
as ``DefaultAioHttpClient``) under it, for a fifth of httpx's own CPU per request.

The client stays an ordinary ``httpx.AsyncClient``; this transport keeps its semantics:
at most ``most`` requests in flight (the others wait up to their ``pool`` timeout, then
``httpx.PoolTimeout``), the connect and read timeouts of each request, and aiohttp's errors
as the httpx errors httpx itself raises (refused → ``ConnectError``, a read timeout →
``ReadTimeout``, a server that closes the connection → ``RemoteProtocolError``; the
package's own mapping calls a refused connection a ``ConnectTimeout``). Cancelling the
awaiting task closes the request's connection, as with httpx.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import ssl
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, NoReturn

import httpx

from .._extras import require
from ._lease import take_slot

if TYPE_CHECKING:
    import aiohttp

__all__ = ["READ_WHOLE", "AiohttpPool", "aiohttp_installed"]

READ_WHOLE = "wingman.read_whole"
"""A request extension (any true value): the transport reads the answer's body before it
returns (a provider's own request that is not streamed; see ``_asend.py``)."""

@functools.cache
def aiohttp_installed() -> bool:
    """Whether the ``aiohttp`` extra (``aiohttp`` and ``httpx-aiohttp``) is installed.
    Nothing is imported: aiohttp loads (about 90 ms) with the first async client on it."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in ("aiohttp", "httpx_aiohttp"))
    except (ImportError, ValueError):  # a finder that refuses it, or a module without a spec
        return False


class AiohttpPool(httpx.AsyncBaseTransport):
    """An httpx transport on one aiohttp ``ClientSession`` (made on the first request, in
    the running loop): at most ``most`` requests in flight, keep-alive ``expiry`` seconds.

    Args:
        ssl_context: the TLS context of every connection.
        most: the most requests in flight, and so of connections.
        expiry: seconds an idle connection is kept alive (httpx's ``keepalive_expiry``).

    Raises:
        MissingExtraError: the ``aiohttp`` extra is not installed.
    """

    def __init__(self, ssl_context: ssl.SSLContext, most: int, expiry: float = 5.0) -> None:
        with require("aiohttp", 'async_transport "aiohttp"'):
            import aiohttp
            from httpx_aiohttp import AiohttpTransport

        def session() -> aiohttp.ClientSession:
            # No pool limit of aiohttp's (the semaphore is the limit, with httpx's pool
            # timeout); no cookie jar (httpx's client keeps the cookies).
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=expiry, ssl=ssl_context)
            return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())

        self._inner = AiohttpTransport(verify=ssl_context, client=session)
        self._slots = asyncio.Semaphore(most)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through aiohttp, with httpx's errors."""
        slots = self._slots
        await take_slot(slots, request)
        try:
            try:
                response = await self._inner.handle_async_request(request)
            except Exception as exc:
                _reraise(exc, request)
        except BaseException:
            slots.release()
            raise
        body = _Body(response.stream, slots, request)  # as httpx's client wraps it too
        if not request.extensions.get(READ_WHOLE):
            response.stream = body
            return response
        try:  # read here: the answer is bytes, not four async iterators deep
            content = b"".join([chunk async for chunk in body])
        finally:
            await body.aclose()
        return httpx.Response(response.status_code, headers=response.headers, content=content,
                              extensions=response.extensions, request=request)

    async def aclose(self) -> None:
        """Close the aiohttp session and its connections."""
        await self._inner.aclose()


class _Body(httpx.AsyncByteStream):
    """An answer's body: its errors as httpx's; closing it frees its slot."""

    __slots__ = ("_request", "_slots", "_stream")

    def __init__(self, stream: httpx.SyncByteStream | httpx.AsyncByteStream, slots: asyncio.Semaphore | None,
                 request: httpx.Request) -> None:
        assert isinstance(stream, httpx.AsyncByteStream)
        self._stream = stream
        self._slots = slots
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._stream:
                yield chunk
        except Exception as exc:
            _reraise(exc, self._request)

    async def aclose(self) -> None:
        slots, self._slots = self._slots, None
        try:
            await self._stream.aclose()
        except Exception as exc:
            _reraise(exc, self._request)
        finally:
            if slots is not None:
                slots.release()


def _reraise(exc: Exception, request: httpx.Request) -> NoReturn:
    """Raise the httpx error httpx itself raises for the aiohttp failure in ``exc`` (``exc``
    as it is when it is none)."""
    import aiohttp  # loaded already: the request went through it

    cause: Any = exc.__cause__ if isinstance(exc, httpx.HTTPError) else exc
    if not isinstance(cause, aiohttp.ClientError):
        raise exc
    kind: type[httpx.TransportError]
    if isinstance(cause, aiohttp.ConnectionTimeoutError):
        kind = httpx.ConnectTimeout
    elif isinstance(cause, aiohttp.ServerTimeoutError):
        kind = httpx.ReadTimeout
    elif isinstance(cause, aiohttp.ClientConnectorError):
        kind = httpx.ConnectError
    elif isinstance(cause, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError,
                            aiohttp.ClientResponseError)):
        kind = httpx.RemoteProtocolError
    elif isinstance(cause, aiohttp.ClientOSError):
        kind = httpx.ReadError
    elif isinstance(cause, aiohttp.ClientConnectionError):
        kind = httpx.NetworkError
    else:
        kind = httpx.TransportError
    raise kind(str(cause) or type(cause).__name__, request=request) from cause
