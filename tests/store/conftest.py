"""Fixtures of the run store tests: a store, closed after the test, on both backends — a
temporary SQLite file and a fresh schema of a real PostgreSQL server (``location``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

from tests.support.postgres import postgres_server, postgres_url
from tests.support.store_fixtures import location, path
from wingman_actors.store import FormationShape, RunStore

__all__ = ["chain_shape", "location", "path", "postgres_server", "postgres_url", "sqlite_store", "store"]


def chain_shape(*nodes: str) -> FormationShape:
    """The shape of a chain of function nodes (default a → b → c)."""
    names = nodes or ("a", "b", "c")
    g = nx.DiGraph()
    for n in names:
        g.add_node(n, kind="function", fn=abs)
    nx.add_path(g, names)
    return FormationShape.of(g)


@pytest.fixture
def shape() -> FormationShape:
    return chain_shape()


@pytest.fixture
def store(location: str) -> Iterator[RunStore]:
    with RunStore(location) as s:
        yield s


@pytest.fixture
def sqlite_store(path: Path) -> Iterator[RunStore]:
    """A store on a SQLite file (for what only SQLite has, e.g. its checkpoints)."""
    with RunStore(path) as s:
        yield s
