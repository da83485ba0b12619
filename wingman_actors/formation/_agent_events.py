"""An agent node's stream events, as the formation events a run's listeners receive."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import StreamEvent, StreamEventType
from .events import FormationEventType, emit

if TYPE_CHECKING:
    from ._runstate import RunState

__all__ = ["emit_agent_event"]


def emit_agent_event(run: RunState, node: str, event: StreamEvent) -> None:
    """Emit ``event`` of ``node``'s agent (text, thinking, a tool call or its result) to
    ``run``'s listeners; other stream events are not formation events."""
    t = event.type
    if t is StreamEventType.TEXT_DELTA:
        emit(run.listeners, FormationEventType.AGENT_TEXT, run.id, node, {"text": event.text or ""})
    elif t is StreamEventType.THINKING_DELTA:
        emit(run.listeners, FormationEventType.AGENT_THINKING, run.id, node, {"text": event.text or ""})
    elif t is StreamEventType.TOOL_START and event.block is not None:
        b = event.block
        emit(run.listeners, FormationEventType.AGENT_TOOL_CALL, run.id, node, {"id": b.id, "name": b.name, "input": b.input})
    elif t is StreamEventType.TOOL_END and event.block is not None:
        b = event.block
        emit(run.listeners, FormationEventType.AGENT_TOOL_RESULT, run.id, node,
             {"id": b.tool_use_id, "output": b.content, "is_error": b.is_error})
