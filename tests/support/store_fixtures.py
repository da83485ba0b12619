"""Store fixtures shared by the run-store and durable-run tests: a store on a temporary
file, closed after the test, and where a store lives on either backend (``location``;
import them into a conftest.py), and a formation file whose
second node asks for approval with ``interrupt()``, for the launcher's durable-run tests."""

from __future__ import annotations

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
