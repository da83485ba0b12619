"""Checkpoints off the commit path: a thread that copies the WAL into the database file.

By default SQLite checkpoints inside the commit that grows the WAL past 1,000 pages: that
commit copies the pages and syncs the file twice (a few milliseconds here), while every
caller waiting for its ``begin_run`` waits too. The store's writer turns that off
(``PRAGMA wal_autocheckpoint = 0``) and this thread, on its own connection, runs a
``PASSIVE`` checkpoint every :data:`INTERVAL_S` while there are new commits. A passive
checkpoint never blocks the writer or readers; what it cannot copy yet (pages a reader
still uses) the next one copies. The WAL is reused from its start once a checkpoint has
copied all of it.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable

__all__ = ["Checkpointer"]

_log = logging.getLogger("wingman_actors.store")
INTERVAL_S = 0.05


class Checkpointer:
    """Checkpoints the store's WAL every ``interval`` seconds while ``commits()`` grows.

    Args:
        connect: opens the checkpointer's own connection (on its thread).
        commits: the writer's count of commits so far.
        name: the thread's name.
    """

    def __init__(self, connect: Callable[[], sqlite3.Connection], commits: Callable[[], int], name: str,
                 interval: float = INTERVAL_S) -> None:
        self._connect = connect
        self._commits = commits
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the thread (idempotent); the last commits are checkpointed when the
        store's last connection closes."""
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join()

    def _loop(self) -> None:
        try:
            conn = self._connect()
        except Exception as exc:  # the writer's own autocheckpoint is off: say so once
            _log.warning("run store: the checkpoint thread cannot open the database (%s); the WAL file "
                         "will grow until the store is closed", exc)
            return
        try:
            done = self._commits()
            while not self._stop.wait(self._interval):
                commits = self._commits()
                if commits == done:
                    continue
                try:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:  # e.g. busy with another process's checkpoint: next time
                    _log.debug("run store: checkpoint skipped (%s)", exc)
                    continue
                done = commits
        finally:
            conn.close()
