"""The OpenAI ``/chat/completions`` wire format of our messages and usage, for the
OpenAI-compatible provider."""

from __future__ import annotations

import json
from typing import Any

from ..core import ContentBlock, InferenceRequest, Message, Role, Usage

__all__ = ["error_text", "messages", "tool_loop_start", "usage", "usage_fields"]


def messages(request: InferenceRequest) -> list[dict[str, Any]]:
    """The ``messages`` of a request body: instructions as a system message, tool results
    as ``tool`` messages, and the reasoning of the current tool loop's assistant messages
    as their ``reasoning_content``."""
    out: list[dict[str, Any]] = []
    if request.instructions:
        out.append({"role": "system", "content": request.instructions})
    loop_start: int | None = None  # found at the first assistant message: a first turn has none
    for position, message in enumerate(request.messages):
        content = message.content
        if message.role is Role.ASSISTANT:
            if loop_start is None:
                loop_start = tool_loop_start(request.messages)
            calls = message.tool_calls
            entry: dict[str, Any] = {
                "role": "assistant",
                "content": (message.text or None) if calls else message.text,
            }
            if position >= loop_start:
                reasoning = "".join(b.text or "" for b in message.content if b.type == "thinking")
                if reasoning:
                    entry["reasoning_content"] = reasoning
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.input or {})},
                    }
                    for c in calls
                ]
            out.append(entry)
            continue
        if len(content) == 1 and content[0].type == "text":  # the common user message: its text
            out.append({"role": "user", "content": content[0].text or ""})
            continue
        results = message.tool_results_blocks
        for r in results:
            text = r.content or ""
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": r.tool_use_id,
                    "content": error_text(text) if r.is_error else text,
                }
            )
        parts = [b for b in message.content if b.type in ("text", "image")]
        if parts or not results:
            out.append({"role": "user", "content": _user_content(parts)})
    return out


def error_text(text: str) -> str:
    """A tool error result's text for a wire with no error flag: marked ``Error: `` once
    (the session's own error results start with it already)."""
    return text if text.startswith("Error: ") else f"Error: {text}"


def tool_loop_start(messages: list[Message]) -> int:
    """Where the current turn's tool loop starts: after the last user message that is not
    only tool results. Its assistant messages carry their reasoning back (DeepSeek asks
    for that); earlier turns' reasoning is left out, as those servers want."""
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if message.role is Role.USER and any(b.type != "tool_result" for b in message.content):
            return position + 1
    return 0


def _user_content(blocks: list[ContentBlock]) -> str | list[dict[str, Any]]:
    if all(b.type == "text" for b in blocks):
        return "".join(b.text or "" for b in blocks)
    parts: list[dict[str, Any]] = []
    for b in blocks:
        if b.type == "text":
            parts.append({"type": "text", "text": b.text or ""})
        else:
            parts.append({"type": "image_url", "image_url": {"url": f"data:{b.media_type};base64,{b.data}"}})
    return parts


def usage(raw: Any) -> Usage:
    """Our usage of an answer's ``usage`` object (cached prompt tokens as cache reads, and
    ``completion_tokens_details.reasoning_tokens`` as reasoning tokens)."""
    return Usage(**usage_fields(raw))


def usage_fields(raw: Any) -> dict[str, int]:
    """The fields of :func:`usage`'s :class:`Usage` (a response validates them with itself,
    in one call)."""
    if not isinstance(raw, dict):
        return {}
    details = raw.get("prompt_tokens_details")
    completion = raw.get("completion_tokens_details")
    return {
        "input_tokens": int(raw.get("prompt_tokens") or 0),
        "output_tokens": int(raw.get("completion_tokens") or 0),
        "cache_read_input_tokens": int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0,
        "reasoning_tokens": int(completion.get("reasoning_tokens") or 0) if isinstance(completion, dict) else 0,
    }
