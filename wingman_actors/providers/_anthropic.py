"""The Anthropic provider: Claude models through the official ``anthropic`` SDK.

The SDK's own retries are off (``max_retries=0``): :class:`BaseProvider` retries with the one
:class:`~wingman_actors.providers._retry.RetryPolicy`. SDK failures become :class:`AgentError`:
429 → ``rate_limit`` (``retry-after`` honoured); 5xx and 529 (overloaded) → ``agent``; other
4xx → ``invalid``; refused/reset/DNS → ``network``; timeouts → ``timeout``
(:mod:`~wingman_actors.providers._anthropic_wire` maps requests, answers and errors). Sync
calls go through a client lent per request (a cancel closes it); async calls through one
``AsyncAnthropic`` per event loop.

Example:
    >>> from wingman_actors.providers import new_provider
    >>> provider = new_provider("anthropic", {"model": "claude-sonnet-4-6"})  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, Required, TypedDict, cast

import httpx
from pydantic import Field, model_validator

from .._extras import require
from ..core import InferenceRequest, InferenceResponse, StreamEvent
from ..errors import AgentError, ErrorKind
from ._abort import ClientPool, Lease, remaining_timeout
from ._aio import AsyncClients
from ._aiohttp import aiohttp_installed
from ._anthropic_client import HTTP as _HTTP
from ._anthropic_client import sdk_async_client, sdk_client
from ._anthropic_wire import EventMapper, from_message, map_error, to_anthropic_messages
from ._base import BaseProvider, ResponseBuilder
from ._drain import adrain, drain
from ._options import RemoteOptions, without_tool_use

with require("anthropic", "the anthropic provider"):
    import anthropic
    from anthropic.types import RawMessageStreamEvent

if TYPE_CHECKING:
    from anthropic.types import MessageParam, ToolParam

__all__ = ["DEFAULT_MODEL", "AnthropicOptions", "AnthropicProvider", "build_anthropic", "to_anthropic_messages"]

DEFAULT_MODEL = "claude-sonnet-4-6"
_ID = "anthropic"


class AnthropicOptions(RemoteOptions):
    """Options of ``new_provider("anthropic", {...})``: the common ones, ``top_p``,
    ``top_k``, ``stop`` (sent as ``stop_sequences``), ``headers``, ``http_client`` and
    ``async_http_client`` (an httpx client, or one of the SDK's own HTTP library,
    ``httpx2`` for SDK 2.x), and any other key sent in the body as it is (``thinking``,
    ``metadata``, ``tool_choice``...).

    ``api_key`` falls back to the ``ANTHROPIC_API_KEY`` environment variable; ``base_url``
    to the SDK's default (``ANTHROPIC_BASE_URL`` or https://api.anthropic.com).

    Attributes:
        top_k: sample from the k likeliest tokens.
    """

    model: str = Field(default=DEFAULT_MODEL, min_length=1)
    top_k: int | None = Field(default=None, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _thinking_is_an_object(cls, data: Any) -> Any:
        # ``thinking`` goes into the body as it is, but it is the one pass-through key
        # DESIGN documents: a string or a number there would only fail at the first call.
        if isinstance(data, dict) and "thinking" in data and not isinstance(data["thinking"], dict | type(None)):
            raise ValueError(f"thinking: give an object such as {{'type': 'enabled', 'budget_tokens': 1024}}, "
                             f"got {type(data['thinking']).__name__} {data['thinking']!r}")
        return data

    @classmethod
    def sync_client_types(cls) -> tuple[type, ...]:
        """An ``httpx.Client``, or a client of the SDK's HTTP library."""
        return (httpx.Client, _HTTP.Client)

    @classmethod
    def async_client_types(cls) -> tuple[type, ...]:
        """An ``httpx.AsyncClient``, or an async client of the SDK's HTTP library."""
        return (httpx.AsyncClient, _HTTP.AsyncClient)


class _CreateArgs(TypedDict, total=False):
    model: Required[str]
    max_tokens: Required[int]
    messages: Required[list[MessageParam]]
    system: str
    tools: list[ToolParam]
    extra_body: dict[str, object]
    extra_headers: dict[str, str]


class AnthropicProvider(BaseProvider):
    """Claude through the official SDK's sync client.

    Args:
        options: the validated options; ``None`` uses the defaults.

    Raises:
        AgentError: ``invalid`` when no API key is given and ``ANTHROPIC_API_KEY`` is unset.
    """

    id: ClassVar[str] = _ID
    per_request_model: ClassVar[bool] = True  # its requests name model_for(request)
    _heeds_cancel: ClassVar[bool] = True  # a cancel closes its request: called on the session's thread
    options: AnthropicOptions

    def __init__(self, options: AnthropicOptions | None = None) -> None:
        opts = options if options is not None else AnthropicOptions()
        super().__init__(opts)
        self.model = opts.model
        api_key = (opts.api_key or os.environ.get("ANTHROPIC_API_KEY") or "").strip()
        if not api_key:
            raise AgentError(
                "no Anthropic API key: pass the api_key option "
                "(new_provider('anthropic', {'api_key': 'sk-ant-...'})) "
                "or set the ANTHROPIC_API_KEY environment variable",
                kind=ErrorKind.INVALID,
                provider=_ID,
            )
        self._api_key = api_key
        self._base_url = opts.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
        # A client of the SDK's HTTP library lent per request (closed by a cancel), each
        # with its SDK client built on it.
        # A user's client (http_client) is shared by every request, with one SDK client on it.
        self._pool = ClientPool(
            self._base_url, opts.timeout, http=_HTTP, factory=anthropic.DefaultHttpxClient,
            client=sdk_client(opts.http_client),
        )
        # The async path: one AsyncAnthropic per event loop (cancelling a task closes its
        # request), or one on the user's async_http_client.
        self._user_async = sdk_async_client(opts.async_http_client)
        self._async_transport = opts.async_transport or ("aiohttp" if _sdk_aiohttp() else "httpx")
        if self._async_transport == "aiohttp" and not _sdk_aiohttp():
            raise AgentError(
                f'async_transport "aiohttp" needs an anthropic SDK with DefaultAioHttpClient; this is '
                f'anthropic {anthropic.__version__}: upgrade it, or set async_transport to "httpx"',
                kind=ErrorKind.INVALID, provider=_ID,
            )
        self._async = AsyncClients(self._make_async, self._close_async)
        self._extra_body: dict[str, object] = {
            key: value
            for key, value in (("top_p", opts.top_p), ("top_k", opts.top_k), ("stop_sequences", opts.stop))
            if value is not None
        }
        self._extra_body.update(opts.extra_body())
        self._extra_no_tools = without_tool_use(self._extra_body)  # tool_choice alone is a 400

    def _make_async(self) -> anthropic.AsyncAnthropic:
        http_client = self._user_async
        if http_client is None:
            limits = _HTTP.Limits(max_connections=1000, max_keepalive_connections=128)
            # The SDK's own aiohttp client (its aiohttp extra's), when ours is installed.
            aio = self._async_transport == "aiohttp"
            http_client = (anthropic.DefaultAioHttpClient if aio else anthropic.DefaultAsyncHttpxClient)(limits=limits)
        return anthropic.AsyncAnthropic(
            api_key=self._api_key, base_url=self._base_url, timeout=self.options.timeout, max_retries=0,
            http_client=http_client,
        )

    async def _close_async(self, client: anthropic.AsyncAnthropic) -> None:
        if self._user_async is None:  # a user's client is theirs to close
            await client.close()

    def _sdk(self, lease: Lease) -> anthropic.Anthropic:
        """The SDK client of ``lease`` (made on its first request)."""
        if lease.sdk is None:
            lease.sdk = anthropic.Anthropic(
                api_key=self._api_key, base_url=self._base_url, timeout=self.options.timeout,
                max_retries=0, http_client=lease.client,
            )
        client: anthropic.Anthropic = lease.sdk
        return client

    def close(self) -> None:
        """Close the SDK clients and their connections; a later call opens new ones."""
        self._pool.close()
        self._async.close()

    async def aclose(self) -> None:
        """Close the running event loop's async SDK client."""
        await self._async.aclose()

    def _where(self) -> str:
        return self._base_url

    def _create_args(self, request: InferenceRequest) -> _CreateArgs:
        args: _CreateArgs = {
            "model": self.model_for(request),
            "max_tokens": self.max_tokens_for(request),
            "messages": cast("list[MessageParam]", to_anthropic_messages(request.messages)),
        }
        # The session already asks for the output schema in the instructions; the
        # Messages API has no schema parameter to add here.
        system = request.instructions
        if system:
            args["system"] = system
        if request.tools:
            args["tools"] = [
                cast("ToolParam", {"name": t.name, "description": t.description, "input_schema": t.input_schema})
                for t in request.tools
            ]
        # The SDK (>= 1.0) dropped sampling parameters from its signature; the API takes
        # them. Options it does not know go the same way, as they are.
        extra = dict(self._extra_body if request.tools else self._extra_no_tools)
        temperature = self.temperature_for(request)
        if temperature is not None:
            extra["temperature"] = temperature
        if extra:
            args["extra_body"] = extra
        if self.options.headers:
            args["extra_headers"] = self.options.headers
        return args


    def _infer(self, request: InferenceRequest) -> InferenceResponse:
        try:
            with self._pool.lease() as lease:
                timeout = remaining_timeout(self.options.timeout)
                message = self._sdk(lease).messages.create(**self._create_args(request), timeout=timeout)
        except Exception as exc:
            self._raise_mapped(exc)
        return from_message(message)

    def _stream(self, request: InferenceRequest) -> Iterator[StreamEvent]:
        stream: anthropic.Stream[RawMessageStreamEvent] | None = None
        mapper = EventMapper(ResponseBuilder(_ID, self.model_for(request)))
        whole = False  # message_stop came and its events were given: the answer is complete
        try:
            with self._pool.lease() as lease:
                timeout = remaining_timeout(self.options.timeout)
                stream = self._sdk(lease).messages.create(**self._create_args(request), stream=True, timeout=timeout)
                if lease.extensions:  # a user's client: its socket is known now
                    lease.attach(stream.response)
                try:
                    events = iter(stream)
                    for event in events:
                        yield from mapper.feed(event)
                        if mapper.finished:
                            whole = True
                            break
                    mapper.end()
                    # the body's end after message_stop, bounded (SDK 2.x: an httpx2 response, the same API)
                    drain(events, stream.response)  # type: ignore[arg-type,unused-ignore]
                finally:
                    stream.close()
        except Exception as exc:
            if whole:  # the answer was complete; only reading the body's end failed (a read timeout...)
                return
            self._raise_mapped(exc)

    async def _ainfer(self, request: InferenceRequest) -> InferenceResponse:
        try:
            timeout = remaining_timeout(self.options.timeout)
            message = await self._async.get().messages.create(**self._create_args(request), timeout=timeout)
        except Exception as exc:
            self._raise_mapped(exc)
        return from_message(message)

    async def _astream(self, request: InferenceRequest) -> AsyncGenerator[StreamEvent, None]:
        mapper = EventMapper(ResponseBuilder(_ID, self.model_for(request)))
        whole = False  # message_stop came and its events were given: the answer is complete
        try:
            timeout = remaining_timeout(self.options.timeout)
            stream = await self._async.get().messages.create(**self._create_args(request), stream=True, timeout=timeout)
            try:
                events = stream.__aiter__()
                async for event in events:
                    for mapped in mapper.feed(event):
                        yield mapped
                    if mapper.finished:
                        whole = True
                        break
                mapper.end()
                await adrain(events, stream.response)  # type: ignore[arg-type,unused-ignore]  # (as above)
            finally:
                await stream.close()
        except Exception as exc:
            if whole:  # the answer was complete; only reading the body's end failed (a read timeout...)
                return
            self._raise_mapped(exc)

    def _raise_mapped(self, exc: Exception) -> NoReturn:
        """Raise the :class:`AgentError` for an SDK or transport failure; re-raise anything else."""
        if isinstance(exc, json.JSONDecodeError):  # the SDK's reading of a stream event
            raise AgentError(f"anthropic sent a stream event that is not JSON ({exc}); check that base_url is an "
                             "Anthropic Messages API endpoint", kind=ErrorKind.AGENT, provider=_ID) from exc
        mapped = map_error(exc, where=self._where(), timeout=self.options.timeout)
        if mapped is None or mapped is exc:
            raise exc
        raise mapped from exc




def _sdk_aiohttp() -> bool:
    """Whether the SDK offers its aiohttp client and our ``aiohttp`` extra is installed."""
    return aiohttp_installed() and hasattr(anthropic, "DefaultAioHttpClient")


def build_anthropic(options: dict[str, Any]) -> AnthropicProvider:
    """Factory for the registry: validate ``options`` and build the provider.

    Args:
        options: ``model``, ``max_tokens``, ``temperature``, ``api_key``, ``base_url``,
            ``timeout``, ``max_retries``.

    Returns:
        The provider.

    Raises:
        AgentError: ``invalid`` for unknown or bad options, or a missing API key.
    """
    return AnthropicProvider(AnthropicOptions.parse(_ID, options))
