"""A journalled run suspending (an ``interrupt()`` or a breakpoint): what
:meth:`~._routing.Router.suspended` and :meth:`~._routing.Router.breakpoint` end with, once
the interrupt is journalled. Kept apart from :mod:`._routing`, whose hot path it is not."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .._graphs import downstream
from ._breakpoints import is_breakpoint
from ._result import FormationResult, suspended_traces
from .events import FormationEventType, emit

if TYPE_CHECKING:
    from ._routing import Router
    from ._runstate import RunState

__all__ = ["suspend_run"]


def suspend_run(router: Router, run: RunState, node: str, payload: Any, reason: str) -> None:
    """End ``run`` suspended at ``node`` (a path for a node of a nested formation): its
    result ``suspended`` with the interrupt's ``payload``, its traces journalled as they
    are now, its work in progress released with ``reason``."""
    journal = router.journal
    assert journal is not None
    if not router.claim(run):
        return
    # The traces as the run suspends, for the result and the journal alike: attempts still
    # in flight when it suspends run again on resume, and what they do meanwhile is no part of it
    traces = suspended_traces(run, node, ran=not is_breakpoint(payload), ahead=_ahead(router, node.split("/", 1)[0]))
    router.journal_end(run, "suspended", traces=traces)
    produced = run.outputs
    outputs = {s: produced[s] for s in router.sinks if s in produced}
    duration = time.perf_counter() - run.t0
    result = FormationResult(run.id, None, outputs, traces, duration, "suspended",
                             {"node": node, "payload": payload})
    future = router.resolved(run)
    future.set_result(result)
    if run.listeners:
        emit(run.listeners, FormationEventType.RUN_FINISHED, run.id, None,
             {"duration_s": duration, "usage": result.usage, "result": result, "suspended": True})
    router.release(run, reason, abandon=False)


def _ahead(router: Router, node: str) -> set[str]:
    """The nodes downstream of ``node`` along forward edges (error edges included)."""
    return downstream(((e.source, e.target) for e in router.plan.edges if not e.back), node)
