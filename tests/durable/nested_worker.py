"""The nested formation the nested kill test runs in a child process: ``src`` →
``sub`` (the formation ``a`` → ``b``) → ``out``; every visit appends ``gen node`` to a
log file. With ``hold``, ``b`` waits until ``a``'s visit is committed, touches a file
saying so and then waits to be killed."""

from __future__ import annotations

import time
from pathlib import Path

from wingman_actors import Formation
from wingman_actors.store import RunStore

RUN_ID = "nested-run"


def build(log: Path, gen: int, *, hold: Path | None = None, store: RunStore | None = None) -> Formation:
    def mark(node: str) -> None:
        with open(log, "a") as fh:
            fh.write(f"{gen} {node}\n")

    def src(x: int) -> int:
        mark("src")
        return x + 1

    def a(x: int) -> int:
        mark("a")
        return x * 10

    def b(x: int) -> int:
        mark("b")
        if hold is not None and store is not None:
            store.flush()  # a's visit is committed: what the kill must not lose
            hold.touch()
            time.sleep(60)
        return x + 2

    def out(x: int) -> str:
        mark("out")
        return f"out {x}"

    inner = Formation("inner").add_function("a", a).add_function("b", b).connect("a", "b")
    return (Formation("outer").add_function("src", src).add_formation("sub", inner).add_function("out", out)
            .connect("src", "sub", "out"))


def work(store_path: str, log: str, hold: str) -> None:
    """Run the formation until ``b`` holds (the test kills this process there)."""
    store = RunStore(store_path)
    try:
        build(Path(log), 0, hold=Path(hold), store=store).run(1, store=store, run_id=RUN_ID)
    finally:
        store.close()
