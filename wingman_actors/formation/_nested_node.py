"""A formation node inside a running formation: a node group with no actor of its own.

A formation node does no work itself: its inner formation's nodes do. So instead of a
node actor that would wake for each input, submit the inner run and sleep until it
ends (two thread switches more per visit than the same nodes declared flat), its
:class:`FormationNode` starts the visit's inner run on the thread that delivers the
input, and reports the outcome to the router from the thread that finishes the inner
run, exactly where a node actor would (``started``, ``completed``, ``failed``,
``suspended``). Supervision treats it as a node whose attempts can be abandoned: a
retry starts (or, journalled, resumes) the inner run again; a timeout, a cancel or a
failed run cancels the inner run in progress.

The inner formation is started with the outer formation and stopped with it. Visits do
not queue: each starts its inner run at once, and the inner formation pipelines them as
any formation does (its own nodes' ``concurrency`` applies), so a formation node's own
``concurrency`` has no effect.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any

from .._interrupts import RunSuspended
from ..actors._base import report_fault
from ..actors._envelope import Work
from ..core import Usage
from ..errors import FormationRuntimeError
from ._nesting import InnerFormation, inner_run_id
from ._result import FormationResult

__all__ = ["FormationNode"]


class FormationNode:
    """The node group of a formation node (see the module docs).

    Args:
        inner: the node's inner formation, started.
        observer: the router (a :class:`~wingman_actors.actors._base.NodeObserver`).
        notify_start: report each attempt's start (the node has a ``timeout``).
    """

    replica = 0  # what a failed attempt names as its replica (there is no other)

    def __init__(self, inner: InnerFormation, observer: Any, *, notify_start: bool = False) -> None:
        self.name = inner.name
        self.inner = inner
        self.observer = observer
        self.notify_start = notify_start
        self._lock = threading.Lock()
        self._inflight: dict[Work, Future[FormationResult]] = {}
        self._cutting = threading.local()  # (see _cancel) the outcomes its own cancels report, held back

    def tell(self, work: Work) -> None:
        """Start the visit's inner run now (on the calling thread)."""
        run = work.run
        if run.done:
            return  # the run ended (failed, cancelled, timed out, stopped): drop its leftovers
        observer = self.observer
        attempt = work.attempt
        if self.notify_start or run.listeners:
            observer.started(work)
        started = time.perf_counter()
        try:
            future = self.inner.start(work, work.payload, work.scope, self.name,
                                      inner_run_id(work.run_id, self.name, work.visit))
        except RunSuspended as signal:
            work.started = started
            observer.suspended(work, attempt, signal)
            return
        except Exception as exc:  # e.g. the store failed: the attempt fails, never the caller's thread
            work.started = started
            observer.failed(work, attempt, exc, started, time.perf_counter(), self)
            return
        with self._lock:
            self._inflight[work] = future
        # once in flight (a cut visit shows its time so far; until then a suspending run
        # counts the visit as not begun: formation/_suspending.py)
        work.started = started
        if run.done:  # cancelled before release() could see it
            future.cancel()
        future.add_done_callback(lambda done: self._finished(work, attempt, started, done))

    def _finished(self, work: Work, attempt: int, started: float, future: Future[FormationResult]) -> None:
        """On the thread that finished the inner run: report the attempt's outcome."""
        held = getattr(self._cutting, "held", None)
        if held is not None:  # inside our own cancel of it: reported once the cut inner nodes are closed
            held.append(lambda: self._finished(work, attempt, started, future))
            return
        with self._lock:
            if self._inflight.get(work) is future:
                del self._inflight[work]
        observer = self.observer
        try:
            if future.cancelled():
                observer.failed(work, attempt, FormationRuntimeError(
                    f"the inner run of formation node {self.name!r} was cancelled", node=self.name,
                    run_id=work.run_id), started, time.perf_counter(), self)
                return
            exc = future.exception()
            if exc is not None:
                if isinstance(exc, FormationRuntimeError):
                    exc = self.inner.failure(work, exc)
                observer.failed(work, attempt, exc, started, time.perf_counter(), self)
                return
            result = future.result()
            if result.status == "suspended":
                observer.suspended(work, attempt, self.inner.suspension(work, result, self.name))
                return
            output, usage = self.inner.outcome(work, result)
            if self.inner.one_output and not result.outputs:  # its one sink (or each alternative) was skipped
                self._skipped(work, attempt)
                return
            observer.completed(work, attempt, output, usage, started, time.perf_counter())
        except Exception as fault:  # a runtime hook raised (a bug): its run fails, saying so
            report_fault(observer, self.name, work, fault)

    def _skipped(self, work: Work, attempt: int) -> None:
        """The inner run ended without a result (its single sink was skipped, say by an
        ``on_error="skip"``): the node is skipped, not completed with None, and so is what
        depends only on it, as for a top-level run whose sink is skipped (``outputs ==
        {}``). Journalled as a skip, so a resume skips it again."""
        router = self.observer
        run = work.run
        if not router.claims(work, attempt):
            return  # a late reply from an attempt that timed out, or was abandoned (a join="any" loser)
        if run.done or (run.dropped and self.name in run.dropped and router.dropped(work, claimed=True)):
            return
        reason = f"its inner formation's {self.inner.sinks_named()} gave no output: no result to pass on"
        journal = router.journal
        if journal is not None:
            journal.store.record_skip(run.id, self.name, work.visit, reason)
        router.skip(run, self.name, reason, None, tag=work.tag)
        if router.cyclic:
            router.finish_one(run)

    # -- the NodeGroup protocol (supervision and cancellation) ---------------------------

    def restart(self, replica: int, retired: Any) -> None:
        """Nothing to restart: a retry starts a new inner run."""

    def abandon(self, env: Work, why: str) -> bool:
        """Cancel the inner run of ``env``'s attempt, if it is in progress."""
        with self._lock:
            future = self._inflight.pop(env, None)
        if future is None:
            return False
        self._cancel(env, future)
        return True

    def _cancel(self, work: Work, future: Future[FormationResult]) -> None:
        """Cancel ``work``'s inner run (keeping its traces as it was cut). The inner run
        resolves, calling :meth:`_finished`, before it sends its ``run_cancelled``, which
        closes the inner nodes it cut (``_nesting._Forward``): what ``_finished`` reports
        on this thread meanwhile (the node's own end: a ``join="any"`` loser skipped) waits
        until then, so the outer run's listeners hear the inner nodes end first."""
        held: list[Any] = []
        self._cutting.held = held
        try:
            self.inner.cancel(work, future)
        finally:
            self._cutting.held = None
        for report in held:
            report()

    def keep_cut(self, run: Any) -> None:
        """``run`` ends (fails or is cancelled) with inner runs of this node in flight: cancel
        them now, keeping their traces as they were cut (the inner nodes that ran, and those
        cut short), before the run's own traces are taken (see ``_cut.cut_visits``)."""
        with self._lock:
            mine = [(w, f) for w, f in self._inflight.items() if w.run is run]
            for work, _ in mine:
                del self._inflight[work]
        for work, future in mine:
            self._cancel(work, future)

    def working_on(self, run: Any) -> bool:
        with self._lock:
            return any(work.run is run for work in self._inflight)

    def attempts_of(self, run: Any) -> list[tuple[Work, int, float]]:
        with self._lock:
            return [(work, work.attempt, work.started) for work in self._inflight if work.run is run]

    def spent_on(self, env: Work) -> Usage | None:
        """None: an inner run cut short has its own traces, which count its agents' tokens."""
        return None

    def release(self, run: Any, reason: str, *, abandon: bool) -> list[str]:
        """Cancel the inner runs of ``run`` in progress."""
        with self._lock:
            mine = [(w, f) for w, f in self._inflight.items() if w.run is run]
            for work, _ in mine:
                del self._inflight[work]
        for work, future in mine:
            self._cancel(work, future)  # keeping the inner traces as they were cut, as abandon() does
        return [self.name] if mine else []

    def actors(self) -> Iterable[Any]:
        return ()

    def close(self) -> None:
        """Stop the inner formation (with the outer one)."""
        self.inner.stop()
