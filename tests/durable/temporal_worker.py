"""The formation the Temporal-port crash test kills (``test_peer_temporal_more.py``): a
parent whose child formation's second node is ``async def``; every visit appends
``gen node`` to a log file. With ``hold``, the async node touches a file once the visit
before it is committed, then waits to be killed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from wingman_actors import Formation
from wingman_actors.store import RunStore

RUN_ID = "temporal-crash"


def build(log: Path, gen: int, *, hold: Path | None = None, store: RunStore | None = None) -> Formation:
    def mark(node: str) -> None:
        with open(log, "a") as fh:
            fh.write(f"{gen} {node}\n")

    def start(x: int) -> int:
        mark("start")
        return x + 1

    def activity(x: int) -> int:
        mark("activity")
        return x * 10

    async def slow(x: int) -> int:
        mark("slow")
        if hold is not None and store is not None:
            store.flush()  # activity's visit is committed: what the kill must not lose
            hold.touch()
            await asyncio.sleep(60)
        return x + 2

    def end(x: int) -> str:
        mark("end")
        return f"end {x}"

    child = Formation("child").add_function("activity", activity).add_function("slow", slow).connect("activity", "slow")
    return (Formation("parent").add_function("start", start).add_formation("child", child).add_function("end", end)
            .connect("start", "child", "end"))


def work(location: str, log: str, hold: str) -> None:
    """Run the formation until ``slow`` holds (the test kills this process there)."""
    store = RunStore(location)
    try:
        build(Path(log), 0, hold=Path(hold), store=store).run(1, store=store, run_id=RUN_ID)
    finally:
        store.close()
