"""``/fleets``: one stored agent run over many tasks at once, blocking or as SSE.

A task that fails does not fail the request: its result carries ``error`` and
``error_kind``, the others their answers. A blocking run that outlasts the server's request
timeout is a 504, as a formation run's is (its tasks stopped first, its record kept).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter
from starlette.responses import Response

from ..agents._fleet import Fleet, FleetResult, Task
from ._context import ServerContext
from ._convert import error_kind, jsonable, usage_dict
from ._deps import Ctx
from ._errors import ApiError
from ._run_outcome import out_of_time, run_error
from ._schemas import (
    AgentOut,
    FleetCreate,
    FleetOut,
    FleetResultOut,
    FleetRunIn,
    FleetUpdate,
    RunOut,
    StatusOut,
)
from ._sse import Event, ThreadedStream
from ._streaming import Canceller, start_stream

__all__ = ["router"]

router = APIRouter(prefix="/fleets", tags=["fleets"])


@router.post("", status_code=201, summary="Create a fleet")
async def create(body: FleetCreate, ctx: Ctx, response: Response) -> FleetOut:
    """``agent_id`` must name a stored agent (404 otherwise); ``work_dir`` must lie under the work root."""

    def apply() -> FleetOut:
        ctx.store.get_agent(body.agent_id)
        work_dir = None if body.work_dir is None else ctx.resolve_work_dir(body.work_dir)
        return ctx.store.create_fleet(body.name, body.agent_id, body.worker_count, work_dir)

    fleet = await ctx.pool.run(apply)
    response.headers["Location"] = f"/fleets/{fleet.id}"
    return fleet


@router.get("", summary="List fleets (newest first)")
async def list_all(ctx: Ctx) -> list[FleetOut]:
    """Every stored fleet."""
    return await ctx.pool.run(ctx.store.list_fleets)


@router.get("/{id}", summary="Get a fleet")
async def get_one(id: str, ctx: Ctx) -> FleetOut:
    """404 for an unknown id."""
    return await ctx.pool.run(ctx.store.get_fleet, id)


@router.put("/{id}", summary="Update a fleet (omitted fields unchanged)")
async def update(id: str, body: FleetUpdate, ctx: Ctx) -> FleetOut:
    """A partial update of name, agent_id, worker_count, work_dir (``null`` work_dir: the root)."""
    changes = body.model_dump(exclude_unset=True)
    for field in ("name", "agent_id", "worker_count"):
        if field in changes and changes[field] is None:
            raise ApiError(400, f"{field}: cannot be null", fields=[field])

    def apply() -> FleetOut:
        ctx.store.get_fleet(id)
        if "agent_id" in changes:
            ctx.store.get_agent(changes["agent_id"])
        if changes.get("work_dir") is not None:
            changes["work_dir"] = ctx.resolve_work_dir(changes["work_dir"])
        return ctx.store.update_fleet(id, changes)

    return await ctx.pool.run(apply)


@router.delete("/{id}", summary="Delete a fleet")
async def delete(id: str, ctx: Ctx) -> StatusOut:
    """``{"status": "deleted"}``; 404 for an unknown id."""
    await ctx.pool.run(ctx.store.delete_fleet, id)
    return StatusOut(status="deleted")


def _prepare(ctx: ServerContext, id: str, body: FleetRunIn) -> tuple[FleetOut, AgentOut, list[Task]]:
    fleet = ctx.store.get_fleet(id)
    agent = ctx.store.get_agent(fleet.agent_id)
    base = ctx.check_work_dir(fleet.work_dir) if fleet.work_dir else str(ctx.config.root)
    tasks = [
        Task(
            t.message,
            work_dir=base if t.work_dir is None else ctx.resolve_work_dir(t.work_dir, base=base, field=f"tasks[{i}].work_dir"),
            instructions=t.instructions,
            data=t.data,
        )
        for i, t in enumerate(body.tasks)
    ]
    return fleet, agent, tasks


def _result(r: FleetResult) -> FleetResultOut:
    result = r.result
    return FleetResultOut(
        task_index=r.task_index, worker_name=r.worker_name, response=r.response,
        output=None if result is None else jsonable(result.output), steps=0 if result is None else result.steps,
        usage=usage_dict(None if result is None else result.usage), data=r.data,
        error=None if r.error is None else str(r.error),
        error_kind=None if r.error is None else error_kind(r.error),
    )


def _finished(run: RunOut, results: list[FleetResultOut], started: float) -> RunOut:
    """The run record of a fleet run that returned ``results``: ``failed`` when a task failed."""
    failed = [r for r in results if r.error is not None]
    usage: dict[str, int] = {}
    for r in results:
        for k, v in r.usage.items():
            usage[k] = usage.get(k, 0) + v
    error = None
    if failed:
        error = f"{len(failed)} of {len(results)} task(s) failed; task {failed[0].task_index}: {failed[0].error}"
    return run.model_copy(update={
        "status": "failed" if failed else "succeeded", "output": [r.model_dump(mode="json") for r in results],
        "usage": usage, "error": error, "error_kind": failed[0].error_kind if failed else None,
        "duration_s": time.perf_counter() - started,
    })


def _ended(run: RunOut, exc: BaseException, started: float) -> RunOut:
    """The run record of a fleet run that ended with ``exc`` before returning results."""
    cancelled = isinstance(exc, GeneratorExit)
    return run.model_copy(update={
        "status": "cancelled" if cancelled else "failed", "duration_s": time.perf_counter() - started,
        "error": "the client disconnected before the run finished" if cancelled else f"{type(exc).__name__}: {exc}",
        "error_kind": "cancelled" if cancelled else error_kind(exc),
    })


def _task_input(tasks: list[Task]) -> list[dict[str, Any]]:
    return [jsonable({"message": t.message, "work_dir": t.work_dir, "instructions": t.instructions, "data": t.data})
            for t in tasks]


def _run_fleet(ctx: ServerContext, id: str, body: FleetRunIn, deadline: float) -> list[FleetResultOut]:
    record, agent_record, tasks = _prepare(ctx, id, body)
    with ctx.runnable_agent(agent_record) as agent:
        run = ctx.store.create_fleet_run(record, _task_input(tasks))
        started = time.perf_counter()
        remaining = max(0.01, deadline - time.monotonic())
        fleet = Fleet(agent, tasks, max_workers=record.worker_count, timeout=remaining)
        # Tasks waiting for a worker would start after the deadline: cancel what is left then.
        timer = threading.Timer(remaining, fleet.cancel, args=("the request timed out",))
        timer.name = "wingman-server-fleet-deadline"
        timer.start()
        try:
            results = [_result(r) for r in fleet.run()]
        except BaseException as exc:
            ctx.store.finish_run(_ended(run, exc, started))
            raise
        finally:
            timer.cancel()
            timer.join()
    finished = _finished(run, results, started)
    if out_of_time(started, remaining) and any(r.error_kind in ("timeout", "cancelled") for r in results):
        done = sum(r.error is None for r in results)
        finished = finished.model_copy(update={"error_kind": "timeout", "error": (
            f"the run took longer than the server's {ctx.config.request_timeout:g}s request timeout "
            f"(--request-timeout): {done} of {len(results)} task(s) finished (their results: GET /runs/{run.id}); "
            "send fewer tasks at once, or raise the timeout")})
        ctx.store.finish_run(finished)
        raise run_error(finished, 504, "timeout")  # as a formation run's: nothing of the run is left running
    ctx.store.finish_run(finished)
    return results


@router.post("/{id}/run", summary="Run the fleet's agent over tasks and wait for every result")
async def run(id: str, body: FleetRunIn, ctx: Ctx) -> list[FleetResultOut]:
    """``{"tasks": [{"message", "work_dir", "instructions", "data"}]}`` → one result per task,
    in task order: task_index, worker_name, response, output, steps, usage, data, error, error_kind.
    A run that outlasts the request timeout is a 504 (``kind`` = ``timeout``, with ``run_id``:
    its record holds the results of the tasks that finished)."""
    deadline = time.monotonic() + ctx.config.request_timeout
    return await ctx.pool.run(_run_fleet, ctx, id, body, deadline)


def _stream_fleet(ctx: ServerContext, record: FleetOut, agent_record: AgentOut, tasks: list[Task],
                  canceller: Canceller) -> Iterator[Event]:
    seen: list[FleetResultOut] = []
    with ctx.runnable_agent(agent_record) as agent:
        fleet = Fleet(agent, tasks, max_workers=record.worker_count)
        canceller.target = fleet
        if canceller.cancelled.is_set():
            return
        run = ctx.store.create_fleet_run(record, _task_input(tasks))
        started = time.perf_counter()
        results = fleet.run_stream()  # a generator: closing it cancels what has not started
        try:
            for r in results:
                out = _result(r)
                seen.append(out)
                yield "result", {**out.model_dump(mode="json"), "run_id": run.id}
        except BaseException as exc:
            ctx.store.finish_run(_ended(run, exc, started))
            raise
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()
    ordered = sorted(seen, key=lambda r: r.task_index)
    ctx.store.finish_run(_finished(run, ordered, started))
    yield "done", {"tasks": len(seen), "failed": sum(r.error is not None for r in seen), "run_id": run.id}


@router.post("/{id}/run/stream", summary="Run the fleet and stream one SSE event per finished task")
async def run_stream(id: str, body: FleetRunIn, ctx: Ctx) -> Response:
    """``event: result`` per task as workers finish (completion order), then ``event: done``."""
    record, agent_record, tasks = await ctx.pool.run(_prepare, ctx, id, body)
    canceller = Canceller()
    stream = ThreadedStream(ctx.pool, lambda: _stream_fleet(ctx, record, agent_record, tasks, canceller), canceller)
    return await start_stream(stream)
