"""Which out-edges of a node carry a visit's output (used by :mod:`._routing`)."""

from __future__ import annotations

from typing import Any

from ._plan import ConditionRaised, EdgeSpec

__all__ = ["edges_firing"]


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
