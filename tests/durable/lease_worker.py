"""The formation of the lease takeover tests: ``first -> slow -> last``, each visit logging
``<pid> <node>`` to a file; ``slow`` waits until the file ``go-<pid>`` exists beside it.

Run as a script (``python -m tests.durable.lease_worker URL LEASE LOG``), it runs the
run ``held`` on the PostgreSQL store at URL with that lease and prints how it ended.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from wingman_actors import Formation
from wingman_actors.store import RunStore

RUN_ID = "held"


def build(log: Path) -> Formation:
    """``first -> slow -> last`` (see the module docs)."""

    def mark(node: str) -> None:
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()} {node}\n")

    def first(x: str) -> str:
        mark("first")
        return x + " 1"

    def slow(x: str) -> str:
        mark("slow")
        go = log.parent / f"go-{os.getpid()}"
        while not go.exists():
            time.sleep(0.01)
        return x + " 2"

    def last(x: str) -> str:
        mark("last")
        return x + " 3"

    f = Formation("held")
    for fn in (first, slow, last):
        f.add_function(fn.__name__, fn)
    return f.connect("first", "slow").connect("slow", "last")


def calls(log: Path) -> list[tuple[int, str]]:
    """The visits logged so far: ``(pid, node)``."""
    if not log.exists():
        return []
    return [(int(pid), node) for pid, node in (line.split() for line in log.read_text().splitlines())]


def main(url: str, lease: float, log: Path) -> None:
    with RunStore(url, lease=lease) as store:
        started = time.monotonic()
        try:
            result = build(log).run("x", store=store, run_id=RUN_ID)
            print(f"succeeded: {result.output}", flush=True)
        except Exception as exc:
            print(f"ended after {time.monotonic() - started:.1f}s: {type(exc).__name__}: {exc}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), Path(sys.argv[3]))
