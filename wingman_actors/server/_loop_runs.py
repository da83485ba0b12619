"""Formation runs started and answered on the event loop, with no worker thread.

``POST /formations/{id}/run`` of a formation whose declaration is loaded (:mod:`._declarations`)
and has an idle started formation (:mod:`._started`) needs no blocking call to begin: the
run's record is queued for the writer, and once it is committed (so ``GET /runs`` shows the
run before any of its nodes starts) the writer's thread hands the run to its first nodes'
actors, its journal's ``begin_run`` queued (committed in the writer's next batch, before
anything the run writes). The thread that ends the run (a node's, or the timer's) queues its
outcome the same way;
the writer's commit tells :class:`._landings.Landings`, which wakes the event loop once for every run
whose outcome that commit (and those before the loop woke) carried. Each request then
answers from its run's committed record. A run is answered only once its outcome is
committed, as before.

Under load many runs share each wake of the writer and of the event loop, where the
worker-thread path took two thread switches per run of its own (loop → worker → loop).
The rest (a formation not loaded or with no idle started formation, agent formations)
takes that path (:func:`._routes_formations._run_formation`).
"""

from __future__ import annotations

import asyncio
import math
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING

from starlette.responses import Response

from ..formation._future import on_resolved
from ..formation._result import FormationResult
from ._convert import jsonable
from ._deps import json_response
from ._flights import CLEAN, Flight, answer
from ._journal import begin_queued
from ._run_outcome import Tracker
from ._schemas import FormationRunIn
from ._started import Started

if TYPE_CHECKING:
    from ._context import ServerContext
    from ._declarations import Entry

__all__ = ["run_on_loop"]


async def run_on_loop(ctx: ServerContext, entry: Entry, one: Started, body: FormationRunIn,
                      deadline: float) -> Response:
    """Run ``body.input`` on ``one`` (an idle started formation of ``entry``, now this
    run's) and answer as :func:`._flights.answer` says, without blocking the loop."""
    timeout = min(body.timeout or math.inf, max(0.01, deadline - time.monotonic()))
    one.reusable = False
    try:
        run = ctx.store.new_run(entry.record, jsonable(body.input))
    except BaseException:
        _give_back(ctx, one)
        raise
    log = ctx.flights.logs.start(run.id)
    current = Flight(ctx, one.running, run, Tracker(one.formation, log), log)
    landed: asyncio.Future[None] = ctx.landings.loop.create_future()
    ran: list[Future[FormationResult]] = []

    def land() -> None:  # on the loop, once the run's outcome is committed (or it never began)
        current.on_settled = None  # (a reference cycle through this closure: freed without the collector)
        ctx.flights.remove(current)
        log.close()
        one.reusable = current.settled.is_set() and current.record.status in CLEAN and not current.stopping
        _give_back(ctx, one)
        if not landed.done():
            landed.set_result(None)

    def begin(error: BaseException | None) -> None:  # on the writer's thread: the record is committed
        try:
            if error is not None:
                raise error
            with begin_queued():
                future = current.submit(body.input, timeout)  # journalled (queued) on return
        except BaseException as exc:  # never begun: answered with what refused it
            current.error = exc
            ctx.landings.add(land)
            return
        ran.append(future)
        on_resolved(future, lambda f: _ended(current, f, timeout, one))

    current.on_settled = lambda _: ctx.landings.add(land)
    ctx.flights.add(current)
    try:
        ctx.store.insert_run(run, on_commit=begin)  # the run starts once its record is committed
    except BaseException:
        land()
        raise
    await landed  # (cancelled with the request, it leaves the run and its record to land() all the same)
    if not ran:
        assert current.error is not None
        raise current.error
    return json_response(answer(current, ran[0], one.entry))


def _ended(current: Flight, future: Future[FormationResult], timeout: float, one: Started) -> None:
    """On the thread that ended the run: queue its outcome (unless a cancel under way writes it)."""
    build = current.ending(future, timeout, one.entry)
    if build is not None:
        current.settle_soon(build)


def _give_back(ctx: ServerContext, one: Started) -> None:
    """Give ``one`` back to its pool; what must stop is stopped on a worker thread (stopping
    joins its actors' threads)."""
    for stop in ctx.started.hand_back(one):
        try:
            ctx.pool.submit(stop.running.stop)
        except RuntimeError:  # the pool is stopped: the server is stopping
            stop.running.stop()
