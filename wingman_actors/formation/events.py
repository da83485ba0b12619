"""Formation events: what a run reports while it goes (``run_stream``, ``on_event``)."""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FormationEvent", "FormationEventType", "emit"]

log = logging.getLogger("wingman_actors.formation")


class FormationEventType(enum.StrEnum):
    """The kinds of :class:`FormationEvent`.

    * ``run_started`` / ``run_finished`` / ``run_failed``: a run's life (``data``:
      ``duration_s``; on failure ``error``, ``exception`` and ``unfinished``, the nodes
      whose visits in flight the failure cut short, which report nothing more; ``result``
      and ``usage`` when finished, and ``suspended: True`` when the run stopped at an
      ``interrupt()`` or a breakpoint: ``result.status == "suspended"``).
    * ``run_cancelled``: the run was cancelled (``data``: ``duration_s``; ``outputs``,
      the outputs of the nodes that finished; ``unfinished``, the nodes that were
      running; ``nodes``, the per-node traces, where those are ``cancelled``).
    * ``node_started``: a node began an attempt (``data``: ``attempt``, ``input``: the visit's input).
    * ``node_finished``: a node succeeded (``data``: ``attempt``, ``duration_s``, ``usage``,
      ``output``: the visit's output).
    * ``node_retry``: an attempt failed and will be retried (``data``: ``attempt``,
      ``delay_s``, ``error``).
    * ``node_failed``: a node failed for good (``data``: ``attempts``, ``error``).
    * ``node_skipped``: a node was skipped (``data``: ``reason``; ``cancelled``: True for a node
      in a branch a ``join="any"`` fired without, whose trace says ``cancelled``, and for a node
      inside a formation node (``"sub/inner"``, ``"each/2/inner"``) whose inner run was cut
      short while it ran: the formation node's timeout, the run's end, a ``join="any"`` it
      lost, or its inner run failing at another node; sent before the formation node's own
      end and the run's ``run_*`` event).
    * A resumed run's events for the visits its journal settled before the resume say so
      with ``journalled: True`` in ``data``: ``node_finished`` (``attempt`` 0, the journalled
      output), ``node_failed`` (a failure its error edges took) and ``node_skipped`` (a
      visit that failed into ``on_error="skip"``, and the skips those replays lead to);
      such a visit has no ``node_started``.
    * ``agent_text``: a text delta from an agent node (``data``: ``text``).
    * ``agent_thinking``: a delta of an agent node's reasoning, from its model's thinking
      blocks (``data``: ``text``); reasoning the provider sends encrypted is not reported.
    * ``agent_tool_call``: an agent node calls a tool (``data``: ``id``, ``name``, ``input``).
    * ``agent_tool_result``: the tool's result (``data``: ``id`` — the call's id —,
      ``output``, ``is_error``).
    * Every ``agent_*`` event's ``data`` also has ``attempt``, the node's attempt it comes
      from (a failed attempt's events were streamed as they happened and stand; the
      retry's follow its ``node_retry``). A fleet node's items send the same four kinds,
      each with ``item``: the item's index in the node's input list; one item's events
      come in order, several items' interleave. A retry of a fleet reruns only its failed
      items, so only those stream again, and a resumed run's items that the journal
      settled are not run again and send nothing (as a journalled agent node visit).
      Agent events are built only for a run that has listeners: without, sessions run
      unstreamed.
    """

    RUN_STARTED = "run_started"
    RUN_FINISHED = "run_finished"
    RUN_FAILED = "run_failed"
    RUN_CANCELLED = "run_cancelled"
    NODE_STARTED = "node_started"
    NODE_FINISHED = "node_finished"
    NODE_RETRY = "node_retry"
    NODE_FAILED = "node_failed"
    NODE_SKIPPED = "node_skipped"
    AGENT_TEXT = "agent_text"
    AGENT_THINKING = "agent_thinking"
    AGENT_TOOL_CALL = "agent_tool_call"
    AGENT_TOOL_RESULT = "agent_tool_result"


@dataclass(frozen=True, slots=True)
class FormationEvent:
    """One event of a formation run.

    Attributes:
        type: see :class:`FormationEventType`.
        run_id: the run it belongs to.
        node: the node it is about (None for run events).
        timestamp: wall-clock seconds.
        data: details, per type.
    """

    type: FormationEventType
    run_id: str
    node: str | None
    timestamp: float
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (usage as a dict, errors as text)."""
        data = {k: (v.model_dump() if hasattr(v, "model_dump") else v) for k, v in self.data.items()}
        return {"type": self.type.value, "run_id": self.run_id, "node": self.node,
                "timestamp": self.timestamp, "data": data}


def emit(
    listeners: list[Callable[[FormationEvent], None]],
    type: FormationEventType,
    run_id: str,
    node: str | None,
    data: dict[str, Any],
) -> None:
    """Call every listener with one event; a listener that raises is logged, not fatal (on
    the formation's threads, ``SystemExit`` and ``KeyboardInterrupt`` too: let out there, they
    would end a node actor and leave the run unresolved; on the main thread they are the
    caller's, a Ctrl-C among them)."""
    event = FormationEvent(type, run_id, node, time.time(), data)
    for listener in listeners:
        try:
            listener(event)
        except Exception:
            log.exception("event listener failed on %s of run %s", type.value, run_id)
        except BaseException:
            if threading.current_thread() is threading.main_thread():
                raise
            log.exception("event listener failed on %s of run %s", type.value, run_id)
