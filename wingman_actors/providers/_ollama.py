"""The Ollama provider: a local or remote Ollama server through its native ``/api/chat``.

Example:
    >>> from wingman_actors.providers import new_provider
    >>> provider = new_provider("ollama", {"model": "llama3.2"})     # doctest: +SKIP
    >>> provider.run_inference(request).text                          # doctest: +SKIP

Ollama gives tool calls no ids (older servers), so the provider makes them up; tool results
go back as ``{"role": "tool", "tool_name": ...}`` messages, the name looked up from the
matching earlier tool call.

Reasoning: with the ``think`` option (``True``, or ``"low"``/``"medium"``/``"high"`` for
gpt-oss) the server answers the model's reasoning in ``message.thinking``; it comes back as a
``thinking`` content block (streamed as ``thinking_delta`` events). Ollama's tool-calling docs
append the whole assistant message, ``thinking`` included, to the history of an agent loop, so
the assistant messages of the current tool loop carry their ``thinking`` back; earlier turns'
reasoning is left out (as for the OpenAI-compatible provider), which the models' templates
drop anyway.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from ..core import ContentBlock, InferenceRequest, InferenceResponse, Role, StopReason, StreamEvent, Usage
from ..errors import AgentError, ErrorKind
from ._base import BaseProvider, ResponseBuilder, shaped, tool_arguments
from ._drain import adrain, drain
from ._http import ClientPool, aopen_stream, apost_json, open_stream, post_json
from ._openai_wire import error_text, tool_loop_start
from ._options import RemoteOptions, without_tool_use

__all__ = ["OllamaOptions", "OllamaProvider", "build_ollama"]

DEFAULT_BASE_URL = "http://localhost:11434"
_PATH = "/api/chat"


class OllamaOptions(RemoteOptions):
    """Options of ``new_provider("ollama", {...})``: the common ones, ``top_p``, ``stop``,
    ``headers``, ``http_client``, ``async_http_client``, and the keys below. ``top_p``,
    ``top_k``, ``stop`` and ``num_ctx`` go in the body's ``options``; ``api_key`` (default:
    the ``OLLAMA_API_KEY`` environment variable) is sent as ``Authorization: Bearer``; any
    other key goes in the body as it is (``think``, ``format``...), except an ``options``
    dict, which is merged into the run options (``{"options": {"seed": 7, "min_p": 0.05}}``).

    Attributes:
        top_k: sample from the k likeliest tokens.
        keep_alive: how long the server keeps the model loaded (``"5m"``, seconds, ``-1``).
        num_ctx: the context window size to run the model with.
    """

    top_k: int | None = Field(default=None, gt=0)
    keep_alive: str | int | float | None = None
    num_ctx: int | None = None


def _host_url(host: str) -> str:
    # OLLAMA_HOST may be "0.0.0.0", "example.com:11434" or a full URL.
    host = host.strip().rstrip("/")
    if "://" in host:
        return host
    if ":" not in host.rsplit("]", 1)[-1]:
        host = f"{host}:11434"
    return f"http://{host}"


class OllamaProvider(BaseProvider):
    """Talks to an Ollama server's ``/api/chat`` endpoint.

    Args:
        options: the parsed options; ``model`` is required.

    Raises:
        AgentError: ``invalid`` when no model is given.
    """

    id: ClassVar[str] = "ollama"
    per_request_model: ClassVar[bool] = True  # its requests name model_for(request)
    _heeds_cancel: ClassVar[bool] = True  # a cancel closes its request: called on the session's thread

    def __init__(self, options: OllamaOptions) -> None:
        self.require_model(options, "llama3.2")
        super().__init__(options)
        self.ollama_options = options
        env_host = os.environ.get("OLLAMA_HOST", "").strip()
        self.base_url = options.base_url or (_host_url(env_host) if env_host else DEFAULT_BASE_URL)
        # Ollama's API takes a key as a bearer token (ollama.com's hosted API, or a proxy).
        api_key = options.api_key if options.api_key is not None else os.environ.get("OLLAMA_API_KEY")
        auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = ClientPool(
            self.base_url, options.timeout, {**auth, **options.headers},
            client=options.http_client, async_client=options.async_http_client,
            async_transport=options.async_transport,
        )
        self._extra = options.extra_body()
        extra_options = self._extra.pop("options", None)
        if extra_options is not None and not isinstance(extra_options, dict):
            raise AgentError(
                f"the ollama option 'options' must be a dict of run options, e.g. {{'seed': 7}} "
                f"(got {type(extra_options).__name__})",
                kind=ErrorKind.INVALID,
                provider=self.id,
            )
        self._extra_options: dict[str, Any] = extra_options or {}
        self._extra_no_tools = without_tool_use(self._extra)  # as openai and anthropic must

    # -- request -------------------------------------------------------------------

    def build_body(self, request: InferenceRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body of ``/api/chat`` for ``request``."""
        run_options: dict[str, Any] = {"num_predict": self.max_tokens_for(request)}
        temperature = self.temperature_for(request)
        if temperature is not None:
            run_options["temperature"] = temperature
        opts = self.ollama_options
        for key, value in (("num_ctx", opts.num_ctx), ("top_p", opts.top_p), ("top_k", opts.top_k)):
            if value is not None:
                run_options[key] = value
        if opts.stop:
            run_options["stop"] = opts.stop
        run_options.update(self._extra_options)
        body: dict[str, Any] = {
            "model": self.model_for(request),
            "messages": _messages(request),
            "stream": stream,
            "options": run_options,
        }
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
                }
                for t in request.tools
            ]
        if request.output_schema is not None and not request.tools:
            # Ollama forces every reply into `format`, which would rule out tool calls; with
            # tools offered, the schema travels in the instructions and the session validates.
            body["format"] = request.output_schema
        if self.ollama_options.keep_alive is not None:
            body["keep_alive"] = self.ollama_options.keep_alive
        extra = self._extra if request.tools else self._extra_no_tools
        if extra:
            body.update(extra)
        return body

    # -- calls -----------------------------------------------------------------------


    def _infer(self, request: InferenceRequest) -> InferenceResponse:
        body = self.build_body(request, stream=False)
        return self._answer(post_json(self._http, self.id, _PATH, body), body["model"])

    def _ainfer(self, request: InferenceRequest) -> Coroutine[Any, Any, InferenceResponse]:
        # not a coroutine of its own: apost_json's, which reads the answer with _answer
        body = self.build_body(request, stream=False)
        return apost_json(self._http, self.id, _PATH, body, self._answer, body["model"])

    def _answer(self, data: Any, model: str) -> InferenceResponse:
        """The response of a non-streamed answer's decoded JSON body."""
        if not isinstance(data, dict):
            raise AgentError(f"ollama answered with {type(data).__name__}, not an object", provider=self.id)
        if data.get("error"):
            raise AgentError(f"ollama error: {data['error']}", kind=ErrorKind.AGENT, provider=self.id)
        if not isinstance(data.get("message"), dict):  # /api/chat answers always carry one
            raise AgentError(
                f"ollama answered without a message object: {json.dumps(data, default=repr)[:200]!r}; "
                "check that base_url is an Ollama server", kind=ErrorKind.AGENT, provider=self.id,
            )
        with shaped(self.id, "an answer", data):
            return self._read_answer(data, model)

    def _read_answer(self, data: dict[str, Any], model: str) -> InferenceResponse:
        message = data["message"]
        content: list[ContentBlock] = []
        thinking = message.get("thinking")
        if isinstance(thinking, str) and thinking:
            content.append(ContentBlock.thinking_block(thinking))
        if message.get("content"):
            content.append(ContentBlock.text_block(message["content"]))
        calls = [self._tool_block(i, c) for i, c in enumerate(message.get("tool_calls") or [])]
        content += calls
        return InferenceResponse(
            content=content,
            stop_reason=_stop_reason(data.get("done_reason"), bool(calls)),
            usage=_usage(data),
            model=data.get("model") or model,
        )

    def _stream(self, request: InferenceRequest) -> Iterator[StreamEvent]:
        body = self.build_body(request, stream=True)
        with open_stream(self._http, self.id, _PATH, body) as response:
            state = _LineState(ResponseBuilder(self.id, body["model"]))
            lines = _lines(response.iter_bytes())
            for line in lines:
                events = self._line_events(state, line)
                if not state.started and events:  # not before: an error first is retryable
                    state.started = True
                    yield state.builder.message_start()
                yield from events
                if state.done:
                    break
            yield from self._end_events(state)
            drain(lines, response)  # the body's end after the done line: the connection is kept

    async def _astream(self, request: InferenceRequest) -> AsyncGenerator[StreamEvent, None]:
        body = self.build_body(request, stream=True)
        async with aopen_stream(self._http, self.id, _PATH, body) as response:
            state = _LineState(ResponseBuilder(self.id, body["model"]))
            lines = _alines(response.aiter_bytes())
            async for line in lines:
                events = self._line_events(state, line)
                if not state.started and events:  # not before: an error first is retryable
                    state.started = True
                    yield state.builder.message_start()
                for event in events:
                    yield event
                if state.done:
                    break
            for event in self._end_events(state):
                yield event
            await adrain(lines, response)

    def _line_events(self, state: _LineState, line: str) -> list[StreamEvent]:
        """The events of one NDJSON line (the final one marks the state done)."""
        if not line.strip():
            return []
        data = self._decode_line(line)
        with shaped(self.id, "a stream line", line):
            return list(self._data_events(state, data))  # one line's few

    def _data_events(self, state: _LineState, data: dict[str, Any]) -> Iterator[StreamEvent]:
        b = state.builder
        b.model = data.get("model") or b.model
        message = data.get("message") or {}
        thinking = message.get("thinking")
        if isinstance(thinking, str) and thinking:
            if state.thinking_index is None:
                state.thinking_index = state.allocate()
                yield b.start_thinking(state.thinking_index)
            yield b.thinking(state.thinking_index, thinking)
        if message.get("content"):
            yield from state.end_thinking()
            if state.text_index is None:
                state.text_index = state.allocate()
                yield b.start_text(state.text_index)
            yield b.text(state.text_index, message["content"])
        for call in message.get("tool_calls") or []:
            yield from state.end_thinking()
            if state.text_index is not None:  # keep blocks sequential: text, then the calls
                yield b.stop(state.text_index)
                state.text_index = None
            block = self._tool_block(state.tools, call)
            state.tools += 1
            index = state.allocate()
            yield b.start_tool(index, block.id or "", block.name or "")
            yield b.tool_json(index, json.dumps(block.input or {}))
            yield b.stop(index)
        if data.get("done"):
            state.done = True
            yield b.message_delta(_stop_reason(data.get("done_reason"), state.tools > 0), _usage(data))

    def _end_events(self, state: _LineState) -> Iterator[StreamEvent]:
        """The closing events once the body has ended; raises if it ended early."""
        if not state.done:
            raise AgentError(
                "ollama stream ended before its final (done) line", kind=ErrorKind.AGENT, provider=self.id
            )
        yield from state.builder.finish()

    def _decode_line(self, line: str) -> dict[str, Any]:
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AgentError(
                f"ollama sent a stream line that is not JSON: {line[:200]!r}", provider=self.id
            ) from exc
        if not isinstance(data, dict):
            raise AgentError(
                f"ollama sent a stream line that is not an object: {line[:200]!r}", provider=self.id
            )
        if data.get("error"):
            raise AgentError(f"ollama error: {data['error']}", kind=ErrorKind.AGENT, provider=self.id)
        return data

    def _tool_block(self, index: int, call: dict[str, Any]) -> ContentBlock:
        fn = call.get("function") or {}
        name = str(fn.get("name") or "")
        args = tool_arguments(self.id, name, fn.get("arguments") or {})
        call_id = call.get("id") or f"call_{index}_{uuid.uuid4().hex[:12]}"
        return ContentBlock.tool_use_block(str(call_id), name, args)

    def close(self) -> None:
        """Close the HTTP clients; a later call opens new ones."""
        self._http.close()

    async def aclose(self) -> None:
        """Close the running event loop's async client."""
        await self._http.aclose()


@dataclass
class _LineState:
    builder: ResponseBuilder
    text_index: int | None = None
    thinking_index: int | None = None
    next_index: int = 0
    tools: int = 0
    done: bool = False
    started: bool = False  # message_start yielded: held back until the first line's events

    def allocate(self) -> int:
        index, self.next_index = self.next_index, self.next_index + 1
        return index

    def end_thinking(self) -> Iterator[StreamEvent]:
        """Stop the open reasoning block (the answer or a call follows it)."""
        if self.thinking_index is not None:
            yield self.builder.stop(self.thinking_index)
            self.thinking_index = None


def _messages(request: InferenceRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if request.instructions:
        out.append({"role": "system", "content": request.instructions})
    tool_names: dict[str, str] = {}
    loop_start = tool_loop_start(request.messages)
    for position, message in enumerate(request.messages):
        if message.role is Role.ASSISTANT:
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            if position >= loop_start:  # the current tool loop's reasoning goes back (see the module docs)
                thinking = "".join(b.text or "" for b in message.content if b.type == "thinking")
                if thinking:
                    entry["thinking"] = thinking
            calls = message.tool_calls
            if calls:
                entry["tool_calls"] = [
                    {"function": {"name": c.name, "arguments": dict(c.input or {})}} for c in calls
                ]
                tool_names.update({c.id or "": c.name or "" for c in calls})
            out.append(entry)
            continue
        for result in message.tool_results_blocks:
            text = result.content or ""
            tool: dict[str, Any] = {"role": "tool", "content": error_text(text) if result.is_error else text}
            name = tool_names.get(result.tool_use_id or "")
            if name:
                tool["tool_name"] = name
            out.append(tool)
        images = [b.data for b in message.content if b.type == "image"]
        if message.text or images or not message.tool_results_blocks:
            user: dict[str, Any] = {"role": "user", "content": message.text}
            if images:
                user["images"] = images
            out.append(user)
    return out


def _lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """The NDJSON lines of a body, split on ``\\n`` only. httpx's ``iter_lines`` splits like
    ``str.splitlines``, also on U+0085, U+2028, U+2029..., which may sit raw inside a JSON
    string (Go's encoder leaves U+0085 as it is); a ``\\n`` byte never sits inside a UTF-8
    character, so splitting the bytes first is exact."""
    pending = b""
    for chunk in chunks:
        if b"\n" not in chunk:
            pending += chunk
            continue
        *whole, pending = (pending + chunk).split(b"\n")
        for line in whole:
            yield line.decode("utf-8", "replace")
    if pending:
        yield pending.decode("utf-8", "replace")


async def _alines(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """:func:`_lines` of an async body."""
    pending = b""
    async for chunk in chunks:
        if b"\n" not in chunk:
            pending += chunk
            continue
        *whole, pending = (pending + chunk).split(b"\n")
        for line in whole:
            yield line.decode("utf-8", "replace")
    if pending:
        yield pending.decode("utf-8", "replace")


def _stop_reason(done_reason: Any, has_tool_calls: bool) -> StopReason:
    if has_tool_calls:
        return "tool_use"
    if done_reason == "length":
        return "max_tokens"
    return "end_turn"


def _usage(data: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=int(data.get("prompt_eval_count") or 0),
        output_tokens=int(data.get("eval_count") or 0),
    )


def build_ollama(options: dict[str, Any]) -> OllamaProvider:
    """Factory for the registry: ``new_provider("ollama", {"model": "llama3.2", ...})``.

    Raises:
        AgentError: ``invalid`` for unknown options or a missing model.
    """
    return OllamaProvider(OllamaOptions.parse("ollama", options))
