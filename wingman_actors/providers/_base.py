"""The provider protocol, the shared options model, streaming plumbing and the base class.

A provider implements two methods: ``_infer`` (one blocking call) and ``_stream`` (an
iterator of :class:`StreamEvent` ending with ``message_stop``). :class:`BaseProvider` wraps
both in the one retry policy and in :class:`InferenceStream`, whose final response is
available once iteration ends.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Generator, Iterator
from typing import Any, ClassVar, Protocol, Self, get_args, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .._cancel import current_token
from ..core import (
    ContentBlock,
    InferenceRequest,
    InferenceResponse,
    StopReason,
    StreamEvent,
    StreamEventType,
    Usage,
)
from ..errors import AgentError, ErrorKind
from ._aio import AsyncProviderMethods, final_response
from ._retry import RetryPolicy, stopped

__all__ = [
    "BaseProvider",
    "InferenceStream",
    "Provider",
    "ProviderOptions",
    "ResponseBuilder",
    "events_for_response",
    "shaped",
]


@runtime_checkable
class Provider(Protocol):
    """What every provider offers. ``id`` is the registry id, ``model`` the model used.

    A provider may also implement ``async def arun_inference(request)`` and
    ``astream_inference(request)`` (an :class:`~wingman_actors.providers._aio.AsyncInferenceStream`),
    mirroring the two methods below; :class:`BaseProvider` and the built-in providers do.

    A provider that honours a request's ``model`` (:attr:`InferenceRequest.model`, which an
    agent's ``prepare`` sets with ``Prepared(model="name")``) says so with a class attribute
    ``per_request_model = True``; the built-in providers do (a :class:`BaseProvider`
    subclass reads it with :meth:`BaseProvider.model_for`).
    """

    model: str

    @property
    def id(self) -> str:
        """The registry id (a class attribute in the built-in providers)."""
        ...

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        """One blocking model call."""
        ...

    def stream_inference(self, request: InferenceRequest) -> InferenceStream:
        """One streamed model call; iterate for events, then read ``.response``."""
        ...


def _json_type_error(key: str, annotation: Any, value: Any) -> str | None:
    """Why ``value`` is not of the JSON type a field typed ``annotation`` takes, or None:
    pydantic's lax mode reads ``true`` as 1, ``"2"`` as 2 and 1 as ``true``, but JSON types
    are strict (a boolean is not a number, a string is not a number, a number is not a
    boolean). A field that also takes strings or anything is left to pydantic."""
    kinds = get_args(annotation) or (annotation,)
    if str in kinds or Any in kinds:
        return None
    if bool in kinds:
        if value is None or isinstance(value, bool):
            return None
        return f"{key}: {json.dumps(value)[:40]} is not a boolean; give {key} true or false"
    if any(kind in (int, float) for kind in kinds) and isinstance(value, (bool, str)):
        what = "a boolean" if isinstance(value, bool) else "a string"
        return f"{key}: {what} is not a number; give {key} a number"
    return None


class ProviderOptions(BaseModel):
    """Options every provider understands. Providers subclass this to add their own keys.

    Unknown keys are refused with an error naming them.
    """

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    max_tokens: int = Field(default=4096, gt=0)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    api_key: str | None = None
    base_url: str | None = None
    timeout: float = Field(default=600.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=20)

    @model_validator(mode="before")
    @classmethod
    def _strict_json_types(cls, data: Any) -> Any:
        # JSON types are strict in the HTTP API, where these options come from too.
        if isinstance(data, dict):
            fields = cls.model_fields
            for key, value in data.items():
                field = fields.get(key)
                problem = None if field is None else _json_type_error(key, field.annotation, value)
                if problem:
                    raise ValueError(problem)
        return data

    @classmethod
    def parse(cls, provider: str, options: dict[str, Any] | None) -> Self:
        """Validate ``options`` into this model, or raise ``AgentError(invalid)`` naming the keys."""
        try:
            return cls.model_validate(dict(options or {}))
        except ValidationError as exc:
            known_fields = list(cls.model_fields)

            def describe(e: Any) -> str:
                where = ".".join(str(p) for p in e["loc"]) or "options"
                hint = ""
                if e["type"] == "extra_forbidden":
                    close = difflib.get_close_matches(where, known_fields, n=1)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                return f"{where}: {e['msg']}{hint}"

            problems = "; ".join(describe(e) for e in exc.errors())
            known = ", ".join(sorted(cls.model_fields))
            raise AgentError(
                f"bad options for provider {provider!r}: {problems} (known options: {known})",
                kind=ErrorKind.INVALID,
                provider=provider,
            ) from None


class shaped:  # lower-case: used like a function, `with shaped(provider, what, sent):`
    """Read ``sent`` (``what`` the provider sent: its answer, a stream chunk) inside: an
    ``AttributeError`` or ``TypeError`` there (a field of another type than the provider's
    API documents, as from a proxy or an endpoint of another API) becomes an
    :class:`AgentError` (kind ``agent``) naming the provider and showing what it sent.

    A small class rather than ``@contextmanager``: it wraps the reading of every answer,
    and a generator-based context manager costs about 1 µs more per use.
    """

    __slots__ = ("_provider", "_sent", "_what")

    def __init__(self, provider: str, what: str, sent: Any) -> None:
        self._provider = provider
        self._what = what
        self._sent = sent

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if not isinstance(exc, (AttributeError, TypeError)):
            return  # none, or not ours to reword: it propagates as it is
        provider = self._provider
        shown = _shown(self._sent)
        raise AgentError(
            f"{provider} sent {self._what} not shaped as its API documents ({type(exc).__name__}: {exc}): "
            f"{shown[:200]!r}",
            kind=ErrorKind.AGENT, provider=provider,
        ) from exc


def _shown(sent: Any) -> str:
    if isinstance(sent, str):
        return sent
    try:
        return json.dumps(sent, default=repr)
    except ValueError:  # a circular structure
        return repr(sent)


def tool_arguments(provider: str, tool: str, raw: Any, *, cut: bool = False) -> dict[str, Any]:
    """A tool call's arguments as a dict: parsed from a JSON string (empty or ``null`` →
    ``{}``), or taken as given; a non-object value is wrapped as ``{"value": ...}``.
    ``cut``: the answer stopped at ``max_tokens``.

    Raises:
        AgentError: kind ``agent`` when the model sent malformed JSON (retryable); kind
            ``invalid`` when ``cut`` and the JSON is unfinished (the same ``max_tokens``
            would cut it again: not retryable).
    """
    args: Any = raw
    if raw is None or isinstance(raw, str):
        text = (raw or "").strip()
        try:
            args = json.loads(text) if text else {}
        except json.JSONDecodeError as exc:
            if cut:
                raise AgentError(
                    f"{provider} reached max_tokens inside the arguments of tool {tool!r}, so the call was cut "
                    "short and is not run; raise max_tokens (the provider option, or the agent's or request's "
                    "max_tokens)",
                    kind=ErrorKind.INVALID,
                    provider=provider,
                ) from exc
            raise AgentError(
                f"model sent malformed JSON arguments for tool {tool!r}: {exc}",
                kind=ErrorKind.AGENT,
                provider=provider,
            ) from exc
    if not isinstance(args, dict):
        return {"value": args} if args is not None else {}  # no arguments, said as JSON null
    return dict(args)


class InferenceStream:
    """An iterable of :class:`StreamEvent` whose final response is ready after iteration.

    Example:
        >>> stream = provider.stream_inference(request)          # doctest: +SKIP
        >>> text = "".join(e.text or "" for e in stream)         # doctest: +SKIP
        >>> stream.response.usage                                 # doctest: +SKIP
    """

    def __init__(self, events: Iterator[StreamEvent], close: Callable[[], None] | None = None) -> None:
        self._events = events
        self._close = close
        self._response: InferenceResponse | None = None
        self._started = False

    def __iter__(self) -> Iterator[StreamEvent]:
        if self._started:
            raise RuntimeError("an InferenceStream can be iterated only once")
        self._started = True
        try:
            for event in self._events:
                if event.type is StreamEventType.MESSAGE_STOP and event.response is not None:
                    self._response = event.response
                yield event
        finally:
            self.close()

    def close(self) -> None:
        """Release the connection; safe to call more than once."""
        close, self._close = self._close, None
        if close is not None:
            close()

    @property
    def response(self) -> InferenceResponse:
        """The assembled response. Raises if the stream has not been consumed to its end."""
        if self._response is None:
            raise RuntimeError("the stream has not finished: iterate it to the end first")
        return self._response

    def consume(self) -> InferenceResponse:
        """Iterate to the end, dropping events, and return the response."""
        for _ in self:
            pass
        return self.response


class ResponseBuilder:
    """Assembles streamed pieces into content blocks and a final :class:`InferenceResponse`.

    Providers call ``start_text``/``text``/``start_tool``/``tool_json``/``stop`` as their wire
    format delivers pieces; each call returns the events to yield. Tool input JSON is
    assembled from its deltas and parsed once the block stops.
    """

    def __init__(self, provider: str, model: str = "") -> None:
        self.provider = provider
        self.model = model
        self.blocks: dict[int, dict[str, Any]] = {}
        self.order: list[int] = []
        self.usage = Usage()
        self.stop_reason: StopReason = "end_turn"
        self.refused = False  # the answer is a refusal (InferenceResponse.refused)

    def message_start(self) -> StreamEvent:
        return StreamEvent(type=StreamEventType.MESSAGE_START, model=self.model)

    def start_text(self, index: int) -> StreamEvent:
        self.blocks[index] = {"type": "text", "text": ""}
        self.order.append(index)
        return StreamEvent(
            type=StreamEventType.CONTENT_BLOCK_START, index=index, block=ContentBlock.text_block("")
        )

    def text(self, index: int, delta: str) -> StreamEvent:
        self.blocks[index]["text"] += delta
        return StreamEvent(type=StreamEventType.TEXT_DELTA, index=index, text=delta)

    def start_thinking(self, index: int, text: str = "", signature: str | None = None) -> StreamEvent:
        self.blocks[index] = {"type": "thinking", "text": text, "signature": signature}
        self.order.append(index)
        return StreamEvent(
            type=StreamEventType.CONTENT_BLOCK_START, index=index, block=ContentBlock.thinking_block(text, signature)
        )

    def thinking(self, index: int, delta: str) -> StreamEvent:
        self.blocks[index]["text"] += delta
        return StreamEvent(type=StreamEventType.THINKING_DELTA, index=index, text=delta)

    def signature(self, index: int, delta: str) -> None:
        """Add to a thinking block's signature (no event: it comes with the finished block)."""
        raw = self.blocks[index]
        raw["signature"] = (raw["signature"] or "") + delta

    def redacted_thinking(self, index: int, data: str) -> StreamEvent:
        """A redacted thinking block, whole: its start event (its stop comes as any block's)."""
        block = ContentBlock.redacted_thinking_block(data)
        self.blocks[index] = {"type": "redacted_thinking", "done": block}
        self.order.append(index)
        return StreamEvent(type=StreamEventType.CONTENT_BLOCK_START, index=index, block=block)

    def start_tool(self, index: int, id: str, name: str) -> StreamEvent:
        self.blocks[index] = {"type": "tool_use", "id": id, "name": name, "json": ""}
        self.order.append(index)
        return StreamEvent(
            type=StreamEventType.CONTENT_BLOCK_START,
            index=index,
            block=ContentBlock.tool_use_block(id, name, {}),
        )

    def name_tool(self, index: int, name: str) -> None:
        """Name a tool call whose start came without its name (some OpenAI-compatible
        servers send the id first and the name in a later delta); a name already set stays."""
        raw = self.blocks[index]
        if not raw["name"]:
            raw["name"] = name

    def tool_json(self, index: int, partial: str) -> StreamEvent:
        self.blocks[index]["json"] += partial
        return StreamEvent(type=StreamEventType.INPUT_JSON_DELTA, index=index, partial_json=partial)

    def has(self, index: int) -> bool:
        return index in self.blocks

    def unfinished_call(self, index: int) -> bool:
        """Whether block ``index`` is a tool call whose arguments are not whole JSON yet."""
        raw = self.blocks[index]
        if raw["type"] != "tool_use" or "done" in raw or not raw["json"].strip():
            return False
        try:
            json.loads(raw["json"])
        except json.JSONDecodeError:
            return True
        return False

    def stop(self, index: int) -> StreamEvent:
        block = self._finish(index)
        return StreamEvent(type=StreamEventType.CONTENT_BLOCK_STOP, index=index, block=block)

    def _finish(self, index: int) -> ContentBlock:
        raw = self.blocks[index]
        if "done" in raw:
            done: ContentBlock = raw["done"]
            return done
        if raw["type"] == "text":
            block = ContentBlock.text_block(raw["text"])
        elif raw["type"] == "thinking":
            block = ContentBlock.thinking_block(raw["text"], raw["signature"])
        else:
            args = tool_arguments(self.provider, raw["name"], raw["json"], cut=self.stop_reason == "max_tokens")
            block = ContentBlock.tool_use_block(raw["id"], raw["name"], args)
        raw["done"] = block
        return block

    def open_indices(self) -> list[int]:
        return [i for i in self.order if "done" not in self.blocks[i]]

    def message_delta(self, stop_reason: StopReason | None, usage: Usage | None = None,
                      refused: bool = False) -> StreamEvent:
        if refused:
            self.refused = True
        if stop_reason is not None:
            self.stop_reason = stop_reason
        if usage is not None:
            self.usage = usage
        return StreamEvent(type=StreamEventType.MESSAGE_DELTA, stop_reason=self.stop_reason, usage=self.usage)

    def finish(self) -> list[StreamEvent]:
        """Stop open blocks and return the closing events, ending with ``message_stop``."""
        events = [self.stop(i) for i in self.open_indices()]
        response = self.response()
        events.append(StreamEvent(type=StreamEventType.MESSAGE_STOP, response=response))
        return events

    def response(self) -> InferenceResponse:
        content = [self._finish(i) for i in self.order]
        content = [b for b in content if not (b.type == "text" and not b.text)]
        stop = self.stop_reason
        if stop == "end_turn" and any(b.type == "tool_use" for b in content):
            stop = "tool_use"
        return InferenceResponse(content=content, stop_reason=stop, usage=self.usage, model=self.model,
                                 refused=self.refused)


def events_for_response(
    provider_id: str, response: InferenceResponse, chunk: int = 8
) -> Iterator[StreamEvent]:
    """Stream a complete ``response`` as the events a live provider would send.

    Text is split into ``text_delta`` events of ``chunk`` characters; each tool call's input
    is sent as one ``input_json_delta``, each thinking block's text as one ``thinking_delta``.
    Other blocks are skipped.
    The last event is ``message_stop`` carrying the response as a :class:`ResponseBuilder`
    assembles it. Used by the offline providers (scripted, replay).
    """
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    b = ResponseBuilder(provider_id, response.model)
    yield b.message_start()
    for index, block in enumerate(response.content):
        if block.type == "text":
            yield b.start_text(index)
            text = block.text or ""
            for i in range(0, len(text), chunk):
                yield b.text(index, text[i : i + chunk])
        elif block.type == "tool_use":
            yield b.start_tool(index, block.id or "", block.name or "")
            yield b.tool_json(index, json.dumps(block.input or {}))
        elif block.type == "thinking":
            yield b.start_thinking(index, signature=block.signature)
            yield b.thinking(index, block.text or "")
        elif block.type == "redacted_thinking":
            yield b.redacted_thinking(index, block.data or "")
        else:
            continue
        yield b.stop(index)
    yield b.message_delta(response.stop_reason, response.usage)
    yield from b.finish()


class BaseProvider(AsyncProviderMethods):
    """Base of the built-in providers: retry around ``_infer`` and ``_stream``, and around
    their async twins ``_ainfer`` and ``_astream`` (``arun_inference``, ``astream_inference``).

    Subclasses set ``id`` and implement ``_infer`` (or rely on the default, which consumes
    ``_stream``) and ``_stream``; the built-in ones also ``_ainfer`` and ``_astream`` on
    their async clients (without them, ``_astream`` runs ``_stream`` on a worker thread).
    """

    id: ClassVar[str] = "base"

    def __init__(self, options: ProviderOptions) -> None:
        self.options = options
        self.model = options.model or ""
        self.retry = RetryPolicy(max_retries=options.max_retries)

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        return self.retry.call(lambda: self._infer(request), describe=f"{self.id} inference")

    def stream_inference(self, request: InferenceRequest) -> InferenceStream:
        events = self._stream_with_retry(request)
        # Closing the stream (even before its end) closes the generator, whose finally
        # block releases the HTTP response.
        return InferenceStream(events, close=events.close)

    def _stream_with_retry(self, request: InferenceRequest) -> Generator[StreamEvent, None, None]:
        # Retry only while nothing has been yielded: a retry after deltas reached the
        # caller would duplicate them.

        def first() -> tuple[Iterator[StreamEvent], StreamEvent | None]:
            it = self._stream(request)
            try:
                return it, next(it)
            except StopIteration:
                return it, None
            except BaseException:
                close = getattr(it, "close", None)
                if close is not None:
                    close()
                raise

        it, head = self.retry.call(first, describe=f"{self.id} stream")
        try:
            if head is not None:
                yield head
            yield from it
        except AgentError as exc:  # a read the run's cancel closed names the cancel, as async does
            token = current_token()
            if token is not None:
                stopped(token, exc)
            raise
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    def _infer(self, request: InferenceRequest) -> InferenceResponse:
        response: InferenceResponse | None = None
        for event in self._stream(request):
            if event.type is StreamEventType.MESSAGE_STOP:
                response = event.response
        return final_response(self.id, response)

    def _stream(self, request: InferenceRequest) -> Iterator[StreamEvent]:
        raise NotImplementedError

    @classmethod
    def require_model(cls, options: ProviderOptions, example: str) -> None:
        """Refuse construction without a model, naming an example call."""
        if not options.model:
            raise AgentError(
                f'the {cls.id} provider needs a model, e.g. new_provider("{cls.id}", {{"model": "{example}"}})',
                kind=ErrorKind.INVALID,
                provider=cls.id,
            )

    def model_for(self, request: InferenceRequest) -> str:
        """The model of this call: the request's (``Prepared(model="name")``), else the provider's."""
        return request.model or self.model

    def max_tokens_for(self, request: InferenceRequest) -> int:
        return request.max_tokens or self.options.max_tokens

    def temperature_for(self, request: InferenceRequest) -> float | None:
        return request.temperature if request.temperature is not None else self.options.temperature

    def close(self) -> None:
        """Release any connection pool. Providers are usable again lazily afterwards."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id!r} model={self.model!r}>"
