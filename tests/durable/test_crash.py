"""The crash test, on both stores (SQLite, PostgreSQL): a child process running a
journalled formation is killed with SIGKILL at random points, 50 times; after each kill a new process resumes. Every run ends with
the output of an uninterrupted run, and no visit journalled before a kill runs again."""

from __future__ import annotations

import collections
import multiprocessing
import random
import signal
import time
from pathlib import Path

import pytest

from tests.durable import crash_worker
from tests.support.store_fixtures import until_the_server_has_seen_dead_owners_go
from wingman_actors.store import RunStore

KILLS = 50
RUNS_PER_LIFE = 6


def journalled(store_path: str) -> set[tuple[int, str]]:
    """(run number, node) of every visit journalled so far (opening the store marks the
    killed process's runs interrupted, as the next process would)."""
    with RunStore(store_path) as store:
        done: set[tuple[int, str]] = set()
        for summary in store.runs():
            for node in store.load(summary.id).visits:
                done.add((int(summary.id[1:]), node))
        return done


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_killed_runs_resume_to_the_uninterrupted_output_and_journalled_visits_never_rerun(
        tmp_path: Path, location: str) -> None:
    rng = random.Random(12)
    store_path, log = location, tmp_path / "visits.log"
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.durable.crash_worker"])
    journalled_at: list[set[tuple[int, str]]] = []
    killed_mid_work = 0
    for gen in range(KILLS + 1):
        ready = tmp_path / f"ready-{gen}"
        upto = RUNS_PER_LIFE * min(gen + 1, KILLS)
        child = ctx.Process(target=crash_worker.work, args=(str(store_path), str(log), str(ready), gen, upto))
        child.start()
        if gen < KILLS:
            deadline = time.monotonic() + 30
            while not ready.exists() and child.is_alive() and time.monotonic() < deadline:
                time.sleep(0.001)
            time.sleep(rng.uniform(0.0, 0.04))
            if child.is_alive():
                killed_mid_work += 1
            child.kill()  # SIGKILL (a no-op if the child has just finished)
            child.join(10)
            assert child.exitcode in (0, -signal.SIGKILL)
            # the next child resumes only runs whose owner is seen gone (not those of a live one)
            until_the_server_has_seen_dead_owners_go(store_path)
            journalled_at.append(journalled(store_path))
        else:
            child.join(60)
            assert child.exitcode == 0
    assert killed_mid_work >= KILLS // 2  # most kills landed while the child was working

    runs = RUNS_PER_LIFE * KILLS
    expected = {}
    with crash_worker.build(None, 0, delay=False).start() as running:
        futures = {k: running.submit({"id": k, "x": k}) for k in range(runs)}
        expected = {k: f.result().output for k, f in futures.items()}
    with RunStore(store_path) as store:
        statuses = collections.Counter(r.status for r in store.runs())
        assert statuses == {"succeeded": runs}
        outputs = {k: store.load(crash_worker.run_id(k)).visits["out"][1] for k in range(runs)}
    assert outputs == expected

    lines = [line.split() for line in log.read_text().splitlines()]
    ran: dict[tuple[int, str], list[int]] = collections.defaultdict(list)
    for gen_s, run_s, node in lines:
        ran[(int(run_s), node)].append(int(gen_s))
    for key, gens in ran.items():
        assert len(gens) == len(set(gens)), f"visit {key} ran twice in one process (generations {gens})"
        # Every run of a visit but its last was in flight at a kill: cut short before its
        # output was journalled (a visit in flight at several kills may run several times).
        for gen in gens[:-1]:
            assert gen < KILLS and key not in journalled_at[gen], f"visit {key} ran again after gen {gen}: {gens}"
    for gen, done in enumerate(journalled_at):
        for key in done:
            later = [g for g in ran[key] if g > gen]
            assert later == [], f"visit {key} was journalled before kill {gen} and ran again in {later}"
    assert set(ran) == {(k, n) for k in range(runs) for n in ("src", "left", "right", "join", "out")}
