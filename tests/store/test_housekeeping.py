"""Pruning old runs, expiring suspended runs, and marking runs of dead processes interrupted."""

from __future__ import annotations

import datetime
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.store_fixtures import until_the_server_has_seen_dead_owners_go
from wingman_actors.store import FormationShape, RunNotResumableError, RunStore

from .conftest import chain_shape


def _age(path: Path, run_id: str, seconds: float) -> None:
    """Move a run's updated time into the past (as if it had been written long ago)."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE runs SET updated = updated - ?, created = created - ? WHERE id = ?",
                     (seconds, seconds, run_id))
    conn.close()


def test_prune_deletes_old_finished_runs_and_their_journals(path: Path, shape: FormationShape) -> None:
    with RunStore(path) as store:
        old = store.begin_run("chain", shape, 0)
        store.record_visit(old, "a", 1, "x" * 1000)
        store.set_status(old, "succeeded")
        old_running = store.begin_run("chain", shape, 1)
        recent = store.begin_run("chain", shape, 2)
        store.set_status(recent, "failed")
        store.flush()
        _age(path, old, 3 * 86400)
        _age(path, old_running, 3 * 86400)
        assert store.prune(older_than=datetime.timedelta(days=2)) == 1
        assert [r.id for r in store.runs()] == [old_running, recent]
        assert store.prune(older_than=0) == 1  # recent; the running run stays
        assert [r.id for r in store.runs()] == [old_running]
        conn = sqlite3.connect(path)
        assert conn.execute("SELECT count(*) FROM journal").fetchone()[0] == 0  # only the old run had entries
        conn.close()


def test_prune_keeps_a_suspended_run_that_still_waits_and_expires_a_lapsed_one(
        path: Path, shape: FormationShape) -> None:
    with RunStore(path, suspend_ttl=3600) as store:
        waiting, lapsed = store.begin_run("chain", shape, 0), store.begin_run("chain", shape, 1)
        for run_id in (waiting, lapsed):
            store.record_interrupt(run_id, "b", 1, "approve?")
            store.set_status(run_id, "suspended", wait=True)
        _age(path, waiting, 3 * 86400)
        _age(path, lapsed, 3 * 86400)
        conn = sqlite3.connect(path)
        with conn:
            conn.execute("UPDATE runs SET expires = ? WHERE id = ?", (time.time() - 1, lapsed))
        conn.close()
        # the lapsed run is marked expired, which updates it: pruned once that is old enough
        assert store.prune(older_than=datetime.timedelta(days=1)) == 0
        assert [(r.id, r.status) for r in store.runs()] == [(waiting, "suspended"), (lapsed, "expired")]
        assert store.prune(older_than=0) == 1
        assert [(r.id, r.status) for r in store.runs()] == [(waiting, "suspended")]


def _suspend(store: RunStore, shape: FormationShape) -> str:
    run_id = store.begin_run("chain", shape, 0)
    store.record_interrupt(run_id, "b", 1, "approve?")
    store.set_status(run_id, "suspended", wait=True)
    return run_id


def test_prune_with_no_age_deletes_a_run_that_reads_expired_in_one_call(location: str, shape: FormationShape) -> None:
    with RunStore(location, suspend_ttl=0.05) as store:
        run_id = _suspend(store, shape)
        time.sleep(0.15)
        assert store.get(run_id).status == "expired"
        assert store.prune(older_than=0) == 1
        assert store.runs() == []


def test_a_run_that_expired_longer_ago_than_older_than_is_pruned(location: str, shape: FormationShape) -> None:
    # It expired when its suspend_ttl lapsed, not when a store got round to marking it so.
    with RunStore(location, suspend_ttl=0.05) as store:
        _suspend(store, shape)
        time.sleep(0.6)
        assert store.prune(older_than=datetime.timedelta(seconds=0.3)) == 1
        assert store.runs() == []


def test_an_expired_run_reads_updated_when_it_expired_before_and_after_it_is_marked(
        location: str, shape: FormationShape) -> None:
    with RunStore(location, suspend_ttl=0.05) as store:
        run_id = _suspend(store, shape)
        expires = store.get(run_id).expires
        time.sleep(0.15)
        for _ in ("read as expired", "marked expired"):
            record, (summary,) = store.get(run_id), store.runs()
            assert (record.status, record.updated, summary.updated) == ("expired", expires, expires)
            store.expire()


def test_a_run_begins_after_its_shape_was_pruned_by_this_or_another_store(location: str, shape: FormationShape) -> None:
    # A store writes a formation's shape with its first run only; a prune here or in
    # another process may delete it meanwhile, and the next run must write it again.
    with RunStore(location) as store, RunStore(location) as other:
        first = store.begin_run("chain", shape, 0)
        store.set_status(first, "succeeded")
        store.flush()
        assert other.prune(older_than=0) == 1  # the run and, with it, its shape
        second = store.begin_run("chain", shape, 1)
        store.set_status(second, "succeeded")
        assert store.prune(older_than=0) == 1
        third = store.begin_run("chain", shape, 2)
        store.set_status(third, "failed")
        assert store.claim_run(third, shape).run.id == third  # its shape is there to compare with
        assert [r.id for r in other.runs()] == [third]


def test_prune_refuses_a_bad_age(store: RunStore) -> None:
    with pytest.raises(ValueError, match="timedelta or a number of seconds"):
        store.prune(older_than=-1)
    with pytest.raises(ValueError, match="older_than"):
        store.prune(older_than="2 days")  # type: ignore[arg-type]


def test_prune_refuses_a_negative_timedelta_showing_it_as_given(store: RunStore) -> None:
    with pytest.raises(ValueError, match=r"got datetime\.timedelta\(days=-1\)$"):
        store.prune(older_than=datetime.timedelta(days=-1))


def test_a_suspended_run_expires_after_the_store_suspend_ttl(location: str, shape: FormationShape) -> None:
    with RunStore(location, suspend_ttl=0.3) as store:
        run_id = store.begin_run("chain", shape, 0)
        store.record_interrupt(run_id, "b", 1, "approve?")
        store.set_status(run_id, "suspended", wait=True)
        record = store.get(run_id)
        assert record.status == "suspended" and record.expires is not None
        assert store.suspend_ttl == datetime.timedelta(seconds=0.3)
        time.sleep(0.4)
        assert store.get(run_id).status == "expired"
        assert [r.id for r in store.runs("expired")] == [run_id] and store.runs("suspended") == []
        with pytest.raises(RunNotResumableError, match="takes no answer"):
            store.answer(run_id, "yes")
        with pytest.raises(RunNotResumableError, match="expired") as err:
            store.claim_run(run_id)
        assert err.value.status == "expired"
    with RunStore(location) as store:  # persisted when refused
        assert store.get(run_id).status == "expired"


def test_expire_persists_the_expiry_and_a_store_without_ttl_never_expires(location: str, shape: FormationShape) -> None:
    with RunStore(location, suspend_ttl=None) as store:
        forever = store.begin_run("chain", shape, 0)
        store.set_status(forever, "suspended")
    with RunStore(location, suspend_ttl=0.01) as store:
        soon = store.begin_run("chain", shape, 1)
        store.set_status(soon, "suspended")
        time.sleep(0.05)
        assert store.expire() == 1
        assert store.get(soon).status == "expired" and store.get(forever).status == "suspended"


def test_a_bad_suspend_ttl_is_refused(location: str) -> None:
    with pytest.raises(ValueError, match="suspend_ttl"):
        RunStore(location, suspend_ttl=-5)


_CHILD = """
import sys, os
from wingman_actors.store import RunStore
from tests.store.conftest import chain_shape
store = RunStore(sys.argv[1])
run_id = store.begin_run("chain", chain_shape(), 0)
print(run_id, flush=True)
if sys.argv[2] == "wait":
    sys.stdin.readline()
os._exit(0)  # no close(): as if the process died
"""


def _child(location: str, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _CHILD, location, mode], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])


def test_runs_of_a_dead_process_are_marked_interrupted_when_a_store_opens(location: str) -> None:
    child = _child(location, "exit")
    run_id = child.communicate(timeout=30)[0].strip()
    until_the_server_has_seen_dead_owners_go(location)
    with RunStore(location) as store:
        assert store.get(run_id).status == "interrupted"
        assert store.claim_run(run_id).run.status == "running"


def test_runs_of_a_live_process_stay_running_until_it_dies(location: str) -> None:
    child = _child(location, "wait")
    try:
        assert child.stdout is not None
        run_id = child.stdout.readline().strip()
        with RunStore(location) as store:
            assert store.get(run_id).status == "running"
            with pytest.raises(RunNotResumableError, match="running"):
                store.claim_run(run_id)
            child.kill()
            child.wait(timeout=30)
            if location.startswith("postgresql://"):  # the server notices the closed connection in a moment
                deadline = time.monotonic() + 5
                while store.get(run_id).status == "running" and time.monotonic() < deadline:
                    time.sleep(0.01)
            assert store.mark_interrupted() == 1
            assert store.get(run_id).status == "interrupted"
    finally:
        child.kill()
        child.communicate(timeout=30)


def test_another_open_store_in_this_process_keeps_its_runs_running(location: str) -> None:
    with RunStore(location) as first:
        run_id = first.begin_run("chain", chain_shape(), 0)
        with RunStore(location) as second:
            assert second.get(run_id).status == "running"
            assert second.mark_interrupted() == 0
        assert first.get(run_id).status == "running"
