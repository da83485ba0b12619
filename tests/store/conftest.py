"""Fixtures of the run store tests: a store on a temporary file, closed after the test."""

from __future__ import annotations

import networkx as nx
import pytest

from tests.support.store_fixtures import path, store
from wingman_actors.store import FormationShape

__all__ = ["chain_shape", "path", "store"]


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
