"""Nested formations: a formation run as one node of another (``add_formation``).

:class:`InnerFormation` is a formation node's inner formation, running (a
:class:`~wingman_actors.formation._runtime.RunningFormation` of its own, on the outer
formation's backend), and how one visit starts a run on it. Two things drive it:

* inside a formation, a :class:`~wingman_actors.formation._nested_node.FormationNode`
  (the node's group: no actor of its own, the visit's run starts on the thread that
  delivers the input and the outer run goes on from the thread that finishes it);
* :class:`FormationActor`, a node actor that runs one inner run per envelope and waits
  for it (standalone use, and the base of a map over a formation).

The node's output is the inner single sink's output, or the dict of sink outputs when
there are several. Its policies (``retries``, ``timeout``, ``on_error``) apply to the
inner run as a whole, and a cancelled, failed or timed-out outer run cancels its inner run.

* Events: the inner run's node and agent events are re-emitted to the outer run's
  listeners with ``node`` set to the path (``"outer_node/inner_node"``, deeper nesting
  adds more parts); the inner run's own ``run_*`` events are not, but an inner run cut
  short (cancelled or failed) closes the inner nodes it cut with ``node_skipped``,
  ``cancelled: True`` (see :class:`_Forward`). The outer run's ``unfinished`` names its
  own nodes only.
* Telemetry: with OpenTelemetry in use, the inner run's ``invoke_workflow`` span is a
  child of the outer run's, in the outer run's trace, whichever thread starts it.
* Journalling: when the outer run is journalled, the inner run is journalled in the same
  store as the run ``"<outer run id>/<node>/<visit>"``. A visit that runs again (a retry,
  or a resume after the process died, failed or was cancelled) resumes that inner run
  instead of beginning it, so its journalled inner visits do not run again; an inner run
  that had already succeeded gives its journalled outputs.
* Interrupts: an inner run that suspends suspends the outer run (``interrupt`` names the
  path of the inner node that asked); the answer given to the outer run's ``resume`` is
  passed on to the inner run when the visit runs again.
* Traces: the outer run's ``FormationResult.nodes`` has the formation node's trace (its
  usage the inner run's), followed by the inner run's traces named by path, marked with
  ``parent``. An inner run that failed keeps them too: its error carries them out of the
  inner formation (:func:`carry_traces`, on the failure path only), the
  :class:`NestedRunError` the node fails with has them (``nodes``), and the outer run's
  traces list them as for a succeeded inner run (a retry that succeeds replaces them).
  So does one cancelled because the node timed out (:meth:`InnerFormation.cancel`).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from .._interrupts import RunSuspended, VisitScope
from ..actors._base import NodeActor
from ..actors._envelope import Work
from ..core import Usage
from ..errors import FormationRuntimeError, WingmanError
from ..integrations import otel
from ._journalled_inner import inner_traces
from ._plan import Plan
from ._result import FormationResult, NestedVisits, NodeTrace, nested_traces
from .events import FormationEvent, FormationEventType, emit

if TYPE_CHECKING:
    from ..store import JournalStore  # only a type: a durable run brings its store
    from ._runtime import RunningFormation  # only a type: the runtime imports this module

__all__ = ["FormationActor", "InnerFormation", "NestedRunError", "carry_traces", "inner_run_id"]

_RUN_EVENTS = frozenset({
    FormationEventType.RUN_STARTED, FormationEventType.RUN_FINISHED,
    FormationEventType.RUN_FAILED, FormationEventType.RUN_CANCELLED,
})


_CUTTING = frozenset({FormationEventType.RUN_FAILED, FormationEventType.RUN_CANCELLED})  # end a run, cutting its nodes

_CARRIED = "_inner_traces"  # the attribute of a failed inner run's error that holds its traces


def carry_traces(error: FormationRuntimeError, traces: dict[str, NodeTrace]) -> None:
    """Give ``error``, with which a run of a formation node's inner formation fails, that
    run's ``traces``, for the :class:`NestedRunError` the node fails with."""
    setattr(error, _CARRIED, traces)


def inner_run_id(run_id: str, node: str, visit: int) -> str:
    """The id under which a journalled run journals visit ``visit`` of its formation node
    ``node``: ``"<run id>/<node>/<visit>"``."""
    return f"{run_id}/{node}/{visit}"


class _Forward:
    """Re-emits an inner run's node events to the outer run's listeners, by path.

    The inner run's own end is not re-emitted, but when it is cut short (cancelled: its
    node's timeout, the outer run's end, a ``join="any"`` it lost; or failed, cutting its
    other nodes) the inner nodes it cut, which report nothing more, are closed with
    ``node_skipped`` and ``cancelled: True`` (their traces say ``cancelled``), as a
    ``join="any"`` loser is: otherwise the outer run's listeners would see them running
    for ever. Sent from the thread ending the inner run, before the outer node's own end
    and the outer run's ``run_*`` event."""

    __slots__ = ("listeners", "path", "prefix", "run_id")

    def __init__(self, listeners: list[Callable[[FormationEvent], None]], run_id: str, path: str) -> None:
        self.listeners = listeners
        self.run_id = run_id
        self.path = path
        self.prefix = path + "/"

    def __call__(self, event: FormationEvent) -> None:
        if event.node is not None and event.type not in _RUN_EVENTS:
            emit(self.listeners, event.type, self.run_id, self.prefix + event.node, event.data)
        elif event.type in _CUTTING and event.data.get("unfinished"):
            how = "was cancelled" if event.type is FormationEventType.RUN_CANCELLED else "failed"
            reason = f"cancelled: the inner run of {self.path!r} {how}"
            for node in event.data["unfinished"]:
                emit(self.listeners, FormationEventType.NODE_SKIPPED, self.run_id, self.prefix + node,
                     {"reason": reason, "cancelled": True})


class InnerFormation:
    """A formation node's inner formation, started, and the runs visits start on it.

    Args:
        name: the formation node (the path of its inner events).
        plan: the inner formation, compiled.
        launch: builds the inner running formation (not started); the runtime gives it
            the outer formation's backend, provider, work directory and, for journalled
            runs, a journal in the outer run's store.
        store: the store journalled outer runs use (None without one).
    """

    def __init__(self, name: str, plan: Plan, launch: Callable[[], RunningFormation],
                 store: JournalStore | None = None) -> None:
        self.name = name
        self.plan = plan
        self.store = store
        self.one_output = plan.one_output  # one sink, or sinks that exclude one another (formation/_sinks.py)
        # A run of functions only uses no tokens: its usage is not summed (that builds its traces)
        self.uses_tokens = _uses_tokens(plan)
        running = launch()
        running.carry_failure_traces()
        self.running: RunningFormation = running.start()

    def stop(self) -> None:
        """Stop the inner formation (its runs still in flight fail)."""
        self.running.stop()

    def start(self, env: Work, input: Any, scope: VisitScope | None, path: str, run_id: str) -> Future[FormationResult]:
        """Start one inner run of ``input`` for ``env``: its events re-emitted under
        ``path``; journalled as ``run_id`` when ``scope`` (the visit's, or an item's) is
        durable, resumed when a former attempt began it.

        Raises:
            RunSuspended: the journalled inner run waits for an answer not given yet.
        """
        run = env.run
        listeners = run.listeners if run is not None else None
        on_event = _Forward(listeners, env.run_id, path) if listeners else None
        board = getattr(run, "blackboard", None)
        trace = getattr(run, "trace", None)  # the outer run's span, when OpenTelemetry is in use
        if trace is not None:  # the inner run's span nests under it, whichever thread starts it
            with otel.node_work(trace.carrier, path, env.run_id):
                return self._start(input, scope, path, run_id, on_event, board, env.run_id)
        return self._start(input, scope, path, run_id, on_event, board, env.run_id)

    def _start(self, input: Any, scope: VisitScope | None, path: str, run_id: str, on_event: Any,
               board: Any, parent: str) -> Future[FormationResult]:
        if scope is None or self.store is None:
            return self.running.submit(input, on_event=on_event, blackboard=board)
        return self._durable(input, scope, path, run_id, on_event, board, parent)

    def output_of(self, result: FormationResult) -> Any:
        """An inner run's output: its one output (its sink's, or whichever of its sinks that
        exclude one another produced), else the dict of its sinks' outputs."""
        return result.output if self.one_output else result.outputs

    def sinks_named(self) -> str:
        """Its sinks, named for a message that says they gave no output."""
        names = ", ".join(repr(s) for s in self.plan.sinks)
        return f"sink {names}" if len(self.plan.sinks) == 1 else f"sinks {names}"

    def outcome(self, env: Work, result: FormationResult) -> tuple[Any, Usage | None]:
        """A visit's output and usage from its succeeded inner run (kept for the outer
        run's traces)."""
        self._keep(env, result)
        return self.output_of(result), result.usage if self.uses_tokens else None

    def suspension(self, env: Work, result: FormationResult, path: str) -> RunSuspended:
        """The signal that suspends the outer visit for a suspended inner run (whose traces
        the outer run's result keeps, as for a finished one), carrying what the inner run's
        agents spent before it suspended (the outer result counts it on this node)."""
        scope = env.scope
        assert result.interrupt is not None and scope is not None
        self._keep(env, result)
        signal = RunSuspended(result.interrupt["payload"], scope, f"{path}/{result.interrupt['node']}")
        if self.uses_tokens:
            signal.spent = result.usage
        return signal

    def failure(self, env: Work, error: FormationRuntimeError) -> NestedRunError:
        """The error a visit fails with when its inner run failed with ``error`` (the
        inner traces it carries kept for the outer run's traces)."""
        nested = NestedRunError(self.name, self.plan.name, error)
        nested.__cause__ = error
        self._keep(env, nested.nodes)
        return nested

    def cancel(self, env: Work, future: Future[FormationResult]) -> None:
        """Cancel the inner run of ``env``'s attempt (``future``), keeping its traces as it
        was cancelled (the nodes that ran, and those cut short) for the outer run's."""
        traces = self.running.cancel_traced(getattr(future, "run_id", ""))
        if traces is None:
            future.cancel()
        else:
            self._keep(env, nested_traces(self.name, traces))

    def _keep(self, env: Work, inner: FormationResult | dict[str, NodeTrace]) -> None:
        if env.run is not None:
            self._keep_visit(env.run, env.visit, inner)

    def _keep_visit(self, run: Any, visit: int, inner: FormationResult | dict[str, NodeTrace]) -> None:
        """Keep the inner run of visit ``visit`` for the outer run's traces: a retry's
        replaces its visit's; a loop's later visits add theirs (their traces add up)."""
        nested = run.own("nested")
        with run.lock:
            kept = nested.get(self.name)
            if visit == 1 and not isinstance(kept, NestedVisits):
                nested[self.name] = inner
                return
            if not isinstance(kept, NestedVisits):
                kept = nested[self.name] = NestedVisits({1: kept} if kept is not None else {})
            kept.runs[visit] = inner

    def replayed(self, run: Any, visit: int) -> None:
        """A resumed outer run took visit ``visit`` of this node from its journal: keep the
        traces of that visit's journalled inner run (its nodes' outputs by visit, and what
        it journalled of their statuses, attempts, times and tokens when it ended)."""
        store = self.store
        if store is None:
            return
        from ..store import UnknownRunError  # loaded with the store (a resume has it loaded already)

        try:
            journal = store.load(inner_run_id(run.id, self.name, visit))
        except UnknownRunError:
            return  # journalled before its inner run was (a fork's replaced output)
        traces = nested_traces(self.name, inner_traces(journal, self.plan.order))
        self._keep_visit(run, visit, traces)

    def _durable(self, input: Any, scope: VisitScope, path: str, run_id: str, on_event: Any,
                 board: Any, parent: str) -> Future[FormationResult]:
        store = self.store
        assert store is not None
        from ..store import UnknownRunError  # loaded with the store (a look-up beside the store's read)
        from ..store._errors import inner_id_taken

        try:
            record = store.get(run_id)
        except UnknownRunError:
            return self.running.submit(input, on_event=on_event, blackboard=board, run_id=run_id)
        if record.parent != parent:  # another run's journal under our inner run's id: never ours to reuse
            raise inner_id_taken(run_id, parent, formation=record.formation, status=record.status,
                                 taken_by=record.parent)
        if record.status == "succeeded":  # it finished, and the process died before the outer visit was journalled
            done: Future[FormationResult] = Future()
            done.set_result(self._journalled(run_id))
            return done
        answer = None
        pending = record.interrupt
        if pending is not None:
            # The scope's answers, in order: the inner run took one per answered
            # interrupt so far; the next one (if given) answers the pending interrupt.
            taken = sum(1 for i in store.load(run_id).interrupts if i.answered)
            if taken >= len(scope.answers):
                raise RunSuspended(pending.payload, scope, f"{path}/{pending.node}")
            answer = scope.answers[taken]
        return self.running.resume(run_id, answer, on_event=on_event, blackboard=board)

    def _journalled(self, run_id: str) -> FormationResult:
        assert self.store is not None
        visits = self.store.load(run_id).visits
        outputs = {s: visits[s][max(visits[s])] for s in self.plan.sinks if visits.get(s)}
        output = next(iter(outputs.values())) if self.one_output and len(outputs) == 1 else None
        return FormationResult(run_id, output, outputs, {}, 0.0)


class FormationActor(NodeActor):
    """A formation as a node actor: each envelope is one run of the inner formation,
    waited for (inside a formation, a formation node is a
    :class:`~wingman_actors.formation._nested_node.FormationNode` instead; this actor is
    the base of a map over a formation, and runs a formation node alone).

    Args:
        plan: the inner formation, compiled.
        launch, store: as for :class:`InnerFormation`.
        inner: an inner formation started already, shared with the node's other replicas
            (its owner stops it; ``launch`` is then not called). Without it, the actor
            starts one of its own with ``launch`` and stops it with itself.
        name, **kwargs: as for :class:`~wingman_actors.actors._base.NodeActor`.
    """

    runs_in_driver = True
    """It only drives its inner formation's runs: the Ray backend keeps it in the driver
    (the inner formation's nodes are Ray actors there)."""

    def __init__(
        self,
        plan: Plan,
        *,
        launch: Callable[[], RunningFormation] | None = None,
        store: JournalStore | None = None,
        inner: InnerFormation | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name or plan.name, **kwargs)
        self.plan = plan
        self._running: list[Future[FormationResult]] = []  # the inner runs in progress
        self._owns_inner = inner is None
        if inner is None:
            if launch is None:
                raise TypeError(f"formation actor {self.name!r} needs launch= or inner=")
            # Started with the actor (in the thread starting it, so a failure to start is
            # the starter's), stopped with it.
            inner = InnerFormation(self.name, plan, launch, store)
        self.inner = inner

    @property
    def interruptible(self) -> bool:
        return True

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        """Cancel the inner runs in progress (called from another thread)."""
        for future in list(self._running):
            future.cancel()

    def on_stop(self) -> None:
        if self._owns_inner:
            self.inner.stop()
        super().on_stop()

    def on_failure(self, *exc_info: Any) -> None:
        if self._owns_inner:
            self.inner.stop()  # a crashed actor gets no on_stop

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        scope = env.scope
        future = self.start_inner(env, env.payload, scope, self.name, inner_run_id(env.run_id, self.name, env.visit))
        try:
            result = future.result()
        except FormationRuntimeError as exc:
            raise self.inner.failure(env, exc) from exc
        finally:
            self._running.remove(future)
        if result.status == "suspended":
            raise self.inner.suspension(env, result, self.name)
        return self.inner.outcome(env, result)

    def start_inner(
        self, env: Work, input: Any, scope: VisitScope | None, path: str, run_id: str
    ) -> Future[FormationResult]:
        """:meth:`InnerFormation.start`; the future is in ``_running`` (cancelled by
        :meth:`interrupt`) until the caller removes it."""
        future = self.inner.start(env, input, scope, path, run_id)
        self._running.append(future)
        run = env.run
        if run is not None and run.done:  # cancelled before interrupt() could see the future
            future.cancel()
        return future


def _failed_path(node: str, inner: FormationRuntimeError) -> str | None:
    """The whole path of the node that failed inside ``node``'s inner run (``"sub/mid/boom"``
    when ``mid`` is itself a formation node whose inner ``boom`` failed), so the first line of
    a failure nested several deep names it; None for a run-level failure (a run timeout)."""
    if not inner.node:
        return None
    deeper = inner.__cause__
    if isinstance(deeper, NestedRunError) and deeper.node == inner.node and deeper.path:
        return f"{node}/{deeper.path}"
    return f"{node}/{inner.node}"


def _uses_tokens(plan: Plan) -> bool:
    """Whether a run of ``plan`` may use tokens: it has an agent or fleet node, here or nested."""
    return any(s.kind in ("agent", "fleet") or (s.subplan is not None and _uses_tokens(s.subplan))
               for s in plan.nodes.values())


class NestedRunError(WingmanError):
    """The inner run of a formation node failed (the outer node's attempt fails with it;
    the inner :class:`~wingman_actors.errors.FormationRuntimeError` is the cause).

    Attributes:
        node: the formation node (``"each/0"`` for item 0 of a map over a formation).
        path: the path of the node that failed inside it, however deep (``"sub/mid/boom"``),
            or None for a run-level failure of the inner run (its timeout).
        formation: the inner formation's name.
        inner: the inner run's error (its ``node`` is the inner node that failed).
        nodes: the inner run's traces (:class:`~wingman_actors.formation._result.NodeTrace`,
            as in ``FormationResult.nodes``), named by path as the outer run's result and
            events name them (``"sub/boom"``): the inner node that failed, with its error
            and attempts, and those that succeeded before it, with their outputs. Empty for
            an error not raised by a run.

    Example:
        >>> try:                                                        # doctest: +SKIP
        ...     outer.run(1)
        ... except FormationRuntimeError as err:
        ...     failed = {n: t.error for n, t in err.__cause__.nodes.items() if t.status == "failed"}
        >>> failed                                                      # doctest: +SKIP
        {'sub/boom': 'ValueError: no luck'}
    """

    def __init__(self, node: str, formation: str, inner: FormationRuntimeError) -> None:
        self.path = _failed_path(node, inner)
        where = f" at node {self.path}" if self.path else ""
        super().__init__(f"nested formation {formation!r} failed{where}: {inner.message}")
        self.node = node
        self.formation = formation
        self.inner = inner
        carried: dict[str, NodeTrace] | None = inner.__dict__.pop(_CARRIED, None)
        self.nodes: dict[str, NodeTrace] = nested_traces(node, carried) if carried else {}

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from its own arguments (an error edge ships it to a handler in a Ray
        # worker; the default would call __init__ with the message alone)
        return (type(self), (self.node, self.formation, self.inner), dict(self.__dict__))
