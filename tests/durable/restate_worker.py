"""The worker the Restate kill tests SIGKILL (tests/durable/test_peer_restate_kill.py): it
runs one journalled run of :func:`build` in a child process and is killed while its second
node is blocked (Restate's e2e KillTest kills an invocation blocked in a call)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from wingman_actors import Formation, interrupt
from wingman_actors.store import RunStore


def build(log: Path, ready: Path | None) -> Formation:
    """``charge`` -> ``ship`` -> ``notify``; each visit appends its node's name to ``log``.
    With ``ready``, ``ship`` creates that file and then blocks (until it is killed)."""

    def mark(node: str) -> None:
        with open(log, "a") as fh:
            fh.write(node + "\n")

    def charge(order: str) -> str:
        mark("charge")
        return f"{order} charged"

    def ship(x: str) -> str:
        mark("ship")
        if ready is not None:
            ready.touch()
            time.sleep(60)
        return f"{x}, shipped"

    def notify(x: str) -> str:
        mark("notify")
        return f"{x}, notified"

    return (Formation("shop").add_function("charge", charge).add_function("ship", ship)
            .add_function("notify", notify).connect("charge", "ship").connect("ship", "notify"))


def waiting(log: Path) -> Formation:
    """``charge`` -> ``approve`` (waits on an ``interrupt``) -> ``notify``."""

    def mark(node: str) -> None:
        with open(log, "a") as fh:
            fh.write(node + "\n")

    def charge(order: str) -> str:
        mark("charge")
        return f"{order} charged"

    def approve(x: str) -> str:
        mark("approve")
        return f"{x}, {interrupt({'approve': x})}"

    def notify(x: str) -> str:
        mark("notify")
        return f"{x}, notified"

    return (Formation("approval").add_function("charge", charge).add_function("approve", approve)
            .add_function("notify", notify).connect("charge", "approve").connect("approve", "notify"))


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
