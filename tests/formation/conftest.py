"""Fixtures of the formation tests (``store``: a SQLite run store on a temporary file, closed
after the test, at ``path``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.peers import Gate
from tests.support.store_fixtures import path, store

__all__ = ["path", "store"]  # fixtures


@pytest.fixture
def gate() -> Iterator[tuple[threading.Event, threading.Event]]:
    """``(entered, release)`` for a node held until the test releases it: the held code
    sets ``entered`` and waits on ``release``, which is set when the test ends, pass or
    fail, so no thread outlives it. (tests/formation/test_nesting.py has a ``gate`` of its
    own, of another shape, which overrides this one there.)"""
    entered, release = threading.Event(), threading.Event()
    try:
        yield entered, release
    finally:
        release.set()


@pytest.fixture
def held() -> Iterator[Gate]:
    """A :class:`~tests.support.peers.Gate` node (``reached``, then held until ``opened``),
    opened when the test ends, pass or fail, so no node thread is left waiting on it."""
    g = Gate()
    yield g
    g.opened.set()


@pytest.fixture
def slow_stops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every formation's stop takes 0.3 s more and is noted when done: what shows whether an
    awaiting task went on before its formation had stopped (the one internal name patched:
    no public hook sees the end of a stop)."""
    from wingman_actors.formation._runtime import RunningFormation

    stopped: list[str] = []
    stop = RunningFormation.stop

    def slow_stop(self: RunningFormation, *args: Any, **kwargs: Any) -> None:
        time.sleep(0.3)
        stop(self, *args, **kwargs)
        stopped.append(self.name)

    monkeypatch.setattr(RunningFormation, "stop", slow_stop)
    return stopped
