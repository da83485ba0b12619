"""The Anthropic provider: Claude models through the official ``anthropic`` SDK.

The SDK's own retries are off (``max_retries=0``): :class:`BaseProvider` retries with the one
:class:`~wingman_actors.providers._retry.RetryPolicy`. SDK failures become :class:`AgentError`:
429 → ``rate_limit`` (``retry-after`` honoured); 5xx and 529 (overloaded) → ``agent``; other
4xx → ``invalid``; refused/reset/DNS → ``network``; timeouts → ``timeout``.

Example:
    >>> from wingman_actors.providers import new_provider
    >>> provider = new_provider("anthropic", {"model": "claude-sonnet-4-6"})  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import AsyncGenerator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, Required, TypedDict, cast

from pydantic import Field

from .._extras import require
from ..core import ContentBlock, InferenceRequest, InferenceResponse, Message, StopReason, StreamEvent, Usage
from ..errors import AgentError, ErrorKind
from ._abort import ClientPool, Lease, remaining_timeout
from ._aio import AsyncClients
from ._base import BaseProvider, ProviderOptions, ResponseBuilder
from ._http import kind_for_status, parse_retry_after

with require("anthropic", "the anthropic provider"):
    import anthropic
    from anthropic.types import (
        InputJSONDelta,
        RawContentBlockDeltaEvent,
        RawContentBlockStartEvent,
        RawContentBlockStopEvent,
        RawMessageDeltaEvent,
        RawMessageStartEvent,
        RawMessageStreamEvent,
        TextBlock,
        TextDelta,
        ToolUseBlock,
    )

if TYPE_CHECKING:
    from anthropic.types import MessageParam, ToolParam

# The HTTP library the SDK is built on: httpx (SDK 1.x) or its fork httpx2 (SDK 2.x).
_HTTP = importlib.import_module(
    next(c for c in anthropic.DefaultHttpxClient.__mro__ if c.__name__ == "Client").__module__.split(".")[0]
)

__all__ = ["DEFAULT_MODEL", "AnthropicOptions", "AnthropicProvider", "build_anthropic", "to_anthropic_messages"]

DEFAULT_MODEL = "claude-sonnet-4-6"
_ID = "anthropic"

_STOP_REASONS: dict[str, StopReason] = {"end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens"}

# The `type` of an `error` event sent inside a streamed (HTTP 200) answer.
_STREAM_ERROR_KINDS: dict[str, ErrorKind] = {
    "rate_limit_error": ErrorKind.RATE_LIMIT,
    "overloaded_error": ErrorKind.AGENT,
    "api_error": ErrorKind.AGENT,
    "timeout_error": ErrorKind.TIMEOUT,
    "invalid_request_error": ErrorKind.INVALID,
    "authentication_error": ErrorKind.INVALID,
    "permission_error": ErrorKind.INVALID,
    "not_found_error": ErrorKind.INVALID,
    "request_too_large": ErrorKind.INVALID,
    "billing_error": ErrorKind.INVALID,
}


class AnthropicOptions(ProviderOptions):
    """Options of ``new_provider("anthropic", {...})``.

    ``api_key`` falls back to the ``ANTHROPIC_API_KEY`` environment variable; ``base_url``
    to the SDK's default (``ANTHROPIC_BASE_URL`` or https://api.anthropic.com).
    """

    model: str = Field(default=DEFAULT_MODEL, min_length=1)


class _CreateArgs(TypedDict, total=False):
    model: Required[str]
    max_tokens: Required[int]
    messages: Required[list[MessageParam]]
    system: str
    tools: list[ToolParam]
    extra_body: dict[str, object]


class AnthropicProvider(BaseProvider):
    """Claude through the official SDK's sync client.

    Args:
        options: the validated options; ``None`` uses the defaults.

    Raises:
        AgentError: ``invalid`` when no API key is given and ``ANTHROPIC_API_KEY`` is unset.
    """

    id: ClassVar[str] = _ID
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
        self._pool = ClientPool(self._base_url, opts.timeout, http=_HTTP, factory=anthropic.DefaultHttpxClient)
        # The async path: one AsyncAnthropic per event loop (cancelling a task closes its request).
        self._async = AsyncClients(self._make_async, _close_async)

    def _make_async(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=self._api_key, base_url=self._base_url, timeout=self.options.timeout, max_retries=0,
            http_client=anthropic.DefaultAsyncHttpxClient(
                limits=_HTTP.Limits(max_connections=1000, max_keepalive_connections=128)
            ),
        )

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
            "model": self.model,
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
        temperature = self.temperature_for(request)
        if temperature is not None:
            # The SDK (>= 1.0) dropped sampling parameters from its signature; the API takes them.
            args["extra_body"] = {"temperature": temperature}
        return args


    def _infer(self, request: InferenceRequest) -> InferenceResponse:
        try:
            with self._pool.lease() as lease:
                timeout = remaining_timeout(self.options.timeout)
                message = self._sdk(lease).messages.create(**self._create_args(request), timeout=timeout)
        except Exception as exc:
            self._raise_mapped(exc)
        return _from_message(message)

    def _stream(self, request: InferenceRequest) -> Iterator[StreamEvent]:
        stream: anthropic.Stream[RawMessageStreamEvent] | None = None
        try:
            with self._pool.lease() as lease:
                timeout = remaining_timeout(self.options.timeout)
                stream = self._sdk(lease).messages.create(**self._create_args(request), stream=True, timeout=timeout)
                try:
                    mapper = _EventMapper(ResponseBuilder(_ID, self.model))
                    for event in stream:
                        yield from mapper.feed(event)
                    mapper.end()
                finally:
                    stream.close()
        except Exception as exc:
            self._raise_mapped(exc)

    async def _ainfer(self, request: InferenceRequest) -> InferenceResponse:
        try:
            timeout = remaining_timeout(self.options.timeout)
            message = await self._async.get().messages.create(**self._create_args(request), timeout=timeout)
        except Exception as exc:
            self._raise_mapped(exc)
        return _from_message(message)

    async def _astream(self, request: InferenceRequest) -> AsyncGenerator[StreamEvent, None]:
        try:
            timeout = remaining_timeout(self.options.timeout)
            stream = await self._async.get().messages.create(**self._create_args(request), stream=True, timeout=timeout)
            try:
                mapper = _EventMapper(ResponseBuilder(_ID, self.model))
                async for event in stream:
                    for mapped in mapper.feed(event):
                        yield mapped
                mapper.end()
            finally:
                await stream.close()
        except Exception as exc:
            self._raise_mapped(exc)

    def _raise_mapped(self, exc: Exception) -> NoReturn:
        """Raise the :class:`AgentError` for an SDK or transport failure; re-raise anything else."""
        mapped = map_error(exc, where=self._where(), timeout=self.options.timeout)
        if mapped is None or mapped is exc:
            raise exc
        raise mapped from exc


class _EventMapper:
    """Maps the SDK's raw stream events onto :class:`StreamEvent`, one at a time (for the
    sync and the async stream alike), dispatching on ``type``: the SDK builds unknown
    event types into whatever model fits."""

    __slots__ = ("b", "finished", "start")

    def __init__(self, b: ResponseBuilder) -> None:
        self.b = b
        self.start = Usage()
        self.finished = False

    def feed(self, event: RawMessageStreamEvent) -> Iterator[StreamEvent]:
        b = self.b
        kind = getattr(event, "type", None)
        if self.finished:
            return
        if kind == "message_start" and isinstance(event, RawMessageStartEvent):
            b.model = event.message.model or b.model
            u = event.message.usage
            self.start = _usage(u.input_tokens, u.output_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens)
            b.usage = self.start
            yield b.message_start()
        elif kind == "content_block_start" and isinstance(event, RawContentBlockStartEvent):
            block = event.content_block
            if isinstance(block, TextBlock) and block.type == "text":
                yield b.start_text(event.index)
                if block.text:
                    yield b.text(event.index, block.text)
            elif isinstance(block, ToolUseBlock) and block.type == "tool_use":
                yield b.start_tool(event.index, block.id, block.name)
                if block.input:
                    yield b.tool_json(event.index, json.dumps(block.input))
        elif kind == "content_block_delta" and isinstance(event, RawContentBlockDeltaEvent):
            delta, open_type = event.delta, b.blocks.get(event.index, {}).get("type")
            if isinstance(delta, TextDelta) and open_type == "text":
                yield b.text(event.index, delta.text)
            elif isinstance(delta, InputJSONDelta) and open_type == "tool_use":
                yield b.tool_json(event.index, delta.partial_json)
        elif kind == "content_block_stop" and isinstance(event, RawContentBlockStopEvent):
            if b.has(event.index):
                yield b.stop(event.index)
        elif kind == "message_delta" and isinstance(event, RawMessageDeltaEvent):
            d, start = event.usage, self.start
            usage = _usage(
                d.input_tokens if d.input_tokens is not None else start.input_tokens,
                d.output_tokens,
                d.cache_creation_input_tokens
                if d.cache_creation_input_tokens is not None
                else start.cache_creation_input_tokens,
                d.cache_read_input_tokens if d.cache_read_input_tokens is not None else start.cache_read_input_tokens,
            )
            reason = event.delta.stop_reason
            yield b.message_delta(_stop_reason(reason) if reason else None, usage)
        elif kind == "message_stop":
            self.finished = True
            yield from b.finish()
        # ping, thinking/signature/citation deltas and unknown events are skipped

    def end(self) -> None:
        """The body has ended (read to its end, which keeps the connection reusable):
        raise if no message_stop came."""
        if not self.finished:
            raise AgentError(
                "the Anthropic stream ended before message_stop (the connection closed early)",
                kind=ErrorKind.NETWORK,
                provider=_ID,
            )


async def _close_async(client: anthropic.AsyncAnthropic) -> None:
    await client.close()


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages as Anthropic ``messages`` params.

    Consecutive messages of one role are merged (the API wants user and assistant to
    alternate), tool results lead their user message (the API wants them first), and empty
    text blocks and empty messages are dropped (the API refuses them).
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        blocks = [_block_param(b) for b in message.content if not (b.type == "text" and not b.text)]
        if not blocks:
            continue
        role = message.role.value
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    for param in out:
        if param["role"] == "user":
            param["content"].sort(key=lambda block: block["type"] != "tool_result")  # stable
    return out


def _block_param(block: ContentBlock) -> dict[str, Any]:
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input or {})}
    if block.type == "tool_result":
        return {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": block.content or "",
            "is_error": block.is_error,
        }
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": block.media_type, "data": block.data},
    }


def _from_message(message: anthropic.types.Message) -> InferenceResponse:
    content: list[ContentBlock] = []
    for block in message.content:
        if isinstance(block, TextBlock) and block.type == "text" and block.text:
            content.append(ContentBlock.text_block(block.text))
        elif isinstance(block, ToolUseBlock) and block.type == "tool_use":
            args = block.input if isinstance(block.input, dict) else {"value": block.input}
            content.append(ContentBlock.tool_use_block(block.id, block.name, dict(args)))
    u = message.usage
    return InferenceResponse(
        content=content,
        stop_reason=_stop_reason(message.stop_reason),
        usage=_usage(u.input_tokens, u.output_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens),
        model=message.model,
    )


def _stop_reason(reason: str | None) -> StopReason:
    # stop_sequence, pause_turn, refusal, model_context_window_exceeded... end the turn.
    return _STOP_REASONS.get(reason or "end_turn", "end_turn")


def _usage(inp: int | None, out: int | None, created: int | None, read: int | None) -> Usage:
    return Usage(
        input_tokens=inp or 0,
        output_tokens=out or 0,
        cache_creation_input_tokens=created or 0,
        cache_read_input_tokens=read or 0,
    )


def map_error(exc: BaseException, *, where: str = "the Anthropic API", timeout: float | None = None) -> AgentError | None:
    """The :class:`AgentError` for an SDK exception or an HTTP transport error, else ``None``.

    Args:
        exc: the exception raised by the SDK (or by its HTTP library while a stream is read).
        where: the base URL, named in network and timeout messages.
        timeout: the configured timeout in seconds, named in timeout messages.

    Returns:
        The mapped error (to raise ``from exc``), or ``None`` for an unrelated exception.
    """
    if isinstance(exc, AgentError):
        return exc
    after = f" after {timeout:g}s" if timeout is not None else ""
    if isinstance(exc, anthropic.APITimeoutError) or _is_transport(exc, "TimeoutException"):
        return AgentError(
            f"anthropic timed out{after} waiting for {where} (raise the timeout option for long answers)",
            kind=ErrorKind.TIMEOUT,
            provider=_ID,
        )
    if isinstance(exc, anthropic.APIConnectionError) or _is_transport(exc, "TransportError"):
        cause = exc.__cause__ if isinstance(exc, anthropic.APIConnectionError) and exc.__cause__ else exc
        return AgentError(
            f"cannot reach anthropic at {where}: {cause} ({type(cause).__name__})",
            kind=ErrorKind.NETWORK,
            provider=_ID,
        )
    if isinstance(exc, anthropic.APIStatusError):
        detail = exc.api_message or exc.message
        error_type = str(exc.type) if exc.type else None
        status = exc.status_code
        if status < 400:  # an `error` event inside a streamed 200 answer
            return AgentError(
                f"anthropic stream failed with {error_type or 'an error'}: {detail}",
                kind=_STREAM_ERROR_KINDS.get(error_type or "", ErrorKind.AGENT),
                provider=_ID,
            )
        hint = ""
        if status in (401, 403):
            hint = " (check the api_key option or the ANTHROPIC_API_KEY environment variable)"
        elif status == 404:
            hint = " (check the model name and base_url)"
        headers = exc.response.headers
        retry_after = parse_retry_after(headers.get("retry-after"))
        if retry_after is None and headers.get("retry-after-ms"):
            ms = parse_retry_after(headers.get("retry-after-ms"))
            retry_after = ms / 1000 if ms is not None else None
        typed = f" {error_type}" if error_type else ""
        return AgentError(
            f"anthropic answered HTTP {status}{typed}: {detail}{hint}",
            kind=kind_for_status(status),
            status=status,
            retry_after=retry_after,
            provider=_ID,
        )
    if isinstance(exc, anthropic.AnthropicError):
        return AgentError(f"anthropic call failed: {exc}", kind=ErrorKind.AGENT, provider=_ID)
    return None


def _is_transport(exc: BaseException, name: str) -> bool:
    # The SDK's HTTP library (httpx, or httpx2 in SDK 2.x) raises its own errors while a
    # stream body is read; match them by class name to work with either.
    return any(c.__name__ == name and c.__module__.startswith("httpx") for c in type(exc).__mro__)


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
