"""A run owned by a process that froze past its lease is taken over by another process;
the frozen owner, thawed, stops the run at once: its result is an error naming the
takeover, no further node starts there, and nothing more is journalled from there."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wingman_actors.store import RunNotResumableError, RunStore

from .lease_worker import RUN_ID, build, calls

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGSTOP is POSIX")

ROOT = Path(__file__).parents[2]
LEASE = 1.0


@contextlib.contextmanager
def _frozen_owner_taken_over(postgres_url: str, log: Path) -> Iterator[subprocess.Popen[str]]:
    """Process A runs ``held`` and is frozen in its ``slow`` node; this process waits for
    A's lease to lapse and resumes the run to its end. Yields A, still frozen."""
    owner = subprocess.Popen([sys.executable, "-m", "tests.durable.lease_worker", postgres_url, str(LEASE), str(log)],
                             cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while (owner.pid, "slow") not in calls(log):
            assert owner.poll() is None, owner.communicate()
            assert time.monotonic() < deadline, "the run never reached its slow node"
            time.sleep(0.02)
        with RunStore(postgres_url) as store:
            while "first" not in store.load(RUN_ID).visits:  # (journalled after it returned, at once)
                assert time.monotonic() < deadline, "the first visit was never journalled"
                time.sleep(0.02)
            os.kill(owner.pid, signal.SIGSTOP)
            (log.parent / f"go-{os.getpid()}").touch()  # this process's slow visit does not wait
            while True:
                try:
                    result = build(log).resume(RUN_ID, store=store)
                    break
                except RunNotResumableError:
                    assert time.monotonic() < deadline, "the frozen owner's run was never taken over"
                    time.sleep(0.05)
            assert (result.status, result.output) == ("succeeded", "x 1 2 3")
        yield owner
    finally:
        if owner.poll() is None:
            os.kill(owner.pid, signal.SIGCONT)
            owner.kill()
            owner.communicate(timeout=30)


def _ended(owner: subprocess.Popen[str]) -> str:
    out, err = owner.communicate(timeout=30)  # its run resolves: nothing hangs
    assert owner.returncode == 0, err
    return out.strip()


def _journal_is_the_takers(postgres_url: str) -> None:
    with RunStore(postgres_url, recover=False) as store:
        run = store.load(RUN_ID)
        assert (run.run.status, run.run.error) == ("succeeded", None)
        assert run.visits == {"first": {1: "x 1"}, "slow": {1: "x 1 2"}, "last": {1: "x 1 2 3"}}
        assert [v.node for v in store.history(RUN_ID)] == ["first", "slow", "last"]


def test_a_thawed_owner_whose_run_was_taken_over_stops_it_at_its_next_write(
        postgres_url: str, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    with _frozen_owner_taken_over(postgres_url, log) as owner:
        (tmp_path / f"go-{owner.pid}").touch()  # its slow visit returns as soon as it is thawed
        os.kill(owner.pid, signal.SIGCONT)
        said = _ended(owner)
    assert said.split(": ", 1)[1].startswith(
        f"RunTakenOverError: run {RUN_ID!r} was taken over by another owner"), said
    assert [node for pid, node in calls(log) if pid == owner.pid] == ["first", "slow"]  # no last in the thawed owner
    assert [node for pid, node in calls(log) if pid == os.getpid()] == ["slow", "last"]
    _journal_is_the_takers(postgres_url)


def test_a_thawed_owner_whose_run_was_taken_over_stops_it_at_its_lease_renewal_without_waiting_for_a_write(
        postgres_url: str, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    with _frozen_owner_taken_over(postgres_url, log) as owner:
        os.kill(owner.pid, signal.SIGCONT)  # its slow visit stays in flight: no write comes
        said = _ended(owner)
    assert "RunTakenOverError" in said and "was taken over by another owner" in said, said
    assert [node for pid, node in calls(log) if pid == owner.pid] == ["first", "slow"]
    _journal_is_the_takers(postgres_url)
