"""The formation the map kill test kills: a map node whose items each append a line to
a log file; ``work`` runs it in a child process that the test kills with SIGKILL."""

from __future__ import annotations

import time
from pathlib import Path

from wingman_actors import Formation

ITEMS = 40


def build(log: Path) -> Formation:
    """split -> map "word" (2 items at once, 20 ms each) over ``ITEMS`` numbers."""

    def word(x: int) -> str:
        time.sleep(0.02)
        with open(log, "a") as fh:
            fh.write(f"{x}\n")
        return f"w{x}"

    return (Formation("map-crash").add_function("split", lambda n: list(range(n)))
            .add_map("word", word, max_workers=2).connect("split", "word"))


def work(store_path: str, log: str, run_id: str) -> None:
    """Run the formation once, journalled (the test kills the process meanwhile)."""
    build(Path(log)).run(ITEMS, store=store_path, run_id=run_id)
