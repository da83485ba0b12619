"""Which out-edges of a node carry a visit's output (used by :mod:`._routing`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._plan import ConditionRaised, EdgeSpec

if TYPE_CHECKING:
    from ._runstate import RunState

__all__ = ["edges_firing", "exits_held", "hold_exits", "take_held"]


def edges_firing(edges: tuple[EdgeSpec, ...], output: Any) -> list[bool]:
    """Which of ``edges`` carry ``output``: unconditional ones always, ``when=`` ones
    when their condition holds, the ``otherwise`` edge when no condition held."""
    firing = []
    matched = False
    for e in edges:
        try:
            fire = e.when is None or bool(e.when(output))
        except BaseException as exc:  # SystemExit too: out of here it would end the node's actor, the run unresolved
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
