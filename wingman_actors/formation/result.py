"""What a formation run returns: outputs plus per-node traces."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from ..core import Usage

__all__ = ["FormationResult", "NodeStatus", "NodeTrace"]


class NodeStatus(enum.StrEnum):
    """Where a node ended up in one run."""

    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(slots=True)
class NodeTrace:
    """One node's record in one run.

    Attributes:
        name: the node.
        status: see :class:`NodeStatus`.
        attempts: attempts of the last visit (1 = first try succeeded or failed).
        visits: how many times the node ran in this run (loops visit more than once).
        started_at: wall-clock seconds of the last visit's start (None if it never ran).
        finished_at: wall-clock seconds of the last visit's end.
        duration_s: summed run time of all visits and attempts.
        usage: tokens used by the node (agents and fleets).
        error: the error text, for failed or skipped-after-failure nodes.
    """

    name: str
    status: NodeStatus = NodeStatus.PENDING
    attempts: int = 0
    visits: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    duration_s: float = 0.0
    usage: Usage = field(default_factory=Usage)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "status": self.status.value, "attempts": self.attempts,
            "visits": self.visits, "started_at": self.started_at, "finished_at": self.finished_at,
            "duration_s": self.duration_s, "usage": self.usage.model_dump(), "error": self.error,
        }


@dataclass(slots=True)
class FormationResult:
    """The outcome of one formation run.

    Attributes:
        run_id: the run's id.
        output: the single sink's output (None when the formation has several sinks, or
            its sink was skipped).
        outputs: the output of every sink that produced one, by name.
        nodes: per-node traces, by name.
        usage: tokens summed over every node.
        duration_s: wall time of the run.
    """

    run_id: str
    output: Any
    outputs: dict[str, Any]
    nodes: dict[str, NodeTrace]
    usage: Usage
    duration_s: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (outputs dumped with pydantic where they are models)."""
        from pydantic import TypeAdapter

        dump = TypeAdapter(Any).dump_python
        return {
            "run_id": self.run_id,
            "output": dump(self.output, mode="json"),
            "outputs": dump(self.outputs, mode="json"),
            "nodes": {k: v.to_dict() for k, v in self.nodes.items()},
            "usage": self.usage.model_dump(),
            "duration_s": self.duration_s,
        }
