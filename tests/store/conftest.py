"""Fixtures of the run store tests: a store on a temporary file, closed after the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import pytest

from wingman_actors.store import FormationShape, RunStore


def chain_shape(*nodes: str) -> FormationShape:
    """The shape of a chain of function nodes (default a → b → c)."""
    names = nodes or ("a", "b", "c")
    g = nx.DiGraph()
    for n in names:
        g.add_node(n, kind="function", fn=abs)
    nx.add_path(g, names)
    return FormationShape.of(g)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite"


@pytest.fixture
def store(path: Path) -> Iterator[RunStore]:
    with RunStore(path) as s:
        yield s


@pytest.fixture
def shape() -> FormationShape:
    return chain_shape()
