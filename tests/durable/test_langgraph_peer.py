"""The durable throughput scenario's peer: LangGraph with its SQLite checkpointer
(wingman_actors._bench.peers.langgraph_sqlite_throughput). Benchmarks measure; these
tests check only that the peer is skipped cleanly without the peers extra, and that
with it every LangGraph run reaches the end."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from wingman_actors._bench.peers import SQLITE_NOT_INSTALLED, langgraph_sqlite_throughput


def _inc(x: int) -> int:
    return x + 1


def test_the_sqlite_peer_is_skipped_without_the_peers_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.sqlite", None)  # makes the import fail
    assert langgraph_sqlite_throughput([_inc, _inc, _inc], 10, 1) == SQLITE_NOT_INSTALLED
    assert SQLITE_NOT_INSTALLED.startswith("skipped: install the peers extra")


@pytest.mark.skipif(importlib.util.find_spec("langgraph") is None, reason="the peers extra is not installed")
def test_the_sqlite_peer_runs_the_chain_to_its_end() -> None:
    if importlib.util.find_spec("langgraph.checkpoint.sqlite") is None:
        pytest.skip("langgraph-checkpoint-sqlite is not installed")
    measured = langgraph_sqlite_throughput([_inc, _inc, _inc], 20, 1)
    assert isinstance(measured, dict)
    assert measured["inputs"] == 20 and measured["batch_inputs_per_s"] > 0
    assert "langgraph-checkpoint-sqlite" in measured["version"]
