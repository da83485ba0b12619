"""How a formation run's outcome becomes its run record: node traces built from its
events, and the record of a run that succeeded, was suspended, failed or was cancelled."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from ..actors._nodes import PayloadError
from ..errors import FormationRuntimeError, RunTimeoutError
from ..formation import Formation
from ..formation._result import ZERO_USAGE, FormationResult, NodeTrace
from ..formation._runtime import NodeTimeoutError
from ..formation.events import FormationEvent, FormationEventType
from ..store import FormationMismatchError
from ._convert import jsonable, usage_dict
from ._errors import ApiError, find_agent_error, status_for_kind
from ._ids import rfc3339
from ._live import RunLog
from ._schemas import RunOut

__all__ = ["Tracker", "cancelled", "cut_times", "event_dict", "failed", "failure", "out_of_time", "run_error",
           "settled"]


_NO_TIMES: Mapping[str, float] = MappingProxyType({})


class Tracker:
    """Per-node traces of a run, built from its events (which its :class:`~._live.RunLog`
    keeps) when asked: the record of a failed or cancelled run, the live traces of a run
    in flight. The formation's own nodes, and the nodes inside its formation nodes once
    they start (named by their path, ``"sub/inner_node"``, as the run's result names them;
    a formation map's items are not traced apart, as in the result). A run that succeeds
    never asks: its record is built from its result (:func:`settled`).

    Args:
        formation: the formation the run is on.
        log: the run's events.
    """

    def __init__(self, formation: Formation, log: RunLog) -> None:
        self.formation = formation
        self.log = log

    def traces(self, ended: bool = False, cut_at: Mapping[str, float] = _NO_TIMES) -> dict[str, dict[str, Any]]:
        """The node traces after the run's events so far (new dicts). With ``ended`` (the
        run failed, was cancelled or interrupted), a node whose visit was still going is
        ``cancelled``, as the run's own traces say: its closing event may not be in yet when
        the future of the run is resolved. Its ``finished_at`` is the time the run's traces
        give it (``cut_at``, by name: see :func:`cut_times`), else the run's end (its
        ``run_failed`` / ``run_cancelled``; before that is in, the last time its traces
        give; without traces, now)."""
        nodes = {name: _trace(name) for name in self.formation.graph.nodes}
        nested: set[str] | None = None  # the paths of formation nodes, at any depth: the nodes inside them are traced
        going: dict[str, dict[str, Any]] = {}  # the nodes started and not closed yet, by path
        end: float | None = None  # the time of the run's run_failed / run_cancelled
        for event in self.log.events():
            if event.type in _RUN_ENDS:
                end = event.timestamp
                continue
            node = nodes.get(event.node or "")
            if node is None:
                path = event.node or ""
                if nested is None:
                    nested = _formation_paths(self.formation, "")
                if path.rpartition("/")[0] not in nested:
                    continue
                node = nodes[path] = _trace(path)
            _apply(node, event)
            if event.type is FormationEventType.NODE_STARTED:
                going[node["name"]] = node
            elif event.type in _CLOSING and going.pop(node["name"], None) is not None:
                if event.type is FormationEventType.NODE_SKIPPED:  # its visit cut short: it ends now
                    node["finished_at"] = rfc3339(event.timestamp)
        if ended:
            cut = max(cut_at.values(), default=time.time()) if end is None else end
            for name, node in going.items():  # cut short by the run's end
                node["status"] = "cancelled"
                node["finished_at"] = rfc3339(cut_at.get(name, cut))
        return nodes


def cut_times(exc: BaseException) -> dict[str, float]:
    """When the failed run's own traces (``exc.nodes``, by name) end its nodes: the time
    its end cut the visits in flight, which its record's traces take (its ``run_failed``
    event comes later, and may not be in yet when the record is built)."""
    nodes = getattr(exc, "nodes", None) or {}
    return {name: trace.finished_at for name, trace in nodes.items()
            if isinstance(trace, NodeTrace) and trace.finished_at is not None}


_RUN_ENDS = (FormationEventType.RUN_FAILED, FormationEventType.RUN_CANCELLED)
_CLOSING = (FormationEventType.NODE_FINISHED, FormationEventType.NODE_FAILED, FormationEventType.NODE_SKIPPED)


def _apply(node: dict[str, Any], event: FormationEvent) -> None:
    data, kind = event.data, event.type
    if kind is FormationEventType.NODE_STARTED:
        # at work (again, on a loop's next visit): started and not finished, as on its first visit
        node["status"], node["finished_at"] = "pending", None
        node["started_at"] = rfc3339(event.timestamp)
        node["attempts"] = data.get("attempt", node["attempts"])
        if node["attempts"] == 1:
            node["visits"] += 1
    elif kind is FormationEventType.NODE_FINISHED:
        node["status"] = "succeeded"
        node["finished_at"] = rfc3339(event.timestamp)
        node["duration_s"] += float(data.get("duration_s") or 0.0)
        if data.get("usage") is not None:
            node["usage"] = usage_dict(data["usage"])
    elif kind in (FormationEventType.NODE_FAILED, FormationEventType.NODE_RETRY):
        node["error"] = data.get("error")
        if kind is FormationEventType.NODE_FAILED:
            node["status"] = "failed"
            node["finished_at"] = rfc3339(event.timestamp)
    elif kind is FormationEventType.NODE_SKIPPED:
        # cut short (a join="any" loser, an inner node of a formation node cut short): cancelled, as in its trace
        node["status"] = "cancelled" if data.get("cancelled") else "skipped"
        node["error"] = data.get("error") or node["error"]


def _trace(name: str) -> dict[str, Any]:
    return {"name": name, "status": "pending", "attempts": 0, "visits": 0, "started_at": None, "finished_at": None,
            "duration_s": 0.0, "usage": usage_dict(None), "error": None}


def _formation_paths(formation: Formation, prefix: str) -> set[str]:
    paths = set()
    for name, attrs in formation.graph.nodes(data=True):
        if attrs.get("kind") == "formation":
            paths.add(prefix + name)
            paths |= _formation_paths(attrs["formation"], f"{prefix}{name}/")
    return paths


def settled(run: RunOut, result: FormationResult) -> RunOut:
    """The record of a run that finished: ``succeeded``, or ``suspended`` by ``interrupt()``
    (with its pending interrupt and the outputs it had)."""
    return run.model_copy(update={
        "status": "suspended" if result.status == "suspended" else "succeeded",
        "interrupt": jsonable(result.interrupt), "output": jsonable(result.output),
        "outputs": jsonable(result.outputs), "nodes": {k: _node_trace(v) for k, v in result.nodes.items()},
        "usage": usage_dict(result.usage), "duration_s": result.duration_s,
    })


_ZERO_USAGE = ZERO_USAGE.model_dump()


def _node_trace(trace: NodeTrace) -> dict[str, Any]:
    """``jsonable(trace.to_dict())`` with its wall-clock times in RFC 3339, built field by
    field (the same JSON, without encoding what is plain data already)."""
    usage = trace.usage
    return {
        "name": trace.name, "status": trace.status.value, "attempts": trace.attempts, "visits": trace.visits,
        "started_at": rfc3339(trace.started_at), "finished_at": rfc3339(trace.finished_at),
        "duration_s": trace.duration_s, "usage": dict(_ZERO_USAGE) if usage is ZERO_USAGE else usage.model_dump(),
        "error": trace.error, "output": jsonable(trace.output), "outputs": jsonable(trace.outputs),
    }


def cancelled(run: RunOut, tracker: Tracker, started: float, reason: str, status: str = "cancelled",
              cut_at: Mapping[str, float] = _NO_TIMES) -> RunOut:
    """The record of a run cancelled (or, with ``status="interrupted"``, cut short by the
    server stopping) before it finished: the node traces so far (``cut_at``: as in
    :meth:`Tracker.traces`) and ``reason``."""
    return run.model_copy(update={
        "status": status, "nodes": tracker.traces(ended=True, cut_at=cut_at), "error": reason, "error_kind": "cancelled" if status == "cancelled" else None,
        "duration_s": time.perf_counter() - started,
    })


def failure(exc: BaseException, timed_out: bool, entry: Collection[str] = ()) -> tuple[int, str]:
    """The status and ``kind`` of a failed run: ``input`` (400) when the run's input did not
    fit an entry node, ``mismatch`` (409) when a resumed run's nested formation changed shape
    since the run began, else the provider's failure (502/504), a timeout, or ``runtime`` (500)."""
    if getattr(exc, "node", None) in entry and any(isinstance(e, PayloadError) for e in _chain(exc)):
        return 400, "input"
    if any(isinstance(e, FormationMismatchError) for e in _chain(exc)):
        return 409, "mismatch"
    agent_error = find_agent_error(exc)
    if agent_error is not None:
        return status_for_kind(agent_error.kind), agent_error.kind.value
    if timed_out or any(isinstance(e, NodeTimeoutError | RunTimeoutError) for e in _chain(exc)):
        return 504, "timeout"
    return 500, "runtime"


def out_of_time(started: float, timeout: float | None) -> bool:
    """Whether a run begun at ``started`` (``time.perf_counter()``) used up its ``timeout``
    (within 1 %: a timer may fire that much early), so its failure is the timeout's."""
    return timeout is not None and time.perf_counter() - started >= timeout * 0.99


def run_error(record: RunOut, status: int, kind: str) -> ApiError:
    """The error answering the failed run ``record`` (a formation's or a fleet's, its outcome
    committed): its ``error`` quoted, ``kind``, ``run_id`` and the ``node`` that failed."""
    return ApiError(status, f"{record.kind} run {record.id} failed: {record.error}", kind=kind, run_id=record.id,
                    node=record.failed_node, fields=["input"] if kind == "input" else None)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    current: BaseException | None = exc
    while current is not None:
        yield current
        current = current.__cause__


def _one_id(value: Any, library_id: str | None, run_id: str) -> Any:
    """``value`` with the runtime's own id of a run replaced by the server's record id, so
    one run has one id in every message."""
    if not library_id or library_id == run_id:
        return value
    if isinstance(value, str):
        return value.replace(library_id, run_id)
    if isinstance(value, dict):
        return {k: _one_id(v, library_id, run_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_one_id(v, library_id, run_id) for v in value]
    return value


def failed(run: RunOut, exc: BaseException, tracker: Tracker, started: float, timed_out: bool,
            entry: Collection[str] = ()) -> RunOut:
    _, kind = failure(exc, timed_out, entry)
    outputs = getattr(exc, "outputs", {}) or {}
    message = exc.message if isinstance(exc, FormationRuntimeError) else f"{type(exc).__name__}: {exc}"
    if kind == "input":
        message = f"input: does not fit the entry node {getattr(exc, 'node', '')!r}: {message}"
    message = _one_id(message, getattr(exc, "run_id", None), run.id)
    return run.model_copy(update={
        "status": "failed", "outputs": jsonable(outputs), "nodes": tracker.traces(ended=True, cut_at=cut_times(exc)),
        "error": message, "error_kind": kind,
        "failed_node": getattr(exc, "node", None), "duration_s": time.perf_counter() - started,
    })


def event_dict(event: FormationEvent, run_id: str, timed_out: bool, entry: Collection[str]) -> dict[str, Any]:
    data = {k: v for k, v in event.data.items() if k not in ("result", "exception")}
    if event.type is FormationEventType.RUN_FINISHED:
        result: FormationResult = event.data["result"]
        data.update(output=result.output, outputs=result.outputs, status=result.status, interrupt=result.interrupt)
    elif event.type is FormationEventType.RUN_FAILED:
        data["kind"] = failure(event.data["exception"], timed_out, entry)[1]
    return {"type": event.type.value, "run_id": run_id, "node": event.node, "timestamp": rfc3339(event.timestamp),
            "data": _one_id(jsonable(data), event.run_id, run_id)}


