"""A user's HTTP client for the Anthropic SDK: the SDK (2.x) takes only clients of its own
HTTP library (``httpx2``); an ``httpx.Client`` (or ``httpx.AsyncClient``) is wrapped in one
whose transport sends every request through it, so its proxies, certificates, auth and
hooks apply.

Example:
    >>> import httpx
    >>> from wingman_actors.providers import new_provider
    >>> provider = new_provider(
    ...     "anthropic", {"api_key": "sk-ant-...", "http_client": httpx.Client(proxy="http://proxy:3128")}
    ... )  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from .._extras import require

with require("anthropic", "the anthropic provider"):
    import anthropic

# The HTTP library the SDK is built on: httpx (SDK 1.x) or its fork httpx2 (SDK 2.x).
HTTP: Any = importlib.import_module(
    next(c for c in anthropic.DefaultHttpxClient.__mro__ if c.__name__ == "Client").__module__.split(".")[0]
)

__all__ = ["HTTP", "sdk_async_client", "sdk_client"]


def sdk_client(client: Any) -> Any:
    """``client`` as a client of the SDK's HTTP library (itself when it is one already)."""
    if client is None or isinstance(client, HTTP.Client):
        return client
    return HTTP.Client(transport=_Bridge(client))


def sdk_async_client(client: Any) -> Any:
    """``client`` as an async client of the SDK's HTTP library (itself when it is one)."""
    if client is None or isinstance(client, HTTP.AsyncClient):
        return client
    return HTTP.AsyncClient(transport=_AsyncBridge(client))


def _request(client: httpx.Client | httpx.AsyncClient, request: Any) -> httpx.Request:
    return client.build_request(
        request.method,
        str(request.url),
        headers=request.headers.raw,
        content=request.content,
        extensions={k: v for k, v in request.extensions.items() if k == "timeout"},
    )


class _Bridge(HTTP.BaseTransport):  # type: ignore[misc]
    def __init__(self, client: httpx.Client) -> None:
        self._client = client

    def handle_request(self, request: Any) -> Any:
        request.read()
        response = self._client.send(_request(self._client, request), stream=True)
        return HTTP.Response(
            response.status_code, headers=response.headers.raw, stream=_Body(response),
            extensions=response.extensions,
        )


class _Body(HTTP.SyncByteStream):  # type: ignore[misc]
    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    def __iter__(self) -> Iterator[bytes]:
        yield from self._response.iter_raw()

    def close(self) -> None:
        self._response.close()


class _AsyncBridge(HTTP.AsyncBaseTransport):  # type: ignore[misc]
    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def handle_async_request(self, request: Any) -> Any:
        await request.aread()
        response = await self._client.send(_request(self._client, request), stream=True)
        return HTTP.Response(
            response.status_code, headers=response.headers.raw, stream=_AsyncBody(response),
            extensions=response.extensions,
        )


class _AsyncBody(HTTP.AsyncByteStream):  # type: ignore[misc]
    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_raw():
            yield chunk

    async def aclose(self) -> None:
        await self._response.aclose()
