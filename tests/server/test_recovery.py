"""Run records agree with the run journal at the next start, and expire with it."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import networkx as nx  # type: ignore[import-untyped]
import pytest

from wingman_actors.server import Store
from wingman_actors.server._recovery import recover_runs, refreshed
from wingman_actors.server._schemas import RunOut
from wingman_actors.store import FormationShape, RunStore

SHAPE = FormationShape.of(nx.DiGraph([("a", "b")]))
_FORMATION = ("f", [{"name": "a", "kind": "function", "function": "clean"}], [])


def _server_with_one_run(tmp_path: Path) -> tuple[Store, RunOut]:
    """The server's store in ``tmp_path/w.db``, with one formation and one run of it."""
    store = Store(tmp_path / "w.db")
    return store, store.create_run(store.create_formation(*_FORMATION), "x")


def test_a_run_whose_server_stopped_is_interrupted_at_the_next_start(tmp_path: Path) -> None:
    store, run = _server_with_one_run(tmp_path)
    journal = RunStore(tmp_path / "w.db")
    journal.begin_run("f", SHAPE, "x", run_id=run.id)
    journal.close()  # a store closed with a run still running marks it interrupted
    journal = RunStore(tmp_path / "w.db")
    try:
        assert recover_runs(store, journal) == 1
        again = store.get_run(run.id)
        assert again.status == "interrupted"
        assert f"POST /runs/{run.id}/resume" in (again.error or "")
    finally:
        journal.close()
        store.close()


def test_a_run_the_journal_saw_settle_takes_the_journals_status(tmp_path: Path) -> None:
    store, run = _server_with_one_run(tmp_path)
    with RunStore(tmp_path / "w.db") as journal:
        journal.begin_run("f", SHAPE, "x", run_id=run.id)
        journal.record_interrupt(run.id, "a", 1, {"question": "ok?"})
        journal.set_status(run.id, "suspended", wait=True)
        assert recover_runs(store, journal) == 1
    again = store.get_run(run.id)
    store.close()
    assert (again.status, again.interrupt) == ("suspended", {"node": "a", "payload": {"question": "ok?"}})


def test_a_run_suspended_inside_a_nested_formation_names_the_inner_node_by_path_as_the_live_run_did(
    tmp_path: Path,
) -> None:
    store, run = _server_with_one_run(tmp_path)
    outer = nx.DiGraph([("pre", "sub")])
    nx.set_node_attributes(outer, {"pre": "function", "sub": "formation"}, "kind")
    inner = nx.DiGraph()
    inner.add_node("ask", kind="function")
    with RunStore(tmp_path / "w.db") as journal:
        journal.begin_run("f", FormationShape.of(outer), "x", run_id=run.id)
        journal.record_visit(run.id, "pre", 1, "x")
        journal.begin_run("inner", FormationShape.of(inner), "x", run_id=f"{run.id}/sub/1", parent=run.id)
        journal.record_interrupt(f"{run.id}/sub/1", "ask", 1, {"question": "ok?"})
        journal.set_status(f"{run.id}/sub/1", "suspended")
        journal.record_interrupt(run.id, "sub", 1, {"question": "ok?"})
        journal.set_status(run.id, "suspended", wait=True)
        assert recover_runs(store, journal) == 1
    again = store.get_run(run.id)
    store.close()
    # FormationResult.interrupt (what the live run recorded) names the inner node by its path
    assert (again.status, again.interrupt) == ("suspended", {"node": "sub/ask", "payload": {"question": "ok?"}})


def test_a_run_the_journal_never_saw_and_fleet_runs_are_failed(tmp_path: Path) -> None:
    store = Store(tmp_path / "w.db")
    formation = store.create_formation(*_FORMATION)
    fleet = store.create_fleet("crew", "agent", 2, None)
    runs = [store.create_run(formation, "x"), store.create_fleet_run(fleet, [])]
    with RunStore(tmp_path / "w.db") as journal:
        assert recover_runs(store, journal) == 2
    for run in runs:
        again = store.get_run(run.id)
        assert (again.status, again.error_kind) == ("failed", "cancelled")
        assert again.finished_at is not None
    store.close()


def test_a_run_running_in_a_live_process_is_left_alone(tmp_path: Path) -> None:
    store, run = _server_with_one_run(tmp_path)
    with RunStore(tmp_path / "w.db") as journal:
        journal.begin_run("f", SHAPE, "x", run_id=run.id)
        assert recover_runs(store, journal) == 0
        assert store.get_run(run.id).status == "running"
    store.close()


def test_a_suspended_run_past_the_suspend_time_reads_as_expired(tmp_path: Path) -> None:
    store, run = _server_with_one_run(tmp_path)
    # a suspend time long enough to read the run as suspended first on a loaded machine (0.05 s
    # was not: the first read came after it), then polled until it has passed
    with RunStore(tmp_path / "w.db", suspend_ttl=1.0) as journal:
        journal.begin_run("f", SHAPE, "x", run_id=run.id)
        journal.record_interrupt(run.id, "a", 1, "ok?")
        journal.set_status(run.id, "suspended", wait=True)
        suspended = store.set_run_status(run.id, "suspended", interrupt={"node": "a", "payload": "ok?"})
        assert refreshed(store, journal, suspended).status == "suspended"
        deadline = time.monotonic() + 10
        while refreshed(store, journal, suspended).status == "suspended" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert refreshed(store, journal, suspended).status == "expired"
    assert store.get_run(run.id).status == "expired"
    store.close()


def test_the_journal_shares_the_database_file_with_the_servers_tables(tmp_path: Path) -> None:
    Store(tmp_path / "w.db").close()
    RunStore(tmp_path / "w.db").close()
    with sqlite3.connect(tmp_path / "w.db") as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"run_records", "agents", "runs", "journal", "shapes", "owners"} <= tables
    store = Store(tmp_path / "w.db")  # and the server still opens it
    store.close()


def test_a_run_store_file_is_refused_as_a_server_database(tmp_path: Path) -> None:
    RunStore(tmp_path / "runs.sqlite").close()
    with pytest.raises(RuntimeError, match=r"is a run store .* give the server a --db of its own"):
        Store(tmp_path / "runs.sqlite")


def test_the_masked_journal_masks_secrets_and_keeps_types(tmp_path: Path) -> None:
    from wingman_actors.server._journal import MaskedJournal
    from wingman_actors.server._redact import Redactor
    from wingman_actors.store import JournalStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        journal = MaskedJournal(store, Redactor(["sk-secret-12345"]))
        assert isinstance(journal, JournalStore)
        run_id = journal.begin_run("f", SHAPE, {"key": "sk-secret-12345"})
        journal.record_visit(run_id, "a", 1, ("sk-secret-12345 leaked", 7, {1: "x"}))
        journal.set_status(run_id, "failed", error="Incorrect API key provided: sk-secret-12345")
        loaded = journal.load(run_id)
        assert loaded.run.input == {"key": "[redacted]"}
        assert loaded.visits["a"][1] == ("[redacted] leaked", 7, {1: "x"})
        assert loaded.run.error == "Incorrect API key provided: [redacted]"
        assert journal.path == store.path  # what it does not wrap passes through


def test_the_server_prunes_finished_journals_older_than_the_retention_at_start(tmp_path: Path) -> None:
    from tests.server.harness import RunningServer
    from wingman_actors.server import ServerConfig

    db = tmp_path / "w.db"
    Store(db).close()
    with RunStore(db, suspend_ttl=50 * 86400) as journal:
        for run_id, status in (("old-done", "succeeded"), ("old-waiting", "suspended"), ("new-done", "failed")):
            journal.begin_run("f", SHAPE, "x", run_id=run_id)
            journal.set_status(run_id, status, wait=True)
    with sqlite3.connect(db) as conn:  # two of them last changed 40 days ago
        conn.execute("UPDATE runs SET updated = updated - 40 * 86400 WHERE id LIKE 'old-%'")
    config = ServerConfig(db_path=db, work_root=tmp_path, suspend_ttl=50 * 86400, journal_retention=50 * 86400)
    server = RunningServer(config).start()
    server.stop()
    with RunStore(db, recover=False) as journal:
        assert {r.id for r in journal.runs()} == {"old-done", "old-waiting", "new-done"}  # 50 days: none pruned
    server = RunningServer(ServerConfig(db_path=db, work_root=tmp_path, suspend_ttl=86400,
                                        journal_retention=30 * 86400)).start()
    server.stop()
    with RunStore(db, recover=False) as journal:
        # old-waiting still waits for its answer (its expiry is 10 days away): never pruned
        assert {r.id for r in journal.runs()} == {"old-waiting", "new-done"}


def test_a_retention_shorter_than_the_suspend_ttl_is_refused() -> None:
    from wingman_actors.server import ServerConfig

    with pytest.raises(ValueError, match=r"journal_retention .* must be at least suspend_ttl"):
        ServerConfig(suspend_ttl=7 * 86400, journal_retention=86400)
    with pytest.raises(ValueError, match=r"must be at least suspend_ttl .*forever"):
        ServerConfig(suspend_ttl=None)
    assert ServerConfig(suspend_ttl=None, journal_retention=None).journal_retention is None


def test_a_running_server_prunes_the_journal_periodically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.server.harness import RunningServer
    from wingman_actors.server import ServerConfig
    from wingman_actors.server import _app as app

    monkeypatch.setattr(app, "PRUNE_EVERY_S", 0.1)
    db = tmp_path / "w.db"
    server = RunningServer(ServerConfig(db_path=db, work_root=tmp_path, suspend_ttl=60,
                                        journal_retention=3600)).start()
    try:
        with RunStore(db, recover=False) as journal:  # runs that finished while the server runs
            for run_id in ("old", "new"):
                journal.begin_run("f", SHAPE, "x", run_id=run_id)
                journal.set_status(run_id, "succeeded", wait=True)
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE runs SET updated = updated - 7200 WHERE id = 'old'")
        deadline = time.monotonic() + 10
        with RunStore(db, recover=False) as journal:
            while {r.id for r in journal.runs()} != {"new"} and time.monotonic() < deadline:
                time.sleep(0.05)
            assert {r.id for r in journal.runs()} == {"new"}  # without a restart
    finally:
        server.stop()
