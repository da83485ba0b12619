"""``/runs``: the record of every formation and fleet run; cancelling a formation run in
flight, and resuming one that was suspended, failed, cancelled or interrupted."""

from __future__ import annotations

import math
import time
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from ..store import FormationMismatchError, RunNotResumableError, UnknownRunError
from ._context import ServerContext
from ._deps import ONCE, Ctx, context_of, empty_as_default, json_response
from ._errors import ApiError
from ._flights import Flight, flight, outcome, settle_wait
from ._recovery import BECOMES, refreshed
from ._schemas import RUN_STATUSES, RunOut, RunResumeIn
from ._started import started

__all__ = ["router"]

router = APIRouter()

_STATUSES = RUN_STATUSES
_RESUMABLE = ("suspended", "failed", "cancelled", "interrupted")
_CANCELLABLE = ("suspended", "interrupted")  # not in flight, not finished: waiting to be resumed
_REGISTER_WAIT_S = 1.0


def _conflict(run: RunOut, what: str, why: str, kind: str | None = None) -> ApiError:
    return ApiError(409, f"run {run.id} cannot be {what}: {why}", kind=kind or run.status, run_id=run.id,
                    run_status=run.status)


@router.get("/runs", tags=["runs"], summary="List recorded formation and fleet runs (newest first)", dependencies=ONCE)
async def list_runs(
    ctx: Ctx,
    formation_id: str | None = Query(default=None, description="only this formation's runs"),
    fleet_id: str | None = Query(default=None, description="only this fleet's runs"),
    status: str | None = Query(default=None, description=f"only runs with this status: {', '.join(_STATUSES)}"),
    limit: int = Query(default=100, ge=1, le=1000),
) -> list[RunOut]:
    """Every formation and fleet run is recorded when it starts and updated when it ends.
    ``?status=suspended`` lists the runs waiting for an answer."""
    if status is not None and status not in _STATUSES:
        raise ApiError(400, f"status: unknown run status {status!r}; use one of {', '.join(_STATUSES)}",
                       fields=["status"])

    def read() -> list[RunOut]:
        found = [refreshed(ctx.store, ctx.journal, r) for r in ctx.store.list_runs(formation_id, limit, fleet_id, status)]
        if status is None:
            return found
        found = [r for r in found if r.status == status]
        # a record whose journal moved on is listed with its new status: one recorded running
        # whose server has died since (another server sharing the run store, or a process on
        # this file) is interrupted; one suspended or interrupted that another process
        # cancelled (`wingman-actors runs cancel`) is cancelled; one suspended too long expired
        stale = [refreshed(ctx.store, ctx.journal, r)
                 for was in BECOMES.get(status, ()) for r in ctx.store.list_runs(formation_id, limit, fleet_id, was)]
        if stale:
            found = sorted([*found, *(r for r in stale if r.status == status)], key=lambda r: r.id, reverse=True)
        return found[:limit]

    return await ctx.pool.run(read)


@router.get("/runs/{id}", tags=["runs"], summary="Get a run: status, per-node traces, outputs, interrupt, error")
async def get_run(id: str, ctx: Ctx) -> RunOut:
    """404 for an unknown id. A suspended run shows its pending ``interrupt``
    (``{"node", "payload"}``); one that waited past the server's suspend time is ``expired``."""

    def read() -> RunOut:
        return refreshed(ctx.store, ctx.journal, ctx.store.get_run(id))

    return await ctx.pool.run(read)


# -- cancel ---------------------------------------------------------------------------


def _in_flight(ctx: ServerContext, run: RunOut) -> Flight | None:
    """The run's flight; a run just recorded may take a moment to be registered."""
    deadline = time.monotonic() + (_REGISTER_WAIT_S if run.status == "running" else 0.0)
    while True:
        current = ctx.flights.get(run.id)
        if current is not None or time.monotonic() >= deadline:
            return current
        time.sleep(0.01)


def _cancel(ctx: ServerContext, id: str, response: Response) -> RunOut:
    run = ctx.store.get_run(id)
    current = _in_flight(ctx, run)
    if current is not None:
        cancelled = current.cancel("cancelled with POST /runs/{id}/cancel".replace("{id}", id))
        if cancelled is not None:
            return cancelled
        settle_wait(current)  # it was just finishing: answer with how it ended
        run = ctx.store.get_run(id)
    run = refreshed(ctx.store, ctx.journal, run)
    if run.kind != "formation":
        raise _conflict(run, "cancelled", "it is a fleet run; only formation runs can be cancelled here", "fleet")
    if run.status == "running":  # in another server process sharing the run store: ask it to
        if _request_cancel(ctx, id):
            response.status_code = 202
            return run
        run = refreshed(ctx.store, ctx.journal, ctx.store.get_run(id))  # it ended meanwhile
    if run.status in _CANCELLABLE:
        ctx.journal.set_status(id, "cancelled", wait=True)
        return ctx.store.set_run_status(id, "cancelled", f"cancelled with POST /runs/{id}/cancel while {run.status}",
                                        interrupt=run.interrupt, error_kind="cancelled")
    if run.status == "running":
        raise _conflict(run, "cancelled", "it is running in another server process, and its run store takes no "
                                          "cancel request; cancel it there")
    raise _conflict(run, "cancelled", f"it has already finished ({run.status})")


def _request_cancel(ctx: ServerContext, id: str) -> bool:
    """Ask the process running run ``id`` to cancel it, through the run store; whether it
    was asked (False: the run is not running there, or the store takes no requests)."""
    request = getattr(ctx.journal, "request_cancel", None)  # (a JournalStore need not have it)
    try:
        return request is not None and bool(request(id))
    except UnknownRunError:  # a run the journal does not have
        return False


@router.post("/runs/{id}/cancel", tags=["runs"], summary="Cancel a formation run",
             responses={202: {"model": RunOut, "description": "The run, still running: it runs in another server "
                                                                 "process sharing the run store, which was asked to "
                                                                 "cancel it (it does within a second)."}})
async def cancel(id: str, ctx: Ctx, response: Response) -> RunOut:
    """Cancel a formation run in flight (its nodes stop at their next boundary; a function
    node's attempt is abandoned), or a suspended or interrupted run waiting to be resumed:
    200 with the run, now ``cancelled`` (it can still be resumed). A run in flight on
    another server process sharing the run store is asked to stop through the store
    (``RunStore.request_cancel``): 202 with the run, still ``running``; that server
    cancels it within a second (read it with ``GET /runs/{id}``). 404 for an unknown run;
    409 (``status`` says which) when it has already finished or is a fleet run."""
    return await ctx.pool.run(_cancel, ctx, id, response)


# -- resume ---------------------------------------------------------------------------


def _resume(ctx: ServerContext, id: str, body: RunResumeIn, deadline: float) -> RunOut:
    run = refreshed(ctx.store, ctx.journal, ctx.store.get_run(id))
    if run.kind != "formation" or run.formation_id is None:
        raise _conflict(run, "resumed", "it is a fleet run; only formation runs are journalled", "fleet")
    if run.status not in _RESUMABLE:
        why = {"running": "it is running; wait for it, or cancel it first",
               "succeeded": "it has already succeeded",
               "expired": "it waited for an answer longer than the server's suspend time; start a new run"}
        raise _conflict(run, "resumed", why.get(run.status, f"it is {run.status}"))
    try:
        entry = ctx.declarations.load(ctx, run.formation_id)
    except ApiError:
        raise _conflict(run, "resumed", f"its formation {run.formation_id} was deleted; a run resumes with the "
                                        "formation that began it", "formation_deleted") from None
    with started(ctx, entry) as formation:
        timeout = min(body.timeout or math.inf, max(0.01, deadline - time.monotonic()))
        with flight(ctx, formation, run) as current:
            try:
                future = current.resume(body.answer, timeout)
            except FormationMismatchError as exc:
                raise ApiError(409, f"run {id} cannot be resumed: its formation was changed since the run began "
                                    f"({'; '.join(exc.differences)}); start a new run", kind="mismatch",
                               run_id=id, run_status=run.status) from None
            except RunNotResumableError as exc:
                if exc.status == "expired":
                    run = refreshed(ctx.store, ctx.journal, run)
                raise ApiError(409, str(exc), kind=exc.status, run_id=id, run_status=exc.status) from None
            except UnknownRunError:
                raise ApiError(409, f"run {id} cannot be resumed: it is not in the run journal (it began before "
                                    "runs were journalled)", kind="not_journalled", run_id=id,
                               run_status=run.status) from None
            except ValueError as exc:  # an answer for a run with no pending interrupt
                raise ApiError(400, f"answer: {exc}", fields=["answer"], run_id=id) from None
            current.record = ctx.store.reopen_run(id)
            return outcome(current, future, timeout, formation.entry)


@router.post("/runs/{id}/resume", tags=["runs"], summary="Resume a suspended, failed, cancelled or interrupted run",
             response_model=RunOut)
async def resume(id: str, body: Annotated[RunResumeIn, empty_as_default(RunResumeIn)], request: Request) -> Response:
    """``{"answer": ..., "timeout": seconds?}`` (both optional) → the run, continued and
    waited for as ``POST /formations/{id}/run`` does. Node visits already journalled are not
    run again; a suspended run's pending ``interrupt()`` returns ``answer``. 400 for an
    ``answer`` to a run with no pending interrupt; 404 for an unknown run; 409 when it
    cannot be resumed (``kind``: its status, ``mismatch`` when its formation changed shape,
    ``formation_deleted``, ``not_journalled``, ``fleet``); a resumed run that fails answers as a run does (500/502/504)."""
    ctx = context_of(request)
    deadline = time.monotonic() + ctx.config.request_timeout
    return json_response(await ctx.pool.run(_resume, ctx, id, body, deadline))
