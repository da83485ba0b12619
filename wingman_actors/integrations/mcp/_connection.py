"""One MCP client connection, held open on a private event loop thread.

The SDK is asyncio-based and its transports are task groups that must be entered and left
by one task; sessions and fleets are threaded. So a connection owns one thread running one
event loop: one long-lived task holds the SDK's ``Client`` open, and every tool call is a
short task on that loop, submitted from any thread. MCP multiplexes requests by JSON-RPC
id, so concurrent sessions share the connection safely.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import io
import itertools
import sys
import threading
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TextIO

import httpx2  # the SDK's HTTP client; its documented way to set headers on streamable HTTP
import mcp_types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from ..._cancel import CancelToken
from ..._event_loop import LoopThread
from ...errors import WingmanError

__all__ = ["Connection", "MCPConnectionError"]

_POLL_S = 0.05  # how often a waiting call looks at its cancel token
_CLOSE_S = 10.0  # longest wait for the SDK to close the transport (it kills a stuck server)
_ids = itertools.count(1)


class MCPConnectionError(WingmanError, ConnectionError):
    """The MCP server could not be reached, or did not complete the handshake in time."""


class Connection:
    """An open connection to one MCP server; thread-safe.

    Args:
        server: the transport the SDK's ``Client`` connects through.
        label: a short name for the thread and error messages (the command or the URL).
        call_timeout: seconds one tool call may take.
    """

    def __init__(self, server: AbstractAsyncContextManager[Any], label: str, *, call_timeout: float) -> None:
        self.label = label
        self.call_timeout = call_timeout
        self._server = server
        self._name = f"wingman-mcp-{next(_ids)}"
        self._loop: LoopThread | None = None  # started by open()
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._holder: asyncio.Task[None] | None = None
        self._released = threading.Event()  # set once _hold has ended (or never started)
        self._lost: BaseException | None = None
        self._closed = False

    # -- lifecycle ------------------------------------------------------------------------

    def open(self, timeout: float) -> list[mcp_types.Tool]:
        """Start the loop, connect, and list the server's tools.

        Raises:
            MCPConnectionError: the server could not be started or reached, or the
                handshake did not finish within ``timeout`` seconds.
        """
        self._loop = LoopThread(self._name)
        ready: concurrent.futures.Future[list[mcp_types.Tool]] = concurrent.futures.Future()
        self._loop.call_soon(self._start_hold, ready)
        try:
            return ready.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            self.close(abort=True)
            raise MCPConnectionError(
                f"MCP server {self.label}: no answer to the handshake within {timeout:g}s; "
                "check that it speaks MCP on this transport, or raise connect_timeout"
            ) from None
        except BaseException as exc:
            self.close()
            ours = _innermost(exc)
            if isinstance(ours, MCPConnectionError):  # already says what went wrong (the SDK may wrap it)
                raise ours from None
            raise MCPConnectionError(f"MCP server {self.label}: cannot connect: {_describe(exc)}") from exc

    def _start_hold(self, ready: concurrent.futures.Future[list[mcp_types.Tool]]) -> None:
        # On the loop thread. The done callback fires however the task ends, even when it
        # is cancelled before its first step, so close() can wait for the real end.
        self._holder = asyncio.get_running_loop().create_task(self._hold(ready))
        self._holder.add_done_callback(lambda _: self._released.set())

    def _cancel_hold(self) -> None:
        if self._holder is not None:
            self._holder.cancel()
        else:  # close() came first: nothing will run
            self._released.set()

    async def _hold(self, ready: concurrent.futures.Future[list[mcp_types.Tool]]) -> None:
        self._stop = asyncio.Event()
        try:
            async with Client(self._server, mode="legacy") as client:
                self._client = client
                ready.set_result(await self._list_tools(client))
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            elif not self._closed:
                self._lost = exc  # the server went away while we were using it
            if not isinstance(exc, Exception):
                raise
        finally:
            self._client = None

    async def _list_tools(self, client: Client) -> list[mcp_types.Tool]:
        """Every page of the server's tools/list, in order; a cursor that comes back (a
        listing that would never end) is refused."""
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        asked: set[str] = set()
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools
            if cursor in asked:
                raise MCPConnectionError(
                    f"MCP server {self.label}: its tools/list pagination never ends: it gave the cursor {cursor!r} "
                    f"again after {len(asked) + 1} pages; the server is at fault"
                )
            asked.add(cursor)

    def close(self, *, abort: bool = False) -> None:
        """Close the connection (the SDK stops a stdio server) and stop the thread. Idempotent.

        Args:
            abort: cancel the connection where it stands (a handshake that hangs) rather
                than leaving it cleanly.
        """
        loop = self._loop
        if self._closed:
            return
        self._closed = True
        if loop is None:
            return
        if abort:
            # the SDK's shutdown is shielded: a stdio server is still stopped
            loop.call_soon(self._cancel_hold)
        elif self._stop is not None:
            loop.call_soon(self._stop.set)
        else:
            loop.call_soon(self._cancel_hold)
        # Wait for the hold task itself to end, the server stopped, before stopping the
        # loop: stopping it earlier cancels that shutdown a second time, natively, which
        # can defeat the SDK's shield and leave the server process running.
        self._released.wait(_CLOSE_S)
        loop.stop(grace=_CLOSE_S)

    # -- calls ----------------------------------------------------------------------------

    def call_tool(self, name: str, arguments: dict[str, Any], token: CancelToken | None) -> mcp_types.CallToolResult:
        """Call the server's tool ``name``; waits at most ``call_timeout`` seconds.

        Raises:
            ConnectionError: the connection is closed or the server has gone away.
            TimeoutError: no answer in time (the request is cancelled).
            AgentError: the run was cancelled or timed out (``token``).
            mcp.MCPError: the server answered with a protocol error.
        """
        client, loop = self._client, self._loop
        if self._closed or client is None or loop is None or self._lost is not None:
            raise ConnectionError(self._gone())
        try:
            fut = loop.submit(client.call_tool(name, arguments, read_timeout_seconds=self.call_timeout))
        except RuntimeError:  # closed meanwhile
            raise ConnectionError(self._gone()) from None
        # The SDK enforces call_timeout; ours is a backstop should a transport hang anyway.
        deadline = time.monotonic() + self.call_timeout + 1.0
        while True:
            try:
                return fut.result(timeout=_POLL_S)
            except concurrent.futures.TimeoutError:
                pass
            except concurrent.futures.CancelledError:
                raise ConnectionError(self._gone()) from None
            except MCPError as exc:
                if exc.code != mcp_types.CONNECTION_CLOSED:
                    raise
                if self._lost is None:
                    self._lost = exc
                raise ConnectionError(
                    f"MCP server {self.label} closed the connection during the call (it may have crashed)"
                ) from exc
            except Exception as exc:
                if self._lost is not None or self._client is None:
                    raise ConnectionError(f"{self._gone()} ({_describe(exc)})") from exc
                raise
            if token is not None and (token.cancelled or token.expired):
                fut.cancel()
                token.check()
            if self._lost is not None or self._client is None:
                fut.cancel()
                raise ConnectionError(self._gone())
            if time.monotonic() > deadline:
                fut.cancel()
                raise TimeoutError(f"no answer within {self.call_timeout:g}s")

    def _gone(self) -> str:
        if self._closed:
            return f"the connection to MCP server {self.label} is closed (its `with mcp_tools(...)` block has ended)"
        cause = f": {_describe(self._lost)}" if self._lost is not None else ""
        return f"MCP server {self.label} is no longer connected{cause}"


def stdio_transport(params: StdioServerParameters) -> AbstractAsyncContextManager[Any]:
    """A stdio transport whose server writes its log to our stderr, or to the process's
    own when ``sys.stderr`` is not a file (a notebook, pytest's capsys)."""
    return stdio_client(params, errlog=_errlog())


def _errlog() -> TextIO:
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (io.UnsupportedOperation, AttributeError, ValueError):
            continue
    raise MCPConnectionError("cannot start a stdio MCP server: this process has no usable stderr")


def http_transport(url: str, headers: Mapping[str, str] | None) -> AbstractAsyncContextManager[Any]:
    """A streamable HTTP transport to ``url`` that sends ``headers`` with every request."""

    @asynccontextmanager
    async def transport() -> AsyncIterator[Any]:
        timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults: SSE streams stay open
        async with httpx2.AsyncClient(headers=dict(headers or {}), timeout=timeout) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                yield streams

    return transport()


def _innermost(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups, the SDK's task groups'."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown cause"
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
