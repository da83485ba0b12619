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

from tests.support.postgres import PostgresServer
from wingman_actors.errors import MissingExtraError
from wingman_actors.store import RunNotResumableError, RunStore, StoreOpenError

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
            assert said.startswith("refused:") and "owned by another store" in said, said
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


def test_a_schema_with_another_applications_runs_table_is_refused(postgres_url: str) -> None:
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE runs (id INTEGER)")
    with pytest.raises(StoreOpenError, match="'runs' table of another application"):
        RunStore(postgres_url)


def test_bad_leases_are_refused(postgres_url: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="lease must be more than 0 seconds"):
        RunStore(postgres_url, lease=0)
    with pytest.raises(ValueError, match="lease applies to a PostgreSQL store"):
        RunStore(tmp_path / "runs.sqlite", lease=5)


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
