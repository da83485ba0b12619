"""A journalled run suspending (an ``interrupt()`` or a breakpoint): what
:meth:`~._routing.Router.suspended` and :meth:`~._routing.Router.breakpoint` do
(:func:`stop_at_interrupt`, :func:`stop_at_breakpoint`). Kept apart from
:mod:`._routing`, whose hot path it is not."""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import InvalidStateError
from typing import TYPE_CHECKING, Any

from .._graphs import downstream
from ..errors import error_text
from ._failure import NodeFailure
from ._firing import edges_firing
from ._plan import ConditionRaised
from ._result import FormationResult, suspended_traces
from ._trace_journal import journal_end
from .events import FormationEventType, emit

if TYPE_CHECKING:
    from .._interrupts import RunSuspended
    from ..actors._envelope import Work
    from ..core import Usage
    from ._routing import Router
    from ._runstate import RunState

__all__ = ["Suspension", "contest", "hold_completed", "keep_queued", "stop_at_breakpoint", "stop_at_interrupt",
           "suspend_at_once"]


_POLL_S = 0.002  # how often a suspending run looks whether its attempts in flight have ended


@dataclasses.dataclass(slots=True, eq=False)
class Suspension:
    """What a suspending run (``RunState.suspending``) waits to suspend at: the interrupt
    or breakpoint of ``node`` (a path inside a formation node), with ``payload``; the
    visits that finished meanwhile (``held``: journalled, not routed on); and whether
    anything else happened meanwhile that a resume must redo (``contested``: a visit that
    failed, or asked a question of its own). ``asker``: the visit that asked (None for a
    breakpoint). See :func:`_withdrawn`."""

    node: str
    payload: Any
    reason: str
    attempt: int
    spent: Usage | None
    asker: Work | None = None
    item: int | None = None
    held: list[tuple[str, Any, int, int, tuple[str, int] | None]] = dataclasses.field(default_factory=list)
    contested: bool = False


def stop_at_breakpoint(router: Router, run: RunState, node: str, visit: int, payload: dict[str, Any]) -> None:
    """Journal the breakpoint ``payload`` of ``node``'s visit as an interrupt and suspend
    ``run`` there (:func:`_claimed`: a run already stopping journals nothing here, so the
    resume stops at this one in its turn; a journalled breakpoint counts as passed)."""
    journal = router.journal
    assert journal is not None  # breakpoints need a store (checked when the run is submitted)
    reason = f"run {run.id} stopped at a breakpoint {payload['breakpoint']} {node!r}"
    if not _claimed(run, Suspension(node, payload, reason, 0, None)):
        return
    try:
        journal.store.record_interrupt(run.id, node, visit, {k: _journalled(v) for k, v in payload.items()})
    except Exception as exc:
        _unclaim(run)
        router.supervision.give_up(run, router.specs[node], 0, exc, visit)
        return
    _when_settled(router, run)


def stop_at_interrupt(router: Router, work: Work, attempt: int, signal: RunSuspended) -> None:
    """A visit (or fleet item) of a journalled run called ``interrupt()``: journal it (the
    replies it had, then the interrupt) and suspend the run there (:func:`_claimed`: a
    sibling's interrupt or breakpoint that came first wins; this visit runs again on resume
    and asks again)."""
    run, journal = work.run, router.journal
    assert journal is not None
    node, scope = work.target, signal.scope  # the visit's scope, or a fleet item's
    if not _claimed(run, Suspension(signal.node, signal.payload, f"run {run.id} was suspended by {node!r}'s interrupt",
                                    attempt, signal.spent, work, scope.item)):
        return
    try:
        signal.journal_replies()  # before the interrupt: a resume finds them (other asking items' too)
        journal.store.record_interrupt(run.id, node, work.visit, signal.payload, item=scope.item)
    except Exception as exc:
        _unclaim(run)
        router.supervision.give_up(run, router.specs[node], attempt, exc, work.visit, tag=work.tag)
        return
    _when_settled(router, run)


def _claimed(run: RunState, suspending: Suspension) -> bool:
    """Claim ``run``'s suspension for one interrupt or breakpoint, before it is journalled:
    of two reached at once on parallel branches, the one the run suspends at is the one the
    store then holds as pending (the last journalled), whichever write ends first (the
    other runs again on resume: the suspension is contested)."""
    with run.lock:
        if run.done:
            return False
        if run.suspending is not None:
            run.suspending.contested = True
            return False
        run.suspending = suspending
        return True


def contest(run: RunState) -> None:
    """A visit of suspending ``run`` failed: it runs again on resume, so the suspension
    cannot be withdrawn (see :func:`_withdrawn`)."""
    with run.lock:
        if run.suspending is not None:
            run.suspending.contested = True


def hold_completed(run: RunState, node: str, output: Any, attempt: int, work: Work) -> bool:
    """A visit of ``run`` finished (journalled) while the run suspends: keep it, not routed
    on, in case the suspension is withdrawn (:func:`_withdrawn`). False when the run is no
    longer suspending (the suspension was withdrawn meanwhile: route it on)."""
    with run.lock:
        suspending = run.suspending
        if suspending is None:
            return False
        suspending.held.append((node, output, attempt, work.visit, work.tag))
        return True


def _unclaim(run: RunState) -> None:
    with run.lock:
        run.suspending = None


def _journalled(value: Any) -> Any:
    """A breakpoint's input as the journal keeps it: an error handler's
    :class:`~._failure.NodeFailure` (its exception a store may not serialise) as a dict of
    its node, error text, input, attempts and run id, also as a fan-in's value. The result's
    ``interrupt`` keeps the NodeFailure itself; a resume rebuilds the handler's input from
    the journalled failure, not from this."""
    if isinstance(value, NodeFailure):
        return {"node": value.node, "error": error_text(value.error), "input": value.input,
                "attempts": value.attempts, "run_id": value.run_id}
    if type(value) is dict and any(isinstance(v, NodeFailure) for v in value.values()):
        return {k: _journalled(v) for k, v in value.items()}
    return value


def _when_settled(router: Router, run: RunState) -> None:
    """Suspend ``run`` (at what it claimed: its ``suspending``) once the attempts of its
    other nodes still in flight have ended. Meanwhile a visit that finishes is journalled
    and kept in the result but not routed on, so a resume does not run it again (as
    LangGraph keeps the writes of a superstep's other tasks); one that fails or interrupts
    runs again on resume. The run's ``timeout`` ends the wait: the run suspends then
    (:func:`suspend_at_once`), it does not fail, and what is still in flight runs again on
    resume."""
    if run.done:  # cancelled, failed or taken over meanwhile
        return
    if _busy(router, run):
        router.scheduler.call_later(_POLL_S, lambda: _when_settled(router, run))
        return
    suspending = run.suspending
    assert suspending is not None
    if not _withdrawn(router, run, suspending):
        _suspend_now(router, run, suspending)


def _withdrawn(router: Router, run: RunState, suspending: Suspension) -> bool:
    """Withdraw ``run``'s question and let the run go on, when a visit that finished while
    the run waited to suspend fires a ``join="any"`` without the asking node's branch (as
    Inngest and Hatchet drop a wait that lost its race): the question is journalled as
    withdrawn (no longer pending, it takes no answer), the visits held meanwhile are
    routed on in the order they finished, and the asking node is cancelled as any loser
    is. Only for an interrupt asked by a node of this formation (not inside a formation
    node), in a formation without loops, when nothing happened meanwhile that a resume
    must redo (``contested``) and no held visit stops at a breakpoint after it; else the
    run suspends as before. A ``when=`` condition on the way is evaluated once, here, for
    both the decision and the routing. Returns whether it was withdrawn."""
    asker, journal = suspending.asker, router.journal
    withdraw = getattr(journal.store, "withdraw_interrupt", None) if journal is not None else None
    if (asker is None or withdraw is None or suspending.contested or not suspending.held or router.cyclic
            or suspending.node != asker.target or (run.dropped and asker.target in run.dropped)):
        return False
    node, breaks = asker.target, run.breaks
    routes: list[tuple[str, Any, int, int, tuple[str, int] | None, list[bool] | None]] = []
    reached: set[str] = set()  # the join="any" nodes a held visit reaches first (in finishing order)
    winner = None
    for name, output, attempt, visit, tag in suspending.held:
        if breaks is not None and name in breaks.after:
            return False
        spec, firing = router.specs[name], None
        if router.straight[name] is None and name not in router.bare_sinks:
            try:
                firing = edges_firing(spec.out_edges, output)
            except ConditionRaised:
                return False  # routed on by the resume, where it fails the run
            for edge, fire in zip(spec.out_edges, firing, strict=True):
                race = router.specs[edge.target].race
                if fire and race and edge.target not in reached:
                    reached.add(edge.target)
                    if winner is None and node in race.get(name, ()):
                        winner = edge.target
        routes.append((name, output, attempt, visit, tag, firing))
    if winner is None:
        return False
    with run.lock:
        if run.done or run.suspending is not suspending or suspending.contested:
            return False
        run.suspending = None
    why = f"withdrawn: {winner!r} (join='any') fired without it"
    try:
        withdraw(run.id, node, asker.visit, why, item=suspending.item)
    except Exception as exc:
        router.supervision.give_up(run, router.specs[node], suspending.attempt, exc, asker.visit, tag=asker.tag)
        return True
    for name, output, attempt, visit, tag, firing in routes:
        router.route(run, name, output, attempt, visit, tag, firing)
    if run.dropped and node in run.dropped:
        router.cancel_loser(run, node, asker.tag)
    else:  # (not reached: the join fired as decided above) its visit runs again, and asks again
        router.visit(run, node, asker.payload, asker.sender, asker.tag)
    return True


def suspend_at_once(router: Router, run: RunState) -> None:
    """End the wait of a suspending ``run`` now (its timeout came first): the visits still in
    flight are released and run again on resume, as a run's cut short by a crash would."""
    suspending = run.suspending
    if suspending is not None:
        _suspend_now(router, run, suspending, abandon=True)


def _busy(router: Router, run: RunState) -> bool:
    """Whether an attempt of ``run`` is in progress, or a visit of it was dispatched to its
    node and has not begun (a visit a ``join="any"`` dropped never begins: not counted)."""
    if any(group.working_on(run) for group in router.nodes.values()):
        return True
    with run.lock:
        return any(w.started == 0.0 and w.target not in run.dropped for w in run.queued)


def keep_queued(run: RunState, work: Any) -> None:
    """Remember a visit of a journalled run dispatched to its node (see :func:`_busy`); the
    run's end lets go of them (``journal_end``: each refers to the run, a reference cycle)."""
    with run.lock:
        queued = run.own("queued")
        if len(queued) % 32 == 31:  # now and then: those begun are an attempt in progress, or over
            queued[:] = [w for w in queued if w.started == 0.0]
        queued.append(work)


def _suspend_now(router: Router, run: RunState, suspending: Suspension, abandon: bool = False) -> None:
    """End ``run`` suspended: its result ``suspended`` with the interrupt's ``payload``, its
    traces journalled as they are now, its queued work released with ``reason`` (and
    attempts still in progress abandoned, with ``abandon``). ``spent``: what the asking
    attempt's model calls cost before it asked, counted in the result's trace of its node
    but not journalled (a resume replays those calls and counts them)."""
    journal = router.journal
    assert journal is not None
    if not router.claim(run):
        return
    node, payload, reason, attempt, spent = (suspending.node, suspending.payload, suspending.reason,
                                             suspending.attempt, suspending.spent)
    # The traces as the run suspends, for the result and the journal alike: attempts still
    # in flight when it suspends (none, unless a node ignored a cancel) run again on resume
    traces = suspended_traces(run, node, attempt, ahead=_ahead(router, node.split("/", 1)[0]))
    journal_end(journal, run, "suspended", traces=traces)
    if spent:
        held = node.split("/", 1)[0]
        trace = traces.get(held)
        if trace is not None:
            traces = {**traces, held: dataclasses.replace(trace, usage=trace.usage + spent)}
    produced = run.outputs
    outputs = {s: produced[s] for s in router.sinks if s in produced}
    duration = time.perf_counter() - run.t0
    result = FormationResult(run.id, None, outputs, traces, duration, "suspended",
                             {"node": node, "payload": payload})
    if run.trace is not None:  # ended before the caller can see the result, as a finished run's
        run.trace.end(usage=result.usage, suspended=True)
    future = router.resolved(run)
    try:
        future.set_result(result)
    except InvalidStateError:  # resolved by hand (its holder's set_result/set_exception): theirs stands
        pass
    if run.listeners:
        emit(run.listeners, FormationEventType.RUN_FINISHED, run.id, None,
             {"duration_s": duration, "usage": result.usage, "result": result, "suspended": True})
    router.release(run, reason, abandon=abandon)


def _ahead(router: Router, node: str) -> set[str]:
    """The nodes downstream of ``node`` along forward edges (error edges included)."""
    return downstream(((e.source, e.target) for e in router.plan.edges if not e.back), node)
