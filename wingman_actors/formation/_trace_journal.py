"""A journalled run's node traces, journalled once when the run ends (succeeded, failed,
cancelled or suspended), so ``wingman-actors runs show`` can print what the journal's
deltas do not hold: each node's attempts, durations, tokens and errors.

One progress value of no node (``""``), visit -1 (``RunJournal.notes[-1]``), per end of the run (a resumed run
journals its own when it ends again; the last one is the run's latest): per node, a list
``[status, attempts, visits, duration_s, started_at, finished_at, input_tokens,
output_tokens, error]``. Outputs are not in it: the journal has every visit's output.
"""

from __future__ import annotations

from typing import Any

from ..store import RunJournal
from ._runstate import RunState

__all__ = ["TRACE_KEY", "FIELDS", "journalled_traces", "summary"]

TRACE_KEY = ("", -1, None)
FIELDS = ("status", "attempts", "visits", "duration_s", "started_at", "finished_at", "input_tokens",
          "output_tokens", "error")


def summary(run: RunState) -> dict[str, list[Any]]:
    """The run's node traces, compact (see the module docs)."""
    out = {}
    for name, t in run.traces().items():
        u = t.usage
        out[name] = [t.status.value, t.attempts, t.visits, t.duration_s, t.started_at, t.finished_at,
                     u.input_tokens, u.output_tokens, t.error]
    return out


def journalled_traces(journal: RunJournal) -> dict[str, dict[str, Any]]:
    """The node traces the run journalled when it last ended, by node (empty when it
    never ended: its process died while it ran). A node whose visits a resume took from
    the journal (0 attempts) keeps the trace of the run that made them."""
    traces: dict[str, dict[str, Any]] = {}
    for value in journal.notes.get(TRACE_KEY[1], ()):
        for name, row in value.items():
            trace = dict(zip(FIELDS, row, strict=False))
            kept = traces.get(name)
            if kept is not None and trace["status"] == "succeeded" and not trace["attempts"]:
                trace = {**kept, "status": "succeeded", "visits": max(kept["visits"] or 0, trace["visits"] or 0)}
            traces[name] = trace
    return traces
