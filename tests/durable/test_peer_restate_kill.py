"""Restate's end-to-end kill scenarios (restatedev/e2e: ``KillTest``, ``KillRuntime``,
``AwakeableHolder`` across restarts) on both stores (SQLite, PostgreSQL): a process running
a journalled run is killed with SIGKILL; the run is then ``interrupted`` and another
process resumes it, running only what was not journalled. The worker is
tests/durable/restate_worker.py.

Deliberately different: Restate's server notices the dead deployment and re-invokes on its
own; ours waits for a ``resume`` (the launcher prints the command, a server resumes its own
runs on restart), which any process that builds the formation may call.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from pathlib import Path

import pytest

from tests.durable import restate_worker
from tests.support.peers import until
from tests.support.store_fixtures import until_the_server_has_seen_dead_owners_go
from wingman_actors.store import RunStore


def started(path: Path, child: multiprocessing.process.BaseProcess, within: float = 30) -> bool:
    """Wait until the child created ``path`` (or died, or ``within`` seconds passed)."""
    deadline = time.monotonic() + within
    while not path.exists() and child.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    return path.exists()


def killed(child: multiprocessing.process.BaseProcess) -> None:
    child.kill()
    child.join(10)
    assert child.exitcode == -signal.SIGKILL


def context() -> multiprocessing.context.ForkServerContext:
    ctx = multiprocessing.get_context("forkserver")
    assert isinstance(ctx, multiprocessing.context.ForkServerContext)
    ctx.set_forkserver_preload(["tests.durable.restate_worker"])
    return ctx


@pytest.mark.timeout(60)
def test_a_run_killed_in_a_step_resumes_elsewhere_without_rerunning_journalled_steps(
        tmp_path: Path, location: str) -> None:
    """From restatedev/e2e KillTest (kill the invocation's process mid-call, re-invoke)."""
    log, ready = tmp_path / "visits.log", tmp_path / "ready"
    child = context().Process(target=restate_worker.work, args=(location, str(log), str(ready), "kill-1"))
    child.start()
    assert started(ready, child)
    # ``charge``'s visit is recorded before ``ship`` starts but committed a moment later
    # (the store's writer commits in groups): kill once it is journalled
    with RunStore(location) as reader:
        assert until(lambda: "charge" in reader.load("kill-1").visits, within=10)
    killed(child)
    until_the_server_has_seen_dead_owners_go(location)
    with RunStore(location) as store:
        assert store.get("kill-1").status == "interrupted"
        assert store.load("kill-1").visits == {"charge": {1: "order charged"}}
        result = restate_worker.build(log, None).resume("kill-1", store=store)
        assert (result.status, result.output) == ("succeeded", "order charged, shipped, notified")
        assert store.get("kill-1").status == "succeeded"
    assert log.read_text().split() == ["charge", "ship", "ship", "notify"]


@pytest.mark.timeout(60)
def test_a_run_waiting_on_an_awakeable_survives_its_process_and_is_answered_from_another(
        tmp_path: Path, location: str) -> None:
    """From restatedev/e2e AwakeableHolder with KillRuntime (an awakeable resolved after a
    restart still completes the invocation)."""
    log, hold = tmp_path / "visits.log", tmp_path / "hold"
    child = context().Process(target=restate_worker.suspend, args=(location, str(log), "kill-2", str(hold)))
    child.start()
    assert started(hold, child)
    assert hold.read_text() == "suspended"
    killed(child)
    until_the_server_has_seen_dead_owners_go(location)
    with RunStore(location) as store:
        assert store.get("kill-2").status == "suspended"  # waiting is not running: a kill changes nothing
        result = restate_worker.waiting(log).resume("kill-2", store=store, answer="approved")
        assert result.output == "order charged, approved, notified"
    assert log.read_text().split() == ["charge", "approve", "approve", "notify"]
