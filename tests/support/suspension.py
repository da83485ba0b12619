"""Helpers for tests of runs that suspend."""

from __future__ import annotations

import time

from wingman_actors.store import RunStore


def until_asked(store: RunStore, run_id: str, wait: float = 5.0) -> None:
    """Return once ``run_id``'s interrupt (or breakpoint) is journalled: the run is then
    suspending, waiting for its visits in flight."""
    deadline = time.monotonic() + wait
    while store.get(run_id).interrupt is None:
        assert time.monotonic() < deadline, f"the interrupt of run {run_id} was never journalled"
        time.sleep(0.005)
