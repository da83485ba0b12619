"""The PostgreSQL store: opening it by URL, leases (a frozen owner's runs are taken over
within the lease, and the owner, thawed, cannot write into them), and its errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.peers import until
from tests.support.postgres import PostgresServer
from wingman_actors.errors import MissingExtraError
from wingman_actors.store import (
    RunNotResumableError,
    RunStore,
    RunTakenOverError,
    StoreOpenError,
    StoreWriteError,
)

from .conftest import chain_shape

ROOT = Path(__file__).parents[2]

_OWNER = """
import sys
from wingman_actors.store import RunStore, StoreWriteError
from tests.store.conftest import chain_shape
store = RunStore(sys.argv[1], lease=float(sys.argv[2]))
run_id = store.begin_run("chain", chain_shape(), 0)
store.record_visit(run_id, "a", 1, "before")
store.flush()
print(run_id, flush=True)
sys.stdin.readline()  # frozen here (SIGSTOP), continued once the run was taken over
store.record_visit(run_id, "b", 1, "from the thawed owner")
try:
    store.flush()
    print("written", flush=True)
except StoreWriteError as exc:
    print("refused:", exc, flush=True)
store.close()
"""


def test_a_frozen_owners_run_is_taken_over_within_the_lease_and_the_thawed_owner_cannot_write_to_it(
        postgres_url: str) -> None:
    lease = 1.0
    child = subprocess.Popen([sys.executable, "-c", _OWNER, postgres_url, str(lease)], cwd=ROOT, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdin is not None
        run_id = child.stdout.readline().strip()
        assert run_id, child.stderr.read() if child.stderr else ""
        with RunStore(postgres_url) as store:
            os.kill(child.pid, signal.SIGSTOP)
            frozen = time.monotonic()
            assert store.get(run_id).status == "running"  # until its lease lapses
            while True:
                try:
                    journal = store.claim_run(run_id, chain_shape())
                    break
                except RunNotResumableError:
                    assert time.monotonic() - frozen < lease + 1, "not taken over within the lease + 1 s"
                    time.sleep(0.02)
            assert time.monotonic() - frozen <= lease + 1
            assert journal.visits == {"a": {1: "before"}}
            os.kill(child.pid, signal.SIGCONT)
            child.stdin.write("go\n")
            child.stdin.flush()
            said = child.stdout.readline()
            assert said.startswith("refused:") and f"run {run_id!r} was taken over by another owner" in said, said
            assert store.load(run_id).visits == {"a": {1: "before"}}
            assert store.get(run_id).status == "running"  # this store's now
    finally:
        os.kill(child.pid, signal.SIGCONT)
        child.kill()
        child.communicate(timeout=30)


def test_an_owner_that_renews_its_lease_keeps_its_runs_running_past_it(postgres_url: str) -> None:
    with RunStore(postgres_url, lease=0.5) as owner, RunStore(postgres_url) as other:
        run_id = owner.begin_run("chain", chain_shape(), 0)
        assert other.get(run_id).status == "running"
        # the owner's renewals keep it running past its lease
        time.sleep(1.0)
        assert other.get(run_id).status == "running"
        assert [r.id for r in other.runs("running")] == [run_id]


def test_closing_the_store_stops_its_lease_thread(postgres_url: str) -> None:
    store = RunStore(postgres_url, lease=0.3)
    assert any(t.name == "wingman-store-lease" for t in threading.enumerate())
    store.close()
    assert not any(t.name.startswith("wingman-store") for t in threading.enumerate())


def test_a_postgres_url_opens_a_store_on_postgresql_which_is_a_run_store(postgres_url: str) -> None:
    with RunStore(postgres_url) as store:
        assert isinstance(store, RunStore) and store.path == postgres_url
        assert store.lease.total_seconds() == 15


def test_a_password_in_the_url_is_hidden_from_messages(postgres_server: PostgresServer) -> None:
    url = f"postgresql://someone:hunter2@127.0.0.1:{postgres_server.port}/no_such_database"
    with pytest.raises(StoreOpenError, match="cannot connect to postgresql://someone:\\*\\*\\*@") as info:
        RunStore(url)
    assert "hunter2" not in str(info.value)


def test_a_store_of_schema_version_1_is_migrated_and_takes_cancel_requests(postgres_url: str) -> None:
    import psycopg

    from wingman_actors.store import _pg_schema

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for statement in _pg_schema._SCHEMA:  # version 1, as released
            conn.execute(statement)
        assert conn.execute("SELECT version FROM wingman_run_store").fetchone() == (1,)
    with RunStore(postgres_url) as store:
        run_id = store.begin_run("chain", chain_shape(), 1)
        assert store.request_cancel(run_id) is True
        assert store.get(run_id).cancel_requested is not None
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM wingman_run_store").fetchone() == (_pg_schema.LATEST_VERSION,)


def test_a_schema_with_another_applications_runs_table_is_refused(postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER)")
    with pytest.raises(StoreOpenError, match="'runs' table of another application"):
        RunStore(postgres_url)


@pytest.mark.parametrize("table", ["journal", "shapes", "owners"])
def test_a_schema_with_another_applications_table_of_a_store_name_is_refused_naming_it(
        postgres_url: str, table: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id INTEGER)")
    with pytest.raises(StoreOpenError, match=f"'{table}' table of another application.*another database or schema"):
        RunStore(postgres_url)


def test_bad_leases_are_refused(postgres_url: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lease must be more than 0 seconds"):
        RunStore(postgres_url, lease=0)
    with pytest.raises(ValueError, match="lease applies to a PostgreSQL store"):
        RunStore(tmp_path / "runs.sqlite", lease=5)


@pytest.mark.parametrize("lease", [-1, True, "5"])
def test_a_lease_of_the_wrong_kind_is_refused_saying_it_must_be_more_than_0_seconds(postgres_url: str,
                                                                                    lease: object) -> None:
    with pytest.raises(ValueError, match=r"lease must be more than 0 seconds \(a datetime.timedelta or a number\)"):
        RunStore(postgres_url, lease=lease)  # type: ignore[arg-type]


def test_a_postgres_url_without_the_extra_names_it() -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from wingman_actors.store import RunStore\n"
            "RunStore('postgresql://localhost/db')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 1
    assert f"{MissingExtraError.__name__}: a run store on PostgreSQL needs the 'postgres' extra" in done.stderr
    assert 'pip install "wingman-actors[postgres]"' in done.stderr


def test_a_store_whose_writer_connection_the_server_dropped_reconnects_and_keeps_its_runs(postgres_url: str) -> None:
    import psycopg

    with RunStore(postgres_url) as store, RunStore(postgres_url) as other:
        run_id = store.begin_run("chain", chain_shape(), 0)
        backend = "SELECT backend FROM owners WHERE id = (SELECT owner FROM runs WHERE id = %s)"
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            (before,) = admin.execute(backend, (run_id,)).fetchone() or (None,)
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (before,))
            store.record_visit(run_id, "a", 1, "after the drop")
            store.flush()
            (after,) = admin.execute(backend, (run_id,)).fetchone() or (None,)
        assert after != before
        assert store.load(run_id).visits == {"a": {1: "after the drop"}}
        assert other.get(run_id).status == "running"  # its owner is live again
        with pytest.raises(RunNotResumableError, match="running"):
            other.claim_run(run_id, chain_shape())


def _lapse(postgres_url: str, run_id: str, *, interrupt: bool = False) -> None:
    """Make the lease of ``run_id``'s owner lapse on the server, as a frozen process's would
    (with ``interrupt``, mark the run interrupted, as a store recovering meanwhile would)."""
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as admin, admin.transaction():
        admin.execute("UPDATE owners SET lease_until = 0 WHERE id = (SELECT owner FROM runs WHERE id = %s)", (run_id,))
        if interrupt:
            admin.execute("UPDATE runs SET status = 'interrupted' WHERE id = %s", (run_id,))


def test_a_write_refused_because_the_run_was_taken_over_tells_the_stores_lost_run_listeners(
        postgres_url: str) -> None:
    told: list[RunTakenOverError] = []
    arrived = threading.Event()
    with RunStore(postgres_url, lease=60) as owner, RunStore(postgres_url) as other:
        unsubscribe = owner.on_run_lost(lambda error: (told.append(error), arrived.set()))
        run_id = owner.begin_run("chain", chain_shape(), 0)
        _lapse(postgres_url, run_id)
        other.claim_run(run_id, chain_shape())
        owner.record_visit(run_id, "a", 1, "late")
        with pytest.raises(StoreWriteError, match=f"run {run_id!r} was taken over by another owner"):
            owner.flush()
        assert arrived.wait(10)
        assert [(type(e), e.run_id) for e in told] == [(RunTakenOverError, run_id)]
        unsubscribe()
        assert other.load(run_id).visits == {}


def test_the_end_of_a_run_taken_over_is_not_written_by_its_former_owner(postgres_url: str) -> None:
    with RunStore(postgres_url, lease=60) as owner, RunStore(postgres_url) as other:
        run_id = owner.begin_run("chain", chain_shape(), 0)
        waited = owner.begin_run("chain", chain_shape(), 0)
        _lapse(postgres_url, run_id)
        for taken in (run_id, waited):
            other.claim_run(taken, chain_shape())
        owner.set_status(run_id, "succeeded")
        with pytest.raises(StoreWriteError, match=f"run {run_id!r} was taken over by another owner"):
            owner.flush()
        with pytest.raises(RunTakenOverError, match=f"run {waited!r} was taken over by another owner"):
            owner.set_status(waited, "failed", error="too late", wait=True)
        for taken in (run_id, waited):
            assert (other.get(taken).status, other.get(taken).error) == ("running", None)


def test_a_renewal_that_finds_the_lease_lapsed_takes_back_its_runs_that_were_only_marked_interrupted(
        postgres_url: str) -> None:
    with RunStore(postgres_url, lease=0.6) as owner, RunStore(postgres_url) as other:
        run_id = owner.begin_run("chain", chain_shape(), 0)
        _lapse(postgres_url, run_id, interrupt=True)
        deadline = time.monotonic() + 10
        while other.get(run_id).status != "running":
            assert time.monotonic() < deadline, "the owner never took its run back"
            time.sleep(0.05)
        with pytest.raises(RunNotResumableError, match="is running"):
            other.claim_run(run_id, chain_shape())
        owner.record_visit(run_id, "a", 1, "still mine")
        owner.flush()
        assert other.load(run_id).visits == {"a": {1: "still mine"}}


def test_marking_interrupted_leaves_alone_a_run_claimed_while_it_waited_by_a_store_opened_meanwhile(
        postgres_url: str) -> None:
    """A store's recovery (``mark_interrupted``, run by every store on open) that has to wait for
    a run's row while a store opened since claims that run does not mark it interrupted (which
    would let any third store claim it too): it judges the run's owner after the wait. The
    interleaving is forced: a connection of the test holds the run's row and makes the new
    store's claim of it (the claim's own update) once the recovery waits for it; a live store's
    run, found first, makes the recovery look at the server's processes before it waits (the
    server keeps that first look for the rest of its transaction)."""
    import psycopg

    marked: list[int] = []
    with RunStore(postgres_url, lease=60) as owner, RunStore(postgres_url) as recovering, \
            RunStore(postgres_url) as busy, psycopg.connect(postgres_url, autocommit=True) as holder:
        busy.begin_run("chain", chain_shape(), 0)
        run_id = owner.begin_run("chain", chain_shape(), 0)
        owner.flush()
        _lapse(postgres_url, run_id)  # its owner froze: the run is to be marked interrupted, or claimed
        mark = threading.Thread(target=lambda: marked.append(recovering.mark_interrupted()), name="store-mark")
        with holder.transaction():
            holder.execute("SELECT 1 FROM runs WHERE id = %s FOR UPDATE", (run_id,))
            mark.start()
            assert until(lambda: holder.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() "
                "AND datname = current_database()").fetchone() == (1,), within=20), "the recovery did not wait"
            late = RunStore(postgres_url, recover=False)  # (its own recovery would wait for the row too)
            holder.execute("UPDATE runs SET status = 'running', owner = (SELECT max(id) FROM owners) WHERE id = %s",
                           (run_id,))
        try:
            mark.join(timeout=20)
            assert marked == [0] and late.get(run_id).status == "running"
            with pytest.raises(RunNotResumableError, match="is running"):
                recovering.claim_run(run_id, chain_shape())
        finally:
            late.close()
