"""Write order and durability: a process killed with SIGKILL loses nothing it was told is
durable, and never keeps a write without every write recorded before it."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from wingman_actors.store import RunStore

ROOT = Path(__file__).parents[2]

_BEGIN_THEN_DIE = """
import os, signal, sys
from wingman_actors.store import RunStore
from tests.store.conftest import chain_shape
store = RunStore(sys.argv[1])
run_id = store.begin_run("chain", chain_shape(), {"n": 1}, run_id=sys.argv[2])
os.kill(os.getpid(), signal.SIGKILL)  # at once: no close, no flush, no atexit
"""

_RECORD_THEN_DIE = """
import os, signal, sys, threading
from wingman_actors.store import RunStore
from tests.store.conftest import chain_shape
store = RunStore(sys.argv[1])
run_id = store.begin_run("chain", chain_shape(), 0, run_id="r")
kill_after = int(sys.argv[2])
counter = iter(range(10**9))
def work(node):
    for visit in range(1, 100_000):
        store.record_visit(run_id, node, visit, visit)
        if next(counter) == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
threads = [threading.Thread(target=work, args=(n,)) for n in "abc"]
for t in threads: t.start()
for t in threads: t.join()
"""


def _run(code: str, *args: str) -> int:
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, timeout=60, capture_output=True, text=True)
    return proc.returncode


def test_a_run_is_durable_when_begin_run_returns_even_if_the_process_is_killed_at_once(location: str) -> None:
    assert _run(_BEGIN_THEN_DIE, location, "run-1") == -signal.SIGKILL
    with RunStore(location) as store:
        assert [(r.id, r.status) for r in store.runs()] == [("run-1", "interrupted")]
        assert store.get("run-1").input == {"n": 1}


@pytest.mark.slow
def test_a_killed_writer_keeps_a_gapless_prefix_of_every_sequence_of_visits(path: Path) -> None:
    rng = random.Random(12)
    for attempt in range(2):
        target = path.with_name(f"runs-{attempt}.sqlite")
        kill_after = rng.randrange(50, 8_000)
        assert _run(_RECORD_THEN_DIE, str(target), str(kill_after)) == -signal.SIGKILL
        with RunStore(target) as store:
            journal = store.load("r")
            total = 0
            for node in "abc":
                visits = journal.visits.get(node, {})
                assert list(visits) == list(range(1, len(visits) + 1)), f"a gap in node {node}'s visits"
                assert all(out == visit for visit, out in visits.items())
                total += len(visits)
            assert total <= kill_after + 3
            seqs = [e.visit for e in journal.entries if e.node == "a"]
            assert seqs == sorted(seqs)

