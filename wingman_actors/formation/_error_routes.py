"""Error edges at run time: where a failure goes when its node has error edges.

A node with error edges (``connect(a, handler, on_error=True)``) that fails after its
retries does not fail the run: :func:`route_failure` journals the failure (a resume must
not retry it), sends a :class:`~.failure.NodeFailure` along every error edge, and skips
the node's other out-edges (it produced no output). Its trace says ``failed``. When the
node succeeds, or is skipped, its error edges are not taken: :func:`skip_error_targets`
skips their targets along them, as a conditional edge that did not fire.

Kept apart from :mod:`.routing` so its hot path stays as it is: a node without error
edges never reaches this module.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ._failure import NodeFailure
from ._firing import hold_exits
from ._plan import NodeSpec
from ._runstate import RunState
from .events import FormationEventType, emit

if TYPE_CHECKING:
    from ._routing import Router

__all__ = ["replay_failure", "route_failure", "skip_error_targets"]

log = logging.getLogger("wingman_actors.formation")


def route_failure(router: Router, run: RunState, spec: NodeSpec, failure: NodeFailure, visit: int,
                  tag: tuple[str, int] | None = None) -> bool:
    """Journal ``failure`` (visit ``visit`` of ``spec``'s node) and route it along the
    node's error edges, the visit's ``tag`` on (the round of a ``join="any"`` in a loop it
    descends from: see ``Router.visit``). False when it could not be journalled (the
    caller fails the run)."""
    journal = router.journal
    if journal is not None:
        try:
            journal.record_failure(run.id, spec.name, visit, failure)
        except Exception:
            log.exception("could not journal the failure of node %r in run %s", spec.name, run.id)
            return False
    _take(router, run, spec, failure, tag)
    return True


def replay_failure(router: Router, run: RunState, node: str, visit: int, payload: Any, record: Any,
                   tag: tuple[str, int] | None = None) -> None:
    """A resumed run reached a visit whose journal says it failed into its error edges:
    route the failure again instead of running the node (``payload`` is the visit's input,
    ``record`` what :meth:`~.durable.Journal.record_failure` wrote, ``tag`` the visit's)."""
    assert router.journal is not None  # only a journalled run replays
    failure = router.journal.failure(run.id, node, payload, record)
    now = time.perf_counter()
    error = f"{type(failure.error).__name__}: {failure.error}"
    run.own("failures").append((node, failure.attempts, now, now, error, None))
    if run.listeners:
        emit(run.listeners, FormationEventType.NODE_FAILED, run.id, node,
             {"attempts": failure.attempts, "error": error, "journalled": True})
    _take(router, run, router.specs[node], failure, tag)


def skip_error_targets(router: Router, run: RunState, spec: NodeSpec, why: str,
                       tag: tuple[str, int] | None = None, held: tuple[str, ...] | None = None) -> None:
    """``spec``'s node did not fail (it finished, or was skipped): its forward error edges
    are not taken (the skips carry the visit's ``tag`` on), but for those leaving a loop
    when the visit went round it (``held``: see ``_firing.exits_held``): their skips wait
    for the loop to end, as its exit edges' do."""
    for edge in spec.error_edges:
        if not edge.back and not (held is not None and edge.loop == "exit"):
            router.arrive_skip(run, edge.target, spec.name, why, tag)


def _take(router: Router, run: RunState, spec: NodeSpec, failure: NodeFailure,
          tag: tuple[str, int] | None) -> None:
    name = spec.name
    with run.lock:
        run.own("handled")[name] = time.perf_counter()
    # A failure handed round the node's loop (an error edge on it) visits the node again, as a
    # success going round does: its exit edges' skips wait for that visit (see _firing.exits_held).
    held = tuple(e.target for e in spec.out_edges if e.loop == "exit") if router.cyclic and any(
        e.loop == "on" for e in spec.error_edges) else None
    if held is not None or run.held:  # or this visit resolves the node's exits: what an earlier one held is superseded
        hold_exits(run, name, held or None, tag)
    for edge in spec.error_edges:
        if edge.back:
            router.visit(run, edge.target, failure, name, tag)
        else:
            router.arrive(run, edge.target, name, failure, 0, tag)
    why = f"was not taken because {name!r} failed"
    for edge in spec.out_edges:
        if not edge.back and not (held and edge.loop == "exit"):
            router.arrive_skip(run, edge.target, name, why, tag)
    if router.cyclic or spec.is_sink:
        router.finish_one(run)
