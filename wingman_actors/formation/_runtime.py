"""A started formation: the public handle on its node actors and its runs.

:class:`RunningFormation` is what ``Formation.start()`` returns: ``submit`` (many runs in
flight at once), ``cancel``, ``stop`` and context management. The work is split by
concern: :mod:`.routing` moves outputs along edges and completes runs, :mod:`.supervision`
restarts, retries and gives up, and a backend (:mod:`wingman_actors.backends`) decides
where the node actors live.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import itertools
import logging
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Collection, Iterable
from datetime import timedelta
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, overload

import pykka

from ..actors import _function as _function_module
from ..actors._address import start_actor
from ..actors._function import FunctionActor
from ..actors._mapping import MapActor
from ..actors._scheduler import Scheduler
from ..backends import Backend, NodeRecipe, new_backend
from ..errors import FormationRuntimeError, NodeTimeoutError, RunTimeoutError
from ..integrations import otel
from ..orchestration._blackboard import Blackboard
from ._async_api import AsyncSubmit
from ._board_param import board_needed, check_board, require_no_board
from ._breakpoints import Breakpoints
from ._future import RunFuture, RunSink
from ._nested_map import FormationMapActor, map_width
from ._nested_node import FormationNode
from ._nesting import InnerFormation
from ._options import RunOptions, check_new_run_id, check_run_args, merge_options, require_run_id
from ._plan import NodeSpec, Plan
from ._result import NodeTrace
from ._routing import Router
from ._runstate import RunState
from ._stop_once import StopOnce
from ._supervision import Supervision, Supervisor
from ._suspending import suspend_at_once
from .events import FormationEvent, FormationEventType, emit

if TYPE_CHECKING:  # only types: the store and the journal load for durable runs (store=...)
    from ._durable import Journal, Replay

__all__ = ["RUN_ENDED", "EventListener", "NodeTimeoutError", "RunState", "RunningFormation"]

log = logging.getLogger("wingman_actors.formation")

EventListener = Callable[[FormationEvent], None]

_NO_OPTIONS = RunOptions()

RUN_ENDED = frozenset({FormationEventType.RUN_FINISHED, FormationEventType.RUN_FAILED,
                       FormationEventType.RUN_CANCELLED})
"""The event types that end a run's stream of events."""

STOP_GRACE_S = 1.0
"""How long ``stop()`` waits for node code still running before leaving it behind."""


class RunningFormation(AsyncSubmit):
    """A started formation: submit inputs, get futures of :class:`FormationResult`.

    Use it as a context manager, or call :meth:`stop`. Many runs can be in flight at once;
    each future has a ``run_id``, and ``future.cancel()`` (or :meth:`cancel`) stops its
    run, queued or in flight. A ``blackboard`` given here is shared by every node of every
    run submitted without one of its own (``submit(..., blackboard=...)``).

    Example:
        >>> with formation.start() as running:                          # doctest: +SKIP
        ...     futures = [running.submit(x) for x in inputs]
        ...     results = [f.result() for f in futures]
    """

    def __init__(self, plan: Plan, options: RunOptions = _NO_OPTIONS, *, journal: Journal | None = None,
                 timeout_from: float | None = None) -> None:
        # Of the options, a started formation takes on_event (every run's), provider, work_dir,
        # backend, backend_options and blackboard (the default board); the caller opened
        # options.store as ``journal``; timeout, run_id and breakpoints belong to each submit().
        self._blackboard = check_board(options.blackboard)
        self.plan = plan
        self._board_needed = board_needed(plan)  # checked by every submit without a board
        self.name = plan.name
        self._work_dir = options.work_dir
        self._provider = options.provider
        try:
            self._backend: Backend = new_backend(options.backend, formation=plan.name, options=options.backend_options)
        except BaseException:
            if journal is not None:
                journal.close()
            raise
        self._backend_options = options.backend_options  # a nested formation's inner runs take them too
        self._listeners = [options.on_event] if options.on_event is not None else []
        self._prefix = uuid.uuid4().hex[:8]
        self._seq = itertools.count(1)
        self._scheduler = Scheduler(name=f"wingman-timer-{plan.name}")
        self._router = Router(plan, self._scheduler)
        self._router.journal = self._journal = journal
        if journal is not None:  # runs another process took over, or asked to cancel, end here
            journal.watch(self._router.lost, self._router.cancel_run)
        self._supervision = Supervision(self._router)
        self._runs = self._router.runs
        # what must end before a run does (RunState.left): its sinks, or with back edges its visits
        self._units = 1 if self._router.cyclic else len(plan.sinks)
        self._supervisor: Any = None  # started on its first message (_tell_supervisor)
        self._supervisor_lock = threading.Lock()
        self._supervisor_closed = False
        self._nested: list[FormationNode] = []  # the formation nodes (their inner formations)
        self._map_inners: list[InnerFormation] = []  # the inner formations of maps over formations
        self._started = False
        self._stopped = False
        self._stop_once = StopOnce()
        # Formation.run/resume: the time.monotonic() of the call, from which the run's timeout counts
        self._timeout_from = timeout_from

    # -- lifecycle --------------------------------------------------------------------

    def start(self) -> RunningFormation:
        """Start every node actor (``concurrency`` replicas each); the supervisor starts
        with the first failure, timeout or retry it is told about."""
        if self._started:
            raise RuntimeError(f"formation {self.name!r} is already started")
        self._started = True
        try:
            self._router.tell_supervisor = self._tell_supervisor
            for name in self.plan.order:
                spec = self.plan.nodes[name]
                if spec.kind == "formation":  # no actor: its inner formation's nodes do the work
                    assert spec.subplan is not None
                    store = None if self._journal is None else self._journal.store
                    inner = InnerFormation(name, spec.subplan, self._inner_launcher(spec), store)
                    self._router.nodes[name] = node = FormationNode(inner, self._router,
                                                                    notify_start=spec.timeout is not None)
                    self._nested.append(node)
                    continue
                self._router.nodes[name] = self._backend.start_node(
                    self._recipe(spec), spec.concurrency, self._router
                )
        except BaseException:
            self.stop()
            raise
        _live[self] = None
        return self

    def carry_failure_traces(self) -> None:
        """Runtime use, before :meth:`start`: this is a formation node's inner formation, and
        the error each failed run fails with carries the run's traces (for the outer run's
        ``NestedRunError.nodes``: formation/_nesting.py). Other formations' failed runs
        build no traces."""
        self._router.carries_traces = True

    def _tell_supervisor(self, message: Any) -> None:
        """Tell the supervisor ``message``, starting it on the first one: runs whose
        attempts never fail, time out or wait to be retried never need it, so a formation
        that only runs them (a short ``Formation.run``) starts one thread fewer."""
        supervisor = self._supervisor
        if supervisor is None:
            with self._supervisor_lock:
                supervisor = self._supervisor
                if supervisor is None:
                    if self._supervisor_closed:
                        return  # stop() is past the supervisor: every run has failed already
                    supervisor = self._supervisor = start_actor(Supervisor, self._supervision, name=self.name)
                    # later messages go straight (past the lazy start)
                    self._router.tell_supervisor = functools.partial(self._tell_started, supervisor.actor_ref)
        self._tell_started(supervisor.actor_ref, message)

    def _tell_started(self, supervisor: pykka.ActorRef[Any], message: Any) -> None:
        """Tell the started supervisor ``message`` (a failed or timed-out attempt, or a retry
        whose backoff is over: each carries its ``work``). A supervisor stopped from outside
        the formation (``pykka.ActorRegistry.stop_all()``) cannot handle it: the run fails,
        saying so, rather than wait for it forever."""
        try:
            supervisor.tell(message)
        except pykka.ActorDeadError:
            work = message.work
            run = work.run
            if run is None or run.done or self._router.closing:
                return
            self._router.fail_run(run, FormationRuntimeError(
                f"run {run.id}: node {work.target!r} (attempt {work.attempt}) needed the formation's supervisor "
                "(for a failure, a time limit or a retry), which was stopped from outside the formation "
                "(pykka.ActorRegistry.stop_all(), or ActorRef.stop() on it); stop a formation with "
                "running.stop() (or by leaving its `with` block), and start it again",
                node=work.target, attempts=work.attempt, run_id=run.id, outputs=run.outputs))

    def _recipe(self, spec: NodeSpec) -> NodeRecipe:
        common: dict[str, Any] = {"name": spec.name, "notify_start": spec.timeout is not None}
        recipe: NodeRecipe
        if spec.kind == "map" and spec.subplan is not None:
            # One inner formation for all the node's replicas, stopped with this one: an
            # inner formation per replica multiplied the replicas of maps nested in maps
            # (100 map replicas, each with an inner formation 100 replicas wide).
            store = None if self._journal is None else self._journal.store
            workers = spec.max_workers or self._backend.map_width() or 0
            width = map_width(workers, spec.concurrency)
            inner = InnerFormation(spec.name, spec.subplan, self._inner_launcher(spec, width), store)
            self._map_inners.append(inner)
            recipe = NodeRecipe(spec.name, FormationMapActor, (spec.subplan,), {
                "inner": inner, "max_workers": workers, "store": store, **common,
            })
        elif spec.kind == "function":
            recipe = NodeRecipe(spec.name, FunctionActor, (spec.fn,), {
                "mode": spec.input_mode, "input_adapter": spec.input_adapter,
                "kwarg_adapters": spec.kwarg_adapters, "board_param": spec.blackboard, **common,
            })
        elif spec.kind == "map":
            recipe = NodeRecipe(spec.name, MapActor, (spec.fn,), {"board_param": spec.blackboard,
                "max_workers": spec.max_workers, "input_adapter": spec.input_adapter, **common})
        else:
            assert spec.agent is not None  # the plan guarantees it for agent and fleet nodes
            agent = spec.agent if self._provider is None else spec.agent.with_overrides(provider=self._provider)
            from ..actors._nodes import AgentActor, FleetActor  # the agent layer, for agent nodes only

            if spec.kind == "agent":
                recipe = NodeRecipe(spec.name, AgentActor, (agent,),
                                    {"prompt": spec.prompt, "work_dir": self._work_dir, **common})
            else:
                recipe = NodeRecipe(spec.name, FleetActor, (agent,), {
                    "max_workers": spec.max_workers, "prompt": spec.prompt, "work_dir": self._work_dir, **common,
                })
        return recipe

    def _inner_launcher(self, spec: NodeSpec, width: int = 1) -> Callable[[], RunningFormation]:
        """Builds the inner running formation of formation node ``spec`` (one per node, its replicas share it):
        this formation's backend, provider and work directory, and a journal in this
        formation's store when it has one; each inner node has at least ``width`` replicas
        (a formation map runs that many items at once)."""
        plan = spec.subplan
        assert plan is not None
        if width > 1:
            plan = _widened(plan, width)
        journal = self._journal
        inner: Journal | None = None
        if journal is not None:
            from ..store import FormationShape
            from ._durable import Journal

            inner = Journal(journal.store, False, plan.name, FormationShape.of(spec.formation.graph),
                            inner_of=(spec.name, 2 if spec.kind == "map" else 1))
        options = RunOptions(provider=self._provider, work_dir=self._work_dir, backend=self._backend.name,
                             backend_options=self._backend_options)
        return functools.partial(RunningFormation, plan, options, journal=inner)

    def __enter__(self) -> RunningFormation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self, timeout: float = STOP_GRACE_S) -> None:
        """Stop every actor (nodes in reverse topological order, then the supervisor if it started).

        Runs still in flight fail with :class:`FormationRuntimeError`; no future is left
        unresolved. Agent and fleet sessions are cancelled; node code still running after
        ``timeout`` seconds (1 by default), or at once for a run that had ended, is left
        to finish on a daemon thread, logged: it never blocks the caller or interpreter exit.
        Called again while another thread's stop is at work, it returns once that one has.

        Raises:
            TypeError: ``timeout`` is not a number.
            ValueError: ``timeout`` is negative (or nan).
        """
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise TypeError(f"stop(timeout) must be a number of seconds >= 0 (the grace for node code still "
                            f"running), got {timeout!r}")
        if not timeout >= 0:  # (nan is not)
            raise ValueError(f"stop(timeout) must be a number of seconds >= 0 (the grace for node code still "
                             f"running), got {timeout!r}")
        self._stop_once.run(functools.partial(self._stop, timeout), 3 * timeout + 2)  # a second caller waits

    def _stop(self, timeout: float) -> None:
        self._stopped = True
        _live.pop(self, None)
        router, in_flight = self._router, set(self._runs)  # work for another run is wanted by no one
        router.closing = True
        for run in list(self._runs.values()):
            router.fail_run(run, FormationRuntimeError(
                f"formation {self.name!r} stopped before run {run.id} finished",
                run_id=run.id, outputs=run.outputs,
            ))
        self._backend.stop(timeout, in_flight)
        for node in self._nested:  # after the actors that feed them
            node.close()
        for inner in self._map_inners:  # after the map nodes' replicas that drive them
            inner.stop()
        with self._supervisor_lock:
            self._supervisor_closed = True
            supervisor = self._supervisor
        if supervisor is not None:
            supervisor.actor_ref.stop(block=False)
            if supervisor.thread is not threading.current_thread():
                supervisor.thread.join(timeout)
        self._scheduler.stop(timeout)
        if self._journal is not None:
            self._journal.close()

    # -- runs -------------------------------------------------------------------------

    def submit(
        self,
        input: Any,
        *,
        timeout: float | timedelta | None = None,
        on_event: EventListener | None = None,
        blackboard: Blackboard | None = None,
        run_id: str | None = None,
        break_before: Collection[str] | None = None,
        break_after: Collection[str] | None = None,
        options: RunOptions | None = None,
    ) -> RunFuture:
        """Start one run on ``input``.

        ``blackboard`` is this run's own board (shared by its nodes only); without one, the
        run shares the board given to ``start()``, if any, with every other such run.
        With a store (``start(store=...)``) the run is recorded before this returns, under
        ``run_id`` (a new id when None); without one, ``run_id`` must be None.
        ``break_before``/``break_after`` name nodes where the run stops, as for
        ``Formation.run`` (they need a store).
        ``options`` (a :class:`~wingman_actors.formation.RunOptions`) may give ``timeout``,
        ``on_event``, ``blackboard``, ``run_id`` and the breakpoints instead of the keywords.

        Returns:
            A ``concurrent.futures.Future`` with a ``run_id`` attribute; it resolves to
            the run's :class:`FormationResult`, fails with
            :class:`FormationRuntimeError`, or is cancelled by ``future.cancel()``.

        Raises:
            FormationSetupError: a function node takes a ``blackboard`` parameter without a
                default and the run has no board; or a breakpoint names no node, or the
                formation has no store.
        """
        run_id, timeout, on_event, board, breaks = self._admit(input, timeout, on_event, blackboard, run_id,
                                                               break_before, break_after, options)
        # the input as it is now: the caller may change it while the run waits for its node. Looked up on the
        # function actors' module, as their own copies are, so the payload bench's switch (_bench/payloads.py)
        # turns this copy off with theirs
        input = _function_module.isolate(input)
        journal = self._journal
        if journal is None:
            future = self._launch(run_id, input, timeout, on_event, None, board, breaks)
            return self._launched(future) if self._stopped else future  # (no call on the pipeline's path)
        return self._begin_journalled(journal, run_id, input, timeout, on_event, board, breaks)

    def _admit(
        self, input: Any, timeout: float | timedelta | None, on_event: EventListener | None, blackboard: Blackboard | None,
        run_id: str | None, break_before: Collection[str] | None, break_after: Collection[str] | None,
        options: RunOptions | None, call: str = "RunningFormation.submit()",
    ) -> tuple[str, float | None, EventListener | None, Blackboard | None, Breakpoints | None]:
        """The checks of :meth:`submit` (raised here). Returns the run's id (with a store, a
        new one when None), timeout, listener, board and breakpoints (``options`` merged in):
        what :meth:`_launch` (without a store) or :meth:`_begin_journalled` (with one: the
        blocking part, which ``asubmit`` runs off the event loop) takes."""
        if options is not None:
            merged = merge_options(options, call, timeout=timeout, on_event=on_event, blackboard=blackboard,
                                   run_id=run_id, break_before=break_before, break_after=break_after)
            timeout, on_event, blackboard, run_id = merged.timeout, merged.on_event, merged.blackboard, merged.run_id
            break_before, break_after = merged.break_before, merged.break_after
        self._check_running()
        timeout = check_run_args(timeout, on_event)  # (math.inf: None, no limit)
        board = self._blackboard if blackboard is None else check_board(blackboard)
        if board is None and self._board_needed:
            require_no_board(self.plan, self._board_needed)
        breaks = None
        if break_before is not None or break_after is not None:
            breaks = Breakpoints.of(self.name, self.plan.order, break_before, break_after, self._journal is not None)
        if run_id is not None:
            check_new_run_id(run_id)
        if self._journal is not None:
            return self._journal.new_id(run_id), timeout, on_event, board, breaks
        if run_id is not None:
            raise ValueError(f"run_id={run_id!r} names a journalled run: it needs a store, "
                             "e.g. formation.start(store='runs.sqlite')")
        return f"{self._prefix}-{next(self._seq)}", timeout, on_event, board, breaks

    def _begin_journalled(self, journal: Journal, run_id: str, input: Any, timeout: float | None,
                          on_event: EventListener | None, board: Blackboard | None,
                          breaks: Breakpoints | None) -> RunFuture:
        self._check_running()  # asubmit: the formation may have stopped since
        journal.open_run(input, run_id, breaks)  # durable before the run starts
        return self._launched(self._launch(run_id, input, timeout, on_event, None, board, breaks))

    def _check_running(self) -> None:
        if self._stopped or not self._started:  # stopped (by another thread, maybe): say so, not only how to start
            how = "it was stopped; start it again with `" if self._stopped else "use it inside `with "
            raise RuntimeError(f"formation {self.name!r} is not running: {how}formation.start()`")

    def _launched(self, future: RunFuture) -> RunFuture:
        self._fail_if_stopped(future.run_id)
        return future

    def _fail_if_stopped(self, run_id: str) -> None:
        """A run whose start a stop overtook (its input copied, its start journalled) is failed as stop fails runs."""
        if self._stopped and (run := self._runs.get(run_id)) is not None:
            self._router.fail_run(run, FormationRuntimeError(
                f"formation {self.name!r} stopped before run {run.id} finished", run_id=run.id, outputs=run.outputs))

    def resume(self, run_id: str, answer: Any = None, *, timeout: float | timedelta | None = None,
               on_event: EventListener | None = None, blackboard: Blackboard | None = None,
               break_before: Collection[str] | None = None, break_after: Collection[str] | None = None,
               options: RunOptions | None = None) -> RunFuture:
        """Continue the journalled run ``run_id`` (its process died, or it failed, was
        cancelled or suspended): journalled visits and fleet items are not run again,
        their outputs are fed downstream; what was in flight runs again.

        Args:
            run_id: the run, from ``result.run_id``, ``future.run_id`` or ``store.runs()``.
            answer: for a suspended run, the value its pending ``interrupt()`` returns.
            timeout: bounds the resumed run, as for :meth:`submit`.
            on_event: called with this run's events.
            blackboard: the resumed run's own board, as for :meth:`submit` (default: the
                board given to ``start()``, if any).
            break_before: replaces the run's breakpoints before nodes (None keeps those
                it was given); the visit it stopped at does not stop it again.
            break_after: likewise, after nodes.
            options: a :class:`~wingman_actors.formation.RunOptions` giving ``timeout``,
                ``on_event`` or ``blackboard`` instead of the keywords (its ``run_id``, if
                set, must be ``run_id``).

        Returns:
            A future of the run's :class:`FormationResult`, as from :meth:`submit`.

        Raises:
            ValueError: the formation was started without a store.
            wingman_actors.store.NoPendingInterruptError: ``answer`` was given for a run
                that has no pending interrupt (also a ``ValueError``).
            wingman_actors.store.FormationMismatchError: the run was made by a formation
                whose nodes, kinds or edges differ (the message says what differs).
            wingman_actors.store.RunNotResumableError: the run succeeded, expired, or is
                running in a live process.
            wingman_actors.store.UnknownRunError: no such run in the store.
        """
        return self._readmit(run_id, answer, timeout, on_event, blackboard, break_before, break_after, options)()

    def _readmit(
        self, run_id: str, answer: Any, timeout: float | timedelta | None, on_event: EventListener | None,
        blackboard: Blackboard | None, break_before: Collection[str] | None, break_after: Collection[str] | None,
        options: RunOptions | None, call: str = "RunningFormation.resume()",
    ) -> Callable[[], RunFuture]:
        """The checks of :meth:`resume` that need no store (raised here), and a callable
        that claims the run in the journal (blocking) and launches it (``aresume`` calls
        it off the event loop)."""
        require_run_id(run_id, call)
        if options is not None:
            merged = merge_options(options, call, timeout=timeout, on_event=on_event, blackboard=blackboard,
                                   run_id=run_id, break_before=break_before, break_after=break_after)
            timeout, on_event, blackboard = merged.timeout, merged.on_event, merged.blackboard
            break_before, break_after = merged.break_before, merged.break_after
        self._check_running()
        journal = self._journal
        if journal is None:
            raise ValueError(f"resume({run_id!r}) needs the run's store: start the formation with "
                             "formation.start(store=...) (a RunStore or its path)")
        timeout = check_run_args(timeout, on_event)  # (math.inf: None, no limit)
        board = self._blackboard if blackboard is None else check_board(blackboard)
        if board is None and self._board_needed:
            require_no_board(self.plan, self._board_needed)
        given = break_before is not None or break_after is not None
        breaks = Breakpoints.of(self.name, self.plan.order, break_before, break_after, True) if given else None
        return functools.partial(self._reopen, journal, run_id, answer, timeout, on_event, board, given, breaks)

    def _reopen(self, journal: Journal, run_id: str, answer: Any, timeout: float | None,
                on_event: EventListener | None, board: Blackboard | None, given: bool,
                breaks: Breakpoints | None) -> RunFuture:
        self._check_running()  # aresume: the formation may have stopped since
        record, breaks = journal.reopen(run_id, answer, breaks, given)
        from ._durable import Replay

        replay = Replay.of(record)
        return self._launched(self._launch(run_id, record.run.input, timeout, on_event, replay, board, breaks))

    @overload
    def _launch(self, run_id: str, input: Any, timeout: float | None, on_event: EventListener | None,
                replay: Replay | None, board: Blackboard | None, breaks: Breakpoints | None = None,
                sink: None = None) -> RunFuture: ...

    @overload
    def _launch(self, run_id: str, input: Any, timeout: float | None, on_event: EventListener | None,
                replay: Replay | None, board: Blackboard | None, breaks: Breakpoints | None,
                sink: RunSink) -> RunSink: ...

    def _launch(self, run_id: str, input: Any, timeout: float | None, on_event: EventListener | None,
                replay: Replay | None, board: Blackboard | None, breaks: Breakpoints | None = None,
                sink: RunSink | None = None) -> RunFuture | RunSink:
        """Start run ``run_id``; it resolves ``sink`` (an awaiting loop's settler,
        formation/_aio.py), or else the :class:`RunFuture` returned."""
        listeners = self._listeners if on_event is None else [*self._listeners, on_event]
        # taken now: the run may finish, and drop it, before we return
        future = RunFuture(run_id, self) if sink is None else sink
        trace = otel.start_workflow(self.name, run_id)  # None unless OpenTelemetry is in use
        run = RunState(run_id, input, listeners, self._units, self.plan.order, future, board, trace, replay, breaks)
        self._runs[run_id] = run
        if timeout is not None:
            since = self._timeout_from
            delay = timeout if since is None else max(timeout - (time.monotonic() - since), 1e-3)
            run.timer = self._scheduler.call_later(delay, lambda: self._run_timeout(run, timeout))
        if listeners:
            emit(listeners, FormationEventType.RUN_STARTED, run_id, None, {})
        self._router.begin(run)
        return future

    def cancel(self, run_id: str) -> bool:
        """Cancel the run ``run_id``, queued or in flight: its future is cancelled
        (``result()`` raises ``concurrent.futures.CancelledError``), agent and fleet
        sessions working on it stop at their next boundary, a function attempt is
        abandoned, and ``run_cancelled`` is emitted. Other runs are untouched.

        Returns:
            True, or False when the run had already finished (or is unknown).

        Raises:
            TypeError: ``run_id`` is not a str.
        """
        if not isinstance(run_id, str):
            raise TypeError(f"run_id must be a str, the id of a run (future.run_id or result.run_id), got {run_id!r}")
        return self._router.cancel_run(run_id)

    def cancel_traced(self, run_id: str) -> dict[str, NodeTrace] | None:
        """Runtime use (a formation node's attempt timed out): :meth:`cancel`, returning the
        run's traces as it was cancelled, or None when it had already finished."""
        run = self._runs.get(run_id)
        if run is None or not self._router.cancel_run(run_id):
            return None
        return run.traces()

    def _run_timeout(self, run: RunState, timeout: float) -> None:
        if run.suspending is not None:  # waiting for its visits in flight to suspend: it suspends now
            suspend_at_once(self._router, run)
            return
        running = self._router.unfinished(run)
        busy = f"; unfinished: {', '.join(running)}" if running else ""
        self._router.fail_run(run, RunTimeoutError(
            f"run {run.id} of formation {self.name!r} timed out after {timeout:g}s{busy}",
            timeout=timeout, unfinished=running, run_id=run.id, outputs=run.outputs,
        ), abandon=True)

    # -- introspection ----------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Runs submitted and not yet finished."""
        return len(self._runs)

    @property
    def backend(self) -> str:
        """The name of the backend the node actors live on."""
        return self._backend.name

    def actors(self) -> Iterable[Any]:
        """Every node actor currently serving (for tests and tooling)."""
        for node in self._router.nodes.values():
            yield from node.actors()


def _widened(plan: Plan, width: int) -> Plan:
    """``plan`` with at least ``width`` replicas per node, the nodes of its formation nodes'
    inner formations included (a formation node has no actor: its inner nodes do the work,
    and a map's items would queue on them)."""
    nodes = {}
    for name, spec in plan.nodes.items():
        spec = dataclasses.replace(spec, concurrency=max(spec.concurrency, width))
        if spec.kind == "formation" and spec.subplan is not None:
            spec = dataclasses.replace(spec, subplan=_widened(spec.subplan, width))
        nodes[name] = spec
    return dataclasses.replace(plan, nodes=MappingProxyType(nodes))


# Started formations not yet stopped (strong references: their threads are running
# anyway); a forgotten one is stopped at interpreter exit.
# In start order: a formation nested in another is started (and added) before it, and
# stopped by it, so the outer one is stopped first and the inner one is not warned about.
_live: dict[RunningFormation, None] = {}


@atexit.register
def _stop_forgotten() -> None:
    for running in reversed(list(_live)):
        if running not in _live:
            continue  # stopped meanwhile, by the formation it is nested in
        try:
            warnings.warn(
                f"formation {running.name!r} was started and never stopped; stopping it at exit "
                "(use `with formation.start() as running:` or call running.stop())",
                ResourceWarning,
                stacklevel=1,
            )
        finally:  # also when warnings are errors
            running.stop()
