"""One model call of a session run, blocking or streamed, under the run's cancel token
(the provider's waits and retries stop when it is cancelled or its deadline passes, and
the built-in providers close their request) and, when OpenTelemetry is in use, inside a
``chat`` span. A call that fails because the run was stopped raises the run's error.

Used by :class:`~wingman_actors.agents._session.Session`; not a public API.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from .._cancel import CancelToken, cancel_scope
from .._cancel import _current as _current_token  # set inline below: no scope object per call
from ..core import InferenceRequest, InferenceResponse, StreamEvent
from ..errors import AgentError, ErrorKind
from ..integrations import otel
from ..providers._base import Provider
from ..providers._retry import stopped
from ._unheeded import heeds_cancel, stream_on_thread, wait_on_thread

if TYPE_CHECKING:
    from ._context_budget import Fitted, Fitting

__all__ = [
    "ModelCall", "Observe", "cannot_stream", "compaction_call", "compactions", "infer", "infer_stream", "traced_infer",
]

Observe = Callable[[InferenceRequest], Callable[[InferenceResponse], None]]
"""Watches a compactor's call: called with its request as it starts, returns what to call
with its response once it ended well (the session's ``model_start`` / ``model_end``)."""


@dataclasses.dataclass(slots=True)
class ModelCall:
    """A model call of a run driven by the async driver (``Session.arun``/``astream``):
    the loop yields it, the driver makes the call and sends back the response. (Not
    frozen: a frozen dataclass sets each field through ``object.__setattr__``, which
    every model call would pay for; nothing changes one.)"""

    provider: Provider
    request: InferenceRequest
    token: CancelToken
    stream: bool
    spans: otel.SessionSpans | None


def compactions(
    steps: Fitting, token: CancelToken, spans: otel.SessionSpans | None, observe: Observe | None = None
) -> Generator[ModelCall, Any, Fitted]:
    """Drive a context-window fitting (:meth:`ContextWindow.fitting`) in a run made for
    the async driver: each compactor call is yielded as a :class:`ModelCall` (the driver
    awaits it, and sends back its response or throws in its error), watched by ``observe``."""
    try:
        provider, request = next(steps)
        while True:
            done = observe(request) if observe is not None else None
            try:
                response = yield ModelCall(provider, request, token, False, spans)
            except Exception as exc:
                provider, request = steps.throw(exc)
            else:
                if done is not None:
                    done(response)
                provider, request = steps.send(response)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]  # a fitting returns a Fitted


def compaction_call(
    spans: otel.SessionSpans | None, observe: Observe | None
) -> Callable[[Provider, InferenceRequest], InferenceResponse] | None:
    """How a blocking run makes a compactor's call (:meth:`ContextWindow.fit`'s ``call``):
    in a ``chat`` span when OpenTelemetry is in use, watched by ``observe``; None (the
    provider's ``run_inference`` as it is) when neither applies."""
    traced = spans.traced_call if spans is not None else None
    if observe is None:
        return traced

    def call(provider: Provider, request: InferenceRequest) -> InferenceResponse:
        done = observe(request)
        response = traced(provider, request) if traced is not None else provider.run_inference(request)
        done(response)
        return response

    return call


def infer(provider: Provider, request: InferenceRequest, token: CancelToken) -> InferenceResponse:
    """One blocking call; raises if the run was cancelled or timed out meanwhile. A provider
    of one's own (not known to heed the cancel) is called on a thread of its own, abandoned
    when the run stops first (see :mod:`._unheeded`)."""
    if not heeds_cancel(provider):
        return wait_on_thread(lambda: _infer(provider, request, token), token, _what(provider, "call"))
    return _infer(provider, request, token)


def _infer(provider: Provider, request: InferenceRequest, token: CancelToken) -> InferenceResponse:
    reset = _current_token.set(token)  # what ``with cancel_scope(token):`` does, without its object
    try:
        response = provider.run_inference(request)
    except AgentError as exc:
        stopped(token, exc)  # a request the cancel or the deadline closed: the run's error
        raise
    finally:
        _current_token.reset(reset)
    token.check()
    return response


def infer_stream(
    provider: Provider, request: InferenceRequest, token: CancelToken
) -> Generator[StreamEvent, None, InferenceResponse]:
    """One streamed call: yields the provider's events, returns the whole response."""
    with cancel_scope(token):
        if getattr(provider, "stream_inference", None) is None:
            raise cannot_stream(provider)
        if not heeds_cancel(provider):  # made and read on a thread of its own (see infer)
            try:
                whole: InferenceResponse = yield from stream_on_thread(
                    lambda: provider.stream_inference(request), token, _what(provider, "stream"))
                return whole
            except AgentError as exc:
                stopped(token, exc)
                raise
        events = provider.stream_inference(request)
        try:
            for event in events:
                yield event
                token.check()
        except AgentError as exc:
            stopped(token, exc)
            raise
        finally:
            close = getattr(events, "close", None)
            if close is not None:
                close()
        return events.response


def _what(provider: Provider, call: str) -> str:
    """A model call, for the log line of one abandoned."""
    return f"a model {call} of provider {getattr(provider, 'id', type(provider).__name__)!r}"


def cannot_stream(provider: Provider) -> AgentError:
    """The error of a streamed run whose provider has neither ``stream_inference`` nor
    ``astream_inference`` (a user's provider that answers whole only)."""
    name = getattr(provider, "id", type(provider).__name__)
    return AgentError(
        f"provider {name!r} cannot stream: it has no stream_inference (nor astream_inference); implement "
        "stream_inference(request) returning an iterable of StreamEvent, or call run()/arun() instead of "
        "run_stream()/astream()",
        kind=ErrorKind.INVALID, provider=str(name),
    )


def traced_infer(
    spans: otel.SessionSpans, provider: Provider, request: InferenceRequest, token: CancelToken, stream: bool
) -> Generator[StreamEvent, None, InferenceResponse]:
    """:func:`infer` or :func:`infer_stream` inside the run's ``chat`` span (naming
    ``provider``: the agent's, or the one its ``prepare`` chose for this call)."""
    chat = spans.chat(request, provider)
    try:
        if stream:
            response = yield from infer_stream(provider, request, token)
        else:
            with chat.current():
                response = infer(provider, request, token)
    except BaseException as exc:
        chat.failed(exc)
        raise
    chat.done(response)
    return response
