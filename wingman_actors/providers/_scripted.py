"""The scripted provider: canned replies for tests, examples, benchmarks and offline runs.

Example:
    >>> from wingman_actors.providers._scripted import ScriptedProvider
    >>> p = ScriptedProvider(["4"])
    >>> from wingman_actors.core import InferenceRequest, Message
    >>> p.run_inference(InferenceRequest(messages=[Message.user("2+2?")])).text
    '4'
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any, ClassVar, Union

from pydantic import Field

from .._cancel import current_token
from ..core import InferenceRequest, InferenceResponse, StreamEvent, Usage
from ..errors import AgentError, ErrorKind
from ._aio import AsyncInferenceStream
from ._base import InferenceStream, ProviderOptions, events_for_response
from ._token_bridge import TokenBridge

__all__ = ["Reply", "ScriptedProvider"]

Reply = Union[str, InferenceResponse, BaseException, Callable[[InferenceRequest], Any]]

_NOT_CALLED = (BaseException, InferenceResponse)  # callable replies that are answers themselves


class ScriptedProvider:
    """Answers each call with the next scripted reply.

    A reply is a ``str`` (a text answer), an :class:`InferenceResponse`, an exception
    instance (raised, for fault injection), or a callable taking the
    :class:`InferenceRequest` and returning one of those. ``cycle=True`` starts again from
    the first reply when the script runs out; otherwise running out is an error.

    Every request is recorded in ``.requests`` unless ``record=False``. Thread-safe: many
    sessions may share one.

    Args:
        replies: the script.
        latency_s: seconds to sleep per call, simulating a model (used by benchmarks).
        model: the model name reported in responses.
        cycle: repeat the script instead of running out.
        stream_chunk: characters per ``text_delta`` when streaming.
        record: keep every request in ``.requests`` (for assertions). Benchmarks turn it
            off: a real provider keeps nothing, and thousands of kept requests would make
            the memory they hold part of what they measure.
    """

    id: ClassVar[str] = "scripted"
    per_request_model: ClassVar[bool] = True
    """A request's ``model`` (``Prepared(model="name")``) is the model its answer reports."""
    _heeds_cancel: ClassVar[bool] = True  # its latency sleeps on the run's token (a reply function of
    # one's own that blocks is not cut: a testing provider, kept off the thread of unheeded calls)

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        latency_s: float = 0.0,
        model: str = "scripted",
        cycle: bool = False,
        stream_chunk: int = 8,
        record: bool = True,
    ) -> None:
        if latency_s < 0:
            raise ValueError(f"latency_s must be >= 0, got {latency_s}")
        if stream_chunk < 1:
            raise ValueError(f"stream_chunk must be >= 1, got {stream_chunk}")
        self._replies: list[Reply] = list(replies)
        self.latency_s = latency_s
        self.model = model
        self.cycle = cycle
        self.stream_chunk = stream_chunk
        self._lock = threading.Lock()
        self._next = 0
        self._calls = 0
        self.record = record
        self.requests: list[InferenceRequest] = []
        self._responses: dict[tuple[str, str, int, int], InferenceResponse] = {}

    @property
    def calls(self) -> int:
        """How many calls were made."""
        with self._lock:
            return self._calls

    def merge_calls(self, calls: int, requests: Iterable[InferenceRequest] = ()) -> None:
        """Count ``calls`` made by copies of this provider in other processes, and keep
        their ``requests`` when this provider records requests. The Ray backend calls it
        when a formation stops: each replica process answers from its own copy of the
        script, and its calls are added here then.
        """
        with self._lock:
            self._calls += calls
            if self.record:
                self.requests.extend(requests)

    def add_replies(self, *replies: Reply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._replies.extend(replies)

    def _take(self, request: InferenceRequest) -> Reply:
        with self._lock:
            self._calls += 1
            if self.record:
                self.requests.append(request)
            if self._next >= len(self._replies):
                if not self.cycle or not self._replies:
                    raise AgentError(
                        f"scripted provider ran out of replies after {self._next} call(s): "
                        "add more replies (ScriptedProvider([...]) or .add_replies()), "
                        "or pass cycle=True",
                        kind=ErrorKind.INVALID,
                        provider=self.id,
                    )
                self._next = 0
            reply = self._replies[self._next]
            self._next += 1
            return reply

    def _resolve(self, request: InferenceRequest) -> InferenceResponse:
        reply = self._take(request)
        if self.latency_s:
            token = current_token()
            if token is not None:
                token.sleep(self.latency_s)
            else:
                time.sleep(self.latency_s)
        return self._answer(request, reply)

    async def _aresolve(self, request: InferenceRequest) -> InferenceResponse:
        reply = self._take(request)
        if self.latency_s:
            bridge = TokenBridge()  # a cancel of the run's token ends the wait at once
            try:
                await bridge.sleep(self.latency_s)
            finally:
                bridge.close()
        return self._answer(request, reply)

    def _answer(self, request: InferenceRequest, reply: Reply) -> InferenceResponse:
        if type(reply) is str:  # the common case first
            return self._text_response(request, reply)
        for _ in range(4):  # a callable may return another callable; bounded
            if callable(reply) and not isinstance(reply, _NOT_CALLED):
                reply = reply(request)
            else:
                break
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, str):
            return self._text_response(request, reply)
        if isinstance(reply, InferenceResponse):
            return reply if reply.model else reply.model_copy(update={"model": request.model or self.model})
        raise AgentError(
            f"scripted reply must be a str, InferenceResponse, exception or callable; "
            f"got {type(reply).__name__}",
            kind=ErrorKind.INVALID,
            provider=self.id,
        )

    def _text_response(self, request: InferenceRequest, reply: str) -> InferenceResponse:
        # Responses are immutable: a repeated reply with the same token estimate (a cycled
        # script, a benchmark) reuses one object instead of validating a new one per call.
        tokens = _estimate(request, reply)
        model = request.model or self.model
        key = (reply, model, *tokens)
        cached = self._responses.get(key)
        if cached is None:
            cached = InferenceResponse.of_text(reply, model=model, usage=_usage(*tokens))
            if len(self._responses) < 256:
                self._responses[key] = cached
        return cached

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        """Return the next scripted reply."""
        return self._resolve(request)

    def stream_inference(self, request: InferenceRequest) -> InferenceStream:
        """Stream the next scripted reply as deltas."""
        return InferenceStream(self._events(request))

    async def arun_inference(self, request: InferenceRequest) -> InferenceResponse:
        """Return the next scripted reply, awaiting ``latency_s`` on the running loop."""
        return await self._aresolve(request)

    def astream_inference(self, request: InferenceRequest) -> AsyncInferenceStream:
        """Stream the next scripted reply as deltas, awaiting ``latency_s`` first."""
        return AsyncInferenceStream(self._aevents(request))

    async def _aevents(self, request: InferenceRequest) -> AsyncIterator[StreamEvent]:
        response = await self._aresolve(request)
        for event in events_for_response(self.id, response, self.stream_chunk):
            yield event

    async def aclose(self) -> None:
        """Nothing to release."""

    def _events(self, request: InferenceRequest) -> Iterator[StreamEvent]:
        response = self._resolve(request)
        yield from events_for_response(self.id, response, self.stream_chunk)

    def close(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return f"<ScriptedProvider replies={len(self._replies)} calls={self.calls}>"


def _estimate(request: InferenceRequest, reply: str) -> tuple[int, int]:
    # A deterministic, rough token count (4 characters a token) so usage sums are testable.
    chars = len(request.instructions)
    for m in request.messages:
        for block in m.content:
            if block.type == "text":
                chars += len(block.text or "")
    return max(1, chars // 4), max(1, len(reply) // 4)


@functools.lru_cache(maxsize=1024)
def _usage(input_tokens: int, output_tokens: int) -> Usage:
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens)


class ScriptedOptions(ProviderOptions):
    """Options of ``new_provider("scripted", {...})``."""

    replies: list[Any] = Field(default_factory=list)
    latency_s: float = 0.0
    cycle: bool = False


def build_scripted(options: dict[str, Any]) -> ScriptedProvider:
    """Factory for the registry. ``replies`` may be strings or InferenceResponse dicts."""
    opts = ScriptedOptions.parse("scripted", options)
    replies: list[Reply] = []
    for r in opts.replies:
        if isinstance(r, dict):
            replies.append(InferenceResponse.model_validate(r))
        else:
            replies.append(r)
    return ScriptedProvider(
        replies, latency_s=opts.latency_s, model=opts.model or "scripted", cycle=opts.cycle
    )
