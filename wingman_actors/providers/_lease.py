"""The async HTTP transport of the built-in providers: a connection of its own for each
request in flight, lent from the idle ones (kept alive) and taken back when its answer is
closed.

httpcore's connection pool (behind httpx's ``AsyncClient``) serves N concurrent requests
at a cost that grows with N squared: each request walks every connection when it arrives
and when one ends, and requests that arrive together are all given the same idle
connection, then all but one retry (encode/httpcore#1035). A burst of 200 concurrent
requests against a loopback server cost 5 s of CPU through one client of 1,000
connections, 0.12-0.15 s spread over 32 clients, and 0.08-0.10 s through this transport:
one httpx ``AsyncHTTPTransport`` of one connection lent per request. The client in front
stays an ordinary ``httpx.AsyncClient``: its requests, errors and timeouts are httpx's own.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable

import httpx

__all__ = ["LeasingTransport", "take_slot", "wait_for_slot"]


class LeasingTransport(httpx.AsyncBaseTransport):
    """Lends each request a transport of one connection; at most ``most`` requests in
    flight (the others wait up to their ``pool`` timeout, as in httpx's pool).

    Args:
        make: builds one transport (an ``httpx.AsyncHTTPTransport`` with one connection).
        most: the most requests in flight, and so of connections.
        expiry: seconds an idle connection is kept alive (httpx's ``keepalive_expiry``).
    """

    def __init__(self, make: Callable[[], httpx.AsyncBaseTransport], most: int, expiry: float = 5.0) -> None:
        self._make = make
        self._expiry = expiry
        self._idle: deque[tuple[float, httpx.AsyncBaseTransport]] = deque()  # (since, transport), oldest first
        self._slots = asyncio.Semaphore(most)
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` on an idle connection (or a new one) of its own."""
        if self._closed:
            raise RuntimeError("the transport is closed: the provider's client was closed")
        slots = self._slots
        await take_slot(slots, request)
        try:
            transport = await self._take()
            try:
                response = await transport.handle_async_request(request)
            except BaseException:
                await self._give_back(transport)
                raise
        except BaseException:
            slots.release()
            raise
        return httpx.Response(
            status_code=response.status_code, headers=response.headers, extensions=response.extensions,
            stream=_GivenBack(response.stream, self, transport),
        )

    async def _take(self) -> httpx.AsyncBaseTransport:
        idle = self._idle
        if idle:
            expired = time.monotonic() - self._expiry
            while idle and idle[0][0] < expired:  # the oldest have outlived their keep-alive
                await idle.popleft()[1].aclose()
        return idle.pop()[1] if idle else self._make()  # the newest: its connection is warmest

    async def _give_back(self, transport: httpx.AsyncBaseTransport) -> None:
        if self._closed:
            await transport.aclose()
        else:
            self._idle.append((time.monotonic(), transport))

    async def _release(self, transport: httpx.AsyncBaseTransport) -> None:
        try:
            await self._give_back(transport)
        finally:
            self._slots.release()

    async def aclose(self) -> None:
        """Close the idle connections; those in use are closed as their answers end."""
        self._closed = True
        idle, self._idle = self._idle, deque()
        for _, transport in idle:
            await transport.aclose()


async def take_slot(slots: asyncio.Semaphore, request: httpx.Request) -> None:
    """Take one of ``slots`` for ``request``, waiting up to its ``pool`` timeout (then
    ``httpx.PoolTimeout``, as httpx's pool raises)."""
    if not slots.locked():
        await slots.acquire()  # does not wait
        return
    await wait_for_slot(slots, request.extensions.get("timeout", {}).get("pool"), lambda: request)


async def wait_for_slot(slots: asyncio.Semaphore, timeout: float | None, request: Callable[[], httpx.Request]) -> None:
    """Take one of ``slots``, waiting up to ``timeout`` seconds (then ``httpx.PoolTimeout``
    for ``request()``)."""
    try:
        async with asyncio.timeout(timeout):
            await slots.acquire()
    except TimeoutError:
        raise httpx.PoolTimeout("every connection is busy (the pool timeout passed)", request=request()) from None


class _GivenBack(httpx.AsyncByteStream):
    """An answer's body: closing it gives its transport back."""

    __slots__ = ("_owner", "_stream", "_transport")

    def __init__(self, stream: httpx.SyncByteStream | httpx.AsyncByteStream, owner: LeasingTransport,
                 transport: httpx.AsyncBaseTransport) -> None:
        assert isinstance(stream, httpx.AsyncByteStream)
        self._stream = stream
        self._owner = owner
        self._transport: httpx.AsyncBaseTransport | None = transport

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._stream.__aiter__()

    async def aclose(self) -> None:
        transport, self._transport = self._transport, None
        try:
            await self._stream.aclose()
        finally:
            if transport is not None:
                await self._owner._release(transport)
