"""Time travel over HTTP: ``GET /runs/{id}/history`` (a formation run's node visits in the
order they finished, ``RunStore.history``) and ``POST /runs/{id}/fork`` (a new run reusing
the journal before one visit, with that visit's output replaced or run again with another
input, as ``Formation.fork`` does; the original run is left unchanged)."""

from __future__ import annotations

import math
import time

from fastapi import APIRouter
from starlette.responses import Response

from ..formation._fork import UNSET, ForkPointError, begin_fork, unknown_fork_node
from ..store import FormationMismatchError, UnknownRunError
from ._context import ServerContext
from ._convert import jsonable
from ._deps import Ctx
from ._errors import ApiError
from ._flights import flight, outcome
from ._ids import new_id
from ._recovery import refreshed
from ._schemas import RunForkIn, RunOut, VisitOut
from ._started import started

__all__ = ["router"]

router = APIRouter()


def _formation_run(ctx: ServerContext, id: str, what: str) -> tuple[RunOut, str]:
    """Run ``id``'s record (404) and its formation's id; 409 ``fleet`` for a fleet run."""
    run = refreshed(ctx.store, ctx.journal, ctx.store.get_run(id))
    if run.kind != "formation" or run.formation_id is None:
        raise ApiError(409, f"run {id} cannot be {what}: it is a fleet run; only formation runs are journalled",
                       kind="fleet", run_id=id, run_status=run.status)
    return run, run.formation_id


def _not_journalled(run: RunOut, what: str) -> ApiError:
    return ApiError(409, f"run {run.id} cannot be {what}: it is not in the run journal (it began before runs were "
                         "journalled, or its journal was pruned after --journal-retention)",
                    kind="not_journalled", run_id=run.id, run_status=run.status)


def _history(ctx: ServerContext, id: str) -> list[VisitOut]:
    run, _ = _formation_run(ctx, id, "read step by step")
    try:
        visits = ctx.journal.history(id)  # type: ignore[attr-defined]
    except UnknownRunError:
        raise _not_journalled(run, "read step by step") from None
    return [VisitOut(node=v.node, visit=v.visit, status=v.status, output=jsonable(v.output),
                     started=None if v.started is None else v.started.isoformat().replace("+00:00", "Z"),
                     finished=None if v.finished is None else v.finished.isoformat().replace("+00:00", "Z"),
                     error=v.error, attempts=v.attempts)
            for v in visits]


@router.get("/runs/{id}/history", tags=["runs"], summary="List a formation run's node visits in order")
async def history(id: str, ctx: Ctx) -> list[VisitOut]:
    """Each node visit of the run, in the order they finished: ``node``, ``visit`` (its
    number), ``status`` (``succeeded``, ``failed`` into its error edges or as the visit
    that failed the run, ``skipped``, or ``suspended`` at an interrupt), ``output``, times,
    and a failed visit's ``error`` and ``attempts``. Fork the run at one with ``POST /runs/{id}/fork``. 404 for an
    unknown run; 409 for a fleet run (``kind: fleet``) or one not in the run journal
    (``kind: not_journalled``)."""
    return await ctx.pool.run(_history, ctx, id)


def _fork(ctx: ServerContext, id: str, body: RunForkIn, deadline: float) -> RunOut:
    original, formation_id = _formation_run(ctx, id, "forked")
    try:
        entry = ctx.declarations.load(ctx, formation_id)
    except ApiError:
        raise ApiError(409, f"run {id} cannot be forked: its formation {formation_id} was deleted; a run "
                            "forks with the formation that began it", kind="formation_deleted", run_id=id,
                       run_status=original.status) from None
    given = body.model_fields_set
    at = body.target()
    record = entry.record
    with started(ctx, entry) as one:
        formation = one.formation
        node = at if isinstance(at, str) else at[0]
        if node not in formation.graph:
            raise ApiError(400, f"at: {unknown_fork_node(formation, node)}", fields=["at"], run_id=id)
        timeout = min(body.timeout or math.inf, max(0.01, deadline - time.monotonic()))
        try:
            fork_id = begin_fork(formation, ctx.journal, id, at=at, new_id=new_id(),
                                 output=body.output if "output" in given else UNSET,
                                 input=body.input if "input" in given else UNSET)
        except UnknownRunError:
            raise _not_journalled(original, "forked") from None
        except FormationMismatchError as exc:
            raise ApiError(409, f"run {id} cannot be forked: its formation was changed since the run began "
                                f"({'; '.join(exc.differences)})", kind="mismatch", run_id=id,
                           run_status=original.status) from None
        except ForkPointError as exc:  # a visit the run never made
            raise ApiError(400, f"at: {str(exc).removeprefix('fork: ')}", fields=["at"], run_id=id) from None
        except ValueError as exc:  # an output or input that node cannot be given (the node is known)
            field = "output" if "output" in given else "input"
            raise ApiError(400, f"{field}: {str(exc).removeprefix('fork: ')}", fields=[field], run_id=id) from None
        run = ctx.store.create_run(record, jsonable(ctx.journal.get(fork_id).input), id=fork_id)
        with flight(ctx, one, run) as current:
            future = current.resume(timeout=timeout)
            return outcome(current, future, timeout, one.entry)


@router.post("/runs/{id}/fork", status_code=201, tags=["runs"],
             summary="Fork a formation run at a node visit, with its output replaced or its input changed")
async def fork(id: str, body: RunForkIn, ctx: Ctx, response: Response) -> RunOut:
    """``{"at": "node" | ["node", visit], "output": ...}`` (or ``"input": ...`` instead of
    ``output``; ``"timeout"`` optional) → 201 with the new run, run to its end as ``POST
    /formations/{id}/run`` does. The new run reuses the journal before that visit (those
    visits are not run again), takes ``output`` as the visit's output (or runs the visit
    again with ``input``) and continues; the original run is unchanged. 400 for an unknown
    node, a visit the run never made, an ``output`` that does not fit the node's output type
    or an ``input`` that node cannot be given; 404 for an
    unknown run; 409 (``kind``) for a fleet run, one not journalled, its formation deleted
    or changed (``mismatch``);
    a new run that fails answers as a run does (500/502/504, with its ``run_id``)."""
    deadline = time.monotonic() + ctx.config.request_timeout
    run = await ctx.pool.run(_fork, ctx, id, body, deadline)
    response.headers["Location"] = f"/runs/{run.id}"
    return run
