"""The data model shared by every layer: messages, content blocks, requests, responses,
usage and stream events. Pydantic v2 models; their JSON uses snake_case field names.

Example:
    >>> from wingman_actors.core import Message
    >>> Message.user("hello").text
    'hello'
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "ContentBlock",
    "InferenceRequest",
    "InferenceResponse",
    "Message",
    "Role",
    "StopReason",
    "StreamEvent",
    "StreamEventType",
    "ToolDefinition",
    "Usage",
]


class Role(enum.StrEnum):
    """Who said a message. System instructions travel in ``InferenceRequest.instructions``."""

    USER = "user"
    ASSISTANT = "assistant"


BlockType = Literal["text", "tool_use", "tool_result", "image", "thinking", "redacted_thinking"]
StopReason = Literal["end_turn", "tool_use", "max_tokens"]
"""Why a model call stopped: it ended its turn, it asks for tools, or it was cut at
``max_tokens`` (or where the context window ran out). A refusal ends the turn
(``end_turn``) and sets :attr:`InferenceResponse.refused`."""

_REQUIRED: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "tool_use": ("id", "name"),
    "tool_result": ("tool_use_id",),
    "image": ("media_type", "data"),
    "thinking": ("text",),
    "redacted_thinking": ("data",),
}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ContentBlock(_Model):
    """One block of a message: text, a tool call, a tool result, an image, or the model's
    reasoning (``thinking``, with the provider's ``signature`` when it gives one; or
    ``redacted_thinking``, its encrypted ``data``). Reasoning blocks are not part of
    :attr:`Message.text`; they stay in the history and go back to the provider unchanged.

    Build blocks with the constructors rather than by hand::

        ContentBlock.text_block("hi")
        ContentBlock.tool_use_block("call_1", "add", {"a": 1, "b": 2})
        ContentBlock.tool_result_block("call_1", "3")
        ContentBlock.tool_result_block("call_1", "no such file", is_error=True)
        ContentBlock.image_block(base64_png, "image/png")
        ContentBlock.thinking_block("The user wants...", signature="EqQB...")
    """

    type: BlockType
    text: str | None = None
    id: str | None = None
    name: str | None = None
    input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    content: str | None = None
    is_error: bool = False
    media_type: str | None = None
    data: str | None = None
    signature: str | None = None

    @model_validator(mode="after")
    def _check_fields(self) -> Self:
        # Runs for every block made and again whenever a message or response takes one:
        # a loop, without building a list until one is missing.
        for name in _REQUIRED[self.type]:
            if getattr(self, name) is None:
                missing = [f for f in _REQUIRED[self.type] if getattr(self, f) is None]
                raise ValueError(f"a {self.type!r} content block needs {', '.join(missing)}")
        return self

    @classmethod
    def text_block(cls, text: str) -> ContentBlock:
        """A text block."""
        return cls(type="text", text=text)

    @classmethod
    def tool_use_block(cls, id: str, name: str, input: dict[str, Any] | None = None) -> ContentBlock:
        """A tool call made by the model."""
        return cls(type="tool_use", id=id, name=name, input=dict(input or {}))

    @classmethod
    def tool_result_block(cls, tool_use_id: str, content: str, *, is_error: bool = False) -> ContentBlock:
        """The result of the tool call ``tool_use_id``; ``is_error`` marks a failure."""
        return cls(type="tool_result", tool_use_id=tool_use_id, content=content, is_error=is_error)

    @classmethod
    def image_block(cls, data: str, media_type: str) -> ContentBlock:
        """An image, as base64 ``data`` of the given ``media_type`` (e.g. ``image/png``)."""
        return cls(type="image", data=data, media_type=media_type)

    @classmethod
    def thinking_block(cls, text: str, signature: str | None = None) -> ContentBlock:
        """The model's reasoning ``text``; ``signature`` is the provider's proof of it
        (Anthropic's), sent back with the block in a tool loop."""
        return cls(type="thinking", text=text, signature=signature)

    @classmethod
    def redacted_thinking_block(cls, data: str) -> ContentBlock:
        """Reasoning the provider sent encrypted (Anthropic's ``redacted_thinking``), as its ``data``."""
        return cls(type="redacted_thinking", data=data)


def _text_of(blocks: list[ContentBlock]) -> str:
    if len(blocks) == 1:  # the common case, without a generator
        block = blocks[0]
        return (block.text or "") if block.type == "text" else ""
    return "".join(b.text or "" for b in blocks if b.type == "text")


def _blocks(content: str | ContentBlock | Iterable[ContentBlock]) -> list[ContentBlock]:
    if isinstance(content, str):
        # a dict, as text_block() would set its fields: the message validates it with itself,
        # in one call of pydantic's (a block made first is checked again when a message takes it)
        return [{"type": "text", "text": content}]  # type: ignore[list-item]
    if isinstance(content, ContentBlock):
        return [content]
    return list(content)


class Message(_Model):
    """One message of a conversation.

    Example:
        >>> Message.user("What is 2 + 2?").role
        <Role.USER: 'user'>

    ``sender`` names the agent that produced the message (the session sets it on its
    agent's answers; a delegating agent on the tasks it hands out), so a delegated
    conversation says who said what. It is bookkeeping: providers never send it.
    """

    role: Role
    content: list[ContentBlock] = Field(default_factory=list)
    sender: str | None = None

    @classmethod
    def user(cls, content: str | ContentBlock | Iterable[ContentBlock], *, sender: str | None = None) -> Message:
        """A user message from text or blocks (``sender``: who wrote it, when an agent did)."""
        return cls(role=Role.USER, content=_blocks(content), sender=sender)

    @classmethod
    def assistant(cls, content: str | ContentBlock | Iterable[ContentBlock], *, sender: str | None = None) -> Message:
        """An assistant message from text or blocks (``sender``: the agent that answered)."""
        return cls(role=Role.ASSISTANT, content=_blocks(content), sender=sender)

    @classmethod
    def tool_results(cls, results: Iterable[ContentBlock]) -> Message:
        """The user message carrying the results of one step's tool calls."""
        blocks = list(results)
        bad = [b.type for b in blocks if b.type != "tool_result"]
        if bad:
            raise ValueError(f"Message.tool_results takes tool_result blocks only, got {bad}")
        return cls(role=Role.USER, content=blocks)

    @property
    def text(self) -> str:
        """The concatenated text of the text blocks."""
        return _text_of(self.content)

    @property
    def tool_calls(self) -> list[ContentBlock]:
        """The tool_use blocks, in order."""
        return [b for b in self.content if b.type == "tool_use"]

    @property
    def tool_results_blocks(self) -> list[ContentBlock]:
        """The tool_result blocks, in order."""
        return [b for b in self.content if b.type == "tool_result"]


class ToolDefinition(_Model):
    """What a model is told about a tool: its name, what it does, and a JSON Schema of its input."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class Usage(_Model):
    """Token counts. Addable: ``total = a + b``.

    ``reasoning_tokens`` is the part of ``output_tokens`` the model spent reasoning, where
    the provider reports it (OpenAI-compatible APIs'
    ``completion_tokens_details.reasoning_tokens``); it is already counted in
    ``output_tokens`` and ``total_tokens``. Anthropic and Ollama do not report it apart (their
    thinking is counted in ``output_tokens`` only), so it stays 0 for them.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage.sum((self, other))

    @classmethod
    def sum(cls, usages: Iterable[Usage]) -> Usage:
        """The total of ``usages`` (zero when there are none), built once.

        What ``sum(usages, Usage())`` gives, without building a model per addition: a
        fleet node sums one usage per item, after its last item finished.

        Example:
            >>> Usage.sum([Usage(input_tokens=2), Usage(input_tokens=3, output_tokens=1)]).total_tokens
            6
        """
        inp = out = created = read = reasoning = 0
        for u in usages:
            inp += u.input_tokens
            out += u.output_tokens
            created += u.cache_creation_input_tokens
            read += u.cache_read_input_tokens
            reasoning += u.reasoning_tokens
        return cls(
            input_tokens=inp, output_tokens=out, cache_creation_input_tokens=created, cache_read_input_tokens=read,
            reasoning_tokens=reasoning,
        )

    def __radd__(self, other: Any) -> Usage:
        # sum(usages) starts from 0
        if other == 0:
            return self
        return self.__add__(other)

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


class InferenceRequest(_Model):
    """Everything a provider needs for one model call.

    ``output_schema`` is a JSON Schema the final answer should follow (providers pass it on
    where the API supports it; the session validates the answer either way).
    ``max_tokens`` and ``temperature`` override the provider's options for this call, and
    ``model`` the provider's model (an agent's ``prepare`` sets it with
    ``Prepared(model="name")``; the built-in providers honour it).
    """

    messages: list[Message]
    tools: list[ToolDefinition] = Field(default_factory=list)
    instructions: str = ""
    output_schema: dict[str, Any] | None = None
    max_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    model: str | None = Field(default=None, min_length=1)

    def fingerprint(self) -> str:
        """A stable hash of the request, the key of replay cassettes."""
        import hashlib

        # What the model sees: a message's sender is bookkeeping, never sent, so it does
        # not change the key (recordings made before senders existed still replay); nor
        # does a block's opaque signature (keys made before it existed stay the same).
        data = self.model_dump(
            mode="json", exclude={"messages": {"__all__": {"sender": True, "content": {"__all__": {"signature"}}}}}
        )
        if data["model"] is None:  # keys made before requests named a model stay the same
            del data["model"]
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()


class InferenceResponse(_Model):
    """A model's answer to one :class:`InferenceRequest`.

    ``refused``: the model declined to answer, or the server's filter withheld or cut its
    answer (Anthropic's stop reason ``refusal``, an OpenAI-compatible ``content_filter``
    finish, or an answer in the message's ``refusal`` field); its words, if any, are the
    text, and ``stop_reason`` is ``end_turn``.
    """

    content: list[ContentBlock] = Field(default_factory=list)
    stop_reason: StopReason = "end_turn"
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    refused: bool = False

    @classmethod
    def of_text(cls, text: str, *, model: str = "", usage: Usage | None = None) -> InferenceResponse:
        """A plain text answer."""
        return cls(content=[ContentBlock.text_block(text)], model=model, usage=usage or Usage())

    @classmethod
    def of_tool_calls(
        cls, calls: Sequence[tuple[str, str, dict[str, Any]]], *, text: str = "", model: str = ""
    ) -> InferenceResponse:
        """An answer that calls tools: ``calls`` is a list of ``(id, name, input)``."""
        blocks = [ContentBlock.text_block(text)] if text else []
        blocks += [ContentBlock.tool_use_block(i, n, a) for i, n, a in calls]
        return cls(content=blocks, stop_reason="tool_use", model=model)

    @property
    def text(self) -> str:
        """The concatenated text of the text blocks."""
        return _text_of(self.content)

    @property
    def tool_calls(self) -> list[ContentBlock]:
        """The tool_use blocks, in order."""
        return [b for b in self.content if b.type == "tool_use"]

    @property
    def thinking(self) -> str:
        """The model's reasoning: the text of its thinking blocks, blank-line separated, with
        ``[redacted]`` for each ``redacted_thinking`` block ("" when it gave none)."""
        return "\n\n".join(
            b.text or "" if b.type == "thinking" else "[redacted]"
            for b in self.content if b.type in ("thinking", "redacted_thinking")
        )

    def to_message(self, *, sender: str | None = None) -> Message:
        """The assistant message this response appends to a history (``sender``: the agent)."""
        # the message's content is a list of its own: validating list[ContentBlock] builds one
        return Message(role=Role.ASSISTANT, content=self.content, sender=sender)


class StreamEventType(enum.StrEnum):
    """The kinds of :class:`StreamEvent`.

    Provider events follow Anthropic's streaming shape; ``tool_start`` and ``tool_end`` are
    emitted by the session loop around each tool execution.
    """

    MESSAGE_START = "message_start"
    CONTENT_BLOCK_START = "content_block_start"
    TEXT_DELTA = "text_delta"
    THINKING_DELTA = "thinking_delta"
    INPUT_JSON_DELTA = "input_json_delta"
    CONTENT_BLOCK_STOP = "content_block_stop"
    MESSAGE_DELTA = "message_delta"
    MESSAGE_STOP = "message_stop"
    ERROR = "error"
    TOOL_START = "tool_start"
    TOOL_END = "tool_end"


class StreamEvent(_Model):
    """One event of a streamed model call or session run.

    Fields used per type:

    * ``message_start``: ``model``
    * ``content_block_start``: ``index``, ``block`` (a text or thinking block, empty, or a
      tool_use block with empty input)
    * ``text_delta``: ``index``, ``text``
    * ``thinking_delta``: ``index``, ``text`` (a piece of a thinking block's reasoning)
    * ``input_json_delta``: ``index``, ``partial_json``
    * ``content_block_stop``: ``index``, ``block`` (the completed block)
    * ``message_delta``: ``stop_reason``, ``usage``
    * ``message_stop``: ``response`` (the assembled :class:`InferenceResponse`)
    * ``error``: ``error`` (message), ``error_kind``
    * ``tool_start``: ``block`` (the tool_use block)
    * ``tool_end``: ``block`` (the tool_result block), ``duration_s``
    """

    type: StreamEventType
    index: int | None = None
    text: str | None = None
    partial_json: str | None = None
    block: ContentBlock | None = None
    stop_reason: StopReason | None = None
    usage: Usage | None = None
    model: str | None = None
    response: InferenceResponse | None = None
    error: str | None = None
    error_kind: str | None = None
    duration_s: float | None = None
