"""A throwaway PostgreSQL server in a temporary directory, on a free loopback port: what
the PostgreSQL bench scenario (and the test suite) start when the server's binaries are
installed, and stop at the end.

The binaries are Debian's (``/usr/lib/postgresql/<version>/bin``) or on PATH. ``initdb``
refuses to run as root: as root, the server runs as ``nobody``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["USER", "PostgresServer", "find_bindir"]

USER = "wingman"


def find_bindir() -> Path | None:
    """The folder of ``initdb``, ``pg_ctl`` and ``postgres`` (the newest Debian version
    first, then PATH), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4] or 0))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One server in a temporary directory; :meth:`start` then :meth:`stop`.

    Args:
        bindir: the folder of the server's binaries (:func:`find_bindir`).
        fsync: whether commits wait for the disk (off for tests, which kill clients, never
            the server; on for measurements).
    """

    def __init__(self, bindir: Path, *, fsync: bool = False) -> None:
        self.bindir = bindir
        self.fsync = fsync
        # In /tmp: the server's user (nobody, under root) can reach it whatever TMPDIR is, and
        # the Unix socket's path stays under its length limit (~107 bytes).
        self.dir = Path(tempfile.mkdtemp(prefix="wingman-pg-", dir="/tmp" if os.path.isdir("/tmp") else None))
        self.port = 0
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:  # initdb refuses root: run the server as nobody
            nobody = pwd.getpwnam("nobody")
            os.chown(self.dir, nobody.pw_uid, nobody.pw_gid)
            self._as = {"user": nobody.pw_uid, "group": nobody.pw_gid, "extra_groups": []}

    def _run(self, *args: str) -> None:
        env = {**os.environ, "HOME": str(self.dir), "LC_ALL": "C"}
        done = subprocess.run([str(self.bindir / args[0]), *args[1:]], cwd=self.dir, env=env, capture_output=True,
                              text=True, timeout=120, check=False, **self._as)
        if done.returncode != 0:
            log = self.dir / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stdout}{done.stderr}{tail}")

    def start(self) -> PostgresServer:
        """Create the cluster and start the server (on a free port; retried on a clash).

        Raises:
            RuntimeError: ``initdb`` or ``pg_ctl`` failed (their output and the server's log).
        """
        data = self.dir / "data"
        self._run("initdb", "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync")
        for attempt in range(5):
            self.port = _free_port()
            sync = "" if self.fsync else "-c fsync=off -c full_page_writes=off "
            options = (f"-c port={self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={self.dir} "
                       f"{sync}-c max_connections=300 -c shared_buffers=32MB")
            try:
                self._run("pg_ctl", "-D", str(data), "-l", str(self.dir / "server.log"), "-o", options, "-w",
                          "-t", "60", "start")
                return self
            except RuntimeError:
                if attempt == 4:
                    raise
        return self

    def url(self, database: str = "postgres", schema: str | None = None) -> str:
        """A connection URL (in ``schema``, created by the caller, when given)."""
        url = f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"
        return url + (f"?options=-csearch_path%3D{schema}" if schema else "")

    def stop(self) -> None:
        """Stop the server and delete its directory."""
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)
