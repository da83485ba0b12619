"""The Anthropic Messages API wire format, for the Anthropic provider: our messages as
request params, the SDK's answers and stream events as ours, and its errors as :class:`AgentError`.

Shared by the sync and the async calls of :class:`~wingman_actors.providers._anthropic.AnthropicProvider`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from .._extras import require
from ..core import ContentBlock, InferenceResponse, Message, StopReason, StreamEvent, Usage
from ..errors import AgentError, ErrorKind
from ._base import ResponseBuilder, shaped
from ._http import context_window_hint, kind_for_status, retry_after_from

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
        RedactedThinkingBlock,
        SignatureDelta,
        TextBlock,
        TextDelta,
        ThinkingBlock,
        ThinkingDelta,
        ToolUseBlock,
    )

__all__ = ["EventMapper", "from_message", "map_error", "to_anthropic_messages"]

_ID = "anthropic"

# model_context_window_exceeded: the answer was cut where the context window ran out, as
# OpenAI's "length" is (the same for both limits): "max_tokens", so that a structured
# output says it was cut off instead of failing as invalid JSON
_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
}
_REFUSAL = "refusal"  # the model declined (its safety classifiers): the turn ends, InferenceResponse.refused

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


class EventMapper:
    """Maps the SDK's raw stream events onto :class:`StreamEvent`, one at a time (for the
    sync and the async stream alike), dispatching on ``type``: the SDK builds unknown
    event types into whatever model fits."""

    __slots__ = ("b", "finished", "start")

    def __init__(self, b: ResponseBuilder) -> None:
        self.b = b
        self.start = Usage()
        self.finished = False

    def feed(self, event: RawMessageStreamEvent) -> list[StreamEvent]:
        """The events of one of the SDK's stream events; one not shaped as the Messages
        API documents (the SDK builds them without validating) is an :class:`AgentError`."""
        with shaped(_ID, "a stream event", event):
            return list(self._feed(event))

    def _feed(self, event: RawMessageStreamEvent) -> Iterator[StreamEvent]:
        b = self.b
        kind = getattr(event, "type", None)
        if self.finished:
            return
        if kind == "message_start" and isinstance(event, RawMessageStartEvent):
            b.model = event.message.model or b.model
            u = event.message.usage
            if u is not None:  # proxies may leave it to message_delta (the SDK accepts that)
                self.start = _usage(
                    u.input_tokens, u.output_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens
                )
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
            elif isinstance(block, ThinkingBlock) and block.type == "thinking":
                yield b.start_thinking(event.index, signature=block.signature or None)
                if block.thinking:
                    yield b.thinking(event.index, block.thinking)
            elif isinstance(block, RedactedThinkingBlock) and block.type == "redacted_thinking":
                yield b.redacted_thinking(event.index, block.data)
        elif kind == "content_block_delta" and isinstance(event, RawContentBlockDeltaEvent):
            delta, open_type = event.delta, b.blocks.get(event.index, {}).get("type")
            if isinstance(delta, TextDelta) and open_type == "text":
                yield b.text(event.index, delta.text)
            elif isinstance(delta, InputJSONDelta) and open_type == "tool_use":
                yield b.tool_json(event.index, delta.partial_json)
            elif isinstance(delta, ThinkingDelta) and open_type == "thinking":
                yield b.thinking(event.index, delta.thinking)
            elif isinstance(delta, SignatureDelta) and open_type == "thinking":
                b.signature(event.index, delta.signature)
        elif kind == "content_block_stop" and isinstance(event, RawContentBlockStopEvent):
            # A tool call cut inside its arguments stays open until message_stop: only the
            # stop reason (message_delta, after the block's stop) tells max_tokens from bad JSON.
            if b.has(event.index) and not b.unfinished_call(event.index):
                yield b.stop(event.index)
        elif kind == "message_delta" and isinstance(event, RawMessageDeltaEvent):
            d, start = event.usage, self.start
            usage = start if d is None else _usage(
                d.input_tokens if d.input_tokens is not None else start.input_tokens,
                d.output_tokens,
                d.cache_creation_input_tokens
                if d.cache_creation_input_tokens is not None
                else start.cache_creation_input_tokens,
                d.cache_read_input_tokens if d.cache_read_input_tokens is not None else start.cache_read_input_tokens,
            )
            reason = event.delta.stop_reason
            yield b.message_delta(_stop_reason(reason) if reason else None, usage, refused=reason == _REFUSAL)
        elif kind == "message_stop":
            self.finished = True
            yield from b.finish()
        # ping, citation deltas and unknown events are skipped

    def end(self) -> None:
        """The body has ended (read to its end, which keeps the connection reusable):
        raise if no message_stop came: kind ``agent``, as OpenAI's and Ollama's streams cut
        short (the provider was reached and answered, incompletely; ``network`` is for a
        provider that could not be reached, and a transport error mid-body is mapped so)."""
        if not self.finished:
            raise AgentError(
                "the Anthropic stream ended before message_stop (its body ended without it: an incomplete answer)",
                kind=ErrorKind.AGENT,
                provider=_ID,
            )


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages as Anthropic ``messages`` params.

    Consecutive messages of one role are merged (the API wants user and assistant to
    alternate), tool results lead their user message (the API wants them first), and empty
    text blocks, thinking blocks without a signature and empty messages are dropped (the
    API refuses them).
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        blocks = [_block_param(b) for b in message.content if _sendable(b)]
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


def _sendable(block: ContentBlock) -> bool:
    # Empty text is refused by the API, and so is thinking without Anthropic's signature
    # (another provider's reasoning, in a history moved to Claude).
    if block.type == "text":
        return bool(block.text)
    return block.type != "thinking" or block.signature is not None


def _block_param(block: ContentBlock) -> dict[str, Any]:
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input or {})}
    if block.type == "thinking":  # back unchanged, as the API requires in a tool loop
        param: dict[str, Any] = {"type": "thinking", "thinking": block.text}
        if block.signature is not None:
            param["signature"] = block.signature
        return param
    if block.type == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
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


def from_message(message: anthropic.types.Message) -> InferenceResponse:
    """Our response of an SDK message; an answer the SDK could not read as one (an endpoint
    that is not the Messages API: no ``content``, no ``usage``) is an :class:`AgentError`."""
    try:
        return _from_message(message)
    except (AttributeError, TypeError) as exc:  # the SDK builds answers without validating them
        raise AgentError(
            f"anthropic answered with something that is not a message ({type(exc).__name__}: {exc}); "
            "check that base_url is an Anthropic Messages API endpoint",
            kind=ErrorKind.AGENT, provider=_ID,
        ) from exc


def _from_message(message: anthropic.types.Message) -> InferenceResponse:
    content: list[ContentBlock] = []
    for block in message.content:
        if isinstance(block, TextBlock) and block.type == "text" and block.text:
            content.append(ContentBlock.text_block(block.text))
        elif isinstance(block, ToolUseBlock) and block.type == "tool_use":
            args = block.input if isinstance(block.input, dict) else {"value": block.input}
            content.append(ContentBlock.tool_use_block(block.id, block.name, dict(args)))
        elif isinstance(block, ThinkingBlock) and block.type == "thinking":
            content.append(ContentBlock.thinking_block(block.thinking, block.signature))
        elif isinstance(block, RedactedThinkingBlock) and block.type == "redacted_thinking":
            content.append(ContentBlock.redacted_thinking_block(block.data))
    u = message.usage
    return InferenceResponse(
        content=content,
        stop_reason=_stop_reason(message.stop_reason),
        usage=_usage(u.input_tokens, u.output_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens),
        model=message.model,
        refused=message.stop_reason == _REFUSAL,
    )


def _stop_reason(reason: str | None) -> StopReason:
    # stop_sequence, pause_turn, refusal... end the turn.
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
        else:
            hint = context_window_hint(status, str(detail))
        headers = exc.response.headers
        retry_after = retry_after_from(headers)
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
