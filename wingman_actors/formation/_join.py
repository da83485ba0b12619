"""The fan-in of a node in one run (:class:`Join`): which predecessors' resolutions make
up each of its visits. Used by :mod:`._routing`."""

from __future__ import annotations

from collections import deque
from typing import Any

__all__ = ["NOTHING", "ROUND_OVER", "Join"]


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

    __slots__ = ("any", "fired", "preds", "queued", "taken", "values")

    def __init__(self, preds: tuple[str, ...], any: bool) -> None:
        self.preds = len(preds)
        self.any = any
        self.values: dict[str, Any] = {}
        self.taken: set[str] = set()
        self.fired = False
        self.queued: deque[tuple[str, Any]] | None = None

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
