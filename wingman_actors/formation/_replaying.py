"""A resumed (or forked) run's visits that its journal already has: what
:meth:`~._routing.Router.visit` does with a visit of a run that has a replay.

A visit the journal recorded routes its journalled output on instead of running the node
again; a visit the journal recorded as skipped is skipped again (or, when it failed into
error edges, its failure is routed again); a visit a fork gave an input (``input=``)
runs with that input instead of what its predecessors delivered.

Kept apart from :mod:`._routing` so its hot path stays as it is: a run without a journal
never reaches this module.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ._error_routes import replay_failure
from ._result import ZERO_USAGE
from .events import FormationEventType, emit

if TYPE_CHECKING:
    from ._routing import Router
    from ._runstate import RunState

__all__ = ["REPLAYED", "replay_visit"]

REPLAYED: Any = object()
"""What :func:`replay_visit` returns when the journal settled the visit: nothing runs."""


def replay_visit(router: Router, run: RunState, node: str, visit: int, payload: Any) -> Any:
    """Settle visit ``visit`` of ``node`` from the run's replay when the journal has it
    (:data:`REPLAYED`), else the payload the node runs with (a fork's input for that
    visit, or ``payload``)."""
    replay = run.replay
    assert replay is not None
    done = replay.visits.get(node)
    if done is not None and visit in done:
        replayed(router, run, node, visit, done[visit])
        return REPLAYED
    if (reason := replay.skipped.get((node, visit))) is not None:
        if (failed := replay.failures.get((node, visit))) is not None:  # it failed into its error edges:
            replay_failure(router, run, node, visit, payload, failed)  # route the failure again
            return REPLAYED
        router.skip(run, node, str(reason), str(reason))
        if router.cyclic:
            router.finish_one(run)
        return REPLAYED
    if replay.inputs:  # a fork's input= for this visit replaces what its predecessors delivered
        return replay.inputs.get((node, visit), payload)
    return payload


def replayed(router: Router, run: RunState, node: str, visit: int, output: Any) -> None:
    """A resumed run reached a visit its journal has: route the journalled output on
    instead of running the node again."""
    now = time.perf_counter()
    run.record(node, 0, now, now, None, output)
    inner = getattr(router.nodes.get(node), "inner", None)
    if inner is not None:  # a formation node: the traces of the inner run it journalled
        inner.replayed(run, visit)
    if run.listeners:
        emit(run.listeners, FormationEventType.NODE_FINISHED, run.id, node, {
            "attempt": 0, "duration_s": 0.0, "usage": ZERO_USAGE, "journalled": True, "output": output,
        })
    router.route(run, node, output, 0, visit)
