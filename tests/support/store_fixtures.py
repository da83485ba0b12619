"""Store fixtures shared by the run-store and durable-run tests: a store on a temporary
file, closed after the test, and where a store lives on either backend (``location``;
import them into a conftest.py), and a formation file whose
second node asks for approval with ``interrupt()``, for the launcher's durable-run tests."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wingman_actors.store import RunStore


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite"


@pytest.fixture
def store(path: Path) -> Iterator[RunStore]:
    with RunStore(path) as s:
        yield s


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, path: Path) -> str:
    """Where a store lives, on both backends: a SQLite file's path, or the URL of a fresh
    schema on the session's PostgreSQL server (import ``postgres_server`` and
    ``postgres_url`` from ``tests.support.postgres`` beside this fixture)."""
    if request.param == "sqlite":
        return str(path)
    return str(request.getfixturevalue("postgres_url"))


def until_the_server_has_seen_dead_owners_go(location: str) -> None:
    """Wait (up to 10 s) until no owner's writer connection is open on the PostgreSQL server.

    A dead process's kernel closes its sockets at once, but the server's process for each
    connection notices only when it next runs: on a loaded machine, a moment after the
    child has exited. Until then the owner counts as live (its lease holds), as it should.
    """
    if not location.startswith("postgresql://"):
        return  # SQLite: the dead process's file lock is gone with it
    import psycopg

    deadline = time.monotonic() + 10
    with psycopg.connect(location, autocommit=True) as conn:
        while time.monotonic() < deadline:
            try:
                row = conn.execute("SELECT count(*) FROM owners o, pg_stat_get_activity(o.backend)").fetchone()
            except psycopg.errors.UndefinedTable:
                return  # the process died before it made the store: no owner at all
            if row is not None and row[0] == 0:
                return
            time.sleep(0.01)
    raise AssertionError("the server still shows the dead process's connection after 10 s")


APPROVAL_FORMATION = '''
from wingman_actors import Formation, interrupt

def draft(topic: str) -> str:
    return f"draft about {topic}"

def approve(text: str) -> str:
    return f"{text}: {interrupt({'approve?': text})}"

formation = Formation("approve").add_function("draft", draft).add_function("approve", approve)
formation.connect("draft", "approve")
'''
"""A formation file: ``draft`` then ``approve``, which interrupts for an answer."""
