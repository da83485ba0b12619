"""A journalled run's node traces, journalled once when the run ends (succeeded, failed,
cancelled or suspended), so ``wingman-actors runs show`` can print what the journal's
deltas do not hold: each node's attempts, durations, tokens and errors.

One progress value of no node (``""``), visit -1 (``RunJournal.notes[-1]``), per end
of the run (a resumed run journals its own when it ends again): a flat list of ints and
text (cheap to journal: the end of every journalled run pays for it), ten items per node
``name, status, attempts, visits, duration (µs), started, finished (ms since the epoch),
input tokens, output tokens, error``. Outputs are not in it: the journal has every
visit's output.

A run (not a resumed one) that succeeded with no failed attempt, no tokens used, and whose nodes ran for
less than :data:`QUICK_S` in all journals none (``runs show`` shows its visits and outputs, and
no timings): the trace costs a journalled 3-node pipeline of tiny functions about a
fifth of its throughput, and such a run has nothing in it to debug.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ._result import ZERO_USAGE
from ._runstate import _EMPTY_QUEUED, _LOG_STRIDE

if TYPE_CHECKING:
    from ..store import RunJournal
    from ._durable import Journal
    from ._result import NodeTrace
    from ._runstate import RunState

__all__ = ["FIELDS", "QUICK_S", "TRACE_KEY", "journal_end", "journalled_traces", "summary", "worth_journalling"]

_log = logging.getLogger("wingman_actors.formation")

TRACE_KEY = ("", -1, None)
FIELDS = ("status", "attempts", "visits", "duration_s", "started_at", "finished_at", "input_tokens",
          "output_tokens", "error")
_STRIDE = 1 + len(FIELDS)


QUICK_S = 0.001
"""Node time (summed) under which a clean success journals no traces."""


def worth_journalling(run: RunState, status: str) -> bool:
    """Whether the run's end journals its traces (see the module docs)."""
    if status != "succeeded" or run.failures or run.handled or run.nested or run.cancelled:
        return True
    if run.replay is not None:  # resumed: the traces of its earlier end (suspended...) must not stay the last
        return True
    log = run.log
    if sum(log[3::_LOG_STRIDE]) - sum(log[2::_LOG_STRIDE]) >= QUICK_S:
        return True
    return any(u is not None and u is not ZERO_USAGE for u in log[4::_LOG_STRIDE])


def summary(traces: dict[str, NodeTrace]) -> list[Any]:
    """A run's node traces, compact (see the module docs)."""
    out: list[Any] = []
    for name, t in traces.items():
        u = t.usage
        out += (name, t.status.value, t.attempts, t.visits, round(t.duration_s * 1e6),
                None if t.started_at is None else round(t.started_at * 1e3),
                None if t.finished_at is None else round(t.finished_at * 1e3), u.input_tokens, u.output_tokens, t.error)
    return out


def journalled_traces(journal: RunJournal) -> dict[str, dict[str, Any]]:
    """The node traces the run journalled when it last ended, by node (empty when it
    never ended: its process died while it ran), times in seconds. A node whose visits a
    resume took from the journal (0 attempts: succeeded, or skipped after failing) keeps
    the trace of the run that made them."""
    traces: dict[str, dict[str, Any]] = {}
    for value in journal.notes.get(TRACE_KEY[1], ()):
        for i in range(0, len(value) - _STRIDE + 1, _STRIDE):
            name, status, attempts, visits, duration, started, finished, tin, tout, error = value[i:i + _STRIDE]
            trace = {"status": status, "attempts": attempts, "visits": visits, "duration_s": duration / 1e6,
                     "started_at": None if started is None else started / 1e3,
                     "finished_at": None if finished is None else finished / 1e3,
                     "input_tokens": tin, "output_tokens": tout, "error": error}
            kept = traces.get(name)
            if kept is not None and not attempts and (status == "succeeded" or status == kept["status"] == "skipped"):
                trace = {**kept, "status": status, "visits": max(kept["visits"] or 0, visits or 0)}
            traces[name] = trace
    return traces


def journal_end(journal: Journal | None, run: RunState, status: Any, error: str | None = None,
                traces: dict[str, NodeTrace] | None = None) -> None:
    """Journal ``run``'s node traces (``traces`` when built already; skipped for a quick
    clean success, see :func:`worth_journalling`), then its final status."""
    assert journal is not None
    # The run has ended (claimed by this end): no suspension waits for its visits any more.
    # Its list of dispatched visits goes (each refers to the run: a reference cycle that
    # would keep every finished run for the garbage collector to find).
    run.queued = _EMPTY_QUEUED
    store = journal.store
    if worth_journalling(run, status):
        try:
            store.record_progress(run.id, TRACE_KEY[0], TRACE_KEY[1],
                                  summary(run.traces() if traces is None else traces))
        except Exception:  # a trace the store cannot take must not keep the run from ending
            _log.warning("run %s: could not journal its node traces", run.id, exc_info=True)
    try:
        store.set_status(run.id, status, error=error)
    except Exception as exc:
        # (imported here: loaded with the journal's store already; a run without one never gets here)
        from ..store import StoreClosedError

        if not isinstance(exc, StoreClosedError):
            raise
        # closed under the run by its holder: the run still ends (its future resolves)
        _log.error("run %s ended %s, but its run store was closed before the end could be journalled: the "
                   "store reads it as unfinished, and resume continues it; close the store after the "
                   "formation stops", run.id, status)
