"""What a formation run returns: outputs plus per-node traces."""

from __future__ import annotations

import base64
import enum
import functools
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..core import Usage

__all__ = ["WALL_OFFSET", "ZERO_USAGE", "FormationResult", "MapItems", "NestedVisits", "NodeStatus", "NodeTrace", "build_traces", "jsonable",
           "nested_traces", "suspended_traces"]

ZERO_USAGE = Usage()
"""The shared zero usage (Usage is immutable)."""
WALL_OFFSET = time.time() - time.perf_counter()
"""``perf_counter`` and the wall clock differ by a constant within a process (to the
precision traces need): runs read one clock only, and traces add this."""
_NONE: Mapping[str, Any] = MappingProxyType({})


class NodeStatus(enum.StrEnum):
    """Where a node ended up in one run. In a suspended run, the node that suspended it
    (its ``interrupt()``, or a breakpoint before it) is ``SUSPENDED`` and the nodes the run
    has not reached yet are ``PENDING``; in a finished run they are ``SKIPPED``."""

    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"
    SUSPENDED = "suspended"


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


def build_traces(
    order: Sequence[str],
    log: Sequence[Any],
    handled: Mapping[str, float] = _NONE,
    failures: Sequence[tuple[str, int, float, float, str, Usage | None]] = (),
    skipped: Mapping[str, str | None] = _NONE,
    cancelled: Sequence[str] = (),
    visits: Mapping[str, int] = _NONE,
    nested: Mapping[str, Any] = _NONE,
    unreached: NodeStatus = NodeStatus.SKIPPED,
    cut: Sequence[tuple[str, int, int, float, float, Usage | None]] = (),
) -> dict[str, NodeTrace]:
    """Per-node traces of a run, in node order, from its record (see ``RunState``): the
    flat log of successful visits (node, attempt, started, finished, usage, output; six
    items a visit, ``perf_counter`` times), the nodes whose failures went to error
    edges (``handled``: node -> when), the failed attempts (their tokens counted), the skipped and cancelled
    nodes, the visit counts and what the formation nodes' inner runs left (a succeeded
    or suspended inner run's result, or a failed one's traces already named by path:
    ``NestedRunError.nodes``) and the visits in flight when the run ended (``cut``:
    node, visit, attempt, started, ended, usage: ``cancelled``, their time and tokens so far
    counted); a node
    the run never reached has status ``unreached``."""
    traces: dict[str, NodeTrace] = {}
    entries = iter(log)
    for name, attempt, started, finished, usage, output in zip(
        entries, entries, entries, entries, entries, entries, strict=True
    ):
        t = traces.get(name)
        if t is None:
            t = traces[name] = NodeTrace(name)
        t.status = NodeStatus.SUCCEEDED
        t.attempts = attempt
        t.visits += 1
        t.started_at = WALL_OFFSET + started
        t.finished_at = WALL_OFFSET + finished
        t.duration_s += finished - started
        if usage is not None and usage is not ZERO_USAGE:
            t.usage = t.usage + usage
        t.output = output
        t.outputs.append(output)
    for name, when in handled.items():  # failed into error edges, after any success
        t = traces.get(name)
        if t is None or t.finished_at is None or WALL_OFFSET + when >= t.finished_at:
            traces[name] = t or NodeTrace(name)
            traces[name].status = NodeStatus.FAILED
    for name, attempt, started, finished, error, spent in failures:
        t = traces.get(name)
        if t is None:
            t = traces[name] = NodeTrace(name, status=NodeStatus.FAILED)
        t.duration_s += finished - started
        if spent is not None:  # the model calls of a failed attempt were paid for too
            t.usage = t.usage + spent
        if not t.visits:  # a visit that only failed is a visit too (loops count theirs in ``visits``)
            t.visits = 1
        if (t.status is NodeStatus.SUCCEEDED and name not in skipped and t.finished_at is not None
                and WALL_OFFSET + finished > t.finished_at):
            # a later visit (a loop's) failed the run after the earlier ones succeeded: the node's last word
            # is this failure (an attempt retried into a success ends before it; a node that succeeded once
            # and was skipped later by on_error="skip" stays succeeded)
            t.status = NodeStatus.FAILED
            t.attempts = 0
        if t.status is not NodeStatus.SUCCEEDED or attempt > t.attempts:
            t.attempts = max(t.attempts, attempt)
            t.error = error
            if t.started_at is None:
                t.started_at = WALL_OFFSET + started
            t.finished_at = WALL_OFFSET + finished
    for name, skip_error in skipped.items():
        t = traces.get(name)
        if t is None:
            t = traces[name] = NodeTrace(name)
        if t.status is not NodeStatus.SUCCEEDED:
            t.status = NodeStatus.SKIPPED
            if skip_error is not None:
                t.error = skip_error
    for name in cancelled:
        t = traces.get(name)
        if t is None:
            t = traces[name] = NodeTrace(name)
        if t.status is not NodeStatus.SUCCEEDED:
            t.status = NodeStatus.CANCELLED
    for name, visit, attempt, started, ended, spent in cut:  # the node's last visit, cut short
        t = traces.get(name)
        if t is None:
            t = traces[name] = NodeTrace(name)
        if spent is not None and spent != ZERO_USAGE:  # its model calls so far were paid for
            t.usage = t.usage + spent
        t.status = NodeStatus.CANCELLED
        t.visits = max(t.visits, visit)
        t.attempts = attempt
        if started:  # 0.0: its start was not seen
            t.started_at = WALL_OFFSET + started
            t.duration_s += max(0.0, ended - started)
        t.finished_at = WALL_OFFSET + ended
    for name in visits:
        if name in traces:
            traces[name].visits = max(traces[name].visits, visits[name])
    out: dict[str, NodeTrace] = {}
    for name in order:
        t = traces.get(name)
        if t is None:
            t = NodeTrace(name, status=unreached)  # never reached in this run
        out[name] = t
        inner = nested.get(name)
        if inner is not None:  # a formation node: its inner run's traces, by path
            out.update(inner.traces(name) if isinstance(inner, NestedVisits | MapItems) else _named(name, inner))
    return out


def _named(node: str, inner: Any) -> dict[str, NodeTrace]:
    """The traces of one inner run of formation node ``node`` (a result, or the traces
    of a failed or cancelled one, named already), by path, as copies."""
    if isinstance(inner, dict):
        return {path: replace(trace) for path, trace in inner.items()}
    return nested_traces(node, inner.nodes)


@dataclass(slots=True)
class NestedVisits:
    """The inner runs of a formation node visited more than once in a run (a loop), by
    outer visit. Their traces add up as a node's own visits do: visits, outputs, durations
    and usage summed over the inner runs; status, attempts, times and error of the last
    inner run that reached the node."""

    runs: dict[int, Any] = field(default_factory=dict)

    def traces(self, node: str) -> dict[str, NodeTrace]:
        merged: dict[str, NodeTrace] = {}
        for visit in sorted(self.runs):
            for path, trace in _named(node, self.runs[visit]).items():
                before = merged.get(path)
                if before is not None:
                    if not trace.visits:  # this inner run did not reach it
                        continue
                    if not trace.outputs:  # no success this time: the last success stands
                        trace.output = before.output
                    trace.visits += before.visits
                    trace.outputs = before.outputs + trace.outputs
                    trace.duration_s += before.duration_s
                    trace.usage = before.usage + trace.usage
                merged[path] = trace
        return merged


_MAP_RANK = {NodeStatus.PENDING: 0, NodeStatus.SKIPPED: 1, NodeStatus.SUCCEEDED: 2, NodeStatus.SUSPENDED: 3,
             NodeStatus.CANCELLED: 4, NodeStatus.FAILED: 5}


@dataclass(slots=True)
class MapItems:
    """The inner runs of a map over a formation, by ``(visit, item)``: each item's result,
    or the traces of a failed one (named by the item's path, ``"each/3/inner"``). Kept as
    results, not traces (a result builds its traces on first read), and merged on read
    into one trace per inner node (``"each/inner"``), as a formation node's visits are:
    the items that reached it counted as its visits, their outputs in item order,
    durations and usage summed, first start and last end; the status, error and attempts
    those of the item that fared worst (failed before cancelled, suspended, succeeded,
    skipped): items run side by side, so none is "the last". A retry's item replaces
    the item's earlier run. ``inflight``: the items running now, each a function that
    cancels it and returns its traces as it was cut (named by the item's path), or None
    when it had ended: the run's end calls them (:meth:`cut`) before its traces are taken."""

    runs: dict[tuple[int, int], Any] = field(default_factory=dict)
    inflight: dict[tuple[int, int], Callable[[], dict[str, NodeTrace] | None]] = field(default_factory=dict)

    def cut(self, lock: Any, visit: int | None = None) -> None:
        """Cancel the items in flight (the run ends; with ``visit``, only that visit's: its
        attempt was cut, by the node's timeout), keeping the traces each had then."""
        with lock:
            if visit is None:
                cutting, self.inflight = self.inflight, {}
            else:
                cutting = {k: c for k, c in self.inflight.items() if k[0] == visit}
                for key in cutting:
                    del self.inflight[key]
        for key, cancel in cutting.items():
            traces = cancel()
            if traces is not None:
                with lock:
                    self.runs[key] = traces

    def traces(self, node: str) -> dict[str, NodeTrace]:
        merged: dict[str, NodeTrace] = {}
        for visit, item in sorted(self.runs):
            inner = self.runs[(visit, item)]
            if isinstance(inner, dict):  # a failed item's traces, named "node/item/inner"
                cut = len(f"{node}/{item}")
                named = {f"{node}{path[cut:]}": replace(t, name=f"{node}{path[cut:]}") for path, t in inner.items()}
            else:
                named = nested_traces(node, inner.nodes)
            for path, trace in named.items():
                before = merged.get(path)
                if before is None:
                    merged[path] = trace
                    continue
                if not trace.visits and trace.status is not NodeStatus.FAILED:  # this item did not reach it
                    continue
                if _MAP_RANK[trace.status] > _MAP_RANK[before.status]:
                    before.status, before.error, before.attempts = trace.status, trace.error, trace.attempts
                before.visits += trace.visits
                if trace.outputs:
                    before.outputs = before.outputs + trace.outputs
                    before.output = trace.output
                before.duration_s += trace.duration_s
                before.usage = before.usage + trace.usage
                if trace.started_at is not None and (before.started_at is None or trace.started_at < before.started_at):
                    before.started_at = trace.started_at
                if trace.finished_at is not None and (before.finished_at is None or trace.finished_at > before.finished_at):
                    before.finished_at = trace.finished_at
        return merged


def nested_traces(node: str, inner: Mapping[str, NodeTrace]) -> dict[str, NodeTrace]:
    """The traces ``inner`` of the inner run of formation node ``node`` (a path, for an
    item of a map over a formation: ``"each/0"``) named by path (``"node/inner_node"``),
    their ``parent`` the outermost formation node."""
    parent = node.split("/", 1)[0]
    return {f"{node}/{path}": replace(trace, name=f"{node}/{path}", parent=parent) for path, trace in inner.items()}


def suspended_traces(run: Any, node: str, attempt: int = 0, ahead: Collection[str] = ()) -> dict[str, NodeTrace]:
    """The traces of ``run`` (a ``RunState``) suspended at ``node`` (a path for a node of a
    nested formation): that node (the formation node holding it) ``SUSPENDED``, unless it
    succeeded (a breakpoint after it), and the nodes not reached yet ``PENDING``.
    ``attempt``: the attempt whose code suspended it (an ``interrupt()``; 0 for a breakpoint
    before it), so the visit it waits in counts (a loop's visits are counted already), its
    attempts are that one's, and the error of an attempt its retry got past is not its.
    ``ahead``: the nodes downstream of it along forward edges; one that only an earlier
    loop iteration skipped (no visit, no error) is ``PENDING``: the resume reaches it."""
    traces: dict[str, NodeTrace] = run.traces(NodeStatus.PENDING)
    for name in ahead:
        t = traces.get(name)
        if t is not None and t.status is NodeStatus.SKIPPED and not t.visits and t.error is None:
            t.status = NodeStatus.PENDING
    held = traces.get(node.split("/", 1)[0])
    if held is not None and held.status is not NodeStatus.SUCCEEDED:
        held.status = NodeStatus.SUSPENDED
        if attempt:
            held.visits = max(held.visits, 1)
            held.attempts = attempt
            held.error = None
    return traces


class FormationResult:
    """The outcome of one formation run.

    Attributes:
        run_id: the run's id.
        output: the single sink's output, or that of whichever sink produced when the
            sinks exclude one another (the two sides of an error edge or of an ``otherwise``
            route); None when several sinks can produce, or the sink was skipped.
        outputs: the output of every sink that produced one, by name.
        nodes: per-node traces, by name (built on first access).
        usage: tokens summed over every node.
        duration_s: wall time of the run.
        status: ``"succeeded"`` for a finished run; ``"suspended"`` for a journalled run
            stopped by ``interrupt()`` (resume it with ``Formation.resume``).
        interrupt: for a suspended run, ``{"node": ..., "payload": ...}``; else None.

    The runtime builds results; ``outputs=None`` with ``sink=<name>`` stands for
    ``{sink: output}`` (made on first read of ``outputs``). ``nodes`` is the traces, or
    what they are built from on first read: a callable, or a clean run's ``(order, log)``
    (see :func:`build_traces`).
    """

    __slots__ = ("_build", "_log", "_nodes", "_outputs", "_sink", "duration_s", "interrupt", "output", "run_id", "status")

    def __init__(
        self,
        run_id: str,
        output: Any,
        outputs: dict[str, Any] | None,
        nodes: dict[str, NodeTrace] | Callable[[], dict[str, NodeTrace]] | tuple[Sequence[str], Sequence[Any]],
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
        # A clean run's (order, log) is kept as two references, not as the tuple given (one
        # object more per result kept).
        self._build: Callable[[], dict[str, NodeTrace]] | Sequence[str] | None = None  # or the order
        self._log: Sequence[Any] | None = None
        self._nodes: dict[str, NodeTrace] | None = None
        if isinstance(nodes, dict):
            self._nodes = nodes
        elif isinstance(nodes, tuple):
            self._build, self._log = nodes
        else:
            self._build = nodes

    @property
    def outputs(self) -> dict[str, Any]:
        outputs = self._outputs
        if outputs is None:
            outputs = self._outputs = {self._sink: self.output}
        return outputs

    @property
    def nodes(self) -> dict[str, NodeTrace]:
        if self._nodes is None:
            build, log = self._build, self._log
            if log is not None:
                assert build is not None and not callable(build)
                self._nodes = build_traces(build, log)
            else:
                assert callable(build)
                self._nodes = build()
            self._build = self._log = None
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
        """A JSON-friendly dict (values as :func:`jsonable` makes them)."""
        return {
            "run_id": self.run_id,
            "status": self.status,
            "interrupt": jsonable(self.interrupt),
            "output": jsonable(self.output),
            "outputs": jsonable(self.outputs),
            "nodes": {k: jsonable(v.to_dict()) for k, v in self.nodes.items()},
            "usage": self.usage.model_dump(),
            "duration_s": self.duration_s,
        }


def jsonable(value: Any) -> Any:
    """``value`` as JSON data: pydantic models and dataclasses dumped, NaN and infinities as
    None (strict JSON has neither), bytes as their UTF-8 text (base64 when they are no text),
    anything else that is no JSON data (an object passed between nodes) as its ``str``.

    Example:
        >>> jsonable({"raw": b"\\xff", "text": b"ok", "path": ("a", 1), "nan": float("nan")})
        {'raw': '/w==', 'text': 'ok', 'path': ['a', 1], 'nan': None}
    """
    adapter = _any_adapter()
    try:
        return adapter.dump_python(value, mode="json", fallback=str)
    except UnicodeDecodeError:  # bytes that are no UTF-8 text, somewhere inside (models dumped first)
        plain = adapter.dump_python(value, mode="python", fallback=str)
        return adapter.dump_python(_bytes_as_text(plain), mode="json", fallback=str)


@functools.cache
def _any_adapter() -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(Any)


def _bytes_as_text(value: Any) -> Any:
    """``value`` with its bytes (in dicts, lists, tuples and sets) as text: UTF-8, else base64."""
    if isinstance(value, bytes | bytearray):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {k: _bytes_as_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_bytes_as_text(v) for v in value]
    return value
