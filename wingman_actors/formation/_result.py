"""What a formation run returns: outputs plus per-node traces."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core import Usage

__all__ = ["ZERO_USAGE", "FormationResult", "NodeStatus", "NodeTrace"]

ZERO_USAGE = Usage()
"""The shared zero usage (Usage is immutable)."""


class NodeStatus(enum.StrEnum):
    """Where a node ended up in one run."""

    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


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
        output: the output of the node's last successful visit (None if none succeeded);
            a map or fleet node's is its list of item outputs; a visit a resumed run took
            from its journal has its journalled output.
        outputs: the output of every successful visit, in visit order (a loop's node has
            one per iteration).
        parent: for the trace of a node inside a nested formation (named by its path,
            ``"outer_node/inner_node"``), the outermost formation node it runs in (whose
            own trace counts its usage); None for the run's own nodes.
    """

    name: str
    status: NodeStatus = NodeStatus.PENDING
    attempts: int = 0
    visits: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    duration_s: float = 0.0
    usage: Usage = ZERO_USAGE
    error: str | None = None
    parent: str | None = None
    output: Any = None
    outputs: list[Any] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A dict of the trace (outputs as they are: :meth:`FormationResult.to_dict`
        makes them JSON-friendly)."""
        return {
            "name": self.name, "status": self.status.value, "attempts": self.attempts,
            "visits": self.visits, "started_at": self.started_at, "finished_at": self.finished_at,
            "duration_s": self.duration_s, "usage": self.usage.model_dump(), "error": self.error,
            "output": self.output, "outputs": self.outputs,
        }


class FormationResult:
    """The outcome of one formation run.

    Attributes:
        run_id: the run's id.
        output: the single sink's output (None when the formation has several sinks, or
            its sink was skipped).
        outputs: the output of every sink that produced one, by name.
        nodes: per-node traces, by name (built on first access).
        usage: tokens summed over every node.
        duration_s: wall time of the run.
        status: ``"succeeded"`` for a finished run; ``"suspended"`` for a journalled run
            stopped by ``interrupt()`` (resume it with ``Formation.resume``).
        interrupt: for a suspended run, ``{"node": ..., "payload": ...}``; else None.

    The runtime builds results; ``outputs=None`` with ``sink=<name>`` stands for
    ``{sink: output}`` (made on first read of ``outputs``).
    """

    __slots__ = ("_build", "_nodes", "_outputs", "_sink", "duration_s", "interrupt", "output", "run_id", "status")

    def __init__(
        self,
        run_id: str,
        output: Any,
        outputs: dict[str, Any] | None,
        nodes: dict[str, NodeTrace] | Callable[[], dict[str, NodeTrace]],
        duration_s: float,
        status: str = "succeeded",
        interrupt: dict[str, Any] | None = None,
        sink: str = "",
    ) -> None:
        # outputs=None: the run's one sink is ``sink`` and its output ``output`` (the dict
        # is made on first read, like the traces: a result many are kept of allocates less)
        if outputs is None and not sink:
            raise ValueError("FormationResult needs outputs (a dict of sink outputs), or sink= naming the one sink "
                             "whose output is `output`")
        self.run_id = run_id
        self.status = status
        self.interrupt = interrupt
        self.output = output
        self._outputs = outputs
        self._sink = sink
        self.duration_s = duration_s
        # Traces are assembled lazily: pipelines that only read outputs never pay for them.
        if callable(nodes):
            self._build: Callable[[], dict[str, NodeTrace]] | None = nodes
            self._nodes: dict[str, NodeTrace] | None = None
        else:
            self._build = None
            self._nodes = nodes

    @property
    def outputs(self) -> dict[str, Any]:
        outputs = self._outputs
        if outputs is None:
            outputs = self._outputs = {self._sink: self.output}
        return outputs

    @property
    def nodes(self) -> dict[str, NodeTrace]:
        if self._nodes is None:
            assert self._build is not None
            self._nodes, self._build = self._build(), None
        return self._nodes

    @property
    def usage(self) -> Usage:
        total = ZERO_USAGE
        for trace in self.nodes.values():
            if trace.usage is not ZERO_USAGE and trace.parent is None:
                total = total + trace.usage
        return total

    def __repr__(self) -> str:
        if self.interrupt is not None:
            return f"FormationResult(run_id={self.run_id!r}, status='suspended', interrupt={self.interrupt!r})"
        return f"FormationResult(run_id={self.run_id!r}, output={self.output!r}, duration_s={self.duration_s:.4f})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (outputs dumped with pydantic where they are models; a
        node trace's output that is not JSON data as its ``str``)."""
        from pydantic import TypeAdapter
        from pydantic_core import to_jsonable_python

        dump = TypeAdapter(Any).dump_python
        return {
            "run_id": self.run_id,
            "status": self.status,
            "interrupt": dump(self.interrupt, mode="json"),
            "output": dump(self.output, mode="json"),
            "outputs": dump(self.outputs, mode="json"),
            # a node's output that is no JSON (an object passed between nodes) as its str
            "nodes": {k: to_jsonable_python(v.to_dict(), fallback=str) for k, v in self.nodes.items()},
            "usage": self.usage.model_dump(),
            "duration_s": self.duration_s,
        }
