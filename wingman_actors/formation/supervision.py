"""Supervision policy: what happens when a node attempt fails or runs out of time.

A failed attempt is restarted on a fresh replica and redelivered, up to the node's
``retries``, after an exponential backoff with jitter; when the retries are spent the
node's ``on_error`` decides: ``"fail"`` fails the run with a
:class:`~wingman_actors.errors.FormationRuntimeError` naming the node, its attempts and
the cause; ``"skip"`` skips the node and what depends only on it. An attempt that runs
past its ``timeout`` is abandoned (a fresh replica takes new work at once) and counts as
a failure. Other runs in flight are never touched.

The methods run on the supervisor actor's thread
(:class:`~wingman_actors.actors.supervisor.Supervisor`), which takes typed messages.
"""

from __future__ import annotations

import time
from typing import Any

from ..actors.envelope import Work
from ..actors.supervisor import AttemptFailed, AttemptTimedOut, Redeliver, backoff_delay
from ..errors import FormationRuntimeError, NodeTimeoutError
from .events import FormationEventType, emit
from .plan import NodeSpec
from .routing import Router
from .runstate import RunState

__all__ = ["Supervision"]


class Supervision:
    """The restart, backoff and give-up policy of one running formation."""

    def __init__(self, router: Router) -> None:
        self.router = router
        router.supervision = self

    def on_failure(self, failure: AttemptFailed) -> None:
        work = failure.work
        run = work.run
        spec = self.router.specs[work.target]
        exc = failure.error
        error = f"{type(exc).__name__}: {exc}"
        run.own("failures").append((spec.name, failure.attempt, failure.started or failure.finished,
                                    failure.finished, error))
        if failure.retired:
            self.router.nodes[spec.name].restart(failure.replica, failure.actor)
        if run.done:
            return
        if getattr(exc, "retryable", True) and work.attempt <= spec.retries:
            delay = backoff_delay(spec.backoff, work.attempt)
            if run.listeners:
                emit(run.listeners, FormationEventType.NODE_RETRY, run.id, spec.name, {
                    "attempt": work.attempt, "delay_s": delay, "error": error,
                })
            work.attempt += 1
            work.settled = False
            work.timer = None
            if delay > 0:
                tell = self.router.tell_supervisor
                self.router.scheduler.call_later(delay, lambda: tell(Redeliver(work)))
            else:
                self.redeliver(work)
            return
        self.give_up(run, spec, work.attempt, exc)

    def redeliver(self, work: Work) -> None:
        if work.run.done or self.router.closing:
            return
        self.router.nodes[work.target].tell(work)

    def on_timeout(self, timeout: AttemptTimedOut) -> None:
        work, attempt = timeout.work, timeout.attempt
        if work.attempt != attempt or work.run.done:
            return
        with work.run.lock:
            if work.settled:
                return
            work.settled = True
        spec = self.router.specs[work.target]
        why = f"attempt {attempt} timed out after {spec.timeout:g}s"
        self.router.nodes[spec.name].abandon(work, why)
        now = time.perf_counter()
        err = NodeTimeoutError(f"node {spec.name!r} {why}", node=spec.name, attempt=attempt, run_id=work.run_id)
        self.on_failure(AttemptFailed(work, attempt, err, work.started or now, now, work.replica, False))

    def give_up(self, run: RunState, spec: NodeSpec, attempts: int, exc: BaseException) -> None:
        error = f"{type(exc).__name__}: {exc}"
        if run.listeners:
            emit(run.listeners, FormationEventType.NODE_FAILED, run.id, spec.name,
                 {"attempts": attempts, "error": error})
        if spec.on_error == "skip":
            self.router.skip(run, spec.name, f"failed after {attempts} attempt(s) and on_error='skip'", error)
            if self.router.cyclic:
                self.router.finish_one(run)
            return
        err: Any
        if isinstance(exc, FormationRuntimeError):
            err = exc
        else:
            err = FormationRuntimeError(
                f"node {spec.name!r} failed after {attempts} attempt(s) in run {run.id}: {error}",
                node=spec.name, attempts=attempts, run_id=run.id, outputs=run.outputs,
            )
            err.__cause__ = exc
        self.router.fail_run(run, err)
