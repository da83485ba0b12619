"""How run routes stream: the first event decides between an error status and an SSE
response, errors after that become ``error`` events, a client that leaves cancels the run."""

from __future__ import annotations

import threading
from typing import Any

from starlette.responses import Response

from ..errors import AgentError
from ._errors import ApiError, from_agent_error
from ._sse import Event, ThreadedStream, sse_response

__all__ = ["Canceller", "Reported", "as_api_error", "error_event", "start_stream"]


class Reported(Exception):
    """A run error whose ``error`` event was already streamed."""


class Canceller:
    """Cancels whatever run is current when the client goes away."""

    def __init__(self) -> None:
        self.target: Any = None
        self.cancelled = threading.Event()

    def __call__(self) -> None:
        self.cancelled.set()
        target = self.target
        if target is not None:
            target.cancel("the client disconnected")


def as_api_error(exc: BaseException) -> ApiError:
    """The HTTP error for a run that failed before streaming anything."""
    if isinstance(exc, Reported) and exc.__cause__ is not None:
        exc = exc.__cause__
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, AgentError):
        return from_agent_error(exc)
    return ApiError(500, f"the run failed: {type(exc).__name__}: {exc}")


def error_event(exc: BaseException) -> Event | None:
    """The ``error`` event for a failure after streaming started (None if already sent)."""
    if isinstance(exc, Reported):
        return None
    api = as_api_error(exc)
    return "error", api.body()


async def start_stream(stream: ThreadedStream) -> Response:
    """Read up to the first real event: a run that fails before producing anything answers
    with a JSON error and its status (502/504...); otherwise stream."""
    seen: list[Event] = []
    while True:
        kind, value = await stream.next()
        if kind == "error":
            raise as_api_error(value)
        if kind == "end":
            break
        seen.append(value)
        if value[0] != "error":  # an `error` event first: the exception follows; answer with its status
            break
    return sse_response(stream, first=seen, on_error=error_event)


