"""Per-run bookkeeping shared by the node actors working on one run.

Kept lean on purpose: the success path appends six items per node visit to the flat
``log`` (its output among them: :attr:`NodeTrace.outputs`), :meth:`RunState.seal` makes it
a tuple when the run succeeds, and :class:`NodeTrace` objects are built only when someone
reads ``FormationResult.nodes``.

Why a run starts with shared empty containers and a shared lock (this module's one
speed trick, and it stays here): ``submit()`` of many inputs keeps thousands of runs in
flight, and every container a run allocates is one more allocation the interpreter's
cyclic collector counts and one more object its full passes walk. (The log is the
exception: every run that succeeds writes it, so each run has its own from the start;
taking it through ``own()`` on the first visit cost 4% of a pipeline input's
instructions, and the collector no less.) Measured on the
3-node pipeline with 10,000 runs in flight (CPU time per input, all threads): 17 µs with
this module as it is, 30 µs when each run allocated its own seven containers and lock
(11.6 µs against 9.2 µs with the collector off: most of the difference is the
collector's). Readers elsewhere see one rule: write to ``joins``, ``visits``,
``failures``, ``skipped``, ``dropped``, ``handled`` and ``nested`` only through
:meth:`RunState.own`; reading them directly is fine (the shared placeholders are
read-only: a write that bypasses ``own()`` raises). tests/formation/test_runstate.py
checks that no run's writes reach another run, also under concurrent first use.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..core import Usage
from ..integrations.otel import WorkflowSpan
from ._future import RunSink
from ._result import WALL_OFFSET, NodeStatus, NodeTrace, build_traces

if TYPE_CHECKING:
    from ._suspending import Suspension

__all__ = ["RunState"]

# Shared empty placeholders, replaced by RunState.own() before the first write. They are
# read-only, so a write that bypasses own() raises at once instead of reaching every run.
_EMPTY_JOINS: Any = MappingProxyType({})  # node -> routing.Join
_EMPTY_VISITS: Any = MappingProxyType({})
_EMPTY_FAILURES: Any = ()
_EMPTY_SKIPPED: Any = MappingProxyType({})
_EMPTY_DROPPED: Any = MappingProxyType({})
_EMPTY_HANDLED: Any = MappingProxyType({})
_EMPTY_NESTED: Any = MappingProxyType({})
_EMPTY_HELD: Any = MappingProxyType({})
_EMPTY_QUEUED: Any = ()
# Runs share a fixed set of locks (a run's lock guards its own counters for a few
# bytecodes and is never held while taking another, so sharing one cannot deadlock):
# a run allocates no lock of its own.
_LOCKS = tuple(threading.Lock() for _ in range(64))
_next_lock = itertools.count()
_OWN_LOCK = threading.Lock()
_LOG_STRIDE = 6  # items per visit in RunState.log
_SHARED: dict[str, Any] = {
    "joins": _EMPTY_JOINS, "visits": _EMPTY_VISITS, "failures": _EMPTY_FAILURES, "skipped": _EMPTY_SKIPPED,
    "dropped": _EMPTY_DROPPED, "handled": _EMPTY_HANDLED, "nested": _EMPTY_NESTED, "held": _EMPTY_HELD,
    "queued": _EMPTY_QUEUED,
}


class RunState:
    """Bookkeeping of one run.

    Termination: a run is done when ``left`` reaches 0. In a formation without back edges
    it counts the sinks that have yet to produce an output or be skipped; with back edges,
    the dispatched visits that have not finished, plus a guard released once the sources
    are dispatched (the runtime gives 1 then).

    Args:
        run_id, input, listeners, order: the run's id, input, event listeners and the
            formation's node order.
        left: the initial ``left`` (see above).
        future: what the run resolves (a new ``Future`` when None; see ``RunSink``).
        blackboard: the Blackboard its nodes share (submit's, else start's), if any.
        trace: the run's OpenTelemetry span, when in use.
        replay: a resumed run's journal (formation._durable.Replay).
        breaks: a journalled run's Breakpoints (formation._breakpoints), if any.
    """

    __slots__ = (
        "blackboard", "breaks", "cancelled", "cut", "done", "dropped", "failures", "future", "handled", "held", "id",
        "input", "joins", "left", "listeners", "lock", "log", "nested", "order", "queued", "replay", "skipped", "suspending",
        "t0", "timer", "trace", "visits",
    )

    def __init__(
        self,
        run_id: str,
        input: Any,
        listeners: list[Callable[[Any], None]],
        left: int,
        order: Sequence[str],
        future: RunSink | None = None,
        blackboard: Any = None,
        trace: WorkflowSpan | None = None,
        replay: Any = None,
        breaks: Any = None,
    ) -> None:
        self.id = run_id
        self.input = input
        self.order = order
        self.future: RunSink | None = future if future is not None else Future()  # None once resolved
        # nodes cancelled: running when the run was cancelled, or in a branch a join="any" fired without
        self.cancelled: tuple[str, ...] = ()
        # visits in flight when the run ended (cancelled, failed, timed out): (node, visit,
        # attempt, started, ended, usage so far) each, ``perf_counter`` times (formation/_cut.py)
        self.cut: tuple[tuple[str, int, int, float, float, Usage | None], ...] = ()
        self.lock = _LOCKS[next(_next_lock) % len(_LOCKS)]
        self.done = False
        self.left = left
        # node, attempt, started, finished, usage, output: six items per successful visit, flat (a
        # list of scalars adds nothing for the collector to count or walk; a tuple per visit
        # did); a tuple once the run succeeded (seal())
        self.log: list[Any] | tuple[Any, ...] = []
        self.listeners = listeners
        self.t0 = time.perf_counter()
        self.timer: Any = None
        self.blackboard = blackboard
        self.trace = trace
        self.replay = replay
        self.breaks = breaks
        # Created on first use: a straight pipeline run never needs them.
        self.joins: dict[str, Any] = _EMPTY_JOINS
        self.visits: dict[str, int] = _EMPTY_VISITS
        # (node, attempt, started, finished, error, usage) per failed attempt
        self.failures: list[tuple[str, int, float, float, str, Usage | None]] = _EMPTY_FAILURES
        self.skipped: dict[str, str | None] = _EMPTY_SKIPPED
        # node -> the join="any" node whose visit fired without it: its work is not wanted
        self.dropped: dict[str, str] = _EMPTY_DROPPED
        # node -> perf_counter when its last failure went to its error edges
        self.handled: dict[str, float] = _EMPTY_HANDLED
        # formation nodes: the inner run's result of the node's last visit
        self.nested: dict[str, Any] = _EMPTY_NESTED
        # node on a loop -> (exit targets, tag) its last visit that went round held back
        # (formation/_firing.py): sent as skips if the loop ends without another visit of it
        self.held: dict[str, tuple[tuple[str, ...], tuple[str, int] | None]] = _EMPTY_HELD
        # (node, payload, reason) while the run waits for its attempts in flight to suspend
        # (formation/_suspending.py); None otherwise
        self.suspending: Suspension | None = None
        # a journalled run's visits dispatched to their nodes (those begun are pruned now
        # and then): a suspension waits for the ones not begun yet (formation/_suspending.py)
        self.queued: list[Any] = _EMPTY_QUEUED

    def own(self, field: str) -> Any:
        """Give the run its own container for ``field`` (joins, visits, failures, skipped,
        dropped, handled, nested, held, queued).

        Safe from any thread, with or without the run's lock held: the first use takes a
        separate lock (never held while taking another), so two threads cannot each
        install a container and lose the other's writes.
        """
        current = getattr(self, field)
        if current is _SHARED[field]:
            with _OWN_LOCK:
                current = getattr(self, field)
                if current is _SHARED[field]:
                    current = [] if field in ("failures", "queued") else {}
                    setattr(self, field, current)
        return current

    def record(
        self, node: str, attempt: int, started: float, finished: float, usage: Usage | None, output: Any
    ) -> None:
        """Log a successful visit and its output (safe from any thread)."""
        log = self.log
        if isinstance(log, tuple):
            return  # sealed: the run succeeded before this late visit ended
        log += (node, attempt, started, finished, usage, output)

    @property
    def outputs(self) -> dict[str, Any]:
        """The output of every node's last successful visit so far, by name (a new dict,
        read from the log: the log is the one record of what succeeded)."""
        log = self.log[:]  # one snapshot: another thread may log a visit meanwhile
        return dict(zip(log[::_LOG_STRIDE], log[_LOG_STRIDE - 1::_LOG_STRIDE], strict=True))

    def output_of(self, node: str, default: Any = None) -> Any:
        """The output of ``node``'s last successful visit, or ``default`` when it has none
        (read from the end of the log: a run's sink usually finished last)."""
        log = self.log
        for i in range(len(log) - _LOG_STRIDE, -1, -_LOG_STRIDE):
            if log[i] == node:
                return log[i + _LOG_STRIDE - 1]
        return default

    def seal(self) -> None:
        """The run succeeded: its log no longer changes, and is kept as a tuple (a tuple of
        plain values costs the collector nothing once it has seen it; a finished run's
        result may be kept long after the run)."""
        self.log = tuple(self.log)

    def wall(self, perf: float) -> float:
        """Wall-clock time of a ``perf_counter`` reading taken during this run."""
        return WALL_OFFSET + perf

    def unfinished(self) -> list[str]:
        """Nodes that were visited (or are sinks) and have neither finished nor been skipped."""
        finished = set(self.log[::_LOG_STRIDE]) | set(self.skipped) | set(self.handled)
        started = {entry[0] for entry in self.failures} | set(self.visits)
        return [n for n in self.order if n in started and n not in finished]

    def __call__(self) -> dict[str, NodeTrace]:
        """The run's traces: a finished run is its result's lazy trace builder (no
        closure to allocate per run)."""
        return self.traces()

    def traces(self, unreached: NodeStatus = NodeStatus.SKIPPED) -> dict[str, NodeTrace]:
        """Per-node traces from the log, in node order (called lazily, once per result); a
        node the run never reached has status ``unreached``. Built from copies of the
        record: an attempt still in flight may add to it meanwhile (a run that failed or
        suspended leaves them to end), and a dict cannot be read while it grows."""
        log = self.log
        return build_traces(self.order, log if type(log) is tuple else log[:], dict(self.handled),
                            list(self.failures), dict(self.skipped), self.cancelled, dict(self.visits),
                            dict(self.nested), unreached, self.cut)

    def trace_source(self) -> Callable[[], dict[str, NodeTrace]] | tuple[Sequence[str], tuple[Any, ...]]:
        """What a finished run's result builds its traces from: the node order and the
        sealed log when they are the run's whole record (no failure, skip, error route,
        loop, cancel or nested run), else the run itself. A tuple of tuples of plain
        values is nothing the collector walks once it has seen it, while a run kept by
        its result is one more object with 23 references for every full pass."""
        log = self.log
        if (type(log) is tuple and self.failures is _EMPTY_FAILURES and self.skipped is _EMPTY_SKIPPED
                and self.handled is _EMPTY_HANDLED and self.visits is _EMPTY_VISITS
                and self.nested is _EMPTY_NESTED and not self.cancelled):
            return (self.order, log)
        return self
