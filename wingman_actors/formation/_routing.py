"""Routing and completion of runs: where a node's output goes, and when a run is over.

Runs on the node threads (no supervisor hop when things go well): a node actor finishes
an envelope and calls :meth:`Router.completed`, which evaluates the ``when=`` predicates
of the node's out-edges, joins fan-in per run, propagates skips, and queues the next
envelope for the next node. The last unit of a run resolves its future: with a result
(:meth:`Router.complete`), an error (:meth:`Router.fail_run`) or a cancellation
(:meth:`Router.cancel_run`). Failed attempts go to the supervisor as typed messages.
"""

from __future__ import annotations

import itertools
import logging
import time
from concurrent.futures import InvalidStateError
from typing import TYPE_CHECKING, Any

from ..actors._envelope import EnvelopeType, Work
from ..backends._base import NodeGroup
from ..core import StreamEvent, Usage
from ..errors import FormationRuntimeError, NoRouteError
from ._agent_events import emit_agent_event
from ._breakpoints import passed
from ._cut import cut_visits, runtime_fault, was_cut
from ._error_routes import skip_error_targets
from ._firing import edges_firing, exits_held, hold_exits, take_held
from ._future import RunFuture
from ._join import NOTHING as _NOTHING
from ._join import ROUND_OVER, Join, RaceJoin, abandon_losers, cancel_losers, drops, mark, new_join
from ._nesting import carry_traces
from ._plan import ConditionRaised, Plan
from ._replaying import REPLAYED, replay_visit, replaying
from ._result import ZERO_USAGE, FormationResult
from ._runstate import RunState
from ._supervision import AttemptFailed, AttemptTimedOut, condition_failed, note_failure, overdue
from ._suspending import contest, hold_completed, keep_queued, stop_at_breakpoint, stop_at_interrupt
from ._trace_journal import journal_end
from .events import FormationEventType, emit

if TYPE_CHECKING:
    from .._interrupts import RunSuspended, VisitScope
    from ..actors._scheduler import Scheduler
    from ..store import RunTakenOverError
    from ._durable import Journal
    from ._supervision import Supervision

__all__ = ["Join", "Router"]

log = logging.getLogger("wingman_actors.formation")
_ids = itertools.count(1)
_WORK = EnvelopeType.WORK


class Router:
    """Moves outputs along edges and completes runs; the node actors' observer."""

    def __init__(self, plan: Plan, scheduler: Scheduler) -> None:
        self.name = plan.name
        self.plan = plan
        self.specs = dict(plan.nodes)
        self.order = plan.order
        self.sinks = plan.sinks
        self.single_sink, self.one_output = plan.sinks[0] if len(plan.sinks) == 1 else None, plan.one_output
        self.cyclic = any(e.back for e in plan.edges)
        # In a loop, the nodes a join="any" may fire without: their attempts may be
        # abandoned when it fires (formation/_join.py's abandon_losers), so an attempt's
        # end claims its outcome (settle) as a timed one does, whoever comes first.
        self.racing = frozenset(n for spec in self.specs.values() for cut in spec.race.values() for n in cut
                                ) if self.cyclic else frozenset()
        # A node whose only out-edge is unconditional and leads to a node with only this
        # predecessor hands its output straight on: the common pipeline step.
        self.straight: dict[str, str | None] = {}
        for name, spec in self.specs.items():
            edges = spec.out_edges
            nxt = None
            if len(edges) == 1 and not edges[0].conditional and not edges[0].back and not spec.error_edges:
                target = edges[0].target
                if len(self.specs[target].forward_preds) == 1:
                    nxt = target
            self.straight[name] = nxt
        # Sinks without error edges in a formation without cycles: a visit's output goes nowhere.
        self.bare_sinks = frozenset(
            name for name, spec in self.specs.items() if spec.is_sink and not spec.error_edges and not self.cyclic
        )
        self.nodes: dict[str, NodeGroup] = {}
        self.runs: dict[str, RunState] = {}
        self.scheduler = scheduler
        self.supervision: Supervision  # set by the runtime once both exist
        self.tell_supervisor: Any = None
        self.closing = False
        self.journal: Journal | None = None  # set by the runtime when runs are journalled
        self.carries_traces = False  # a formation node's inner formation: a failed run's error has its traces

    # -- entering a run -----------------------------------------------------------------

    def begin(self, run: RunState) -> None:
        """Queue the run's input for every source."""
        input = run.input
        for source in self.plan.sources:
            self.visit(run, source, input, "input")
        if self.cyclic:
            self.finish_one(run)

    def visit(self, run: RunState, node: str, payload: Any, sender: str, tag: tuple[str, int] | None = None) -> None:
        """Queue a visit of ``node`` with ``payload``; ``tag``: the round of a ``join="any"``
        in a loop the payload descends from (formation/_join.py's ``RaceJoin``), carried on."""
        if run.done:
            return
        if run.dropped and node in run.dropped and drops(run, node, run.visits.get(node, 0) + 1, tag):
            self.cancel_loser(run, node, tag)
            return
        visits = 1
        if self.cyclic:
            spec = self.specs[node]
            with run.lock:
                seen = run.own("visits")
                visits = seen.get(node, 0) + 1
                seen[node] = visits
                run.left += 1
            if visits > spec.max_visits:
                error = FormationRuntimeError(
                    f"node {node!r} was visited more than max_visits={spec.max_visits} times in run {run.id}: "
                    "the loop through it did not end; check the when= conditions of its back edges "
                    "or raise its max_visits",
                    node=node, attempts=0, run_id=run.id, outputs=run.outputs,
                )
                now = time.perf_counter()  # the refused visit fails the node in its traces, not only the run
                run.own("failures").append((node, 0, now, now, f"{type(error).__name__}: {error}", None))
                self.fail_run(run, error)
                return
        journal = self.journal
        if journal is None:
            self.nodes[node].tell(Work(next(_ids), run.id, sender, payload, time.time(), node, run, visits, tag))
            return
        replay = run.replay
        if replay is not None:
            payload = replay_visit(self, run, node, visits, payload, tag)
            if payload is REPLAYED:
                return
        breaks = run.breaks
        if breaks is not None and node in breaks.before and (replay is None or not passed(replay.journal, node, visits)):
            self.breakpoint(run, node, visits, {"breakpoint": "before", "input": payload})
            return
        work = Work(next(_ids), run.id, sender, payload, time.time(), node, run, visits, tag)
        work.scope = journal.scope(run.id, node, visits, replay)
        if replay is not None:
            items = replay.items.get((node, visits))
            if items:
                work.memo = dict(items)
        keep_queued(run, work)  # until it begins, a suspension waits for it
        self.nodes[node].tell(work)

    # -- node actor hooks (called on node threads) ---------------------------------------

    def started(self, work: Work) -> None:
        spec = self.specs[work.target]
        run = work.run
        work.started = time.perf_counter()
        if not self.cyclic:
            with run.lock:
                run.own("visits").setdefault(spec.name, 1)
        if spec.timeout is not None:
            attempt = work.attempt
            tell = self.tell_supervisor
            work.timer = self.scheduler.call_later(spec.timeout, lambda: tell(AttemptTimedOut(work, attempt)))
        if run.listeners:
            emit(run.listeners, FormationEventType.NODE_STARTED, run.id, spec.name,
                 {"attempt": work.attempt, "input": work.payload})

    def completed(
        self, work: Work, attempt: int, output: Any, usage: Usage | None, started: float, finished: float
    ) -> None:
        """A node succeeded: record it and route the output."""
        if not self.claims(work, attempt):
            return  # a late reply from an attempt that timed out, or was abandoned (a join="any" loser)
        if work.timer is not None and (late := overdue(self.specs[work.target], attempt, work.run_id, started, finished)):
            note_failure(work.run, work.target, attempt, started, finished, late)
            self.tell_supervisor(AttemptFailed(work, attempt, late, started, finished, work.replica, False, None))
            return  # it ran past its timeout, its timer kept from running (a node holding the GIL): dropped
        run = work.run
        if run.done:
            return
        if run.dropped and work.target in run.dropped and self.dropped(work, claimed=True):  # a join="any" fired without it
            return
        name = work.target
        journal = self.journal
        if journal is not None:
            # journalled before anything downstream of it can be
            try:
                journal.store.record_visit(run.id, name, work.visit, output)
            except Exception as exc:
                self.supervision.give_up(run, self.specs[name], attempt, exc, work.visit, tag=work.tag)
                return
            if run.done:  # the write found the run taken over by another store (see lost)
                return
        run.record(name, attempt, started, finished, usage, output)
        if run.listeners:
            emit(run.listeners, FormationEventType.NODE_FINISHED, run.id, name, {
                "attempt": attempt, "duration_s": finished - started, "usage": usage or ZERO_USAGE, "output": output,
            })
        if journal is not None and run.suspending is not None and hold_completed(run, name, output, attempt, work):
            return  # journalled, not routed on: formation/_suspending.py
        if journal is not None and run.breaks is not None and name in run.breaks.after:  # a resume routes it on
            self.breakpoint(run, name, work.visit, {"breakpoint": "after", "output": output})
            return
        self.route(run, name, output, attempt, work.visit, work.tag)

    def route(self, run: RunState, name: str, output: Any, attempt: int, visit: int,
              tag: tuple[str, int] | None = None, firing: list[bool] | None = None) -> None:
        """Send a finished visit's output along the node's out-edges (``firing``: which fire,
        if known), ``tag`` on (the node actors copy a mutable one first: actors/_payloads.py)."""
        nxt = self.straight[name]
        if nxt is not None:
            self.visit(run, nxt, output, name, tag)
        elif name in self.bare_sinks:  # no edge to take: one sink fewer to wait for
            self.finish_one(run)
        else:
            spec = self.specs[name]
            try:
                if firing is None:
                    firing = edges_firing(spec.out_edges, output)
            except ConditionRaised as raised:  # the visit fails (its trace too, not only the run)
                self.supervision.give_up(run, spec, attempt, condition_failed(run, name, attempt, raised), visit,
                                         tag=tag)
                return
            if spec.needs_route and not any(firing):
                labels = [e.label or "when" for e in spec.out_edges]
                self.supervision.give_up(run, spec, attempt, NoRouteError(
                    name, output, labels, attempts=attempt, run_id=run.id, outputs=run.outputs), visit, tag=tag)
                return
            held = exits_held(spec.out_edges, firing, spec.error_edges) if self.cyclic else None  # before going round
            if held is not None or run.held:
                hold_exits(run, name, held, tag)
            for edge, fire in zip(spec.out_edges, firing, strict=True):
                if fire:
                    if edge.back:
                        self.visit(run, edge.target, output, name, tag)
                    else:
                        self.arrive(run, edge.target, name, output, visit, tag)
                elif not edge.back and not (held is not None and edge.loop == "exit"):
                    self.arrive_skip(run, edge.target, name, "did not fire", tag)
            if spec.error_edges:
                skip_error_targets(self, run, spec, f"is an error edge and {name!r} succeeded", tag, held)
            if spec.is_sink and not self.cyclic:
                self.finish_one(run)
        if self.cyclic:
            self.finish_one(run)

    def failed(
        self, work: Work, attempt: int, exc: BaseException, started: float, finished: float, actor: Any
    ) -> bool:
        """A node raised: hand it to the supervisor. Returns True when the replica must
        retire (the supervisor starts a fresh one)."""
        if not self.claims(work, attempt):
            return False  # the attempt timed out before, or lost a join="any": it was abandoned already
        if work.timer is not None:  # failing at its deadline (an agent session's is the node's) is timing out
            exc = overdue(self.specs[work.target], attempt, work.run_id, started, finished, exc) or exc
        run = work.run
        if not run.done and run.dropped and work.target in run.dropped and drops(run, work.target, work.visit, work.tag):
            self.cancel_loser(run, work.target, work.tag)  # interrupted: a join="any" fired without it
            if self.cyclic:
                self.finish_one(run)
            return False
        if run.done and was_cut(run, work.target, work.visit, attempt):
            return False  # the run's end cut this attempt and counted it (its time, its tokens) then
        # Recorded now, not when the supervisor gets to it: a run suspending meanwhile shows it failed.
        note_failure(run, work.target, attempt, started, finished, exc, getattr(actor, "failed_spent", None))
        if run.suspending is not None:  # it runs again on resume: the run must suspend (told now: it may settle first)
            contest(run)
        if run.done:  # the run ended meanwhile (failed, cancelled, suspended): nothing to retry
            return False
        retire: bool = getattr(actor, "retires_on_failure", True)  # not one with other visits in flight
        self.tell_supervisor(AttemptFailed(work, attempt, exc, started, finished, actor.replica, retire,
                                           actor if retire else None))
        return retire

    def suspended(self, work: Work, attempt: int, signal: RunSuspended) -> None:
        """A visit called ``interrupt()``: journal it and suspend the run."""
        if not self.claims(work, attempt):
            return
        if self.journal is not None:
            stop_at_interrupt(self, work, attempt, signal)

    def breakpoint(self, run: RunState, node: str, visit: int, payload: dict[str, Any]) -> None:
        """A journalled run reached a breakpoint (``break_before``/``break_after``):
        journal it as an interrupt of the visit and suspend the run (formation/_suspending.py)."""
        stop_at_breakpoint(self, run, node, visit, payload)

    def item_scope(self, work: Work, index: int) -> VisitScope | None:
        """The scope of fleet or map item ``index`` of a journalled visit (its answers, its
        journalled model responses), or None when runs are not journalled."""
        journal = self.journal
        return None if journal is None else journal.scope(work.run_id, work.target, work.visit, work.run.replay, item=index)

    def item_finished(self, work: Work, index: int, output: Any) -> None:
        """A fleet or map item of a journalled run finished: journal it (called on the
        item's worker thread). Not once the run has ended: the item is one a timeout, a
        cancel or a failure left running (its attempt abandoned), and its late value is
        dropped like the attempt's (a resume runs it again); written, it could land in a
        run since pruned, and fail the store's next ``flush()``."""
        if self.journal is not None and not work.run.done:
            self.journal.store.record_item(work.run_id, work.target, work.visit, index, output)

    broken = runtime_fault  # a hook above raised handling a node's outcome (a bug): the run fails, saying so

    def dropped(self, work: Work, claimed: bool = False) -> bool:
        """A visit of a node in a branch a ``join="any"`` fired without reached its node or
        ended: cancel it and return True when it belongs to that round (False: it runs).
        ``claimed``: its end claimed it already (see ``racing``); a visit about to start
        claims it here, unless the join's firing took it first."""
        run = work.run
        if not drops(run, work.target, work.visit, work.tag):
            return False
        if not claimed and work.target in self.racing:
            with run.lock:
                if work.settled:
                    return True  # abandoned as it started: resolved then
                work.settled = True
        self.cancel_loser(run, work.target, work.tag)
        if self.cyclic:
            self.finish_one(run)
        return True

    def wants_events(self, work: Work) -> bool:
        run = work.run
        return bool(run is not None and run.listeners)

    def attempt_timeout(self, work: Work) -> float | None:
        return self.specs[work.target].timeout

    def agent_event(self, work: Work, event: StreamEvent, item: int | None = None) -> None:
        emit_agent_event(work, event, item)

    def claims(self, work: Work, attempt: int) -> bool:
        """True when this end of ``attempt`` is the one that counts: the attempt is the visit's
        current one and, when its timer or a ``join="any"`` race can abandon it (``racing``),
        its end claims the outcome first (``settle``). False: a late end, ignored."""
        if attempt != work.attempt:
            return False
        return (work.timer is None and work.target not in self.racing) or self.settle(work)

    def settle(self, work: Work) -> bool:
        """Claim the outcome of an attempt its timer or a race can abandon; False when they won."""
        with work.run.lock:
            if work.settled:
                return False
            work.settled = True
        if work.timer is not None:
            work.timer.cancel()
        return True

    # -- joins and skips -----------------------------------------------------------------

    def arrive(self, run: RunState, target: str, pred: str, value: Any, visit: int = 0,
               tag: tuple[str, int] | None = None) -> None:
        if len(self.specs[target].forward_preds) == 1:
            self.visit(run, target, value, pred, tag)
            return
        self._fire(run, target, pred, *self._join(run, target, pred, value, visit, tag))

    def arrive_skip(self, run: RunState, target: str, pred: str, why: str,
                    tag: tuple[str, int] | None = None) -> None:
        if len(self.specs[target].forward_preds) == 1:
            self.skip(run, target, f"its only incoming edge, from {pred!r}, {why}", tag=tag)
            return
        self._fire(run, target, pred, *self._join(run, target, pred, _NOTHING, 0, tag))

    def _fire(self, run: RunState, target: str, pred: str, visits: list[dict[str, Any] | None],
              round: int | None) -> None:
        """Visit ``target`` for each of ``visits`` (see :meth:`_join`), a race join's tagged
        with their round (``round``: the first one's)."""
        tag = None
        for payload in visits:
            if payload is None:
                self.skip(run, target, "none of its incoming edges fired", tag=None if round is None else (target, round))
            elif payload is ROUND_OVER:  # (the join's marks of a round were set and lifted in _join)
                if round is not None:
                    round += 1
            else:
                if round is not None:
                    tag = (target, round)
                race = self.specs[target].race
                if race:
                    cancel = race[next(iter(payload))]
                    if cancel:
                        abandon_losers(self, run, cancel, f"{target!r} (join='any') fired without it")
                self.visit(run, target, payload, pred, tag)

    def _join(self, run: RunState, target: str, pred: str, value: Any, visit: int = 0,
              tag: tuple[str, int] | None = None) -> tuple[list[dict[str, Any] | None], int | None]:
        """Record that ``pred`` resolved at ``target``'s fan-in join, with ``value`` (the
        output of its visit ``visit`` whose work carried ``tag``, or ``_NOTHING`` when its
        edge was skipped). Returns the visits this makes ready, in order: a payload
        ``{pred: value}``, None for a visit none of whose edges fired (the node is
        skipped), or ``ROUND_OVER``; and for a race join (formation/_join.py's
        ``RaceJoin``) the round of the first of them (else None)."""
        spec = self.specs[target]
        ready: list[dict[str, Any] | None] = []
        with run.lock:
            joins = run.own("joins")
            join = joins.get(target)
            if join is None:
                join = joins[target] = new_join(run, spec.forward_preds, spec.join == "any",
                                                bool(spec.race) and self.cyclic)
            if type(join) is RaceJoin:
                join.offer(pred, value, ready, visit, tag[1] + 1 if tag is not None and tag[0] == target else None)
                first: int | None = join.round - sum(1 for v in ready if v is ROUND_OVER)
            else:
                join.offer(pred, value, ready, visit)
                first = None
            if spec.race and ready:  # marked with the offer: rounds are marked and lifted in order
                mark(run, target, spec.race, ready, self.cyclic)
        return ready, first

    def cancel_loser(self, run: RunState, node: str, tag: tuple[str, int] | None = None) -> None:
        """``node``, in a branch a ``join="any"`` fired without, will not run (or its value is
        dropped): its trace says ``cancelled``, and it resolves downstream as a skip."""
        self.skip(run, node, f"cancelled: {run.dropped.get(node)!r} (join='any') fired without it", cancelled=True,
                  tag=tag)

    def skip(self, run: RunState, node: str, reason: str, error: str | None = None, cancelled: bool = False,
             tag: tuple[str, int] | None = None) -> None:
        """``node`` will not run for this visit: a skip downstream (``tag``: see :meth:`visit`)."""
        if not cancelled and run.dropped and node in run.dropped:  # skipped upstream, in a loser's branch
            self.cancel_loser(run, node, tag)
            return
        with run.lock:
            skipped = run.own("skipped")
            if node not in skipped:
                skipped[node] = error
            if cancelled and node not in run.cancelled:
                run.cancelled += (node,)
        if run.held:  # its skips resolve its exits: what an earlier visit held is superseded
            hold_exits(run, node, None, tag)
        if run.listeners:
            data: dict[str, Any] = {"reason": reason, "cancelled": True} if cancelled else {"reason": reason}
            if run.replay is not None and replaying(run):  # settled before the resume
                data["journalled"] = True
            emit(run.listeners, FormationEventType.NODE_SKIPPED, run.id, node, data)
        spec = self.specs[node]
        for edge in spec.out_edges:
            if not edge.back:
                self.arrive_skip(run, edge.target, node, f"was not taken because {node!r} was skipped", tag)
        if spec.error_edges:
            skip_error_targets(self, run, spec, f"was not taken because {node!r} was skipped", tag)
        if spec.is_sink and not self.cyclic:
            self.finish_one(run)

    # -- the end of a run ----------------------------------------------------------------

    def finish_one(self, run: RunState) -> None:
        """One unit of the run is over — a sink resolved (acyclic formations) or a visit
        finished (cyclic ones: see ``RunState.left``); the last one completes the run."""
        with run.lock:
            run.left -= 1
            if run.left or run.done:
                return
            held = take_held(run) if run.held else None
            run.left, run.done = (1, False) if held else (0, True)  # 1: a guard while held skips travel
        for node, targets, tag in held or ():  # loops that ended without visiting their node again
            for target in targets:
                self.arrive_skip(run, target, node, "did not fire", tag)
        if held:
            self.finish_one(run)  # the guard
        else:
            self.complete(run)

    def claim(self, run: RunState) -> bool:
        with run.lock:
            if run.done:
                return False
            run.done = True
            return True

    def resolved(self, run: RunState) -> Any:
        if run.timer is not None:
            run.timer.cancel()
            run.timer = None  # its callback refers to the run
        self.runs.pop(run.id, None)
        # The result keeps the run (its traces are built from it on demand); the run lets
        # go of the future, so no reference cycle keeps a finished run alive.
        future, run.future = run.future, None
        if type(future) is RunFuture:
            future.detach()
        return future

    def complete(self, run: RunState) -> None:
        sink = self.single_sink
        outputs: dict[str, Any] | None = None  # the one sink's output: FormationResult makes the dict
        if sink is not None:
            output = run.output_of(sink, _NOTHING)
            if output is _NOTHING:  # the sink was skipped
                output, outputs = None, {}
        else:
            produced = run.outputs
            outputs = {s: produced[s] for s in self.sinks if s in produced}
            output = next(iter(outputs.values())) if self.one_output and len(outputs) == 1 else None  # _sinks.py
        duration = time.perf_counter() - run.t0
        if run.dropped:  # join="any" losers not resolved yet: cancelled, not unreached
            cancel_losers(run)
        run.seal()
        result = FormationResult(run.id, output, outputs, run.trace_source(), duration, "succeeded", None, sink or "")
        if run.trace is not None:  # ended before the caller can see the result
            run.trace.end(usage=result.usage)
        if self.journal is not None:
            journal_end(self.journal, run, "succeeded")
        future = self.resolved(run)
        try:
            future.set_result(result)
        except InvalidStateError:  # resolved by hand (its holder's set_result/set_exception): theirs stands
            pass
        if run.listeners:
            emit(run.listeners, FormationEventType.RUN_FINISHED, run.id, None,
                 {"duration_s": duration, "usage": result.usage, "result": result})

    def lost(self, error: RunTakenOverError) -> None:
        """The store lost run ``error.run_id`` (a ``RunTakenOverError``: another process
        took it over while this one's lease had lapsed): end it here with that error, its
        work in flight abandoned, journalling nothing more (the run is the other owner's).
        Called by the store (``on_run_lost``), on any thread; a run not here is left alone."""
        run = self.runs.get(error.run_id or "")
        if run is not None:
            self.fail_run(run, type(error)(run.id, error.store_path, outputs=run.outputs), abandon=True,
                          journalled=False)

    def fail_run(self, run: RunState, error: FormationRuntimeError, *, abandon: bool = False,
                 journalled: bool = True) -> None:
        """Fail a run that has not finished. Agent and fleet work still in progress on it
        is interrupted; with ``abandon`` (a run timeout) function attempts are abandoned
        too, so the failure holds at the limit. Without ``journalled`` its end is not
        journalled (the run was taken over elsewhere)."""
        if not self.claim(run):
            return
        if run.trace is not None:
            run.trace.end(error)
        cut = cut_visits(self, run)  # the visits it ends in flight: cancelled, in its traces
        traces = error.nodes = run.traces()  # the failure path only: the error's node traces
        if self.carries_traces:  # for the outer run (NestedRunError.nodes), before its callback reads them
            carry_traces(error, traces)
        if self.journal is not None and journalled:
            # a run cut short by stop() can be resumed like one whose process died
            journal_end(self.journal, run, "interrupted" if self.closing else "failed", str(error), traces)
        future = self.resolved(run)
        try:
            future.set_exception(error)
        except InvalidStateError:  # resolved by hand, as in complete()
            pass
        if run.listeners:
            emit(run.listeners, FormationEventType.RUN_FAILED, run.id, error.node, {
                "error": str(error), "exception": error, "duration_s": time.perf_counter() - run.t0, "unfinished": cut,
            })
        if not self.closing:
            self.release(run, f"run {run.id} failed", abandon=abandon)

    def cancel_run(self, run_id: str) -> bool:
        """Cancel a run that has not finished: resolve its future as cancelled, stop its
        work in progress, emit ``run_cancelled``. False when it had already finished."""
        run = self.runs.get(run_id)
        if run is None or not self.claim(run):
            return False
        cut_visits(self, run)  # the visits in flight: cancelled, in its traces
        running = self.unfinished(run)
        with run.lock:  # beside a join="any" loser cancelled meanwhile
            run.cancelled += tuple(n for n in running if n not in run.cancelled)
        if run.trace is not None:
            run.trace.end(cancelled=True)
        if self.journal is not None:
            journal_end(self.journal, run, "cancelled")
        future = self.resolved(run)
        if type(future) is RunFuture:
            future.settle_cancelled()
        else:
            future.cancel()
        self.release(run, f"run {run.id} was cancelled", abandon=True)
        if run.listeners:
            emit(run.listeners, FormationEventType.RUN_CANCELLED, run.id, None, {
                "duration_s": time.perf_counter() - run.t0, "outputs": dict(run.outputs),
                "unfinished": running, "nodes": run.traces(),
            })
        return True

    def unfinished(self, run: RunState) -> list[str]:
        """Nodes of ``run`` that started and have not finished, in node order."""
        known = set(run.unfinished())
        known.update(name for name, node in self.nodes.items() if node.working_on(run))
        return [n for n in self.order if n in known]

    def release(self, run: RunState, reason: str, *, abandon: bool) -> None:
        """Stop the attempts of ``run`` still in progress (its result is no longer wanted):
        agent and fleet sessions are interrupted; function attempts are abandoned when
        ``abandon`` is set, else left to finish (their result is dropped)."""
        for node in self.nodes.values():
            node.release(run, reason, abandon=abandon)
