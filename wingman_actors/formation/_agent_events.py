"""An agent node's stream events, and a fleet node's items', as the formation events a
run's listeners receive.

Called only for runs that have listeners (the node actors ask ``wants_events`` first and
run their sessions unstreamed otherwise), so a run without listeners builds none of these
events: tests/formation/test_fleet_events.py holds that for fleets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import StreamEvent, StreamEventType
from .events import FormationEventType, emit

if TYPE_CHECKING:
    from ..actors._envelope import Work

__all__ = ["emit_agent_event"]


def emit_agent_event(work: Work, event: StreamEvent, item: int | None = None) -> None:
    """Emit ``event`` of the agent at ``work`` (text, thinking, a tool call or its result)
    to its run's listeners, with the attempt in ``data`` and, for a fleet node's item,
    ``item``: its index in the node's input list. Other stream events are not formation
    events."""
    t = event.type
    data: dict[str, Any]
    if t is StreamEventType.TEXT_DELTA:
        kind, data = FormationEventType.AGENT_TEXT, {"text": event.text or ""}
    elif t is StreamEventType.THINKING_DELTA:
        kind, data = FormationEventType.AGENT_THINKING, {"text": event.text or ""}
    elif t is StreamEventType.TOOL_START and event.block is not None:
        b = event.block
        kind, data = FormationEventType.AGENT_TOOL_CALL, {"id": b.id, "name": b.name, "input": b.input}
    elif t is StreamEventType.TOOL_END and event.block is not None:
        b = event.block
        kind, data = FormationEventType.AGENT_TOOL_RESULT, {"id": b.tool_use_id, "output": b.content, "is_error": b.is_error}
    else:
        return
    data["attempt"] = work.attempt
    if item is not None:
        data["item"] = item
    run = work.run
    emit(run.listeners, kind, run.id, work.target, data)
