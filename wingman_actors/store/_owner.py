"""Which process owns a running run, and whether that process is still alive.

Each open store registers an owner row (host, boot id, pid, process start time); runs it
begins or claims point at it. A run is "running" only while its owner lives: when a store
opens, runs whose owner was a process on this machine that no longer exists (the pid is
gone, or now belongs to a process started at another time, or the machine rebooted since)
are marked ``interrupted`` (and again when a store open since reads runs: ``DeadOwnerCheck``). Runs owned by another host are left alone (their process may
well be alive). Marking every running run interrupted on open would be wrong: several
processes (two launchers, a server) may share one store file.
"""

from __future__ import annotations

import os
import socket
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["DeadOwnerCheck", "ProcessIdentity", "is_alive"]


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _stat(pid: int) -> tuple[str, str]:
    """The process's state letter and start time in clock ticks since boot (Linux), or
    ("", "") when unknown."""
    stat = _read(f"/proc/{pid}/stat")
    # the command name (field 2) may hold spaces and parentheses: split after the last ")"
    fields = stat.rsplit(")", 1)[-1].split()
    return (fields[0], fields[19]) if len(fields) > 19 else ("", "")


@dataclass(frozen=True)
class ProcessIdentity:
    """A process, told apart from a later process that reuses its pid."""

    host: str
    boot: str
    pid: int
    started: str

    @classmethod
    def current(cls) -> ProcessIdentity:
        pid = os.getpid()
        return cls(socket.gethostname(), _read("/proc/sys/kernel/random/boot_id"), pid, _stat(pid)[1])


def is_alive(owner: ProcessIdentity, here: ProcessIdentity) -> bool:
    """Whether ``owner`` may still be running, as seen from the process ``here``.

    Another host (or Windows, where it is not probed): assumed alive. Same host, another
    boot: dead.
    Same boot: alive when the pid exists (and is not a zombie) and, where start times are
    known, started at the same time.
    """
    if owner.host != here.host:
        return True
    if owner.boot and here.boot and owner.boot != here.boot:
        return False
    if owner.pid == here.pid:
        return owner.started == here.started or not (owner.started and here.started)
    if os.name == "nt":  # os.kill(pid, 0) would send Ctrl-C there: do not probe, assume alive
        return True
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by another user
    except OSError:
        return True
    state, started = _stat(owner.pid)
    if state in ("Z", "X"):  # killed, not yet reaped by its parent
        return False
    return not (owner.started and started) or started == owner.started


class DeadOwnerCheck:
    """Marks ``interrupted`` the runs of processes that died, when a read asks and at most
    once per ``every`` seconds: a SQLite store sees a process die only by looking (the
    PostgreSQL store's reads compute it from leases), and a store kept open for long (the
    run viewer's, a server's) would otherwise list a dead process's runs ``running`` until
    it was opened again.

    Args:
        mark: the store's method that marks them and returns how many
            (``RunStore.mark_interrupted``); held weakly, so the store is freed as before.
        every: the least time between two looks, in seconds.
    """

    __slots__ = ("_due", "_every", "_mark")

    def __init__(self, mark: Callable[[], int], every: float = 1.0) -> None:
        self._mark = weakref.WeakMethod(mark)  # type: ignore[arg-type]
        self._every, self._due = every, time.monotonic() + every  # (the store's open has just looked)

    def __call__(self) -> None:
        now = time.monotonic()
        if now >= self._due:
            self._due = now + self._every
            mark = self._mark()
            if mark is not None:
                mark()
