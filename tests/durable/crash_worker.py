"""The formation the crash test kills: every visit appends a line to a log file.

``work`` runs in a child process (started by a forkserver, so it costs a fork, not an
interpreter start): it resumes the unfinished runs of the store and submits the runs not
begun yet, and is killed with SIGKILL at a random point by the test.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

from wingman_actors import Formation
from wingman_actors.store import RunStore

RESUMABLE = ("interrupted", "failed", "cancelled")


def build(log: Path | None, gen: int, *, delay: bool) -> Formation:
    """src -> (left, right) -> join -> out; each visit logs ``gen id node``."""

    def mark(node: str, run: int) -> None:
        if delay:
            time.sleep(random.uniform(0.0005, 0.003))
        if log is not None:
            with open(log, "a") as fh:
                fh.write(f"{gen} {run} {node}\n")

    def src(d: dict[str, int]) -> dict[str, int]:
        mark("src", d["id"])
        return {"id": d["id"], "v": d["x"] + 1}

    def left(d: dict[str, int]) -> dict[str, int]:
        mark("left", d["id"])
        return {"id": d["id"], "v": d["v"] * 2}

    def right(d: dict[str, int]) -> dict[str, int]:
        mark("right", d["id"])
        return {"id": d["id"], "v": d["v"] + 10}

    def join(left: dict[str, int], right: dict[str, int]) -> dict[str, int]:
        mark("join", left["id"])
        return {"id": left["id"], "v": left["v"] + right["v"]}

    def out(d: dict[str, int]) -> str:
        mark("out", d["id"])
        return f"run {d['id']}: {d['v']}"

    f = Formation("crash")
    for fn in (src, left, right, join, out):
        f.add_function(fn.__name__, fn)
    return (f.connect("src", "left").connect("src", "right").connect("left", "join")
            .connect("right", "join").connect("join", "out"))


def run_id(k: int) -> str:
    return f"r{k:04d}"


def work(store_path: str, log: str, ready: str, gen: int, upto: int) -> None:
    """Resume what is unfinished, submit runs 0..upto-1 not begun yet, wait for all."""
    os.nice(10)  # leave the CPU to the tests running beside this one (some measure time limits)
    store = RunStore(store_path)
    try:
        with build(Path(log), gen, delay=True).start(store=store) as running:
            Path(ready).touch()
            known = {r.id: r.status for r in store.runs()}
            futures: list[Any] = [running.resume(rid) for rid, status in known.items() if status in RESUMABLE]
            for k in range(upto):
                if run_id(k) not in known:
                    futures.append(running.submit({"id": k, "x": k}, run_id=run_id(k)))
            for future in futures:
                future.result(timeout=30)
    finally:
        store.close()
