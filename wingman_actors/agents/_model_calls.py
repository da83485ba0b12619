"""One model call of a session run, blocking or streamed, under the run's cancel token
(the provider's waits and retries stop when it is cancelled or its deadline passes, and
the built-in providers close their request) and, when OpenTelemetry is in use, inside a
``chat`` span. A call that fails because the run was stopped raises the run's error.

Used by :class:`~wingman_actors.agents._session.Session`; not a public API.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator

from .._cancel import CancelToken, cancel_scope
from .._cancel import _current as _current_token  # set inline below: no scope object per call
from ..core import InferenceRequest, InferenceResponse, StreamEvent
from ..errors import AgentError
from ..integrations import otel
from ..providers._base import Provider
from ..providers._retry import stopped

__all__ = ["ModelCall", "infer", "infer_stream", "traced_infer"]


@dataclasses.dataclass(frozen=True, slots=True)
class ModelCall:
    """A model call of a run driven by the async driver (``Session.arun``/``astream``):
    the loop yields it, the driver makes the call and sends back the response."""

    provider: Provider
    request: InferenceRequest
    token: CancelToken
    stream: bool
    spans: otel.SessionSpans | None


def infer(provider: Provider, request: InferenceRequest, token: CancelToken) -> InferenceResponse:
    """One blocking call; raises if the run was cancelled or timed out meanwhile."""
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


def traced_infer(
    spans: otel.SessionSpans, provider: Provider, request: InferenceRequest, token: CancelToken, stream: bool
) -> Generator[StreamEvent, None, InferenceResponse]:
    """:func:`infer` or :func:`infer_stream` inside the run's ``chat`` span."""
    chat = spans.chat(request)
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
