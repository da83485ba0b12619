"""``/formations``: declarations, runs and streamed runs (their records: ``routes_runs``)."""

from __future__ import annotations

import math
import queue
import time
from collections.abc import Iterator
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Request
from starlette.responses import Response

from ..formation.events import FormationEvent, FormationEventType
from ._context import ServerContext
from ._convert import jsonable
from ._declaration import FormationDecl
from ._declarations import Entry
from ._deps import Ctx, context_of, empty_as_default, json_response
from ._errors import ApiError
from ._flights import flight, outcome
from ._loop_runs import run_on_loop
from ._nesting import agent_ids, build_nested, declaration_of, load_nested, nested_in, nesting_users
from ._plain_route import PlainJsonRoute
from ._run_outcome import cancelled, event_dict, out_of_time, settled
from ._schemas import FormationOut, FormationRunIn, RunOut, StatusOut
from ._sse import Event, ThreadedStream
from ._started import misfit, started
from ._streaming import Canceller, start_stream

__all__ = ["add_run_route", "router"]

router = APIRouter()
RunBody = Annotated[FormationRunIn, empty_as_default(FormationRunIn)]  # (no body: {})
# Routes are matched in their order, one by one: the runs' routes come first (the hot path;
# POST /formations/{id}/run is on the app's own router: add_run_route).


# -- running --------------------------------------------------------------------------


def _run_formation(ctx: ServerContext, id: str, body: FormationRunIn, deadline: float) -> RunOut:
    """A run on a worker thread: the declaration read, the formation started if need be."""
    entry = ctx.declarations.load(ctx, id)
    with started(ctx, entry) as formation:
        timeout = min(body.timeout or math.inf, max(0.01, deadline - time.monotonic()))
        run = ctx.store.create_run(entry.record, jsonable(body.input), wait=False)  # committed with begin_run
        with flight(ctx, formation, run) as current:
            future = current.submit(body.input, timeout)  # journalled on return
            return outcome(current, future, timeout, formation.entry)


async def run(id: str, body: RunBody, request: Request) -> Response:
    """``{"input": ..., "timeout": seconds?}`` → the recorded run (status, outputs, node
    traces); ``status`` is ``suspended`` (with ``interrupt``) when a node called
    ``interrupt()``: answer it with ``POST /runs/{id}/resume``. A failed run answers 502/504
    (provider failure or timeout, with ``kind``) or 500 (``kind`` = ``runtime``), a run
    cancelled meanwhile 409 (``kind`` = ``cancelled``), each with ``run_id`` to read its record."""
    ctx = context_of(request)
    deadline = time.monotonic() + ctx.config.request_timeout
    entry = ctx.declarations.cached(id)
    if entry is not None and not entry.agents:
        one = ctx.started.take(entry.key)
        if one is not None:  # the common case: nothing to read, nothing to start
            return await run_on_loop(ctx, entry, one, body, deadline)
    return json_response(await ctx.pool.run(_run_formation, ctx, id, body, deadline))


def add_run_route(target: APIRouter) -> None:
    """Declare ``POST /formations/{id}/run`` on ``target``: the app's own router, first.

    It is not on :data:`router`: FastAPI matches the routes of an included router twice per
    request (once to find the router, once to pick its route) and rebuilds what to match
    them against when a router changes, where the app's own routes are matched once, each
    by its pattern. Its body skips FastAPI's per-request solving when valid (see
    :class:`~wingman_actors.server._plain_route.PlainJsonRoute`).
    """
    target.add_api_route("/formations/{id}/run", run, methods=["POST"], tags=["formations"],
                         summary="Run a formation and wait for its result", response_model=RunOut,
                         route_class_override=PlainJsonRoute)


class _Stop:
    """Wakes the streaming loop when the client leaves (which then cancels the run)."""

    def __init__(self, events: queue.SimpleQueue[FormationEvent | None]) -> None:
        self.events = events

    def cancel(self, reason: str) -> None:
        self.events.put(None)


_ENDS = (FormationEventType.RUN_FINISHED, FormationEventType.RUN_FAILED, FormationEventType.RUN_CANCELLED)


def _stream_formation(ctx: ServerContext, entry: Entry, body: FormationRunIn, canceller: Canceller) -> Iterator[Event]:
    with started(ctx, entry) as formation:
        refused = misfit(formation, body.input)
        if refused is not None:  # a 400 before the first event (nothing is run nor recorded)
            formation.reusable = True
            raise refused
        run = ctx.store.create_run(entry.record, jsonable(body.input), wait=False)  # committed with begin_run
        events: queue.SimpleQueue[FormationEvent | None] = queue.SimpleQueue()
        with flight(ctx, formation, run) as current:
            canceller.target = _Stop(events)
            try:
                current.submit(body.input, body.timeout, events.put)
                while not canceller.cancelled.is_set():
                    event = events.get()
                    if event is None:
                        break
                    timed_out = event.node is None and out_of_time(current.started, body.timeout)
                    yield event.type.value, event_dict(event, run.id, timed_out, formation.entry)
                    if event.type is FormationEventType.RUN_FINISHED:
                        current.settle(partial(settled, result=event.data["result"]))
                    elif event.type is FormationEventType.RUN_FAILED:
                        current.settle(current.failure(event.data["exception"], timed_out, formation.entry))
                    if event.type in _ENDS:
                        break
            finally:
                current.cancel("the client disconnected before the run finished")
                run = current.settle(lambda r: cancelled(r, current.tracker, current.started,
                                                         "the run was cancelled before it finished"))
        yield "done", {"run_id": run.id, "status": run.status}


@router.post("/formations/{id}/run/stream", tags=["formations"], summary="Run a formation, streaming its events")
async def run_stream(id: str, body: RunBody, ctx: Ctx) -> Response:
    """One SSE event per formation event, named by its type (``run_started``,
    ``node_started``, ``agent_text``, ``node_finished``, ``run_finished``, ``run_failed`` or
    ``run_cancelled``...), then ``done`` with the run id and status (``suspended`` when a node
    called ``interrupt()``: the ``run_finished`` data has the ``interrupt``). No request timeout.
    An input an entry node would refuse is a 400 (``kind: "input"``) before any event, as
    ``POST /formations/{id}/run`` answers it (but without a run: nothing is run or recorded)."""
    entry = await ctx.pool.run(ctx.declarations.load, ctx, id)
    canceller = Canceller()
    stream = ThreadedStream(ctx.pool, lambda: _stream_formation(ctx, entry, body, canceller), canceller)
    return await start_stream(stream)


# -- declarations ---------------------------------------------------------------------


def _validated(
    ctx: ServerContext, decl: FormationDecl, own_id: str | None = None,
    replacing: dict[str, FormationDecl] | None = None,
) -> None:
    nested = load_nested(ctx.store, decl, own_id, replacing)
    ids = agent_ids(decl, nested)
    agents = {}
    for agent in ctx.store.list_agents():
        if agent.id in ids:
            agents[agent.id] = ctx.declared_agent(agent)
    build_nested(decl, ctx.functions, agents, nested, own_id)


@router.post("/formations", status_code=201, tags=["formations"], summary="Create a formation")
async def create(body: FormationDecl, ctx: Ctx, response: Response) -> FormationOut:
    """Validated in full first: 400 lists every problem (unknown agents, functions,
    predicates, nested formations, edges, types, cycles without a condition...)."""

    def apply() -> FormationOut:
        with ctx.formation_writes:
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
    """The whole declaration, validated as for create (it may not nest this formation,
    directly or through others)."""

    def apply() -> FormationOut:
        with ctx.formation_writes:
            ctx.store.get_formation(id)
            _validated(ctx, body, id)
            _users_still_valid(ctx, id, body)
            replaced = ctx.store.replace_formation(id, body.name, body.stored_nodes(), body.stored_edges())
        ctx.declarations.drop(id)
        ctx.started.drop(id)  # the old declaration's actors are no longer wanted
        return replaced

    return await ctx.pool.run(apply)


def _users_still_valid(ctx: ServerContext, id: str, body: FormationDecl) -> None:
    """409 ``in_use`` when the formations nesting ``id`` would no longer validate with ``body``
    in its place (types across the boundary, a node they route to that is gone...)."""
    broken: list[FormationOut] = []
    problems: list[str] = []
    for user in nesting_users(ctx.store, id):
        try:
            _validated(ctx, declaration_of(user), user.id, {id: body})
        except ApiError as exc:
            if exc.status != 400:
                raise
            broken.append(user)
            found = exc.extra.get("problems") or [str(exc)]
            problems += [f"formation {user.name!r} ({user.id}): {p}" for p in found]
    if broken:
        named = ", ".join(f"{f.name!r} ({f.id})" for f in broken)
        raise ApiError(409, f"replacing formation {id} would break formation {named}, which nests it: "
                            f"{'; '.join(problems)}; change those formations first, or keep what they rely on",
                       kind="in_use", used_by=[f.id for f in broken], problems=problems)


@router.delete("/formations/{id}", tags=["formations"], summary="Delete a formation (its runs are kept)")
async def delete(id: str, ctx: Ctx) -> StatusOut:
    """``{"status": "deleted"}``; 404 for an unknown id; 409 (``kind: "in_use"``, with
    ``used_by``) while other formations nest it."""

    def apply() -> None:
        with ctx.formation_writes:
            ctx.store.get_formation(id)
            users = nested_in(ctx.store, id)
            if users:
                named = ", ".join(f"{f.name!r} ({f.id})" for f in users)
                raise ApiError(409, f"formation {id} is nested in formation {named}; remove those nodes "
                                    "(PUT /formations/{id}) or delete those formations first",
                               kind="in_use", used_by=[f.id for f in users])
            ctx.store.delete_formation(id)
        ctx.declarations.drop(id)
        ctx.started.drop(id)

    await ctx.pool.run(apply)
    return StatusOut(status="deleted")
