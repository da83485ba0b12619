"""Ownership of a PostgreSQL store's runs: the lease its store renews, the runs it is
running, and the runs it lost to another store.

A store whose lease lapsed (its process froze, or lost the server, for longer than the
lease) may find, when it comes back, that another process claimed some of its runs. It
learns so in two ways, whichever comes first:

* a write into such a run is refused (the server checks the run's owner);
* the lease thread's next renewal finds that the lease had lapsed, and asks the server
  which of the store's running runs are now owned elsewhere.

Either way the run is *lost*: the store's listeners (a formation running the run, see
``RunStore.on_run_lost``) are told, and stop the run. While the lease is not known to hold
(no renewal within the lease, by this process's clock: e.g. it was frozen), the store's
journal writes wait for their commit, so a run lost meanwhile stops at its first write,
before anything downstream of it starts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from ._errors import RunTakenOverError, StoreError
from ._listeners import Listeners
from ._owner import ProcessIdentity
from ._pg_schema import NOW, PgConnection

__all__ = ["Lease", "LostListener", "Ownership"]

_log = logging.getLogger("wingman_actors.store")

LostListener = Callable[[RunTakenOverError], None]
"""Told that a run was lost (see :meth:`Ownership.tell`); must not block."""


class Ownership:
    """The runs one store is running, those it lost, and who hears of a loss.

    Shared by the store, its writer (a refused write reports here) and its lease thread,
    which must not hold the store itself (it would never be collected).

    Attributes:
        mine: the runs the store began or claimed and has not set a status of since.
        lost: the runs another store took over, with the error saying so.
        fresh_until: until when (``time.monotonic()``) the lease is known to hold.
    """

    __slots__ = ("_lock", "fresh_until", "listeners", "lost", "mine", "path")

    def __init__(self, path: str, seconds: float) -> None:
        self.path = path
        self.mine: set[str] = set()
        self.lost: dict[str, RunTakenOverError] = {}
        self.fresh_until = time.monotonic() + seconds
        self.listeners: Listeners[RunTakenOverError] = Listeners("lost runs")
        self._lock = threading.Lock()

    def subscribe(self, listener: LostListener) -> Callable[[], None]:
        """Tell ``listener`` of every run lost from now on; returns the unsubscribe call."""
        return self.listeners.subscribe(listener)

    def claimed(self, run_id: str) -> None:
        """The store began or claimed ``run_id``: it is running it."""
        self.lost.pop(run_id, None)
        self.mine.add(run_id)

    def lose(self, error: RunTakenOverError) -> bool:
        """Record that ``error.run_id`` was taken over; True if it was not known lost."""
        run_id = str(error.run_id)
        with self._lock:
            new = run_id not in self.lost
            self.lost[run_id] = error
        self.mine.discard(run_id)
        return new

    def tell(self, error: RunTakenOverError, *, thread: bool = False) -> None:
        """Tell the listeners that ``error.run_id`` was lost (on a short-lived thread of its
        own with ``thread``: the writer thread must not run a formation's ending)."""
        self.listeners.tell([error], thread="wingman-store-lost" if thread else None)

    def refused(self, error: BaseException) -> None:
        """The writer's hook: a write of a run the store no longer owns was refused."""
        if isinstance(error, RunTakenOverError) and self.lose(error):
            self.tell(error, thread=True)


class Lease:
    """Renews the owner's lease every third of it, on its own connection and thread; a
    renewal that finds the lease had lapsed looks for the running runs taken over
    meanwhile (see the module docs)."""

    def __init__(self, connect_: Callable[[], PgConnection], owner: int, here: ProcessIdentity, backend: int,
                 seconds: float, name: str, ownership: Ownership) -> None:
        self._connect, self._owner, self._here, self._seconds = connect_, owner, here, seconds
        self._backend = backend
        self._own = ownership
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        conn: PgConnection | None = None
        try:
            while not self._stop.wait(self._seconds / 3):
                try:
                    if conn is None:
                        conn = self._connect()
                    self._renew(conn.raw)
                except (psycopg.Error, StoreError) as exc:  # the server is away: try again next time
                    _log.warning("run store: renewing the lease failed (%s); retrying", str(exc).strip())
                    if conn is not None:
                        conn.close()
                    conn = None
        finally:
            if conn is not None:
                conn.close()

    def _renew(self, raw: psycopg.Connection[Any]) -> None:
        started = time.monotonic()
        with raw.transaction():
            row = raw.execute(f"SELECT lease_until < {NOW} FROM owners WHERE id = %s FOR UPDATE",
                              (self._owner,)).fetchone()
            # (an upsert: an owner row lapsed for a day may have been deleted meanwhile)
            raw.execute(f"INSERT INTO owners (id, host, pid, opened, lease_until, backend) VALUES (%s, %s, %s, %s, "
                        f"{NOW} + %s, %s) ON CONFLICT (id) DO UPDATE SET lease_until = EXCLUDED.lease_until",
                        (self._owner, self._here.host, self._here.pid, time.time(), self._seconds, self._backend))
        mine = list(self._own.mine)
        if (row is None or row[0]) and mine:
            # It had lapsed: another store may have claimed runs meanwhile (those are lost);
            # the others are this store's again, as running (a recovering store may have
            # marked them interrupted meanwhile).
            with raw.transaction():
                taken = raw.execute("SELECT id FROM runs WHERE id = ANY(%s) AND owner IS DISTINCT FROM %s",
                                    (mine, self._owner)).fetchall()
                raw.execute("UPDATE runs SET status = 'running' WHERE id = ANY(%s) AND owner = %s "
                            "AND status = 'interrupted'", (mine, self._owner))
            for (run_id,) in taken:
                error = RunTakenOverError(run_id, self._own.path)
                if self._own.lose(error):
                    self._own.tell(error)
        self._own.fresh_until = started + self._seconds

    def stop(self) -> None:
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join()
