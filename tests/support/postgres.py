"""A real PostgreSQL server for the tests: started once per test session (per xdist
worker) in a temporary directory, on a free loopback port, and stopped at the end.

The server's binaries are Debian's (``/usr/lib/postgresql/<version>/bin``) or on PATH.
``initdb`` refuses to run as root: as root, the server runs as ``nobody``. Without the
binaries (or psycopg) the PostgreSQL tests are skipped, except in CI (``CI=true``), where
they fail: CI installs both (``.ci/run``).

Each test gets a schema of its own (``postgres_url``), dropped after it.
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
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["PostgresServer", "find_bindir", "postgres_server", "postgres_url"]

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
    """One server in a temporary directory; :meth:`start` then :meth:`stop`."""

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
        data = self.dir / "data"
        self._run("initdb", "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync")
        for attempt in range(5):
            self.port = _free_port()
            # fsync off for tests (they kill clients, never the server); on for measurements
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
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL tests cannot run in CI: {reason}; .ci/run installs psycopg (the postgres extra) "
                    "and the postgresql package")
    pytest.skip(f"PostgreSQL tests skipped: {reason} (install the postgresql package and "
                "pip install \"wingman-actors[postgres]\")")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed")
    bindir = find_bindir()
    if bindir is None:
        _unavailable("no PostgreSQL server binaries (initdb) found in /usr/lib/postgresql/*/bin or on PATH")
    assert bindir is not None
    server = PostgresServer(bindir).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a fresh schema on the session's server, dropped after the test."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield postgres_server.url(schema=schema)
    finally:
        deadline = time.monotonic() + 10
        with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
            while True:
                try:
                    conn.execute(f"DROP SCHEMA {schema} CASCADE")
                    break
                except psycopg.errors.LockNotAvailable:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
