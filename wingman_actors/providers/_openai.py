"""The OpenAI-compatible provider: any ``/chat/completions`` endpoint (OpenAI, Grok, vLLM,
llama.cpp, LM Studio...), over plain HTTP with SSE streaming.

Example:
    >>> from wingman_actors.providers import new_provider
    >>> provider = new_provider("openai", {"model": "gpt-4o-mini"})              # doctest: +SKIP
    >>> local = new_provider(
    ...     "openai", {"model": "qwen2.5", "base_url": "http://localhost:8000/v1"}
    ... )  # doctest: +SKIP

The API key comes from the ``api_key`` option or ``OPENAI_API_KEY``; it may be left out for
servers other than api.openai.com. ``output_schema`` is sent as ``response_format`` only
with ``structured_output: True``, since many compatible servers refuse it, and only when it
is an object schema (OpenAI refuses any other at the root).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncGenerator, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import httpx
from httpx_sse import EventSource

from ..core import (
    ContentBlock,
    InferenceRequest,
    InferenceResponse,
    StopReason,
    StreamEvent,
    Usage,
)
from ..errors import AgentError, ErrorKind
from ._base import BaseProvider, ResponseBuilder, events_for_response, shaped, tool_arguments
from ._drain import adrain, drain
from ._http import ClientPool, aopen_stream, apost_json, kind_for_status, open_stream, post_json
from ._openai_wire import messages as _messages
from ._openai_wire import usage as _usage
from ._openai_wire import usage_fields as _usage_fields
from ._options import RemoteOptions, without_tool_use

__all__ = ["OpenAIOptions", "OpenAIProvider", "build_openai"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_PATH = "/chat/completions"
_ACCEPT = {"Accept": "text/event-stream"}
_SSE_ENCODING = "utf-8-sig"
"""An event stream is UTF-8 whatever its charset says, and a leading byte order mark is
dropped (WHATWG); httpx-sse would read it as part of the first field's name and skip that
event, so the BOM is removed by decoding the body as ``utf-8-sig``."""
_STOP: dict[str, StopReason] = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
# content_filter: the answer was withheld or cut by the server's filter, a refusal (so is a
# message whose ``refusal`` field is set: OpenAI's structured outputs say so there); the
# turn ends (end_turn), InferenceResponse.refused says why
_FILTERED = "content_filter"


class OpenAIOptions(RemoteOptions):
    """Options of ``new_provider("openai", {...})``: the common ones, ``top_p``, ``stop``,
    ``headers``, ``http_client``, ``async_http_client``, any other key sent in the body as
    it is (``top_k``, ``seed``, ``reasoning_effort``...), and:

    Attributes:
        structured_output: send ``output_schema`` as a ``json_schema`` ``response_format``
            (an object schema; other output types are asked for in the instructions only).
        max_tokens_param: the body key of the token limit; newer OpenAI models want
            ``"max_completion_tokens"``.
    """

    structured_output: bool = False
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"


class OpenAIProvider(BaseProvider):
    """Talks to an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        options: the parsed options; ``model`` is required, and ``api_key`` (or
            ``OPENAI_API_KEY``) when the server is api.openai.com.

    Raises:
        AgentError: ``invalid`` when the model, or the key for api.openai.com, is missing.
    """

    id: ClassVar[str] = "openai"
    per_request_model: ClassVar[bool] = True  # its requests name model_for(request)
    _heeds_cancel: ClassVar[bool] = True  # a cancel closes its request: called on the session's thread

    def __init__(self, options: OpenAIOptions) -> None:
        self.require_model(options, "gpt-4o-mini")
        super().__init__(options)
        self.openai_options = options
        self.base_url = options.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        # None means "not given" (fall back to the environment); "" means "no key" (a local
        # server, or the HTTP server, whose keys come only from its auth store).
        api_key = options.api_key if options.api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not api_key and httpx.URL(self.base_url).host == "api.openai.com":
            raise AgentError(
                "the openai provider needs an API key for api.openai.com: pass the api_key option "
                "or set OPENAI_API_KEY (servers at another base_url may go without one)",
                kind=ErrorKind.INVALID,
                provider=self.id,
            )
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = ClientPool(
            self.base_url, options.timeout, {**headers, **options.headers},
            client=options.http_client, async_client=options.async_http_client,
            async_transport=options.async_transport,
        )
        self._extra = options.extra_body()
        self._extra_no_tools = without_tool_use(self._extra)  # tool_choice alone is a 400

    # -- request -------------------------------------------------------------------

    def build_body(self, request: InferenceRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body of ``/chat/completions`` for ``request``."""
        body: dict[str, Any] = {"model": self.model_for(request), "messages": _messages(request)}
        body[self.openai_options.max_tokens_param] = self.max_tokens_for(request)
        temperature = self.temperature_for(request)
        if temperature is not None:
            body["temperature"] = temperature
        options = self.openai_options
        if options.top_p is not None:
            body["top_p"] = options.top_p
        if options.stop:
            body["stop"] = options.stop
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
                }
                for t in request.tools
            ]
        schema = request.output_schema
        # OpenAI refuses (400) a json_schema whose root is not an object; any other schema
        # (int, a list, a Literal) travels in the instructions only, which ask for it anyway.
        if schema is not None and self.openai_options.structured_output and schema.get("type") == "object":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": request.output_schema},
            }
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        extra = self._extra if request.tools else self._extra_no_tools
        if extra:
            body.update(extra)
        return body

    # -- calls -----------------------------------------------------------------------


    def _infer(self, request: InferenceRequest) -> InferenceResponse:
        body = self.build_body(request, stream=False)
        return self._completion(post_json(self._http, self.id, _PATH, body), body["model"])

    def _ainfer(self, request: InferenceRequest) -> Coroutine[Any, Any, InferenceResponse]:
        # not a coroutine of its own: apost_json's, which reads the answer with _completion
        body = self.build_body(request, stream=False)
        return apost_json(self._http, self.id, _PATH, body, self._completion, body["model"])

    def _completion(self, data: Any, model: str) -> InferenceResponse:
        """The response of a non-streamed answer's decoded JSON body."""
        with shaped(self.id, "an answer", data):
            return self._read_completion(data, model)

    def _read_completion(self, data: Any, model: str) -> InferenceResponse:
        if not isinstance(data, dict):
            raise AgentError(f"openai answered with {type(data).__name__}, not an object", provider=self.id)
        self._raise_error_object(data)
        choices = data.get("choices") or []
        if not choices:
            raise AgentError("openai answered with no choices", kind=ErrorKind.AGENT, provider=self.id)
        message = choices[0].get("message") or {}
        # blocks as dicts where they are plain: the response validates them, and its
        # usage, in one call of pydantic's rather than one per model
        content: list[ContentBlock | dict[str, Any]] = []
        reasoning = _reasoning(message)
        answer = message.get("content")
        if isinstance(answer, list):  # a list of parts (Mistral's reasoning models)
            thought, answer = _parts(answer)
            reasoning = reasoning or thought
        if isinstance(reasoning, str) and reasoning:
            content.append({"type": "thinking", "text": reasoning, "signature": None})  # as thinking_block()
        text = answer or message.get("refusal")  # a refusal is what the model answered
        if isinstance(text, str) and text:
            content.append({"type": "text", "text": text})
        raw_calls = message.get("tool_calls")
        if raw_calls:
            cut = choices[0].get("finish_reason") == "length"
            content += [self._tool_block(i, c, cut) for i, c in enumerate(raw_calls)]
        finish = choices[0].get("finish_reason") or ""
        refusal = message.get("refusal")
        refused = finish == _FILTERED or (isinstance(refusal, str) and bool(refusal))  # (structured outputs: there)
        stop = _STOP.get(finish, "end_turn")
        return InferenceResponse(
            refused=refused,
            content=content,  # type: ignore[arg-type]  # validated into ContentBlocks
            stop_reason="tool_use" if raw_calls and not refused else stop,
            usage=_usage_fields(data.get("usage")),  # type: ignore[arg-type]  # validated into a Usage
            model=data.get("model") or model,
        )

    def _stream(self, request: InferenceRequest) -> Iterator[StreamEvent]:
        body = self.build_body(request, stream=True)
        with open_stream(self._http, self.id, _PATH, body, _ACCEPT) as response:
            if not _is_sse(response):
                response.read()
                yield from self._whole_answer(response, body["model"])
                return
            response.encoding = _SSE_ENCODING
            state = _StreamState(ResponseBuilder(self.id, body["model"]))
            sses = EventSource(response).iter_sse()
            for sse in sses:
                events = self._sse_events(state, sse.event, sse.data)
                if not state.started and events:  # not before: an error first is retryable
                    state.started = True
                    yield state.builder.message_start()
                yield from events
                if state.done:
                    break
            yield from self._end_events(state)
            drain(sses, response)  # the body's end after [DONE]: the connection is kept

    async def _astream(self, request: InferenceRequest) -> AsyncGenerator[StreamEvent, None]:
        body = self.build_body(request, stream=True)
        async with aopen_stream(self._http, self.id, _PATH, body, _ACCEPT) as response:
            if not _is_sse(response):
                await response.aread()
                for event in self._whole_answer(response, body["model"]):
                    yield event
                return
            response.encoding = _SSE_ENCODING
            state = _StreamState(ResponseBuilder(self.id, body["model"]))
            sses = EventSource(response).aiter_sse()
            async for sse in sses:
                events = self._sse_events(state, sse.event, sse.data)
                if not state.started and events:  # not before: an error first is retryable
                    state.started = True
                    yield state.builder.message_start()
                for event in events:
                    yield event
                if state.done:
                    break
            for event in self._end_events(state):
                yield event
            await adrain(sses, response)

    def _whole_answer(self, response: httpx.Response, model: str) -> Iterator[StreamEvent]:
        """The events of a server that ignored ``stream: true`` and answered with one JSON
        chat.completion (servers without streaming, some proxies): its answer, streamed as
        a live one would be. Anything else is an error."""
        data: Any = None
        if "json" in response.headers.get("content-type", ""):
            try:
                data = json.loads(response.content)
            except ValueError:
                pass
        if not (isinstance(data, dict) and ("choices" in data or "error" in data)):
            raise self._not_sse(response)
        return events_for_response(self.id, self._completion(data, model))

    def _not_sse(self, response: httpx.Response) -> AgentError:
        ctype = response.headers.get("content-type", "")
        return AgentError(
            f"openai answered a streaming request with content-type {ctype!r}, not "
            f"text/event-stream: {response.text[:200]!r}",
            kind=ErrorKind.AGENT,
            provider=self.id,
        )

    def _sse_events(self, state: _StreamState, event: str, data: str) -> list[StreamEvent]:
        """The events of one server-sent event (``[DONE]`` marks the state done)."""
        data = data.strip()
        if data == "[DONE]":
            state.done = True
            return []
        if not data:
            return []
        chunk = self._decode_chunk(event, data)
        with shaped(self.id, "a stream chunk", data):
            return list(self._chunk_events(state.builder, state, chunk))  # one chunk's few

    def _end_events(self, state: _StreamState) -> Iterator[StreamEvent]:
        """The closing events once the body has ended; raises if it ended early."""
        if not state.done and state.finish_reason is None:
            raise AgentError(
                "openai stream ended before [DONE] or a finish_reason",
                kind=ErrorKind.AGENT,
                provider=self.id,
            )
        if not state.started:  # an answer with no content at all
            state.started = True
            yield state.builder.message_start()
        refused = state.refused or state.finish_reason == _FILTERED
        stop = _STOP.get(state.finish_reason or "", "end_turn")
        if state.tools and stop != "max_tokens" and not refused:  # a cut or refused answer stays so, calls or not
            stop = "tool_use"
        yield state.builder.message_delta(stop, state.usage, refused=refused)
        yield from state.builder.finish()

    def _decode_chunk(self, event: str, data: str) -> dict[str, Any]:
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise AgentError(
                f"openai sent an event that is not JSON: {data[:200]!r}", provider=self.id
            ) from exc
        if not isinstance(chunk, dict):
            raise AgentError(f"openai sent an event that is not an object: {data[:200]!r}", provider=self.id)
        if event == "error" and "error" not in chunk:
            chunk = {"error": chunk}
        self._raise_error_object(chunk)
        return chunk

    def _chunk_events(
        self, b: ResponseBuilder, state: _StreamState, chunk: dict[str, Any]
    ) -> Iterator[StreamEvent]:
        b.model = chunk.get("model") or b.model
        if chunk.get("usage"):
            state.usage = _usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = _reasoning(delta)
            answer = delta.get("content")
            if isinstance(answer, list):  # a list of parts (Mistral's reasoning models)
                thought, answer = _parts(answer)
                reasoning = reasoning or thought
            if isinstance(reasoning, str) and reasoning:
                if state.thinking_index is None:
                    state.thinking_index = state.allocate()
                    yield b.start_thinking(state.thinking_index)
                yield b.thinking(state.thinking_index, reasoning)
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:
                state.refused = True
            text = answer or refusal  # a refusal streams as the answer's text
            if isinstance(text, str) and text:
                yield from state.end_thinking()
                if state.text_index is None:
                    state.text_index = state.allocate()
                    yield b.start_text(state.text_index)
                yield b.text(state.text_index, text)
            for position, call in enumerate(delta.get("tool_calls") or []):
                key = call.get("index")
                if key is None:  # Gemini's OpenAI-compatible API and some proxies send none
                    key = state.key_without_index(call.get("id"), position)
                else:
                    key = state.key_of_index(key, call.get("id"))
                fn = call.get("function") or {}
                if key not in state.tools:
                    yield from state.end_thinking()
                    if state.text_index is not None:  # keep blocks sequential: text, then calls
                        yield b.stop(state.text_index)
                        state.text_index = None
                    state.tools[key] = state.allocate()
                    call_id = call.get("id") or f"call_{key}_{uuid.uuid4().hex[:12]}"
                    yield b.start_tool(state.tools[key], str(call_id), str(fn.get("name") or ""))
                elif fn.get("name"):  # a name sent after the call's first delta
                    b.name_tool(state.tools[key], str(fn["name"]))
                if fn.get("arguments"):
                    yield b.tool_json(state.tools[key], str(fn["arguments"]))
            if choice.get("finish_reason"):
                state.finish_reason = str(choice["finish_reason"])

    def _raise_error_object(self, data: dict[str, Any]) -> None:
        """Raise the error a 200 answer (or a stream chunk) carries in an ``error`` object: of
        kind ``agent``, unless it gives an HTTP status as its ``code`` (OpenRouter, LiteLLM's
        proxy: ``{"error": {"code": 429, ...}}``), which decides its kind as the status would
        (a bad request is not retried, a rate limit is)."""
        err = data.get("error")
        if not err:
            return
        message = (err.get("message") or json.dumps(err)) if isinstance(err, dict) else str(err)
        code = err.get("code") if isinstance(err, dict) else None
        status = int(code) if isinstance(code, int | str) and str(code).isdigit() and 400 <= int(code) < 600 else None
        kind = ErrorKind.AGENT if status is None else kind_for_status(status)
        raise AgentError(f"openai error: {message}", kind=kind, provider=self.id, status=status)

    def _tool_block(self, index: int, call: dict[str, Any], cut: bool = False) -> ContentBlock:
        fn = call.get("function") or {}
        name = str(fn.get("name") or "")
        args = tool_arguments(self.id, name, fn.get("arguments"), cut=cut)
        call_id = call.get("id") or f"call_{index}_{uuid.uuid4().hex[:12]}"
        return ContentBlock.tool_use_block(str(call_id), name, args)

    def close(self) -> None:
        """Close the HTTP clients; a later call opens new ones."""
        self._http.close()

    async def aclose(self) -> None:
        """Close the running event loop's async client."""
        await self._http.aclose()


def _reasoning(message: dict[str, Any]) -> Any:
    """A message's (or a stream delta's) reasoning: ``reasoning_content`` (DeepSeek, llama.cpp,
    older vLLM) or ``reasoning`` (Ollama's ``/v1``, OpenRouter, newer vLLM), when a string."""
    reasoning = message.get("reasoning_content")
    if not reasoning:
        reasoning = message.get("reasoning")
    return reasoning if isinstance(reasoning, str) else None


def _parts(content: list[Any]) -> tuple[str, str]:
    """The reasoning and the text of a ``content`` sent as a list of parts, as Mistral's
    reasoning models send it: ``{"type": "text", "text": ...}`` parts, and ``{"type":
    "thinking", "thinking": [text parts]}`` ones."""
    thinking: list[str] = []
    text: list[str] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            text.append(part["text"])
        elif part.get("type") == "thinking":
            inner = part.get("thinking")
            thinking.append(inner if isinstance(inner, str) else _parts(inner)[1] if isinstance(inner, list) else "")
    return "".join(thinking), "".join(text)


def _is_sse(response: httpx.Response) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")


@dataclass
class _StreamState:
    builder: ResponseBuilder
    text_index: int | None = None
    thinking_index: int | None = None
    tools: dict[Any, int] = field(default_factory=dict)  # wire tool-call index -> block index
    next_index: int = 0
    finish_reason: str | None = None
    refused: bool = False  # a delta carried a ``refusal``
    usage: Usage = field(default_factory=Usage)
    done: bool = False
    started: bool = False  # message_start yielded: held back until the first chunk's events

    last_unindexed: tuple[str, int] | None = None  # the key of the last call sent with no index
    last_unindexed_id: Any = None
    by_index: dict[Any, Any] = field(default_factory=dict)  # wire index -> the key of its latest call
    ids: dict[Any, Any] = field(default_factory=dict)  # key -> the call id the wire gave it

    def allocate(self) -> int:
        index, self.next_index = self.next_index, self.next_index + 1
        return index

    def key_without_index(self, call_id: Any, position: int) -> tuple[str, int]:
        """The key of a tool-call delta sent with no ``index``: a new id (or a second call in
        one delta) starts a new call; a delta with no id, or the same id, continues the last."""
        if self.last_unindexed is None or (call_id and call_id != self.last_unindexed_id) or (
            not call_id and position > 0
        ):
            self.last_unindexed = ("unindexed", len(self.tools))
            self.last_unindexed_id = call_id
        return self.last_unindexed

    def key_of_index(self, index: Any, call_id: Any) -> Any:
        """The key of a tool-call delta sent with ``index``: a new id at an index already
        taken starts a new call (vLLM, Ollama, Grok and Responses-API bridges send every
        parallel call at index 0); a delta with no id, or the same id, continues the latest."""
        key = self.by_index.get(index, index)
        if call_id and key in self.tools and self.ids.get(key, call_id) != call_id:
            key = ("repeated index", index, len(self.tools))
            self.by_index[index] = key
        if call_id:
            self.ids.setdefault(key, call_id)
        return key

    def end_thinking(self) -> Iterator[StreamEvent]:
        """Stop the open reasoning block (the answer or a call follows it)."""
        if self.thinking_index is not None:
            yield self.builder.stop(self.thinking_index)
            self.thinking_index = None


def build_openai(options: dict[str, Any]) -> OpenAIProvider:
    """Factory for the registry: ``new_provider("openai", {"model": "gpt-4o-mini", ...})``.

    Raises:
        AgentError: ``invalid`` for unknown options, a missing model or a missing key.
    """
    return OpenAIProvider(OpenAIOptions.parse("openai", options))
