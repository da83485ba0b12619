"""``/formations`` (declarations, runs, streamed runs) and ``/runs`` (the record of every run)."""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Collection, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from fastapi import APIRouter, Query
from starlette.responses import Response

from ..actors.nodes import PayloadError
from ..errors import FormationRuntimeError
from ..formation import Formation
from ..formation.events import FormationEvent, FormationEventType
from ..formation.result import FormationResult
from ..formation.runtime import NodeTimeoutError, RunningFormation
from ..orchestration import Blackboard
from .context import ServerContext
from .convert import jsonable, usage_dict
from .declaration import FormationDecl, build_formation, setup_error
from .deps import Ctx
from .errors import ApiError, find_agent_error, status_for_kind
from .ids import rfc3339
from .schemas import FormationOut, FormationRunIn, RunOut, StatusOut
from .sse import Event, ThreadedStream
from .streaming import Canceller, start_stream

__all__ = ["router"]

router = APIRouter()
_FINAL = (FormationEventType.RUN_FINISHED, FormationEventType.RUN_FAILED)


# -- declarations ---------------------------------------------------------------------


def _validated(ctx: ServerContext, decl: FormationDecl) -> None:
    ids = {n.agent_id for n in decl.nodes if n.agent_id}
    agents = {}
    for agent in ctx.store.list_agents():
        if agent.id in ids:
            agents[agent.id] = ctx.declared_agent(agent)
    build_formation(decl, ctx.functions, agents)


@router.post("/formations", status_code=201, tags=["formations"], summary="Create a formation")
async def create(body: FormationDecl, ctx: Ctx, response: Response) -> FormationOut:
    """Validated in full first: 400 lists every problem (unknown agents, functions,
    predicates, edges, types, cycles without a condition...)."""

    def apply() -> FormationOut:
        _validated(ctx, body)
        return ctx.store.create_formation(body.name, body.stored_nodes(), body.stored_edges())

    formation = await ctx.pool.run(apply)
    response.headers["Location"] = f"/formations/{formation.id}"
    return formation


@router.get("/formations", tags=["formations"], summary="List formations (newest first)")
async def list_all(ctx: Ctx) -> list[FormationOut]:
    """Every stored formation."""
    return await ctx.pool.run(ctx.store.list_formations)


@router.get("/formations/{id}", tags=["formations"], summary="Get a formation")
async def get_one(id: str, ctx: Ctx) -> FormationOut:
    """404 for an unknown id."""
    return await ctx.pool.run(ctx.store.get_formation, id)


@router.put("/formations/{id}", tags=["formations"], summary="Replace a formation's declaration")
async def replace(id: str, body: FormationDecl, ctx: Ctx) -> FormationOut:
    """The whole declaration, validated as for create."""

    def apply() -> FormationOut:
        ctx.store.get_formation(id)
        _validated(ctx, body)
        return ctx.store.replace_formation(id, body.name, body.stored_nodes(), body.stored_edges())

    return await ctx.pool.run(apply)


@router.delete("/formations/{id}", tags=["formations"], summary="Delete a formation (its runs are kept)")
async def delete(id: str, ctx: Ctx) -> StatusOut:
    """``{"status": "deleted"}``; 404 for an unknown id."""
    await ctx.pool.run(ctx.store.delete_formation, id)
    return StatusOut(status="deleted")


# -- running --------------------------------------------------------------------------


def _load(ctx: ServerContext, id: str) -> tuple[FormationOut, FormationDecl]:
    record = ctx.store.get_formation(id)
    decl = FormationDecl.model_validate({"name": record.name, "nodes": record.nodes, "edges": record.edges})
    return record, decl


@contextmanager
def _runnable(ctx: ServerContext, decl: FormationDecl) -> Iterator[Formation]:
    """The formation with every agent built with its provider (closed afterwards)."""
    with ExitStack() as stack:
        agents = {}
        missing = []
        for agent_id in dict.fromkeys(n.agent_id for n in decl.nodes if n.agent_id):
            try:
                record = ctx.store.get_agent(agent_id)
            except ApiError:
                missing.append(f"agent {agent_id!r} no longer exists; update the formation with PUT /formations/{{id}}")
                continue
            agents[agent_id] = stack.enter_context(ctx.runnable_agent(record))
        if missing:
            raise setup_error(decl.name, missing)
        yield build_formation(decl, ctx.functions, agents)


class _Tracker:
    """Per-node traces built from a run's events (the record of a failed run)."""

    def __init__(self, decl: FormationDecl) -> None:
        self.lock = threading.Lock()
        self.nodes: dict[str, dict[str, Any]] = {
            n.name: {"name": n.name, "status": "pending", "attempts": 0, "visits": 0, "started_at": None,
                     "finished_at": None, "duration_s": 0.0, "usage": usage_dict(None), "error": None}
            for n in decl.nodes
        }

    def __call__(self, event: FormationEvent) -> None:
        node = self.nodes.get(event.node or "")
        if node is None:
            return
        data, kind = event.data, event.type
        with self.lock:
            if kind is FormationEventType.NODE_STARTED:
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
                node["status"] = "skipped"
                node["error"] = data.get("error") or node["error"]


def _succeeded(run: RunOut, result: FormationResult) -> RunOut:
    return run.model_copy(update={
        "status": "succeeded", "output": jsonable(result.output), "outputs": jsonable(result.outputs),
        "nodes": _traces({k: v.to_dict() for k, v in result.nodes.items()}), "usage": usage_dict(result.usage),
        "duration_s": result.duration_s,
    })


def _failure(exc: BaseException, timed_out: bool, entry: Collection[str] = ()) -> tuple[int, str]:
    """The status and ``kind`` of a failed run: ``input`` (400) when the run's input did not
    fit an entry node, else the provider's failure (502/504), a timeout, or ``runtime`` (500)."""
    if getattr(exc, "node", None) in entry and any(isinstance(e, PayloadError) for e in _chain(exc)):
        return 400, "input"
    agent_error = find_agent_error(exc)
    if agent_error is not None:
        return status_for_kind(agent_error.kind), agent_error.kind.value
    if timed_out or any(isinstance(e, NodeTimeoutError) for e in _chain(exc)):
        return 504, "timeout"
    return 500, "runtime"


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


def _traces(nodes: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Node traces with their wall-clock times in RFC 3339."""
    out = {}
    for name, trace in nodes.items():
        trace = dict(trace)
        for key in ("started_at", "finished_at"):
            if isinstance(trace.get(key), int | float):
                trace[key] = rfc3339(trace[key])
        out[name] = trace
    return out


def _failed(run: RunOut, exc: BaseException, tracker: _Tracker, started: float, timed_out: bool,
            entry: Collection[str] = ()) -> RunOut:
    _, kind = _failure(exc, timed_out, entry)
    outputs = getattr(exc, "outputs", {}) or {}
    message = exc.message if isinstance(exc, FormationRuntimeError) else f"{type(exc).__name__}: {exc}"
    if kind == "input":
        message = f"input: does not fit the entry node {getattr(exc, 'node', '')!r}: {message}"
    message = _one_id(message, getattr(exc, "run_id", None), run.id)
    with tracker.lock:
        nodes = {k: dict(v) for k, v in tracker.nodes.items()}
    return run.model_copy(update={
        "status": "failed", "outputs": jsonable(outputs), "nodes": nodes, "error": message, "error_kind": kind,
        "failed_node": getattr(exc, "node", None), "duration_s": time.perf_counter() - started,
    })


def _run_formation(ctx: ServerContext, id: str, body: FormationRunIn, deadline: float) -> RunOut:
    record, decl = _load(ctx, id)
    with _runnable(ctx, decl) as formation:
        timeout = min(body.timeout or math.inf, max(0.01, deadline - time.monotonic()))
        run = ctx.store.create_run(record, jsonable(body.input))
        tracker = _Tracker(decl)
        started = time.perf_counter()
        entry = formation.validate().sources
        try:
            result = formation.run(body.input, timeout=timeout, on_event=tracker, work_dir=ctx.config.work_root,
                                   blackboard=Blackboard())  # one board per run, shared by its nodes
        except Exception as exc:
            timed_out = getattr(exc, "node", "") is None and time.perf_counter() - started >= timeout * 0.99
            failed = ctx.store.finish_run(_failed(run, exc, tracker, started, timed_out, entry))
            status, kind = _failure(exc, timed_out, entry)
            raise ApiError(
                status, f"formation run {failed.id} failed: {failed.error}", kind=kind, run_id=failed.id,
                node=failed.failed_node, fields=["input"] if kind == "input" else None,
            ) from exc
        return ctx.store.finish_run(_succeeded(run, result))


@router.post("/formations/{id}/run", tags=["formations"], summary="Run a formation and wait for its result")
async def run(id: str, body: FormationRunIn, ctx: Ctx) -> RunOut:
    """``{"input": ..., "timeout": seconds?}`` → the recorded run (status, outputs, node
    traces). A failed run answers 502/504 (provider failure or timeout, with ``kind``) or
    500 (``kind`` = ``runtime``), with ``run_id`` to read its record."""
    deadline = time.monotonic() + ctx.config.request_timeout
    return await ctx.pool.run(_run_formation, ctx, id, body, deadline)


class _Stop:
    """Wakes the streaming loop when the client leaves."""

    def __init__(self, events: queue.SimpleQueue[FormationEvent | None]) -> None:
        self.events = events

    def cancel(self, reason: str) -> None:
        self.events.put(None)


def _event_dict(event: FormationEvent, run_id: str, timed_out: bool, entry: Collection[str]) -> dict[str, Any]:
    data = {k: v for k, v in event.data.items() if k not in ("result", "exception")}
    if event.type is FormationEventType.RUN_FINISHED:
        result: FormationResult = event.data["result"]
        data.update(output=result.output, outputs=result.outputs)
    elif event.type is FormationEventType.RUN_FAILED:
        data["kind"] = _failure(event.data["exception"], timed_out, entry)[1]
    return {"type": event.type.value, "run_id": run_id, "node": event.node, "timestamp": rfc3339(event.timestamp),
            "data": _one_id(jsonable(data), event.run_id, run_id)}


def _stream_formation(
    ctx: ServerContext, record: FormationOut, decl: FormationDecl, body: FormationRunIn, canceller: Canceller
) -> Iterator[Event]:
    with _runnable(ctx, decl) as formation:
        plan = formation.validate()
        run = ctx.store.create_run(record, jsonable(body.input))
        tracker = _Tracker(decl)
        events: queue.SimpleQueue[FormationEvent | None] = queue.SimpleQueue()
        canceller.target = _Stop(events)
        started = time.perf_counter()
        finished = False
        try:
            # each run gets a fresh board: nodes of one run share it, runs never do
            with RunningFormation(plan, work_dir=ctx.config.work_root, blackboard=Blackboard()).start() as running:
                running.submit(body.input, timeout=body.timeout, on_event=events.put)
                while not canceller.cancelled.is_set():
                    event = events.get()
                    if event is None:
                        break
                    tracker(event)
                    timed_out = event.node is None and body.timeout is not None and (
                        time.perf_counter() - started >= body.timeout * 0.99)
                    yield event.type.value, _event_dict(event, run.id, timed_out, plan.sources)
                    if event.type is FormationEventType.RUN_FINISHED:
                        run = ctx.store.finish_run(_succeeded(run, event.data["result"]))
                        finished = True
                        break
                    if event.type is FormationEventType.RUN_FAILED:
                        run = ctx.store.finish_run(
                            _failed(run, event.data["exception"], tracker, started, timed_out, plan.sources))
                        finished = True
                        break
        finally:
            if not finished:
                run = ctx.store.finish_run(run.model_copy(update={
                    "status": "cancelled", "error": "the client disconnected before the run finished",
                    "error_kind": "cancelled", "duration_s": time.perf_counter() - started,
                }))
        yield "done", {"run_id": run.id, "status": run.status}


@router.post("/formations/{id}/run/stream", tags=["formations"], summary="Run a formation, streaming its events")
async def run_stream(id: str, body: FormationRunIn, ctx: Ctx) -> Response:
    """One SSE event per formation event, named by its type (``run_started``,
    ``node_started``, ``agent_text``, ``node_finished``, ``run_finished`` or ``run_failed``...),
    then ``done`` with the run id and status. No request timeout."""
    record, decl = await ctx.pool.run(_load, ctx, id)
    canceller = Canceller()
    stream = ThreadedStream(ctx.pool, lambda: _stream_formation(ctx, record, decl, body, canceller), canceller)
    return await start_stream(stream)


# -- runs -----------------------------------------------------------------------------


@router.get("/runs", tags=["runs"], summary="List recorded formation and fleet runs (newest first)")
async def list_runs(
    ctx: Ctx,
    formation_id: str | None = Query(default=None, description="only this formation's runs"),
    fleet_id: str | None = Query(default=None, description="only this fleet's runs"),
    limit: int = Query(default=100, ge=1, le=1000),
) -> list[RunOut]:
    """Every formation and fleet run is recorded when it starts and updated when it ends."""
    return await ctx.pool.run(ctx.store.list_runs, formation_id, limit, fleet_id)


@router.get("/runs/{id}", tags=["runs"], summary="Get a run: status, per-node traces, outputs, error")
async def get_run(id: str, ctx: Ctx) -> RunOut:
    """404 for an unknown id."""
    return await ctx.pool.run(ctx.store.get_run, id)
