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
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

import httpx

from .._extras import require
from ._lease import take_slot, wait_for_slot

if TYPE_CHECKING:
    import aiohttp

__all__ = ["AiohttpPool", "Target", "Whole", "aiohttp_installed"]


class Target(NamedTuple):
    """Where :meth:`AiohttpPool.read_whole` sends: the URL (httpx's, for errors) and the
    URL and headers as aiohttp takes them."""

    url: httpx.URL
    aiohttp_url: Any  # yarl.URL
    aiohttp_headers: Any  # multidict.CIMultiDict[str]

    def request(self) -> httpx.Request:
        """The httpx request an error names (made only for an error)."""
        return httpx.Request("POST", self.url)


class Whole(NamedTuple):
    """A whole answer: its status, its headers (case-insensitive) and its body (decoded
    as httpx decodes a ``Content-Encoding``)."""

    status_code: int
    headers: Mapping[str, str]
    raw: bytes

    @property
    def content(self) -> bytes:
        """The body, decoded (gzip, deflate... as httpx decodes it)."""
        if "content-encoding" not in self.headers:
            return self.raw
        return httpx.Response(self.status_code, headers=list(self.headers.items()), content=self.raw).content


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
            # timeout); no cookie jar (httpx's client keeps the cookies); bodies as they
            # came (httpx decodes them, as it would its own).
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=expiry, ssl=ssl_context)
            return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(),
                                         auto_decompress=False, headers=self._headers)

        self._new_session = session
        self._session: aiohttp.ClientSession | None = None  # made in the loop of the first request
        self._inner = AiohttpTransport(verify=ssl_context, client=self._session_now)
        self._slots = asyncio.Semaphore(most)
        self._timeouts: dict[tuple[float, float], aiohttp.ClientTimeout] = {}  # by the request's timeout
        # The session's own headers (adopt_headers): those of every request of the provider
        # that made it (no proxy is ever used, which would be sent them too).
        self._headers: Any = None  # multidict.CIMultiDict[str]
        self._headers_raw: list[tuple[bytes, bytes]] = []

    def _session_now(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = self._new_session()
        return self._session

    def adopt_headers(self, headers: list[tuple[bytes, bytes]]) -> None:
        """Make ``headers`` the aiohttp session's own, sent with each of its requests: a
        request of :meth:`read_whole` with these headers then passes none, and aiohttp
        merges none per request (it walks a request's headers twice otherwise). Every
        request through this transport carries these headers' names (the provider's
        client makes them all from the same defaults), so the session adds none that a
        request would not have sent. Call before the first request."""
        if self._session is not None:
            raise RuntimeError("adopt_headers() comes before the first request")
        self._headers = _multidict(headers)
        self._headers_raw = list(headers)

    def target(self, url: httpx.URL, headers: list[tuple[bytes, bytes]]) -> Target:
        """What :meth:`read_whole` sends a request to: ``url`` and ``headers`` as aiohttp
        takes them, made once per path (a yarl URL parses its string once)."""
        import yarl

        adopted = self._headers is not None and list(headers) == self._headers_raw
        return Target(url, yarl.URL(str(url)), self._headers if adopted else _multidict(headers))

    async def read_whole(self, target: Target, content: bytes, timeout: float, connect: float) -> Whole:
        """POST ``content`` to ``target`` and read the whole answer, straight through
        aiohttp's client (none of httpx's request and response objects, nor the async
        iterators of a streamed body, for a body read at once): at most ``most`` in
        flight, waiting up to ``timeout`` for a place; ``timeout`` for each read and
        ``connect`` to connect (httpx's ``Timeout(timeout, connect=connect)``); a cancel
        of the awaiting task closes the request; aiohttp's errors as
        :meth:`handle_async_request` raises them.

        Raises:
            httpx.TransportError: as httpx raises it (``PoolTimeout``, ``ConnectError``...).
        """
        slots = self._slots
        if slots.locked():
            await wait_for_slot(slots, timeout, target.request)
        else:
            await slots.acquire()  # does not wait
        try:
            limits = self._timeouts.get((timeout, connect))
            if limits is None:
                import aiohttp  # loaded: the session is

                # as handle_async_request maps httpx's timeouts (the pool's: aiohttp's connect)
                limits = aiohttp.ClientTimeout(sock_connect=connect, sock_read=timeout, connect=timeout)
                if len(self._timeouts) < 8:  # the provider's own: those a deadline cuts are each new
                    self._timeouts[(timeout, connect)] = limits
            try:
                # awaited, not ``async with``: no context manager's coroutine and method
                # held through the wait; read() closes the connection if it fails (a
                # cancel), release() hands it back to the pool once the body is in
                headers = target.aiohttp_headers
                answer = await self._session_now().request(
                    "POST", target.aiohttp_url, headers=None if headers is self._headers else headers, data=content,
                    allow_redirects=False, timeout=limits,
                )
                try:
                    body = await answer.read()
                finally:
                    answer.release()
            except Exception as exc:
                _reraise(exc, target.request())
            return Whole(answer.status, answer.headers, body)
        finally:
            slots.release()

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
        response.stream = _Body(response.stream, slots, request)  # as httpx's client wraps it too
        return response

    async def aclose(self) -> None:
        """Close the aiohttp session and its connections."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        await self._inner.aclose()  # its session is the same (closing it again does nothing)


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


def _multidict(headers: list[tuple[bytes, bytes]]) -> Any:
    """``headers`` as aiohttp takes them."""
    from multidict import CIMultiDict

    return CIMultiDict((k.decode("latin-1"), v.decode("latin-1")) for k, v in headers)


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

