"""The worker the Restate kill tests SIGKILL (tests/durable/test_peer_restate_kill.py): it
runs one journalled run of :func:`build` in a child process and is killed while its second
node is blocked (Restate's e2e KillTest kills an invocation blocked in a call)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wingman_actors import Formation, interrupt
from wingman_actors.store import RunStore


def build(log: Path, ready: Path | None) -> Formation:
    """``charge`` -> ``ship`` -> ``notify``; each visit appends its node's name to ``log``.
    With ``ready``, ``ship`` creates that file and then blocks (until it is killed)."""

    def ship(x: str) -> str:
        if ready is not None:
            ready.touch()
            time.sleep(60)
        return f"{x}, shipped"

    return _between("shop", log, "ship", ship)


def waiting(log: Path) -> Formation:
    """``charge`` -> ``approve`` (waits on an ``interrupt``) -> ``notify``."""

    def approve(x: str) -> str:
        return f"{x}, {interrupt({'approve': x})}"

    return _between("approval", log, "approve", approve)


def _between(name: str, log: Path, middle: str, step: Callable[[str], str]) -> Formation:
    """Formation ``name``: ``charge`` -> ``middle`` (``step``) -> ``notify``; each visit
    appends its node's name to ``log`` (``middle``'s before ``step`` runs)."""

    def mark(node: str) -> None:
        with open(log, "a") as fh:
            fh.write(node + "\n")

    def charge(order: str) -> str:
        mark("charge")
        return f"{order} charged"

    def visit(x: str) -> str:
        mark(middle)
        return step(x)

    def notify(x: str) -> str:
        mark("notify")
        return f"{x}, notified"

    return (Formation(name).add_function("charge", charge).add_function(middle, visit)
            .add_function("notify", notify).connect("charge", middle).connect(middle, "notify"))


def work(location: str, log: str, ready: str, run_id: str) -> None:
    """Run order ``run_id`` in :func:`build` (blocked in ``ship`` until killed)."""
    with RunStore(location) as store:
        build(Path(log), Path(ready)).run("order", store=store, run_id=run_id)


def suspend(location: str, log: str, run_id: str, hold: str) -> Any:
    """Run :func:`waiting` until it suspends, say so (``hold`` is created), and stay alive."""
    with RunStore(location) as store:
        result = waiting(Path(log)).run("order", store=store, run_id=run_id)
        Path(hold).write_text(result.status)
        time.sleep(60)
