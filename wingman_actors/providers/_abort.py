"""HTTP requests a cancel closes, and timeouts cut to the run's deadline.

A blocking httpx request sits in a socket read on the session's own thread: a check
between steps cannot reach it, and closing a socket from another thread does not wake a
read blocked on it. So each request in flight uses an httpx client of its own
(:class:`ClientPool` lends one, with at most one connection, and takes it back for the next
request: keep-alive is kept), whose connection's socket is known from httpx's documented
``trace`` extension. A cancel of the run's :class:`~wingman_actors._cancel.CancelToken`
shuts that socket down: the read ends at once, the server sees the connection closed,
and the run raises its cancel error. For the run's deadline, every request's timeout is
the smaller of the provider's own and the time the run has left (:func:`request_timeout`),
and an answer that trickles in past the deadline is closed then as a cancel closes it
(``_deadlines.py``).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx

from .._cancel import current_token
from ._aio import AsyncClients
from ._aiohttp import AiohttpPool, aiohttp_installed
from ._asend import Answer, OwnAsyncClient
from ._deadlines import at_deadline
from ._lease import LeasingTransport

__all__ = ["ClientPool", "Lease", "remaining_timeout", "request_timeout", "shutdown"]

_CONNECT_TIMEOUT = 10.0
_MAX_IDLE = 100  # idle clients (each with its keep-alive connection) a provider keeps (httpx: 20)
_MAX_ASYNC_CONNECTIONS = 1000  # an async client's, over all its requests in flight


def remaining_timeout(own: float) -> float:
    """``own``, or less: the time the current run has left before its deadline."""
    token = current_token()
    remaining = token.remaining() if token is not None else None
    if remaining is None:
        return own
    return max(min(own, remaining), 0.001)


def request_timeout(own: float) -> httpx.Timeout:
    """The httpx timeout of one request: the provider's ``own`` (connect at most 10 s),
    cut to the current run's remaining time."""
    timeout = remaining_timeout(own)
    return httpx.Timeout(timeout, connect=min(timeout, _CONNECT_TIMEOUT))


class Lease:
    """One client lent for one request: the client, and what a cancel needs to close it.

    Attributes:
        client: the httpx client (at most one connection).
        sdk: a provider's own client built on ``client`` (the Anthropic SDK's), kept with it.
    """

    __slots__ = ("_aborted", "_generation", "_lock", "_sock", "client", "extensions", "sdk")

    def __init__(self, make: Callable[[dict[str, Any]], Any], *, shared: Any = None, sdk: Any = None) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._aborted = False
        self._generation = 0
        self.sdk: Any = sdk
        if shared is not None:
            # A client of the user's: no hook of ours on it; the trace rides on each request
            # (``extensions``), and a stream's socket is known once its answer starts (attach).
            self.client: Any = shared
            self.extensions: dict[str, Any] = {"trace": self._trace}
            return
        self.extensions = {}
        # The hook puts the trace on every request the client sends (the SDK's too).
        self.client = make({"request": [self._add_trace]})

    def _add_trace(self, request: Any) -> None:
        request.extensions["trace"] = self._trace

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        if event != "connection.connect_tcp.complete":
            return
        stream = info.get("return_value")
        self._set_socket(stream.get_extra_info("socket") if stream is not None else None)

    def attach(self, response: Any) -> None:
        """Know the socket of ``response`` (a request through a user's client that reused a
        connection), so that a cancel can close it."""
        stream = response.extensions.get("network_stream")
        self._set_socket(stream.get_extra_info("socket") if stream is not None else None)

    def _set_socket(self, sock: Any) -> None:
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sock = sock
            aborted = self._aborted
        if aborted:  # cancelled while connecting
            shutdown(sock)

    def aborter(self) -> Callable[[], None]:
        """A function that closes this lease's request in flight (and nothing lent later)."""
        generation = self._generation

        def abort() -> None:
            with self._lock:
                if self._generation != generation:
                    return  # that request has ended; the client serves another now
                self._aborted = True
                sock = self._sock
            if sock is not None:
                shutdown(sock)

        return abort

    def settle(self) -> bool:
        """End the request: later aborts are ignored. Returns whether it was aborted."""
        with self._lock:
            self._generation += 1
            aborted, self._aborted = self._aborted, False
            return aborted


def shutdown(sock: socket.socket) -> None:
    """Shut ``sock`` down: a read blocked on it in another thread ends, and the peer sees it closed."""
    # shutdown(), not close(): it wakes a read blocked in another thread, and sends the FIN.
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class ClientPool:
    """The httpx clients of one provider: one lent per request in flight, kept for reuse.

    Args:
        base_url: the provider's base URL.
        timeout: the provider's own timeout in seconds (connect at most 10 s).
        headers: headers sent with every request.
        http: the httpx module, or an API-compatible one (the Anthropic SDK 2.x uses
            ``httpx2``): its ``Client``, ``Timeout``, ``Limits`` and ``create_ssl_context``.
        factory: builds a client from that module's ``Client`` keyword arguments (default
            its ``Client``; the Anthropic provider passes the SDK's ``DefaultHttpxClient``).
    """

    def __init__(
        self,
        base_url: str,
        timeout: float,
        headers: dict[str, str] | None = None,
        *,
        http: Any = httpx,
        factory: Callable[..., Any] | None = None,
        client: Any = None,
        async_client: Any = None,
        async_transport: str | None = None,
    ) -> None:
        self.async_transport = async_transport or ("aiohttp" if aiohttp_installed() else "httpx")
        self.base_url = base_url.rstrip("/")
        # Clients of the user's (the http_client and async_http_client options): used as
        # they are, shared by every request, never closed here.
        self.user_client = client
        self.user_async_client = async_client
        self.user_sdk: Any = None  # a provider's own client built on user_client, made once
        self.timeout = timeout
        self.headers = dict(headers or {})
        self._http = http
        self._factory = factory if factory is not None else http.Client
        self._idle: list[Lease] = []
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None  # made once: certificates load slowly
        self._epoch = 0
        # The async path needs no client per request: cancelling a task closes its request.
        self._async = AsyncClients(self._make_async)

    def _ssl_context(self) -> ssl.SSLContext:
        with self._lock:
            if self._ssl is None:
                self._ssl = self._http.create_ssl_context()
            return self._ssl

    def _make_async(self) -> Any:
        http = self._http
        ssl_context = self._ssl_context()
        timeout = http.Timeout(self.timeout, connect=min(self.timeout, _CONNECT_TIMEOUT))
        if http is not httpx:  # another library's client: its own pool
            return http.AsyncClient(
                base_url=self.base_url, timeout=timeout, headers=self.headers, verify=ssl_context,
                limits=http.Limits(max_connections=_MAX_ASYNC_CONNECTIONS, max_keepalive_connections=_MAX_IDLE),
            )
        transport: httpx.AsyncBaseTransport
        if self.async_transport == "aiohttp":
            transport = AiohttpPool(ssl_context, _MAX_ASYNC_CONNECTIONS)
        else:
            one = httpx.Limits(max_connections=1, max_keepalive_connections=1)
            # A connection of its own per request in flight (see LeasingTransport), every
            # one kept alive for httpx's keep-alive expiry.
            transport = LeasingTransport(
                lambda: httpx.AsyncHTTPTransport(verify=ssl_context, limits=one), _MAX_ASYNC_CONNECTIONS,
            )
        client = httpx.AsyncClient(base_url=self.base_url, timeout=timeout, headers=self.headers, transport=transport)
        return OwnAsyncClient(client, transport, self.base_url)

    def target(self, path: str, headers: dict[str, str] | None = None) -> tuple[str, dict[str, str] | None]:
        """The URL and headers of one request to ``path``: a user's client has neither our
        base URL nor our headers, so it gets them per request."""
        if self.user_client is None and self.user_async_client is None:
            return path, headers
        return self.base_url + path, {**self.headers, **(headers or {})}

    def async_client(self) -> Any:
        """The running event loop's async client (of the same library, headers and timeout),
        or the user's."""
        if self.user_async_client is not None:
            return self.user_async_client
        client = self._async.get()
        return client.client if isinstance(client, OwnAsyncClient) else client

    def aread(self, path: str, content: bytes) -> Awaitable[Answer]:
        """POST ``content`` (JSON) to ``path`` on the running loop's async client (the
        user's, else the provider's own, straight to its transport: see ``_asend.py``),
        timed out by :func:`request_timeout`, and read the whole answer. Call it from a
        coroutine of the loop and await what it returns."""
        if self.user_async_client is None:
            own = self._async.get()
            if isinstance(own, OwnAsyncClient):
                timeout = remaining_timeout(self.timeout)
                return own.read(path, content, timeout, min(timeout, _CONNECT_TIMEOUT))
        return self._send(path, content, None, False)

    async def astream(self, path: str, content: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
        """POST ``content`` (JSON) to ``path`` as :meth:`aread` does; the answer's body is
        streamed: the caller closes it."""
        if self.user_async_client is None:
            own = self._async.get()
            if isinstance(own, OwnAsyncClient):
                return await own.stream(path, content, headers, request_timeout(self.timeout))
        return await self._send(path, content, headers, True)

    async def _send(self, path: str, content: bytes, headers: dict[str, str] | None, stream: bool) -> httpx.Response:
        """Through ``client.send``: the user's client, or another library's."""
        client = self.user_async_client if self.user_async_client is not None else self._async.get()
        target, merged = self.target(path, headers)
        merged = {"Content-Type": "application/json", **(merged or {})}  # the provider's headers first
        request = client.build_request("POST", target, content=content, headers=merged,
                                       timeout=request_timeout(self.timeout))
        return await client.send(request, stream=stream)  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        """Close the running event loop's async client."""
        await self._async.aclose()

    def _make(self, hooks: dict[str, Any]) -> Any:
        http = self._http
        verify = self._ssl_context()
        return self._factory(
            base_url=self.base_url,
            timeout=http.Timeout(self.timeout, connect=min(self.timeout, _CONNECT_TIMEOUT)),
            headers=self.headers,
            limits=http.Limits(max_connections=1, max_keepalive_connections=1),
            verify=verify,
            event_hooks=hooks,
        )

    @contextlib.contextmanager
    def lease(self) -> Iterator[Lease]:
        """Lend a client for one request; a cancel of the current run's token closes it
        (with a user's client: its connection, once known)."""
        if self.user_client is not None:
            with self._shared_lease() as shared:
                yield shared
            return
        with self._lock:
            lease = self._idle.pop() if self._idle else None
            epoch = self._epoch
        if lease is None:
            lease = Lease(self._make)
        try:
            with _aborted_on_cancel(lease):
                yield lease
        finally:
            with self._lock:
                keep = epoch == self._epoch and len(self._idle) < _MAX_IDLE
                if keep:
                    self._idle.append(lease)
            if not keep:
                lease.client.close()

    @contextlib.contextmanager
    def _shared_lease(self) -> Iterator[Lease]:
        lease = Lease(self._make, shared=self.user_client, sdk=self.user_sdk)
        try:
            with _aborted_on_cancel(lease):
                yield lease
        finally:
            self.user_sdk = lease.sdk

    def close(self) -> None:
        """Close the idle clients (those lent out are closed when given back) and the async
        ones; a user's clients are left open."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._epoch += 1
        for lease in idle:
            lease.client.close()
        self._async.close()


@contextlib.contextmanager
def _aborted_on_cancel(lease: Lease) -> Iterator[None]:
    """While the block runs, a cancel of the current run's token, or its deadline, aborts
    ``lease``'s request (a request's timeout bounds each read, not an answer that keeps
    trickling in: see ``_deadlines.py``); the lease is settled when the block ends."""
    token = current_token()
    if token is None:
        try:
            yield
        finally:
            lease.settle()
        return
    abort = lease.aborter()
    unregister = token.on_cancel(abort)
    deadline = token.deadline
    forget = at_deadline(deadline, abort) if deadline is not None else None
    try:
        yield
    finally:
        unregister()
        if forget is not None:
            forget()
        lease.settle()
