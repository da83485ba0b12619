"""A formation run's events, kept for the run viewer: replayed to each page that opens the
run, then passed on live (``GET /ui/api/runs/{id}/stream``).

The runtime calls a :class:`RunLog` on its own threads for every event of the run; that
costs one append under a lock, and a hand-off to each listening page. The server keeps the
logs of its last :data:`KEPT` runs (an agent node's steps are in them, not in the journal).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from ..formation.events import FormationEvent

__all__ = ["KEPT", "Listener", "RunLog", "RunLogs"]

KEPT = 64
"""How many runs' event logs a server keeps (the oldest are dropped first)."""

Listener = Callable[[FormationEvent | None], None]
"""Gets each new event of the run, then None once the run has ended."""


class RunLog:
    """The events of one run, in order, and the listeners waiting for more.

    Args:
        run_id: the run.
    """

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._lock = threading.Lock()
        self._events: list[FormationEvent] = []
        self._listeners: list[Listener] = []
        self._closed = False

    def __call__(self, event: FormationEvent) -> None:
        with self._lock:
            self._events.append(event)
            listeners = tuple(self._listeners)
        for listener in listeners:
            listener(event)

    def close(self) -> None:
        """The run has ended (or left this server): listeners get None."""
        with self._lock:
            self._closed = True
            listeners, self._listeners = tuple(self._listeners), []
        for listener in listeners:
            listener(None)

    def events(self) -> list[FormationEvent]:
        """The events so far."""
        with self._lock:
            return list(self._events)

    def listen(self, listener: Listener) -> tuple[list[FormationEvent], bool]:
        """Add ``listener``; the events so far, and whether the run has ended (then
        ``listener`` is not added)."""
        with self._lock:
            if not self._closed:
                self._listeners.append(listener)
            return list(self._events), self._closed

    def unlisten(self, listener: Listener) -> None:
        """Remove ``listener`` (nothing if it is gone already)."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)


class RunLogs:
    """The event logs of the server's last :data:`KEPT` runs, by run id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._logs: OrderedDict[str, RunLog] = OrderedDict()

    def start(self, run_id: str) -> RunLog:
        """A new log for ``run_id`` (a resumed run starts a new one)."""
        log = RunLog(run_id)
        with self._lock:
            self._logs.pop(run_id, None)
            self._logs[run_id] = log
            while len(self._logs) > KEPT:
                self._logs.popitem(last=False)
        return log

    def get(self, run_id: str) -> RunLog | None:
        with self._lock:
            return self._logs.get(run_id)
