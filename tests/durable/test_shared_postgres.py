"""Two processes share one PostgreSQL store, each with hundreds of runs in flight at once
through a started formation: every run of both is journalled whole, listed once, and
succeeded."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from wingman_actors import Formation
from wingman_actors.store import RunStore

ROOT = Path(__file__).parents[2]
RUNS = 300


def _inc(x: int) -> int:
    return x + 1


def chain() -> Formation:
    return Formation("shared").add_function("a", _inc).add_function("b", _inc).add_function("c", _inc) \
        .connect("a", "b").connect("b", "c")


def submit_all(url: str, who: str) -> None:
    """``RUNS`` runs in flight at once from 4 threads, named ``<who>-<i>``."""
    with RunStore(url) as store, chain().start(store=store) as running:
        with ThreadPoolExecutor(4, thread_name_prefix=f"shared-{who}") as pool:
            futures = [f for chunk in pool.map(
                lambda k: [running.submit(i, run_id=f"{who}-{i}") for i in range(k, RUNS, 4)], range(4))
                for f in chunk]
        assert [f.result(60).output for f in sorted(futures, key=lambda f: int(f.run_id.split("-")[1]))] == [
            i + 3 for i in range(RUNS)]


_CHILD = """
import sys
from tests.durable.test_shared_postgres import submit_all
submit_all(sys.argv[1], "child")
"""


def test_two_processes_with_hundreds_of_runs_in_flight_share_one_postgres_store(postgres_url: str) -> None:
    RunStore(postgres_url).close()  # the schema exists before both start
    child = subprocess.Popen([sys.executable, "-c", _CHILD, postgres_url], cwd=ROOT, stderr=subprocess.PIPE,
                             text=True)
    try:
        submit_all(postgres_url, "parent")
    finally:
        _, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    with RunStore(postgres_url) as store:
        runs = store.runs()
        assert len(runs) == 2 * RUNS and {r.status for r in runs} == {"succeeded"}
        for who in ("parent", "child"):
            for i in (0, RUNS // 2, RUNS - 1):
                assert store.load(f"{who}-{i}").visits == {"a": {1: i + 1}, "b": {1: i + 2}, "c": {1: i + 3}}
