"""The fan-in of a node in one run (:class:`Join`): which predecessors' resolutions make
up each of its visits. Used by :mod:`._routing`."""

from __future__ import annotations

from collections import deque
from typing import Any

__all__ = ["NOTHING", "ROUND_OVER", "Join", "drops"]


NOTHING: Any = object()  # a predecessor resolved without a value (its edge did not fire, or it was skipped)
ROUND_OVER: Any = {}  # a join="any" visit has taken every predecessor's resolution (compared by identity)


class Join:
    """The fan-in of one node in one run, visit by visit.

    A visit takes one resolution (a value or a skip) from each forward predecessor. A
    predecessor that resolves again before the visit is complete (a loop's next
    iteration arriving early) is queued, oldest first, for the next visit: values of one
    iteration never meet another's, and none is lost. With ``any``, the visit fires at its
    first value; the rest of that visit's resolutions are taken and dropped.
    """

    __slots__ = ("any", "cuts", "fired", "preds", "queued", "taken", "values")

    def __init__(self, preds: tuple[str, ...], any: bool) -> None:
        self.preds = len(preds)
        self.any = any
        self.values: dict[str, Any] = {}
        self.taken: set[str] = set()
        self.fired = False
        self.queued: deque[tuple[str, Any]] | None = None
        # join="any" in a loop: by losing node, how many visits it had been sent when the
        # visit fired without it (those belong to that round; later ones to the next)
        self.cuts: dict[str, int] | None = None

    def offer(self, pred: str, value: Any, ready: list[dict[str, Any] | None]) -> None:
        """Take ``pred``'s resolution into the current visit (or queue it), appending
        to ``ready`` every visit that fires or is skipped as a result."""
        if pred in self.taken:
            if self.queued is None:
                self.queued = deque()
            self.queued.append((pred, value))
            return
        if self._take(pred, value, ready):
            self._drain(ready)

    def _take(self, pred: str, value: Any, ready: list[dict[str, Any] | None]) -> bool:
        self.taken.add(pred)
        if value is not NOTHING:
            if not self.any:
                self.values[pred] = value
            elif not self.fired:
                self.fired = True
                ready.append({pred: value})
        if len(self.taken) < self.preds:
            return False
        if not self.any:
            ready.append(self.values or None)
        else:
            if not self.fired:
                ready.append(None)
            ready.append(ROUND_OVER)
        self.values = {}
        self.taken = set()
        self.fired = False
        return True

    def _drain(self, ready: list[dict[str, Any] | None]) -> None:
        queued = self.queued
        while queued:
            for i, (pred, value) in enumerate(queued):
                if pred not in self.taken:
                    del queued[i]
                    self._take(pred, value, ready)
                    break
            else:
                return


def drops(run: Any, node: str, visit: int) -> bool:
    """Whether visit number ``visit`` of ``node`` (in ``run.dropped``: a branch a
    ``join="any"`` fired without) belongs to the round that fired without it, so its work
    is not wanted. Without a cut (a run without loops: one round) every visit does; in a
    loop, a visit sent after the join fired belongs to the next round and runs."""
    join = run.joins.get(run.dropped[node])
    cuts = join.cuts if join is not None else None
    cut = cuts.get(node) if cuts else None
    return cut is None or visit <= cut
