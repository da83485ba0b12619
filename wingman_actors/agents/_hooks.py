"""What a session run gives its hooks: read-only run metadata, and its events.

Used by :class:`~wingman_actors.agents._session.Session`; not a public API.
"""

from __future__ import annotations

import time
import types
from collections.abc import Callable, Mapping
from typing import Any

from .._interrupts import RunSuspended
from ..core import InferenceRequest, InferenceResponse, Usage
from ..events import Event, EventBus, EventKind
from ._middleware import NO_METADATA, RunContext
from ._result import Result

__all__ = ["compaction_events", "emit", "emit_stop", "read_only"]


def read_only(metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only copy of a run's ``metadata`` (hooks and tools of concurrent runs share nothing)."""
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a dict (a mapping of names to values), got {type(metadata).__name__}")
    return types.MappingProxyType(dict(metadata)) if metadata else NO_METADATA


def emit(bus: EventBus, kind: EventKind, ctx: RunContext, **fields: Any) -> None:
    """Emit a ``kind`` event of the run ``ctx`` (its agent, session, depth and parent)."""
    bus.emit(Event(kind, ctx.agent.name, ctx.session_id, depth=ctx.depth, parent_session_id=ctx.parent_session_id,
                   **fields))


def compaction_events(
    bus: EventBus | None, ctx: RunContext, step: int
) -> Callable[[InferenceRequest], Callable[[InferenceResponse], None]] | None:
    """What emits the ``model_start`` / ``model_end`` events of the compactor's calls made
    to fit step ``step``'s request (``compaction=True``): a call the run pays for, which a
    subscriber counting calls or tokens must see. None when no subscriber wants them."""
    if bus is None or not ("model_start" in bus.kinds or "model_end" in bus.kinds):
        return None

    def observe(request: InferenceRequest) -> Callable[[InferenceResponse], None]:
        if "model_start" in bus.kinds:
            emit(bus, "model_start", ctx, step=step, request=request, compaction=True)
        t0 = time.perf_counter()

        def done(response: InferenceResponse) -> None:
            if "model_end" in bus.kinds:
                emit(bus, "model_end", ctx, step=step, response=response, usage=response.usage,
                     duration_s=time.perf_counter() - t0, compaction=True)

        return done

    return observe


def emit_stop(
    bus: EventBus, agent: str, session_id: str, result: Result | None, failure: BaseException | None,
    lineage: tuple[int, str | None] | None = None, spent: Usage | None = None,
) -> None:
    """The run's ``session_stop`` event: succeeded (or suspended) with its result, or failed.
    ``lineage``: a delegated run's depth and parent session id; ``spent``: what a failed or
    suspended run had spent on model calls (they were paid for: a monitor counts them)."""
    depth, parent = lineage if lineage is not None else (0, None)
    if result is not None:
        bus.emit(Event("session_stop", agent, session_id, depth=depth, parent_session_id=parent,
                       status=result.status, result=result, usage=result.usage, duration_s=result.duration_s))
    elif isinstance(failure, RunSuspended):
        bus.emit(Event("session_stop", agent, session_id, depth=depth, parent_session_id=parent, status="suspended",
                       usage=spent))
    else:
        error = str(failure) if failure is not None else "the run stopped before it finished"
        bus.emit(Event("session_stop", agent, session_id, depth=depth, parent_session_id=parent, status="failed",
                       error=error, usage=spent))
