"""The fan-in of a node in one run (:class:`Join`): which predecessors' resolutions make
up each of its visits. Used by :mod:`._routing`."""

from __future__ import annotations

from collections import deque
from typing import Any

from .events import FormationEventType, emit

__all__ = ["NOTHING", "ROUND_OVER", "Join", "RaceJoin", "abandon_losers", "cancel_losers", "drops", "mark", "new_join"]


NOTHING: Any = object()  # a predecessor resolved without a value (its edge did not fire, or it was skipped)
ROUND_OVER: Any = {}  # a join="any" visit has taken every predecessor's resolution (compared by identity)


class Join:
    """The fan-in of one node in one run, visit by visit.

    A visit takes one resolution (a value or a skip) from each forward predecessor. A
    predecessor that resolves again before the visit is complete (a loop's next
    iteration arriving early) is queued, oldest first, for the next visit: values of one
    iteration never meet another's, and none is lost. With ``any``, the visit fires at its
    first value; the rest of that visit's resolutions are taken and dropped. A visit's
    dict is keyed in the predecessors' order, whichever finished first, so what a node
    receives (an agent's prompt rendered from it, say) is the same on every run.
    """

    __slots__ = ("any", "cuts", "fired", "order", "preds", "queued", "taken", "values")

    def __init__(self, preds: tuple[str, ...], any: bool) -> None:
        self.order = preds
        self.preds = len(preds)
        self.any = any
        self.values: dict[str, Any] = {}
        self.taken: set[str] = set()
        self.fired = False
        self.queued: deque[tuple[str, Any, int, int | None]] | None = None
        # join="any" in a loop: by losing node, how many visits it had been sent when the
        # visit fired without it (those belong to that round; later ones to the next)
        self.cuts: dict[str, int] | None = None

    def offer(self, pred: str, value: Any, ready: list[dict[str, Any] | None], visit: int = 0,
              round: int | None = None) -> None:
        """Take ``pred``'s resolution (a value of its visit number ``visit``, or
        :data:`NOTHING`) into the current visit (or queue it), appending to ``ready``
        every visit that fires or is skipped as a result. ``round``: the round the value
        belongs to, when its origin tells it (:class:`RaceJoin`; None: not known)."""
        if pred in self.taken:
            self._queue(pred, value, visit, round)
            return
        if self._take(pred, value, ready, visit):
            self._drain(ready)

    def _queue(self, pred: str, value: Any, visit: int, round: int | None = None) -> None:
        if self.queued is None:
            self.queued = deque()
        self.queued.append((pred, value, visit, round))

    def _take(self, pred: str, value: Any, ready: list[dict[str, Any] | None], visit: int = 0) -> bool:
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
            values = self.values
            if len(values) > 1:  # in the predecessors' order, not the order they arrived in
                values = {p: values[p] for p in self.order if p in values}
            ready.append(values or None)
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
            for i, (pred, value, visit, round) in enumerate(queued):
                if pred not in self.taken and self._due(round):
                    del queued[i]
                    self._take(pred, value, ready, visit)
                    break
            else:
                return

    def _due(self, round: int | None) -> bool:
        """Whether a queued value of ``round`` may be taken into the current visit."""
        return True


class RaceJoin(Join):
    """A ``join="any"`` in a formation with loops: a losing predecessor's values are
    matched to rounds by the visit they came from, not by arrival. When the join fired
    without a predecessor that still had a visit in flight (its ``cuts`` entry is past the
    last visit of it this join has seen resolve), that visit resolves this round (it is
    cancelled); a value of a later visit (a replica of the loser working on the next
    iteration) is queued for the next round, not taken as this round's.

    A value whose round its origin tells (it descends from this join's own output of round
    ``k``, by the ``tag`` its work carried from node to node: round ``k + 1``) is matched by
    that instead: a value of a later round than the open one waits for it, however many
    visits its sender has had (a node below a replicated loser gets its visit numbers in
    arrival order, not by iteration)."""

    __slots__ = ("last", "round", "visits")

    def __init__(self, preds: tuple[str, ...], visits: dict[str, int]) -> None:
        super().__init__(preds, True)
        self.visits = visits  # the run's visit counts (owned by the run from its first visit)
        # by predecessor, the highest of its visits known resolved here
        self.last: dict[str, int] = {}
        self.round = 0  # the open round (rounds closed so far)

    def offer(self, pred: str, value: Any, ready: list[dict[str, Any] | None], visit: int = 0,
              round: int | None = None) -> None:
        if round is not None:
            if round > self.round and pred not in self.taken:  # a later round's, told by its origin
                self._queue(pred, value, visit, round)
                return
            super().offer(pred, value, ready, visit, round)
            return
        cuts = self.cuts
        if cuts is not None and pred not in self.taken:
            cut = cuts.get(pred)
            if cut is not None and visit > cut and self.last.get(pred, 0) < cut:
                self._queue(pred, value, visit)  # a later iteration's: this round waits for visit <= cut
                return
        super().offer(pred, value, ready, visit)

    def _take(self, pred: str, value: Any, ready: list[dict[str, Any] | None], visit: int = 0) -> bool:
        # a resolution without a visit number (a skip, a cancelled visit, an error edge's
        # failure): count every visit sent so far as resolved, so a value is never held
        # back for a resolution that is not coming
        seen = visit or self.visits.get(pred, 0)
        if seen > self.last.get(pred, 0):
            self.last[pred] = seen
        if super()._take(pred, value, ready, visit):
            self.round += 1
            return True
        return False

    def _due(self, round: int | None) -> bool:
        return round is None or round <= self.round


def new_join(run: Any, preds: tuple[str, ...], any: bool, race: bool) -> Join:
    """A node's fan-in for ``run`` (under the run's lock); ``race``: a ``join="any"``
    with branches to cancel, in a formation with loops."""
    if race:
        return RaceJoin(preds, run.own("visits"))
    return Join(preds, any)


def mark(run: Any, target: str, race: Any, ready: list[dict[str, Any] | None], cyclic: bool) -> None:
    """Mark, in ``run.dropped``, the branches ``target``'s ``join="any"`` visits in
    ``ready`` fire without (``race``: the node's, by predecessor), and lift the marks of
    each round that closed (:data:`ROUND_OVER`), in the order the join decided them.
    Called under the run's lock with the offer that made them ready: a round closing on
    one thread cannot lift the marks of the next round, fired meanwhile on another."""
    join = run.joins[target]
    for payload in ready:
        if payload is ROUND_OVER:  # the other branches' work is wanted again (a loop's next visit)
            dropped = run.dropped
            for node in [n for n, j in dropped.items() if j == target]:
                del dropped[node]
            join.cuts = None
        elif payload is not None:
            cancel = race[next(iter(payload))]
            if cancel:
                dropped = run.own("dropped")
                if cyclic:  # in a loop, the losers' visits sent later are the next round's
                    visits = run.visits
                    join.cuts = {**(join.cuts or {}), **{n: visits.get(n, 0) for n in cancel}}
                for node in cancel:
                    dropped.setdefault(node, target)


def drops(run: Any, node: str, visit: int, tag: tuple[str, int] | None = None) -> bool:
    """Whether visit number ``visit`` of ``node`` (in ``run.dropped``: a branch a
    ``join="any"`` fired without) belongs to the round that fired without it, so its work
    is not wanted. Without a cut (a run without loops: one round) every visit does; in a
    loop, a visit sent after the join fired belongs to the next round and runs. A visit
    whose ``tag`` (see :class:`RaceJoin`) tells its round is matched by that."""
    target = run.dropped[node]
    join = run.joins.get(target)
    if tag is not None and tag[0] == target and type(join) is RaceJoin:
        return tag[1] + 1 <= join.round  # (the marks are lifted when the round that set them closes)
    cuts = join.cuts if join is not None else None
    cut = cuts.get(node) if cuts else None
    return cut is None or visit <= cut


def cancel_losers(run: Any) -> None:
    """At the end of ``run``, the nodes of branches a ``join="any"`` fired without that
    have not resolved yet (still running, or queued) are cancelled, not unreached: their
    traces say so, and the run's listeners hear ``node_skipped`` with ``cancelled: True``
    now, before ``run_finished`` (their late ends are not reported)."""
    with run.lock:
        losers = tuple(n for n in run.dropped if n not in run.cancelled)
        run.cancelled += losers
    if run.listeners:
        for node in losers:
            emit(run.listeners, FormationEventType.NODE_SKIPPED, run.id, node,
                 {"reason": f"cancelled: {run.dropped[node]!r} (join='any') fired without it", "cancelled": True})


def abandon_losers(router: Any, run: Any, cancel: frozenset[str], why: str) -> None:
    """``cancel``: the nodes of the branches a ``join="any"`` of ``run`` just fired without.
    Their work in progress stops: agent and fleet sessions at their next boundary, async
    functions' tasks at their next ``await``. In a loop, an attempt of this round stuck in
    blocking code is also abandoned, as a timed-out one is: it resolves now as cancelled,
    a fresh replica takes the next round's visits, and its late end is ignored (the run
    never waits for it)."""
    for node in cancel:
        group = router.nodes[node]
        if not router.cyclic:
            group.release(run, f"cancelled: {why}", abandon=False)
            continue
        for work, attempt, _ in group.attempts_of(run):
            if work.target != node or node not in run.dropped or not drops(run, node, work.visit, work.tag):
                continue  # a later round's visit (a replica on the next iteration): it runs
            with run.lock:
                if work.settled or work.attempt != attempt or run.done:
                    continue
                work.settled = True
            if work.timer is not None:
                work.timer.cancel()
            group.abandon(work, f"cancelled: {why}")
            router.cancel_loser(run, node, work.tag)
            router.finish_one(run)
