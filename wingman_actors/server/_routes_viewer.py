"""The run viewer's JSON routes on the server (``/ui/api/...``): what the page at ``/ui/``
shows, readable by anyone with the token. The page's actions use the API's own routes
(``POST /formations/{id}/run/stream``, ``POST /runs/{id}/resume``, ``POST /runs/{id}/cancel``).

``wingman-actors ui --store PATH`` answers the same routes from a launcher's run store
(:mod:`._viewer_store`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Query
from starlette.responses import Response, StreamingResponse

from ..formation.events import FormationEvent, FormationEventType
from ..store import UnknownRunError
from ._context import ServerContext
from ._deps import ONCE, Ctx
from ._errors import ApiError
from ._nesting import declaration_of, load_nested
from ._recovery import refreshed
from ._run_outcome import event_dict
from ._schemas import FormationOut, RunOut
from ._sse import encode
from ._viewer import Declaration, declaration_graph, run_view

__all__ = ["SSE_HEADERS", "VIEWER_STATUSES", "router"]

router = APIRouter(prefix="/ui/api", tags=["viewer"])

VIEWER_STATUSES = ("running", "succeeded", "failed", "cancelled", "suspended", "interrupted", "expired")
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_SETTLE_WAIT_S = 5.0
_ENDS = (FormationEventType.RUN_FINISHED, FormationEventType.RUN_FAILED, FormationEventType.RUN_CANCELLED)


def _formation(ctx: ServerContext, record: FormationOut) -> dict[str, Any]:
    nested: dict[str, Declaration] = {}
    if any(n.get("kind") == "formation" for n in record.nodes):  # its formation nodes drawn with their insides
        found = load_nested(ctx.store, declaration_of(record), record.id)
        nested = {fid: (d.stored_nodes(), d.stored_edges()) for fid, d in found.items()}
    return {"id": record.id, "name": record.name, "graph": declaration_graph(record.nodes, record.edges, nested)}


def _summary(run: RunOut) -> dict[str, Any]:
    return {"run_id": run.id, "formation_id": run.formation_id, "formation_name": run.formation_name,
            "status": run.status, "created_at": run.created_at, "finished_at": run.finished_at,
            "duration_s": run.duration_s}


def check_status(status: str | None) -> None:
    """400 for a ``status`` filter that is no run status."""
    if status is not None and status not in VIEWER_STATUSES:
        raise ApiError(400, f"status: unknown run status {status!r}; use one of {', '.join(VIEWER_STATUSES)}",
                       fields=["status"])


@router.get("/info", summary="What the viewer serves: the server's runs, with actions")
async def info() -> dict[str, Any]:
    """``{"mode": "server", "actions": true}`` (``ui --store`` answers ``"store"``)."""
    return {"mode": "server", "actions": True, "statuses": list(VIEWER_STATUSES)}


@router.get("/formations", summary="The formations, each with its graph laid out")
async def formations(ctx: Ctx) -> list[dict[str, Any]]:
    """``[{"id", "name", "graph": {"nodes": [{"name", "kind"}], "edges": [{"source", "target", "back",
    "conditional"}]}}]`` (the page lays the graph out), newest first."""
    def read() -> list[dict[str, Any]]:
        return [_formation(ctx, f) for f in ctx.store.list_formations()]

    return await ctx.pool.run(read)


@router.get("/runs", summary="Formation runs, newest first, filtered by status and formation", dependencies=ONCE)
async def runs(
    ctx: Ctx,
    status: str | None = Query(default=None, description="only runs with this status"),
    formation_id: str | None = Query(default=None, description="only this formation's runs"),
    limit: int = Query(default=100, ge=1, le=1000),
) -> list[dict[str, Any]]:
    """``[{"run_id", "formation_id", "formation_name", "status", "created_at", "finished_at", "duration_s"}]``."""
    check_status(status)

    def read() -> list[dict[str, Any]]:
        found = ctx.store.list_runs(formation_id, limit, None, status, kind="formation")  # the limit counts these only
        return [_summary(refreshed(ctx.store, ctx.journal, r)) for r in found]

    return await ctx.pool.run(read)


def _view(ctx: ServerContext, id: str) -> dict[str, Any]:
    record = refreshed(ctx.store, ctx.journal, ctx.store.get_run(id))
    if record.kind != "formation":
        raise ApiError(404, f"run {id} is a fleet run; the viewer shows formation runs (GET /runs/{id} has it)")
    traces = dict(record.nodes)
    current = ctx.flights.get(id)
    if current is not None:  # in flight: the live traces know which nodes are running
        traces = current.tracker.traces()
    try:
        view = run_view(ctx.journal, id, traces, record.status)  # type: ignore[arg-type]
    except UnknownRunError:
        raise ApiError(404, f"run {id} is not in the run journal yet (or began before runs were journalled); "
                            "try again in a moment") from None
    view.update(run_id=record.id, formation_id=record.formation_id, formation_name=record.formation_name,
                output=record.output, outputs=record.outputs, error=record.error or view.get("error"), error_kind=record.error_kind,
                usage=record.usage, duration_s=record.duration_s, created_at=record.created_at,
                finished_at=record.finished_at, resume=None)
    return view


@router.get("/runs/{id}", summary="One run: graph, node states, visits, agent steps")
async def run(id: str, ctx: Ctx) -> dict[str, Any]:
    """The run's record, its formation's graph, each node's status, visits, attempts,
    timings, usage, error and outputs (``nodes``), every journalled visit with its input and
    output (``visits``), and agent nodes' journalled steps (``steps``). 404 for an unknown run."""
    return await ctx.pool.run(_view, ctx, id)


async def _settled(ctx: ServerContext, id: str) -> None:
    """Wait (a few seconds at most) until a run that just ended has its record written, so
    a page that reads the run at ``end`` sees how it ended."""
    current = ctx.flights.get(id)
    deadline = time.monotonic() + _SETTLE_WAIT_S
    while current is not None and not current.settled.is_set() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


@router.get("/runs/{id}/stream", summary="A run's events: those so far, then live until it ends")
async def stream(id: str, ctx: Ctx) -> Response:
    """SSE: one event per formation event (as ``POST /formations/{id}/run/stream`` sends them),
    replayed from the run's start when the server still has them, then live; ``end`` once the
    run has ended (at once for a run not in flight). 404 for an unknown run."""
    await ctx.pool.run(ctx.store.get_run, id)
    log = ctx.flights.logs.get(id)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[FormationEvent | None] = asyncio.Queue()

    def listener(event: FormationEvent | None) -> None:
        with contextlib.suppress(RuntimeError):  # the event loop is closed: nobody listens any more
            loop.call_soon_threadsafe(queue.put_nowait, event)

    history, ended = log.listen(listener) if log is not None else ([], True)

    async def body() -> AsyncIterator[bytes]:
        try:
            for event in history:
                yield encode(event.type.value, event_dict(event, id, False, ()))
            if not ended and not any(e.type in _ENDS for e in history):
                while (live := await queue.get()) is not None:
                    yield encode(live.type.value, event_dict(live, id, False, ()))
                    if live.type in _ENDS:
                        break
            await _settled(ctx, id)
            yield encode("end", {"run_id": id})
        finally:
            if log is not None:
                log.unlisten(listener)

    return StreamingResponse(body(), media_type="text/event-stream", headers=SSE_HEADERS)
