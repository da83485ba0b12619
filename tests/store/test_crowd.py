"""Two processes, many threads each, on one store file: runs opened by path and on a
shared store, suspending, failing and resuming, while others list and prune. Every run
is accounted for and the file stays sound. (Closing any file descriptor of the database
file drops every POSIX lock the process holds on it, SQLite's included: a store must
never open the file itself while other stores of the process use it.)"""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import time
from pathlib import Path

import pytest

from tests.store import crowd_worker
from wingman_actors.store import RunStore

from .conftest import chain_shape

PROCESSES = 2
THREADS = 8
RUNS = 12
SEEDED = 60
ROUNDS = 3


def _seed_old_runs(path: Path) -> None:
    with RunStore(path) as store:
        for i in range(SEEDED):
            run_id = store.begin_run(crowd_worker.SEEDED, chain_shape(), i)
            store.record_visit(run_id, "a", 1, i)
            store.set_status(run_id, "succeeded")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE runs SET updated = updated - 86400 WHERE formation = ?", (crowd_worker.SEEDED,))
    conn.close()


def _go_when_ready(folder: Path, tags: list[str]) -> None:
    """Wait until every child is ready (see ``crowd_worker.start_together``), then let them go."""
    deadline = time.monotonic() + 60
    while not all((folder / f"ready-{tag}").exists() for tag in tags) and time.monotonic() < deadline:
        time.sleep(0.005)
    (folder / "go").touch()


def _join_all(children: list[multiprocessing.process.BaseProcess], timeout: float) -> None:
    """Wait for every child (``timeout`` seconds each); kill and reap any still running."""
    for child in children:
        child.join(timeout)
    for child in children:
        if child.is_alive():
            child.kill()
            child.join(10)


def _run_processes(path: Path, tmp_path: Path, round_: int) -> dict[str, list[object]]:
    ctx = multiprocessing.get_context("spawn")
    outs = [tmp_path / f"outcomes-{round_}-{n}.json" for n in range(PROCESSES)]
    tags = [f"r{round_}p{n}" for n in range(PROCESSES)]
    children = [ctx.Process(target=crowd_worker.work, args=(str(path), tag, THREADS, RUNS, str(out)),
                            name=f"crowd-{n}") for n, (tag, out) in enumerate(zip(tags, outs, strict=True))]
    for child in children:
        child.start()
    try:
        _go_when_ready(tmp_path, tags)
    finally:
        _join_all(children, 120)
    assert [c.exitcode for c in children] == [0] * PROCESSES
    outcomes: dict[str, list[object]] = {}
    for out in outs:
        outcomes.update(json.loads(out.read_text()))
    return outcomes


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(ROUNDS))
def test_two_processes_of_many_threads_on_one_file_account_for_every_run(tmp_path: Path, round_: int) -> None:
    path = tmp_path / "runs.sqlite"
    _seed_old_runs(path)
    outcomes = _run_processes(path, tmp_path, round_)
    wrong = {run_id: o for run_id, o in outcomes.items() if o[0] == "error"}
    assert wrong == {}
    expected = {f"r{round_}p{n}-{t}-{i}": crowd_worker.expected(i)
                for n in range(PROCESSES) for t in range(THREADS) for i in range(RUNS)}
    assert {run_id: tuple(o) for run_id, o in outcomes.items()} == expected
    with RunStore(path) as store:
        listed = {r.id: r.status for r in store.runs()}
    assert listed == {run_id: status for run_id, (status, _) in expected.items()}  # the seeded runs were pruned
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


FRESH_FILES = 12


@pytest.mark.slow
def test_many_openers_of_a_file_that_does_not_exist_yet_all_open_it(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    outs = [tmp_path / f"errors-{n}.json" for n in range(PROCESSES)]
    children = [ctx.Process(target=crowd_worker.open_fresh, args=(str(tmp_path), f"p{n}", THREADS, FRESH_FILES,
                                                                  str(out)), name=f"fresh-{n}")
                for n, out in enumerate(outs)]
    for child in children:
        child.start()
    try:
        _go_when_ready(tmp_path, [f"p{n}" for n in range(PROCESSES)])
        for k in range(FRESH_FILES):  # the children wait for each go file, then all open at once
            (tmp_path / f"go-{k}").touch()
            time.sleep(0.1)
    finally:
        _join_all(children, 60)
    assert [c.exitcode for c in children] == [0] * PROCESSES
    errors = {run_id: e for out in outs for run_id, e in json.loads(out.read_text()).items()}
    assert errors == {}
    for k in range(FRESH_FILES):
        with RunStore(tmp_path / f"fresh-{k}.sqlite") as store:
            assert len(store.runs()) == PROCESSES * THREADS
