"""Supervision: what happens when a node attempt fails or runs out of time.

A failed attempt is restarted on a fresh replica and redelivered, up to the node's
``retries``, after an exponential backoff (:func:`backoff_delay`: ``backoff *
2**(attempt-1)`` seconds, at most ``max_backoff``, drawn at random from the upper half of
that when ``jitter`` is on). Only errors the node's ``retry_on`` names are retried
(:func:`retryable`; by default every error but ``PayloadError``); any other gives up at
once. An error that says it cannot succeed on a retry (``retryable = False``: a
``PayloadError``, a provider's 4xx, ``interrupt()`` without a store) is never retried,
whatever ``retry_on`` says. A fleet's or map's items are judged one by one: when some
failed items' errors are retried and others' are not, a retry reruns only the first ones,
and the others keep their errors without running again (:func:`held_items`).

An attempt that runs past its ``timeout`` is abandoned (a fresh replica takes new work at
once) and counts as a failure with a :class:`~wingman_actors.errors.NodeTimeoutError`: it
is retried when ``retry_on`` is None or names ``NodeTimeoutError`` or a class covering the
built-in ``TimeoutError`` (``TimeoutError``, ``OSError``, ``Exception``), and not when
``retry_on`` names only other errors (as in LangGraph's ``RetryPolicy(retry_on=...)``, the
policy lists what is worth another try).

When the retries are spent (or the error is not retried), the node's error edges
(``connect(node, handler, on_error=True)``) take the failure: each handler receives a
:class:`~wingman_actors.formation.NodeFailure`, the node's other out-edges are skipped,
and the run goes on (:mod:`.error_routes`). Without error edges the node's ``on_error``
decides: ``"fail"`` fails the run with a
:class:`~wingman_actors.errors.FormationRuntimeError` naming the node, its attempts and
the cause; ``"skip"`` skips the node and what depends only on it. Other runs in flight are
never touched.

The policy (:class:`Supervision`) runs on one thread, the :class:`Supervisor` actor's
(one per running formation), away from the node threads. Node actors and the timer send
it typed messages: :class:`AttemptFailed`, :class:`AttemptTimedOut`, :class:`Redeliver`.
A failed attempt is in its run's record (:func:`note_failure`) before its message is
sent: a run that suspends or ends before the policy gets to it still shows the failure.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..actors._address import RuntimeActor
from ..actors._envelope import HeldItem, Work
from ..agents._result import spent
from ..errors import FleetItemsError, FormationRuntimeError, NodeTimeoutError, NoRouteError, error_text
from ._error_routes import route_failure
from ._failure import NodeFailure
from ._nesting import NestedRunError
from ._plan import ConditionRaised, NodeSpec
from ._result import ZERO_USAGE
from ._runstate import RunState
from ._suspending import contest
from .events import FormationEventType, emit

if TYPE_CHECKING:
    from ..core import Usage
    from ._routing import Router

__all__ = [
    "AttemptFailed",
    "AttemptTimedOut",
    "Redeliver",
    "Supervision",
    "Supervisor",
    "SupervisorMessage",
    "backoff_delay",
    "held_items",
    "inner_cause",
    "note_failure",
    "overdue",
    "retryable",
    "timed_out",
]

log = logging.getLogger("wingman_actors.formation")


def backoff_delay(base: float, attempt: int, cap: float = 30.0, jitter: bool = True) -> float:
    """Delay in seconds before retry number ``attempt`` (1-based).

    Args:
        base: the node's ``backoff``: the first delay (0: retry at once).
        attempt: the attempt that failed (1 for the first).
        cap: the node's ``max_backoff``: no delay is longer.
        jitter: draw the delay at random from the upper half of the exponential one, so
            retries of many runs spread out; False: exactly ``min(cap, base * 2**(attempt-1))``.

    Example:
        >>> [backoff_delay(0.5, n, cap=3.0, jitter=False) for n in (1, 2, 3, 4)]
        [0.5, 1.0, 2.0, 3.0]
    """
    if base <= 0:
        return 0.0
    ceiling = min(cap, base * 2.0 ** min(attempt - 1, 1000))  # a huge attempt is inf, not OverflowError
    return random.uniform(ceiling / 2, ceiling) if jitter else ceiling


def retryable(retry_on: tuple[type[BaseException], ...] | None, error: BaseException) -> bool:
    """Whether a node with this ``retry_on`` (see :class:`~.plan.NodeSpec`) retries ``error``.

    An error with ``retryable = False`` never is. A fleet's ``FleetItemsError`` is retried
    whole when ``retry_on`` names it, or names every failed item's error, and no item's
    error cannot succeed on a retry (else :func:`held_items` retries the items that may). A formation node's (or a mapped formation's
    item's) error is judged by what failed its inner run (:func:`inner_cause`).
    """
    cause = inner_cause(error)
    if not mendable(retry_on, cause):
        return False
    if isinstance(error, FleetItemsError) and not all(
            mendable(retry_on, inner_cause(e)) for e in error.errors.values()):
        return False  # (a mapped formation's items fail with NestedRunError: their own retryable says nothing)
    if retry_on is None or isinstance(error, retry_on) or isinstance(cause, retry_on):
        return True
    return isinstance(error, FleetItemsError) and all(
        isinstance(inner_cause(e), retry_on) for e in error.errors.values())


def held_items(retry_on: tuple[type[BaseException], ...] | None, error: BaseException) -> dict[int, BaseException]:
    """The failed items of a fleet or map (``error`` a ``FleetItemsError`` that
    :func:`retryable` refuses) that another attempt would not help, when some others' it
    would: a retry reruns only those others, and these items keep their errors (each item
    retries on its own, as a group's tasks do). Empty when the node is not retried at all.

    An item's error helps on a retry when it is ``retryable`` and ``retry_on`` names it,
    or names the node's items error itself (then only ``retryable`` counts).
    """
    if not isinstance(error, FleetItemsError):
        return {}
    named = retry_on is None or isinstance(error, retry_on)

    def helps(item_error: BaseException) -> bool:
        cause = inner_cause(item_error)
        if not mendable(retry_on, cause):
            return False
        return named or isinstance(item_error, retry_on or ()) or isinstance(cause, retry_on or ())

    held = {i: e for i, e in error.errors.items() if not helps(e)}
    return held if len(held) < len(error.errors) else {}


def mendable(retry_on: tuple[type[BaseException], ...] | None, cause: BaseException) -> bool:
    """Whether another attempt may help with ``cause``: not when it says ``retryable = False``,
    nor when it is no ``Exception`` (``SystemExit``, ``KeyboardInterrupt``) that ``retry_on`` does
    not name (its default, every ``Exception``, does not)."""
    if not getattr(cause, "retryable", True):
        return False
    return isinstance(cause, Exception) or (retry_on is not None and isinstance(cause, retry_on))


def inner_cause(error: BaseException) -> BaseException:
    """What made the inner run behind ``error`` fail, through any depth of nesting: the
    inner node's own error, for a :class:`~._nesting.NestedRunError`; else ``error``."""
    while type(error) is NestedRunError:
        inner = error.inner
        error = inner.__cause__ if inner.__cause__ is not None else inner
    return error


def note_failure(run: RunState, node: str, attempt: int, started: float, finished: float,
                 error: BaseException, usage: Usage | None = None) -> None:
    """Put a failed attempt in its run's record (for its traces), where the failure is
    first known: the node's thread, or the supervisor's for a timeout. The tokens its
    model calls spent before it failed count: ``usage`` when known beside the error, else
    what the error says (an agent's or fleet's error: ``spent``)."""
    if usage is None:
        usage = spent(error)
    run.own("failures").append((node, attempt, started, finished, error_text(error), usage))


def condition_failed(run: RunState, node: str, attempt: int, raised: ConditionRaised) -> FormationRuntimeError:
    """The error of ``node``'s visit whose ``when=`` condition raised (naming the edge and
    the fix, the condition's error chained), put in the run's record as a failure of that
    visit, so its trace says ``failed`` with the error, as the run does."""
    edge, exc = raised.edge, raised.__cause__
    err = FormationRuntimeError(
        f"condition {edge.label or 'when'} of edge {node!r} → {edge.target!r} raised "
        f"{type(exc).__name__}: {exc}; make it return a bool for every output of {node!r}",
        node=node, attempts=attempt, run_id=run.id, outputs=run.outputs,
    )
    err.__cause__ = exc
    now = time.perf_counter()
    note_failure(run, node, attempt, now, now, err, ZERO_USAGE)
    return err


@dataclass(frozen=True, slots=True)
class AttemptFailed:
    """An attempt at ``work`` raised (or timed out: see :class:`AttemptTimedOut`).

    Attributes:
        work: the delivery of the work envelope.
        attempt: which attempt failed (1-based).
        error: what it raised.
        started: ``perf_counter`` when the attempt began.
        finished: ``perf_counter`` when it failed.
        replica: the replica index that ran it.
        retired: the replica retired after the failure and needs a fresh successor.
        actor: the replica's actor object, when it retired (the one to replace).
    """

    work: Work
    attempt: int
    error: BaseException
    started: float
    finished: float
    replica: int
    retired: bool
    actor: Any = None


@dataclass(frozen=True, slots=True)
class AttemptTimedOut:
    """Attempt ``attempt`` at ``work`` ran past its node's ``timeout``."""

    work: Work
    attempt: int


@dataclass(frozen=True, slots=True)
class Redeliver:
    """The backoff before retrying ``work`` is over: deliver it again."""

    work: Work


SupervisorMessage = AttemptFailed | AttemptTimedOut | Redeliver


def timed_out(spec: NodeSpec, attempt: int, run_id: str, cause: BaseException | None = None) -> NodeTimeoutError:
    """The error of attempt ``attempt`` of node ``spec`` that ran out of its ``timeout``:
    abandoned by the timer, or failing of its own at the deadline (an agent session's
    deadline is the node's, so its ``AgentError(kind=timeout)`` is the node's timeout too),
    ``cause`` chained."""
    err = NodeTimeoutError(f"node {spec.name!r} attempt {attempt} timed out after {spec.timeout:g}s",
                           node=spec.name, attempt=attempt, run_id=run_id)
    err.__cause__ = cause
    return err


def overdue(spec: NodeSpec, attempt: int, run_id: str, started: float, finished: float,
            cause: BaseException | None = None) -> NodeTimeoutError | None:
    """The timeout error of an attempt that ended (``started``/``finished``: ``perf_counter``)
    at or past its node's ``timeout`` before the node's timer settled it, else None. Such an
    attempt timed out all the same: one that failed at its deadline (an agent session's
    deadline is its node's), or one that succeeded too late because its timer could not run
    (a node holding the interpreter lock)."""
    if spec.timeout is None or finished - started < spec.timeout:
        return None
    return timed_out(spec, attempt, run_id, cause)


class Supervision:
    """The restart, backoff and give-up policy of one running formation."""

    def __init__(self, router: Router) -> None:
        self.router = router
        router.supervision = self

    def on_failure(self, failure: AttemptFailed) -> None:
        """A failed attempt (in the run's record already: :func:`note_failure`): retry the
        visit, or give it up."""
        work = failure.work
        run = work.run
        spec = self.router.specs[work.target]
        exc = failure.error
        if failure.retired:
            self.router.nodes[spec.name].restart(failure.replica, failure.actor)
        if run.done:
            return
        if run.suspending is not None:  # a suspending run: it runs again on resume
            contest(run)
            return
        if work.attempt <= spec.retries and (retryable(spec.retry_on, exc) or self.hold(work, spec, exc)):
            delay = backoff_delay(spec.backoff, work.attempt, spec.max_backoff, spec.jitter)
            if run.listeners:
                emit(run.listeners, FormationEventType.NODE_RETRY, run.id, spec.name, {
                    "attempt": work.attempt, "delay_s": delay, "error": error_text(exc),
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
        self.give_up(run, spec, work.attempt, exc, work.visit, work)

    @staticmethod
    def hold(work: Work, spec: NodeSpec, error: BaseException) -> bool:
        """Whether a retry reruns part of a fleet or map whose items failed: those a retry
        would not help are held in the work's memo (:func:`held_items`), not run again."""
        held = held_items(spec.retry_on, error)
        if not held or work.memo is None:
            return False
        for i, item_error in held.items():
            work.memo[i] = HeldItem(item_error)
        return True

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
        err = timed_out(spec, attempt, work.run_id)
        group = self.router.nodes[spec.name]
        # the model calls made before the timer fired were paid for: counted now, while the
        # session is live (its own error comes later, if ever, and is dropped: settled)
        usage = group.spent_on(work)
        group.abandon(work, str(err).removeprefix(f"node {spec.name!r} "))
        now = time.perf_counter()
        note_failure(work.run, spec.name, attempt, work.started or now, now, err, usage)
        self.on_failure(AttemptFailed(work, attempt, err, work.started or now, now, work.replica, False))

    def give_up(
        self, run: RunState, spec: NodeSpec, attempts: int, exc: BaseException, visit: int = 1,
        work: Work | None = None, tag: tuple[str, int] | None = None,
    ) -> None:
        """The node's visit failed for good: its error edges take it (when it has some and
        ``work``, the failed delivery, is known: the node's own attempts raising or timing
        out), else its ``on_error`` decides (also for failures around a finished attempt:
        its output not journalled, a ``when=`` condition raising). A :class:`NoRouteError`
        (the node finished; its output matched no route) fails the run whatever its
        ``on_error``: skipping it would end the run silently, which is what the error is
        for. ``tag``: the visit's round tag (``work.tag`` when ``work`` is given), carried
        on to what the failure reaches."""
        if work is not None:
            tag = work.tag
        error = error_text(exc)
        if run.listeners:
            emit(run.listeners, FormationEventType.NODE_FAILED, run.id, spec.name,
                 {"attempts": attempts, "error": error})
        if spec.error_edges and work is not None:
            failure = NodeFailure(spec.name, exc, work.payload, attempts, run.id)
            if route_failure(self.router, run, spec, failure, visit, tag):
                return
        if spec.on_error == "skip" and type(exc) is not NoRouteError:
            journal = self.router.journal
            if journal is not None and not run.done:
                journal.store.record_skip(run.id, spec.name, visit, error)
            self.router.skip(run, spec.name, f"failed after {attempts} attempt(s) and on_error='skip'", error, tag=tag)
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
        journal = self.router.journal
        # the visit that failed the run, for its history (not when stop() cuts the run short: "interrupted")
        if journal is not None and not run.done and not self.router.closing:
            try:
                journal.record_run_failure(run.id, spec.name, visit, exc, attempts)
            except Exception:  # (the run fails all the same)
                log.exception("could not journal the failure of node %r in run %s", spec.name, run.id)
        self.router.fail_run(run, err)


class Supervisor(RuntimeActor):
    """Takes :data:`SupervisorMessage` objects and hands them to its policy (on a daemon
    thread: a forgotten formation never keeps the interpreter alive)."""

    def __init__(self, policy: Supervision, name: str = "supervisor") -> None:
        super().__init__()
        self.policy = policy
        self.name = name
        self.thread_name = f"wingman-supervisor-{name}"

    def on_receive(self, message: Any) -> Any:
        try:
            if type(message) is AttemptFailed:
                self.policy.on_failure(message)
            elif type(message) is AttemptTimedOut:
                self.policy.on_timeout(message)
            elif type(message) is Redeliver:
                self.policy.redeliver(message.work)
            else:
                log.warning("supervisor %s ignored %r", self.name, message)
        except Exception:  # the supervisor must survive its policy's bugs
            log.exception("supervisor %s failed to handle %r", self.name, message)
        return None
