"""Which out-edges of a node carry a visit's output, and how (used by :mod:`._routing`): conditions,
loop exits held back, straight pipeline steps, and fan-outs whose copies are made in one walk."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._plan import ConditionRaised, EdgeSpec, Plan

if TYPE_CHECKING:
    from ._runstate import RunState

__all__ = ["NO_PAIR", "copying_pairs", "edges_firing", "exits_held", "hold_exits", "straight_steps", "take_held"]

NO_PAIR = (-1, -1)  # a node without a pair of copying out-edges (see copying_pairs)


def edges_firing(edges: tuple[EdgeSpec, ...], output: Any) -> list[bool]:
    """Which of ``edges`` carry ``output``: unconditional ones always, ``when=`` ones
    when their condition holds, the ``otherwise`` edge when no condition held."""
    firing = []
    matched = False
    for e in edges:
        try:
            fire = e.when is None or bool(e.when(output))
        except Exception as exc:
            raise ConditionRaised(e) from exc
        if fire and e.when is not None:
            matched = True
        firing.append(fire)
    if matched:
        for i, e in enumerate(edges):
            if e.otherwise:
                firing[i] = False
    return firing


def exits_held(edges: tuple[EdgeSpec, ...], firing: list[bool],
               error_edges: tuple[EdgeSpec, ...] = ()) -> tuple[str, ...] | None:
    """The targets of the exit edges whose skips a visit that took ``firing`` of ``edges``
    holds back, or None. A visit that goes round its loop (fires an edge "on" it) visits
    the node again, and its loop's exit edges that did not fire wait for that visit: a
    skip sent now would make a join after the loop fire without the loop's output. So do
    the node's ``error_edges`` that leave the loop (the visit succeeded: they did not fire)."""
    if not any(fire and e.loop == "on" for e, fire in zip(edges, firing, strict=True)):
        return None
    held = tuple(e.target for e, fire in zip(edges, firing, strict=True) if not fire and e.loop == "exit")
    return held + tuple(e.target for e in error_edges if e.loop == "exit") or None


def hold_exits(run: RunState, node: str, targets: tuple[str, ...] | None, tag: tuple[str, int] | None) -> None:
    """Remember the exit ``targets`` whose skips ``node``'s visit held back because it went
    round its loop (None: the visit did not hold any, and it supersedes what an earlier
    visit held: its own exits resolved the join after the loop, or a later visit will)."""
    with run.lock:
        if targets is not None:
            run.own("held")[node] = (targets, tag)
        elif run.held:
            run.held.pop(node, None)


def take_held(run: RunState) -> list[tuple[str, tuple[str, ...], tuple[str, int] | None]]:
    """The exits held by loops that ended without another visit of their node (a loop's
    body was skipped, or turned back no more without reaching the node), taken when the
    run has no visit left in flight, so no visit can come: their skips are due now.
    Called with the run's lock held."""
    held = [(node, targets, tag) for node, (targets, tag) in run.held.items()]
    run.held.clear()
    return held


def copying_pairs(plan: Plan) -> dict[str, tuple[int, int]]:
    """For each node with two or more of them, its first two out-edges that always fire
    (neither ``when=`` nor ``otherwise``) and lead to nodes that copy their payload before
    user code sees it (function and map nodes), visited with it directly (their only
    forward predecessor, or a back edge: a join's dict is copied whole by its node). The
    router makes those two nodes' copies in one walk (actors/_payloads.py ``isolate_pair``)."""
    pairs = {}
    for name, spec in plan.nodes.items():
        indices = [i for i, e in enumerate(spec.out_edges) if not e.conditional
                   and plan.nodes[e.target].kind in ("function", "map")
                   and (e.back or len(plan.nodes[e.target].forward_preds) == 1)]
        if len(indices) >= 2:
            pairs[name] = (indices[0], indices[1])
    return pairs


def straight_steps(plan: Plan) -> dict[str, str | None]:
    """For each node, the node it hands its output straight on to, or None: a node whose
    only out-edge is unconditional and leads to a node with only this predecessor (the
    common pipeline step) needs no condition, join or fan-out."""
    straight: dict[str, str | None] = {}
    for name, spec in plan.nodes.items():
        edges = spec.out_edges
        nxt = None
        if len(edges) == 1 and not edges[0].conditional and not edges[0].back and not spec.error_edges:
            target = edges[0].target
            if len(plan.nodes[target].forward_preds) == 1:
                nxt = target
        straight[name] = nxt
    return straight
