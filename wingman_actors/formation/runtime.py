"""The formation runtime: node actors wired by the plan, a supervisor, many runs in flight.

Data path (no supervisor hop when things go well): a node actor finishes an envelope and,
on its own thread, routes the output along its out-edges — evaluating ``when=``
predicates, joining fan-in per run, propagating skips — and puts the next envelope in the
next node's mailbox. Per-run bookkeeping lives in a :class:`RunState` shared by
reference. Failures and timeouts go to the supervisor actor, which restarts the replica
(a fresh actor), redelivers with backoff, or gives up by the node's ``on_error``.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from ..actors.address import NodeAddress, start_actor
from ..actors.envelope import Envelope, EnvelopeType
from ..actors.nodes import AgentActor, FleetActor, FunctionActor, NodeActor
from ..actors.scheduler import Scheduler
from ..actors.supervisor import Supervisor, backoff_delay
from ..core import StreamEvent, StreamEventType, Usage
from ..errors import FormationRuntimeError, WingmanError
from ..providers.base import Provider
from .events import FormationEvent, FormationEventType
from .plan import NodeSpec, Plan
from .result import ZERO_USAGE, FormationResult
from .runstate import RunState

__all__ = ["EventListener", "NodeTimeoutError", "RunState", "RunningFormation", "run_once", "run_stream"]

log = logging.getLogger("wingman_actors.formation")

EventListener = Callable[[FormationEvent], None]
_ids = itertools.count(1)
_WORK = EnvelopeType.WORK


class NodeTimeoutError(WingmanError):
    """A node attempt ran past its ``timeout``."""

    retryable = True


class RunningFormation:
    """A started formation: submit inputs, get futures of :class:`FormationResult`.

    Use it as a context manager, or call :meth:`stop`. Many runs can be in flight at once.

    Example:
        >>> with formation.start() as running:                          # doctest: +SKIP
        ...     futures = [running.submit(x) for x in inputs]
        ...     results = [f.result() for f in futures]
    """

    def __init__(
        self,
        plan: Plan,
        *,
        on_event: EventListener | None = None,
        provider: Provider | None = None,
        work_dir: str | Path | None = None,
    ) -> None:
        self.plan = plan
        self._work_dir = work_dir
        self.name = plan.name
        self._specs = dict(plan.nodes)
        self._order = plan.order
        self._sinks = plan.sinks
        self._single_sink = plan.sinks[0] if len(plan.sinks) == 1 else None
        self._cyclic = any(e.back for e in plan.edges)
        # A node whose only out-edge is unconditional and leads to a node with only this
        # predecessor hands its output straight on: the common pipeline step.
        self._straight: dict[str, str | None] = {}
        for name, spec in self._specs.items():
            edges = spec.out_edges
            nxt = None
            if len(edges) == 1 and edges[0].when is None and not edges[0].back:
                target = edges[0].target
                if len(self._specs[target].forward_preds) == 1:
                    nxt = target
            self._straight[name] = nxt
        self._listeners = [on_event] if on_event is not None else []
        self._provider = provider
        self._runs: dict[str, RunState] = {}
        self._prefix = uuid.uuid4().hex[:8]
        self._seq = itertools.count(1)
        self._closing = False
        self._stopped = False
        self._retired: list[Any] = []
        self._scheduler = Scheduler(name=f"wingman-timer-{plan.name}")
        self._addresses: dict[str, NodeAddress] = {}
        self._supervisor: Any = None
        self._started = False

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> RunningFormation:
        """Start the supervisor and every node actor (``concurrency`` replicas each)."""
        if self._started:
            raise RuntimeError(f"formation {self.name!r} is already started")
        self._started = True
        try:
            self._supervisor = start_actor(Supervisor, self, name=self.name)
            for name in self._order:
                spec = self._specs[name]
                actors = [self._spawn(spec, i) for i in range(spec.concurrency)]
                self._addresses[name] = NodeAddress(name, actors)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, spec: NodeSpec, replica: int) -> NodeActor:
        common: dict[str, Any] = {"name": spec.name, "observer": self, "replica": replica,
                                  "notify_start": spec.timeout is not None}
        if spec.kind == "function":
            assert spec.fn is not None
            actor: NodeActor = start_actor(
                FunctionActor, spec.fn, mode=spec.input_mode, input_adapter=spec.input_adapter,
                kwarg_adapters=spec.kwarg_adapters, **common,
            )
            return actor
        assert spec.agent is not None
        agent = spec.agent if self._provider is None else spec.agent.with_overrides(provider=self._provider)
        if spec.kind == "agent":
            actor = start_actor(AgentActor, agent, prompt=spec.prompt, work_dir=self._work_dir, **common)
        else:
            actor = start_actor(FleetActor, agent, max_workers=spec.max_workers, prompt=spec.prompt,
                                work_dir=self._work_dir, **common)
        return actor

    def __enter__(self) -> RunningFormation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every actor (nodes in reverse topological order, then the supervisor).

        Runs still in flight fail with :class:`FormationRuntimeError`; no future is left
        unresolved and no thread this formation started is left running (a node stuck in
        user code is waited for up to ``timeout`` seconds, then reported in the log).
        """
        if self._stopped:
            return
        self._closing = True
        self._stopped = True
        for run in list(self._runs.values()):
            self._fail_run(run, FormationRuntimeError(
                f"formation {self.name!r} stopped before run {run.id} finished",
                run_id=run.id, outputs=run.outputs,
            ))
        actors: list[Any] = []
        for name in reversed(self._order):
            address = self._addresses.get(name)
            if address is None:
                continue
            for actor in address.actors:
                interrupt = getattr(actor, "interrupt", None)
                if interrupt is not None:
                    interrupt()
                actor.actor_ref.stop(block=False)
                actors.append(actor)
        actors.extend(self._retired)
        if self._supervisor is not None:
            self._supervisor.actor_ref.stop(block=False)
            actors.append(self._supervisor)
        deadline = time.monotonic() + timeout
        for actor in actors:
            thread = getattr(actor, "thread", None)
            if thread is not None and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
                if thread.is_alive():
                    log.warning("formation %r: actor thread %s is still busy after stop", self.name, thread.name)
        self._scheduler.stop(max(0.1, deadline - time.monotonic()))

    # -- submitting -------------------------------------------------------------------

    def submit(
        self, input: Any, *, timeout: float | None = None, on_event: EventListener | None = None
    ) -> Future[FormationResult]:
        """Start one run on ``input``; the future resolves to its :class:`FormationResult`
        or fails with :class:`FormationRuntimeError`."""
        if self._closing or not self._started:
            raise RuntimeError(f"formation {self.name!r} is not running: use it inside `with formation.start()`")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        listeners = self._listeners if on_event is None else [*self._listeners, on_event]
        run = RunState(f"{self._prefix}-{next(self._seq)}", input, listeners, len(self._sinks), self._order)
        self._runs[run.id] = run
        if timeout is not None:
            run.timer = self._scheduler.call_later(timeout, lambda: self._run_timeout(run, timeout))
        if listeners:
            self._emit(run, FormationEventType.RUN_STARTED, None, {})
        future = run.future  # taken now: the run may finish, and drop it, before we return
        assert future is not None
        for source in self.plan.sources:
            self._visit(run, source, input, "input")
        if self._cyclic:
            self._finish_one(run)
        return future

    # -- routing (runs on node threads) -------------------------------------------------

    def _visit(self, run: RunState, node: str, payload: Any, sender: str) -> None:
        if run.done:
            return
        if self._cyclic:
            spec = self._specs[node]
            with run.lock:
                seen = run.own("visits")
                visits = seen.get(node, 0) + 1
                seen[node] = visits
                run.pending += 1
            if visits > spec.max_visits:
                self._fail_run(run, FormationRuntimeError(
                    f"node {node!r} was visited more than max_visits={spec.max_visits} times in run {run.id}: "
                    "the loop through it did not end; check the when= conditions of its back edges "
                    "or raise its max_visits",
                    node=node, attempts=0, run_id=run.id, outputs=run.outputs,
                ))
                return
        self._addresses[node].tell(
            Envelope(next(_ids), run.id, sender, _WORK, payload, time.time(), node, 1, run)
        )

    def completed(
        self, work: Envelope, attempt: int, output: Any, usage: Usage | None, started: float, finished: float
    ) -> None:
        """A node succeeded (called on its thread): record it and route the output."""
        if attempt != work.attempt or (work.timer is not None and not self._settle(work)):
            return  # a late reply from an attempt that timed out
        name = work.target
        address = self._addresses[name]
        if len(address.actors) > 1:
            address.done(work.replica)
        run = work.run
        if run.done:
            return
        run.log.append((name, attempt, started, finished, usage))
        run.outputs[name] = output
        if run.listeners:
            self._emit(run, FormationEventType.NODE_FINISHED, name, {
                "attempt": attempt, "duration_s": finished - started, "usage": usage or ZERO_USAGE,
            })
        nxt = self._straight[name]
        if nxt is not None and not self._cyclic:
            # the common pipeline step, inlined: straight into the next mailbox
            self._addresses[nxt].tell(Envelope(next(_ids), run.id, name, _WORK, output, time.time(), nxt, 1, run))
        elif nxt is not None:
            self._visit(run, nxt, output, name)
        else:
            spec = self._specs[name]
            try:
                firing = [(e, e.when is None or bool(e.when(output))) for e in spec.out_edges]
            except Exception as exc:
                edge = next(e for e in spec.out_edges if e.when is not None)
                err = FormationRuntimeError(
                    f"condition {edge.label or 'when'} on an edge out of {name!r} raised "
                    f"{type(exc).__name__}: {exc}",
                    node=name, attempts=attempt, run_id=run.id, outputs=run.outputs,
                )
                err.__cause__ = exc
                self._give_up(run, spec, attempt, err)
                return
            for edge, fire in firing:
                if edge.back:
                    if fire:
                        self._visit(run, edge.target, output, name)
                elif fire:
                    self._arrive(run, edge.target, name, output)
                else:
                    self._arrive_skip(run, edge.target, name, "did not fire")
            if spec.is_sink and not self._cyclic:
                self._finish_one(run, sink=True)
        if self._cyclic:
            self._finish_one(run)

    def failed(
        self, work: Envelope, attempt: int, exc: BaseException, started: float, finished: float, replica: int
    ) -> None:
        """A node raised (called on its thread): hand it to the supervisor."""
        if attempt != work.attempt or (work.timer is not None and not self._settle(work)):
            return
        address = self._addresses[work.target]
        if len(address.actors) > 1:
            address.done(replica)
        self._supervisor.actor_ref.tell(Envelope(
            0, work.run_id, work.target, EnvelopeType.FAILURE, exc, time.time(), work.target, attempt,
            work.run, cause=work, started=started, finished=finished, replica=replica,
        ))

    def _arrive(self, run: RunState, target: str, pred: str, value: Any) -> None:
        tspec = self._specs[target]
        if len(tspec.forward_preds) == 1:
            self._visit(run, target, value, pred)
            return
        with run.lock:
            joins = run.own("joins")
            join = joins.get(target)
            if join is None:
                join = joins[target] = ({}, set())
            values, resolved = join
            values[pred] = value
            resolved.add(pred)
            if len(resolved) < len(tspec.forward_preds):
                return
            payload = dict(values)
        self._visit(run, target, payload, pred)

    def _arrive_skip(self, run: RunState, target: str, pred: str, why: str) -> None:
        tspec = self._specs[target]
        if len(tspec.forward_preds) == 1:
            self._skip(run, target, f"its only incoming edge, from {pred!r}, {why}")
            return
        with run.lock:
            joins = run.own("joins")
            join = joins.get(target)
            if join is None:
                join = joins[target] = ({}, set())
            values, resolved = join
            resolved.add(pred)
            if len(resolved) < len(tspec.forward_preds):
                return
            payload = dict(values)
        if payload:
            self._visit(run, target, payload, pred)
        else:
            self._skip(run, target, "none of its incoming edges fired")

    def _skip(self, run: RunState, node: str, reason: str, error: str | None = None) -> None:
        skipped = run.own("skipped")
        if node not in skipped:
            skipped[node] = error
        if run.listeners:
            self._emit(run, FormationEventType.NODE_SKIPPED, node, {"reason": reason})
        spec = self._specs[node]
        for edge in spec.out_edges:
            if not edge.back:
                self._arrive_skip(run, edge.target, node, f"was not taken because {node!r} was skipped")
        if spec.is_sink and not self._cyclic:
            self._finish_one(run, sink=True)

    def _finish_one(self, run: RunState, *, sink: bool = False) -> None:
        """One unit of the run is over — a sink resolved (acyclic formations) or a visit
        finished (cyclic ones); the last one completes the run."""
        with run.lock:
            if sink:
                run.remaining -= 1
                left = run.remaining
            else:
                run.pending -= 1
                left = run.pending
            if left or run.done:
                return
            run.done = True
        self._complete(run)

    def _complete(self, run: RunState) -> None:
        if run.timer is not None:
            run.timer.cancel()
            run.timer = None  # its callback refers to the run
        sink = self._single_sink
        if sink is not None:
            outputs = {sink: run.outputs[sink]} if sink in run.outputs else {}
            output = outputs.get(sink)
        else:
            outputs = {s: run.outputs[s] for s in self._sinks if s in run.outputs}
            output = None
        duration = time.perf_counter() - run.t0
        result = FormationResult(run.id, output, outputs, run, duration)
        self._runs.pop(run.id, None)
        # The result keeps the run (its traces are built from it on demand); the run lets
        # go of the future, so no cycle keeps a finished run alive for the collector.
        future, run.future = run.future, None
        assert future is not None  # resolved once: done is set under the run's lock
        future.set_result(result)
        if run.listeners:
            self._emit(run, FormationEventType.RUN_FINISHED, None,
                       {"duration_s": duration, "usage": result.usage, "result": result})

    def _fail_run(self, run: RunState, error: FormationRuntimeError) -> None:
        with run.lock:
            if run.done:
                return
            run.done = True
        if run.timer is not None:
            run.timer.cancel()
            run.timer = None  # its callback refers to the run
        self._runs.pop(run.id, None)
        future, run.future = run.future, None
        assert future is not None  # resolved once: done is set under the run's lock
        future.set_exception(error)
        if run.listeners:
            self._emit(run, FormationEventType.RUN_FAILED, error.node, {
                "error": str(error), "exception": error, "duration_s": time.perf_counter() - run.t0,
            })

    # -- supervision (runs on the supervisor thread) -------------------------------------

    def _settle(self, work: Envelope) -> bool:
        """Claim the outcome of an attempt that has a timer; False when the timer won."""
        with work.run.lock:
            if work.settled:
                return False
            work.settled = True
        if work.timer is not None:
            work.timer.cancel()
        return True

    def on_failure(self, env: Envelope) -> None:
        work = env.cause
        assert work is not None
        run = work.run
        spec = self._specs[work.target]
        exc = env.payload
        error = f"{type(exc).__name__}: {exc}"
        run.own("failures").append((spec.name, work.attempt, env.started or env.finished, env.finished, error))
        self._restart(spec, env.replica)
        if run.done:
            return
        if getattr(exc, "retryable", True) and work.attempt <= spec.retries:
            delay = backoff_delay(spec.backoff, work.attempt)
            if run.listeners:
                self._emit(run, FormationEventType.NODE_RETRY, spec.name, {
                    "attempt": work.attempt, "delay_s": delay, "error": error,
                })
            work.attempt += 1
            work.settled = False
            work.timer = None
            if delay > 0:
                self._scheduler.call_later(delay, lambda: self._supervisor.actor_ref.tell(("redeliver", work)))
            else:
                self.redeliver(work)
            return
        self._give_up(run, spec, work.attempt, exc)

    def redeliver(self, work: Envelope) -> None:
        if work.run.done or self._closing:
            return
        self._addresses[work.target].tell(work)

    def on_timeout(self, work: Envelope, attempt: int) -> None:
        if work.attempt != attempt or work.run.done:
            return
        with work.run.lock:
            if work.settled:
                return
            work.settled = True
        address = self._addresses[work.target]
        if len(address.actors) > 1:
            address.done(work.replica)
        spec = self._specs[work.target]
        err = NodeTimeoutError(f"node {spec.name!r} attempt {attempt} timed out after {spec.timeout:g}s")
        now = time.perf_counter()
        self.on_failure(Envelope(
            0, work.run_id, spec.name, EnvelopeType.FAILURE, err, time.time(), spec.name, attempt, work.run,
            cause=work, started=work.started or now, finished=now, replica=work.replica,
        ))

    def _give_up(self, run: RunState, spec: NodeSpec, attempts: int, exc: BaseException) -> None:
        error = f"{type(exc).__name__}: {exc}"
        if run.listeners:
            self._emit(run, FormationEventType.NODE_FAILED, spec.name, {"attempts": attempts, "error": error})
        if spec.on_error == "skip":
            self._skip(run, spec.name, f"failed after {attempts} attempt(s) and on_error='skip'", error)
            if self._cyclic:
                self._finish_one(run)
            return
        if isinstance(exc, FormationRuntimeError):
            err = exc
        else:
            err = FormationRuntimeError(
                f"node {spec.name!r} failed after {attempts} attempt(s) in run {run.id}: {error}",
                node=spec.name, attempts=attempts, run_id=run.id, outputs=run.outputs,
            )
            err.__cause__ = exc
        self._fail_run(run, err)

    def _restart(self, spec: NodeSpec, replica: int) -> None:
        """Replace a replica with a fresh actor; hand its waiting mail to the new one."""
        if self._closing:
            return
        address = self._addresses[spec.name]
        fresh = self._spawn(spec, replica)
        old = address.swap(replica, fresh)
        waiting = address.drain(old)
        old.actor_ref.stop(block=False)
        self._retired = [a for a in self._retired if a.thread.is_alive()]
        self._retired.append(old)
        for env in waiting:
            address.tell(env)

    def _run_timeout(self, run: RunState, timeout: float) -> None:
        running = run.unfinished()
        busy = f"; unfinished: {', '.join(running)}" if running else ""
        self._fail_run(run, FormationRuntimeError(
            f"run {run.id} of formation {self.name!r} timed out after {timeout:g}s{busy}",
            run_id=run.id, outputs=run.outputs,
        ))

    # -- observer hooks (called by node actors) ---------------------------------------------

    def started(self, env: Envelope) -> None:
        spec = self._specs[env.target]
        run = env.run
        env.started = time.perf_counter()
        if not self._cyclic:
            run.own("visits").setdefault(spec.name, 1)
        if spec.timeout is not None:
            attempt = env.attempt
            env.timer = self._scheduler.call_later(
                spec.timeout, lambda: self._supervisor.actor_ref.tell(("timeout", env, attempt))
            )
        if run.listeners:
            self._emit(run, FormationEventType.NODE_STARTED, spec.name, {"attempt": env.attempt})

    def orphaned(self, env: Envelope) -> None:
        """A stopping actor still held ``env``: route it to the node's current actor."""
        run = env.run
        if run is None or run.done or self._closing or env.type != _WORK:
            return
        self._addresses[env.target].tell(env)

    def wants_events(self, env: Envelope) -> bool:
        return bool(env.run is not None and env.run.listeners)

    def attempt_timeout(self, env: Envelope) -> float | None:
        return self._specs[env.target].timeout

    def agent_event(self, env: Envelope, event: StreamEvent) -> None:
        t = event.type
        if t is StreamEventType.TEXT_DELTA:
            self._emit(env.run, FormationEventType.AGENT_TEXT, env.target, {"text": event.text or ""})
        elif t is StreamEventType.TOOL_START and event.block is not None:
            b = event.block
            self._emit(env.run, FormationEventType.AGENT_TOOL_CALL, env.target,
                       {"id": b.id, "name": b.name, "input": b.input})
        elif t is StreamEventType.TOOL_END and event.block is not None:
            b = event.block
            self._emit(env.run, FormationEventType.AGENT_TOOL_RESULT, env.target,
                       {"id": b.tool_use_id, "output": b.content, "is_error": b.is_error})

    def _emit(self, run: RunState, type: FormationEventType, node: str | None, data: dict[str, Any]) -> None:
        event = FormationEvent(type, run.id, node, time.time(), data)
        for listener in run.listeners:
            try:
                listener(event)
            except Exception:
                log.exception("formation %r: event listener failed on %s", self.name, type.value)

    # -- introspection ------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Runs submitted and not yet finished."""
        return len(self._runs)

    def actors(self) -> Iterable[Any]:
        """Every node actor currently serving (for tests and tooling)."""
        for address in self._addresses.values():
            yield from address.actors


def run_once(
    plan: Plan,
    input: Any,
    *,
    timeout: float | None = None,
    on_event: EventListener | None = None,
    provider: Provider | None = None,
    work_dir: str | Path | None = None,
) -> FormationResult:
    """Start the formation, run ``input`` through it, stop it; return the result or raise
    :class:`FormationRuntimeError`."""
    with RunningFormation(plan, on_event=on_event, provider=provider, work_dir=work_dir).start() as running:
        return running.submit(input, timeout=timeout).result()


def run_stream(
    plan: Plan,
    input: Any,
    *,
    timeout: float | None = None,
    provider: Provider | None = None,
    work_dir: str | Path | None = None,
) -> Iterator[FormationEvent]:
    """Start the formation, run ``input``, and yield its events until ``run_finished``
    (whose ``data["result"]`` is the :class:`FormationResult`) or ``run_failed`` (whose
    ``data["exception"]`` is the error); the formation is stopped when the generator ends,
    also when the consumer stops early."""
    events: queue.SimpleQueue[FormationEvent] = queue.SimpleQueue()
    with RunningFormation(plan, provider=provider, work_dir=work_dir).start() as running:
        running.submit(input, timeout=timeout, on_event=events.put)
        while True:
            event = events.get()
            yield event
            if event.type in (FormationEventType.RUN_FINISHED, FormationEventType.RUN_FAILED):
                return
