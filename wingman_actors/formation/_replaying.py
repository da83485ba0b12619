"""A resumed (or forked) run's visits that its journal already has: what
:meth:`~._routing.Router.visit` does with a visit of a run that has a replay.

A visit the journal recorded routes its journalled output on instead of running the node
again; a visit the journal recorded as skipped is skipped again (or, when it failed into
error edges, its failure is routed again); a visit a fork gave an input (``input=``)
runs with that input instead of what its predecessors delivered.

Events: what a replayed visit settles was settled before the resume, so its events say
``journalled: True`` — its ``node_finished`` (attempt 0), ``node_failed`` or
``node_skipped``, and the ``node_skipped`` of the nodes its replay skips in turn (an edge
that did not fire, a skipped node's dependents): :func:`replaying` tells
:meth:`~._routing.Router.skip` it runs inside a replay (on this thread).

Kept apart from :mod:`._routing` so its hot path stays as it is: a run without a journal
never reaches this module.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from ._breakpoints import owed_after
from ._error_routes import replay_failure
from ._journalled_inner import keep_journalled_items
from ._result import ZERO_USAGE
from .events import FormationEventType, emit

if TYPE_CHECKING:
    from ._routing import Router
    from ._runstate import RunState

__all__ = ["REPLAYED", "replay_visit", "replaying"]

REPLAYED: Any = object()
"""What :func:`replay_visit` returns when the journal settled the visit: nothing runs."""

_replay = threading.local()  # .run: the run whose journalled visit this thread settles now


def replaying(run: RunState) -> bool:
    """Whether this thread is settling a journalled visit of ``run`` now (what it skips was
    skipped before the resume too)."""
    return getattr(_replay, "run", None) is run


def replay_visit(router: Router, run: RunState, node: str, visit: int, payload: Any,
                 tag: tuple[str, int] | None = None) -> Any:
    """Settle visit ``visit`` of ``node`` from the run's replay when the journal has it
    (:data:`REPLAYED`), else the payload the node runs with (a fork's input for that
    visit, or ``payload``). ``tag``: the visit's, routed on (see ``Router.visit``)."""
    replay = run.replay
    assert replay is not None
    done = replay.visits.get(node)
    settled = done is not None and visit in done
    reason = None if settled else replay.skipped.get((node, visit))
    if settled or reason is not None:
        outer = getattr(_replay, "run", None)
        _replay.run = run
        try:
            if done is not None and settled:
                replayed(router, run, node, visit, done[visit], tag)
            elif (failed := replay.failures.get((node, visit))) is not None:  # it failed into its error edges:
                replay_failure(router, run, node, visit, payload, failed, tag)  # route the failure again
            else:  # it failed into on_error="skip": a visit, as a replayed success is
                now = time.perf_counter()
                run.own("failures").append((node, 0, now, now, str(reason), None))
                router.skip(run, node, str(reason), str(reason), tag=tag)
                if router.cyclic:
                    router.finish_one(run)
        finally:
            _replay.run = outer
        return REPLAYED
    if replay.inputs:  # a fork's input= for this visit replaces what its predecessors delivered
        return replay.inputs.get((node, visit), payload)
    return payload


def replayed(router: Router, run: RunState, node: str, visit: int, output: Any,
             tag: tuple[str, int] | None = None) -> None:
    """A resumed run reached a visit its journal has: route the journalled output on
    instead of running the node again."""
    now = time.perf_counter()
    run.record(node, 0, now, now, None, output)
    inner = getattr(router.nodes.get(node), "inner", None)
    if inner is not None:  # a formation node: the traces of the inner run it journalled
        inner.replayed(run, visit)
    else:
        spec = router.specs[node]
        journal = router.journal
        if spec.kind == "map" and spec.subplan is not None and journal is not None and isinstance(output, list):
            # a map over a formation: its items' inner runs, loaded from the journal when read
            keep_journalled_items(run, node, journal.store, visit, range(len(output)), spec.subplan.order)
    if run.listeners:
        emit(run.listeners, FormationEventType.NODE_FINISHED, run.id, node, {
            "attempt": 0, "duration_s": 0.0, "usage": ZERO_USAGE, "journalled": True, "output": output,
        })
    breaks, replay = run.breaks, run.replay
    if breaks is not None and node in breaks.after and replay is not None and owed_after(replay.journal, node, visit):
        router.breakpoint(run, node, visit, {"breakpoint": "after", "output": output})  # it finished while the run
        return  # was stopping elsewhere: it stops now, as it would have
    router.route(run, node, output, 0, visit, tag)
