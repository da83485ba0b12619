"""Ray with the PostgreSQL store: a run journalled by one driver process on Ray resumes
from another driver, on Ray, without running its journalled visits again; a killed
replica's visit is retried and journalled once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.postgres import postgres_server, postgres_url
from wingman_actors import Formation
from wingman_actors.store import RunStore

__all__ = ["postgres_server", "postgres_url"]

pytestmark = pytest.mark.ray

ROOT = Path(__file__).parents[2]


def _tally(folder: Path, key: str) -> None:
    with (folder / "calls").open("a") as f:
        f.write(key + "\n")


def build(folder: str) -> Formation:
    """a → b → c; c waits while ``folder/hold`` exists (node code runs in Ray workers:
    calls are counted in a file)."""
    where = Path(folder)

    def a(x: int) -> int:
        _tally(where, "a")
        return x + 1

    def b(x: int) -> int:
        _tally(where, "b")
        return x * 10

    def c(x: int) -> str:
        _tally(where, "c")
        while (where / "hold").exists():
            time.sleep(0.02)
        return f"={x}"

    return Formation("ray-chain").add_function("a", a).add_function("b", b).add_function("c", c) \
        .connect("a", "b").connect("b", "c")


_DRIVER = """
import sys
from tests.backends.test_ray_postgres import build
from wingman_actors.store import RunStore
url, folder, address = sys.argv[1:4]
with RunStore(url) as store, build(folder).start(store=store, backend="ray",
                                                 backend_options={"address": address}) as running:
    future = running.submit(1)
    print(future.run_id, flush=True)
    future.result(120)
"""


def test_a_run_journalled_on_ray_resumes_from_another_driver_without_rerunning_its_visits(
        ray_session: Any, postgres_url: str, tmp_path: Path) -> None:
    (tmp_path / "hold").touch()
    address = ray_session.get_runtime_context().gcs_address
    driver = subprocess.Popen([sys.executable, "-c", _DRIVER, postgres_url, str(tmp_path), address], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert driver.stdout is not None
        run_id = driver.stdout.readline().strip()
        assert run_id, driver.stderr.read() if driver.stderr else ""
        calls = tmp_path / "calls"
        deadline = time.monotonic() + 60
        while "c" not in (calls.read_text().split() if calls.exists() else []) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(driver.pid, signal.SIGKILL)  # the driver dies with c in flight, a and b journalled
        driver.wait(30)
    finally:
        driver.kill()
        driver.communicate(timeout=30)
    (tmp_path / "hold").unlink()
    with RunStore(postgres_url) as store:
        deadline = time.monotonic() + 10
        while store.get(run_id).status == "running" and time.monotonic() < deadline:
            time.sleep(0.05)  # the server sees the dead driver's connection close
        assert store.load(run_id).visits == {"a": {1: 2}, "b": {1: 20}}
        f = build(str(tmp_path))
        with f.start(store=store, backend="ray") as running:
            result = running.resume(run_id).result(timeout=60)
    assert (result.status, result.output) == ("succeeded", "=20")
    assert sorted(calls.read_text().split()) == ["a", "b", "c", "c"]  # c was in flight: it ran again


def test_a_journalled_run_on_ray_whose_replica_is_killed_retries_the_visit_and_journals_each_visit_once(
        ray_session: Any, postgres_url: str, tmp_path: Path) -> None:
    pids = tmp_path / "pids"

    def slow(x: int) -> int:
        with pids.open("a") as f:
            f.write(f"{os.getpid()}\n")
        if len(pids.read_text().split()) == 1:
            time.sleep(30)  # the first attempt waits to be killed
        return x * 3

    f = Formation("kill").add_function("a", lambda x: x + 1).add_function("slow", slow, retries=1).connect("a", "slow")
    with RunStore(postgres_url) as store:
        with f.start(store=store, backend="ray") as running:
            future = running.submit(1)
            deadline = time.monotonic() + 30
            while not (pids.exists() and pids.read_text().split()) and time.monotonic() < deadline:
                time.sleep(0.05)
            os.kill(int(pids.read_text().split()[0]), signal.SIGKILL)
            result = future.result(timeout=40)
        assert (result.output, result.nodes["slow"].attempts) == (6, 2)
        assert [(v.node, v.visit, v.output) for v in store.history(future.run_id)] == [("a", 1, 2), ("slow", 1, 6)]
        assert store.get(future.run_id).status == "succeeded"
