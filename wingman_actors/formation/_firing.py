"""Which out-edges of a node carry a visit's output (used by :mod:`._routing`)."""

from __future__ import annotations

from typing import Any

from ._plan import ConditionRaised, EdgeSpec

__all__ = ["edges_firing", "loops_on"]


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


def loops_on(edges: tuple[EdgeSpec, ...], firing: list[bool]) -> bool:
    """Whether a visit that took ``firing`` of ``edges`` goes round its loop again: then
    the node visits again, and its loop's exit edges that did not fire wait for that visit
    (a skip sent now would make a join after the loop fire without the loop's output)."""
    return any(fire and e.loop == "on" for e, fire in zip(edges, firing, strict=True))
