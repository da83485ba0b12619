"""A map over a formation: ``add_map(name, formation=sub)`` runs ``sub`` once per item.

A :class:`FormationMapActor` is the node actor of a ``kind="map"`` node carrying
``formation=`` (instead of ``fn=``). It takes a list, starts one inner run per item (at
most ``max_workers`` at once) on the inner formation the node's replicas share, started and
stopped with the outer formation (so maps nested in maps do not multiply replicas), and
outputs the list of the inner runs' outputs in item order.

* Retries: items that finished are kept across the node's retries (``Work.memo``), so a
  retry reruns only the items that failed.
* Journalling: each item's inner run is journalled as ``"<run id>/<node>/<visit>/<item>"``
  and each finished item's output as a fleet item's is, so a resume runs neither again.
* Interrupts: an item whose inner run suspends suspends the outer run once the other
  items have finished (the lowest such item first, as for a fleet); the answer reaches
  that item's inner run when the visit runs again.
* Events are re-emitted under ``"<node>/<item>/<inner node>"``.
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any

from .._interrupts import RunSuspended, VisitScope
from ..actors._envelope import Work, held_errors
from ..agents._fleet_loops import DEFAULT_MAX_WORKERS
from ..core import Usage
from ..errors import FormationRuntimeError, MapItemsError, PayloadError
from ._journalled_inner import keep_journalled_items
from ._nesting import FormationActor, NestedRunError, inner_run_id
from ._result import ZERO_USAGE, FormationResult, MapItems, NodeTrace, nested_traces

__all__ = ["FormationMapActor", "map_width"]


def map_width(max_workers: int, replicas: int = 1) -> int:
    """How many replicas each node of a formation map's inner formation gets: the items one
    visit runs at once (``max_workers``; 0: up to 100, as for a fleet) for each of the map
    node's ``replicas`` (they share the inner formation), so items do not queue; but no
    more than 100 for several replicas (a map nested in a map has as many replicas as the
    outer map's width: their product would start thousands of threads)."""
    width = max_workers or DEFAULT_MAX_WORKERS
    return max(width, min(width * replicas, DEFAULT_MAX_WORKERS))


class FormationMapActor(FormationActor):
    """A formation mapped over a list: one inner run per item.

    Args:
        max_workers: the most items in flight at once (0: up to 100).
        *args, **kwargs: as for :class:`~wingman_actors.formation._nesting.FormationActor`.
    """

    def __init__(self, *args: Any, max_workers: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_workers = map_width(max_workers)
        # interrupt() cuts the items in flight one call at a time (re-entrant: a cut item's events
        # may reach a listener that cancels the run on the same thread); _cut_over is clear while
        # it cuts, so a visit that sees an item cancelled waits for the cut to end
        self._cutting = threading.RLock()
        self._cut_over = threading.Event()
        self._cut_over.set()

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        items = env.payload
        if not isinstance(items, list | tuple):
            raise PayloadError(
                f"map node {self.name!r} needs a list input (one run of formation {self.plan.name!r} per item), "
                f"got {type(items).__name__} from {env.sender!r}"
            )
        memo = env.memo if env.memo is not None else {}
        env.memo = memo
        held = held_errors(memo)  # items an earlier attempt failed for good: not run again
        if memo and self.inner.store is not None and env.run is not None:
            # items a resumed run took from its journal (or an earlier attempt ran): their
            # inner runs' traces, loaded from the journal when read
            keep_journalled_items(env.run, self.name, self.inner.store, env.visit,
                                  [i for i in memo if i not in held], self.plan.order)
        todo = deque(i for i in range(len(items)) if i not in memo)
        observer = self.observer
        durable = env.scope is not None and self.inner.store is not None and observer is not None
        running: dict[Future[FormationResult], tuple[int, VisitScope | None]] = {}
        errors: dict[int, BaseException] = dict(held)
        usage = ZERO_USAGE
        try:
            while todo or running:
                while todo and len(running) < self.max_workers:
                    i = todo.popleft()
                    scope = observer.item_scope(env, i) if durable and observer is not None else None
                    try:
                        future = self.start_inner(env, items[i], scope, f"{self.name}/{i}",
                                                  f"{inner_run_id(env.run_id, self.name, env.visit)}/{i}")
                    except RunSuspended as signal:
                        errors[i] = signal
                        continue
                    running[future] = (i, scope)
                    self._track_item(env, i, future)
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    i, scope = running.pop(future)
                    self._running.remove(future)
                    self._untrack_item(env, i)
                    if future.cancelled():  # cut by interrupt(): the visit ends once the cut items' nodes are closed
                        self._cut_over.wait()
                    try:
                        result = future.result()  # a cancelled item (the run was) raises: the visit is over
                    except FormationRuntimeError as exc:
                        errors[i] = failed = NestedRunError(f"{self.name}/{i}", self.plan.name, exc)
                        self._keep_item(env, i, failed.nodes)
                        continue
                    self._keep_item(env, i, result)
                    if result.status == "suspended":
                        assert result.interrupt is not None and scope is not None
                        errors[i] = RunSuspended(result.interrupt["payload"], scope,
                                                 f"{self.name}/{i}/{result.interrupt['node']}")
                        if self.inner.uses_tokens:  # paid for before it asked: the suspended result counts it
                            usage = usage + result.usage
                        continue
                    if self.inner.one_output and not result.outputs:  # its one sink was skipped: no result, not None
                        errors[i] = PayloadError(
                            f"item {i} has no result: formation {self.plan.name!r} skipped its "
                            f"{self.inner.sinks_named()} for it "
                            f"(an on_error='skip' inside); let that node fail, or route the item to a sink that runs"
                        )
                        continue
                    memo[i] = output = self.inner.output_of(result)
                    if self.inner.uses_tokens:
                        usage = usage + result.usage
                    if durable and observer is not None:
                        observer.item_finished(env, i, output)
        finally:
            for future, (i, _) in running.items():  # the visit ended early (cancelled): stop the items still running
                future.cancel()
                self._running.remove(future)
                self._untrack_item(env, i)
        if errors:
            asking = [i for i, exc in errors.items() if isinstance(exc, RunSuspended)]
            if asking:  # one interrupt at a time: the others ask again when the run resumes
                first = errors[min(asking)]
                assert isinstance(first, RunSuspended)
                if self.inner.uses_tokens:  # what the items spent so far, the asking ones' included
                    first.spent = usage
                raise first
            raise MapItemsError(self.name, len(items), dict(sorted(errors.items())))
        return [memo[i] for i in range(len(items))], usage if self.inner.uses_tokens else None

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        """Cancel the items in flight (the attempt is cut: the node's timeout, a cancel),
        keeping the traces each had then, as the run's end does (:meth:`MapItems.cut`), so
        the items cut short show in the run's traces as ``cancelled`` with what they ran."""
        env = self.current
        run = env.run if env is not None else None
        # each cut item's run_cancelled closes its inner nodes (_nesting._Forward) before process()
        # sees it cancelled and the visit ends
        with self._cutting:
            outermost = self._cut_over.is_set()  # not a re-entrant call: this one ends the cut
            self._cut_over.clear()
            try:
                if env is not None and run is not None:
                    with run.lock:
                        items = self._items(run)
                    items.cut(run.lock, env.visit)
                super().interrupt(reason)
            finally:
                if outermost:
                    self._cut_over.set()

    def _items(self, run: Any) -> MapItems:
        """This node's inner runs in ``run`` (made on first use; call under the run's lock)."""
        nested = run.own("nested")
        kept = nested.get(self.name)
        if not isinstance(kept, MapItems):
            kept = nested[self.name] = MapItems()
        return kept

    def _track_item(self, env: Work, item: int, future: Future[FormationResult]) -> None:
        """Item ``item``'s inner run is in flight: the run's end, cutting it, keeps its traces
        (see :meth:`MapItems.cut`)."""
        run = env.run
        if run is None:  # a map actor used alone: no run keeps traces
            return
        inner, path, run_id = self.inner, f"{self.name}/{item}", getattr(future, "run_id", "")

        def cancel() -> dict[str, NodeTrace] | None:
            traces = inner.running.cancel_traced(run_id)
            return None if traces is None else nested_traces(path, traces)

        with run.lock:
            self._items(run).inflight[(env.visit, item)] = cancel

    def _untrack_item(self, env: Work, item: int) -> None:
        run = env.run
        if run is not None:
            with run.lock:
                self._items(run).inflight.pop((env.visit, item), None)

    def _keep_item(self, env: Work, item: int, inner: FormationResult | dict[str, NodeTrace]) -> None:
        """Keep item ``item``'s inner run (its result, or a failed one's traces) for the
        outer run's traces (:class:`~._result.MapItems`: one reference per item, traces
        built only when read)."""
        run = env.run
        if run is not None:
            with run.lock:
                self._items(run).runs[(env.visit, item)] = inner
