"""A real PostgreSQL server for the tests: started once per test session (per xdist
worker) in a temporary directory, on a free loopback port, and stopped at the end (the
bench's throwaway server, ``wingman_actors._bench.pg_server``).

The server's binaries are Debian's (``/usr/lib/postgresql/<version>/bin``) or on PATH.
``initdb`` refuses to run as root: as root, the server runs as ``nobody``. Without the
binaries (or psycopg) the PostgreSQL tests are skipped, except in CI (``CI=true``), where
they fail: CI installs both (``.ci/run``).

Each test gets a schema of its own (``postgres_url``), dropped after it.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator

import pytest

from wingman_actors._bench.pg_server import PostgresServer, find_bindir

__all__ = ["PostgresServer", "find_bindir", "postgres_server", "postgres_url"]


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
