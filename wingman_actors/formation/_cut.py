"""Visits cut short: what a run that ends while nodes still work on it (cancelled, timed
out, failed by another branch) records of those visits for its traces.

Such a visit ran (its attempt started), so its node's trace counts it, ``cancelled``,
with its attempt, the time it had run when the run ended and what it had spent on model
calls by then (an agent's session keeps count: those calls were paid for). Called on that end only
(:meth:`~._routing.Router.cancel_run`, :meth:`~._routing.Router.fail_run`), before the
attempts are released: a run that succeeds never reaches this module.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..errors import FormationRuntimeError
from ._result import MapItems

if TYPE_CHECKING:
    from ..actors._envelope import Work
    from ._routing import Router
    from ._runstate import RunState

__all__ = ["cut_visits", "runtime_fault", "was_cut"]


def cut_visits(router: Router, run: RunState) -> list[str]:
    """Record the visits of ``run`` in flight now in ``run.cut`` (its traces show them);
    returns their nodes, in node order."""
    ended = time.perf_counter()
    cut = []
    for name, node in router.nodes.items():
        for work, attempt, started in node.attempts_of(run):
            cut.append((name, work.visit, attempt, started, ended, node.spent_on(work)))
    if cut:
        with run.lock:
            run.cut += tuple(cut)
        for name in {c[0] for c in cut}:  # a formation node keeps its inner runs' traces as they are cut
            keep_cut = getattr(router.nodes[name], "keep_cut", None)
            if keep_cut is not None:
                keep_cut(run)
            items = run.nested.get(name)
            if isinstance(items, MapItems):  # so does a map over a formation, for its items in flight
                items.cut(run.lock)
    order = {name: i for i, name in enumerate(router.order)}
    return sorted({c[0] for c in cut}, key=order.__getitem__)


def was_cut(run: RunState, node: str, visit: int, attempt: int) -> bool:
    """Whether the run's end cut attempt ``attempt`` of ``node``'s visit ``visit`` (recorded,
    with its time and tokens, by :func:`cut_visits`): its own error, arriving later, is not
    counted again."""
    return any(c[0] == node and c[1] == visit and c[2] == attempt for c in run.cut)


def runtime_fault(router: Router, work: Work, fault: Exception) -> None:
    """The runtime's own code raised while handling ``work``'s outcome (a bug, logged by
    the node actor: :meth:`~wingman_actors.actors._base.NodeActor.report_fault`): its run
    fails with an error saying so (the fault its cause), rather than stay unresolved."""
    run = work.run
    if run is None or run.done:
        return
    error = FormationRuntimeError(
        f"run {run.id}: the runtime failed handling the outcome of node {work.target!r} (attempt {work.attempt}): "
        f"{type(fault).__name__}: {fault}; this is a bug in wingman-actors: please report it",
        node=work.target, attempts=work.attempt, run_id=run.id, outputs=run.outputs)
    error.__cause__ = fault
    router.fail_run(run, error)
