"""The SQLite layer: migrations, WAL, the write discipline, interrupted runs."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from wingman_actors.core import Message
from wingman_actors.server import Store
from wingman_actors.server._db import MIGRATIONS


def test_new_database_gets_every_migration_recorded(tmp_path: Path) -> None:
    store = Store(tmp_path / "w.db")
    try:
        with store.read() as conn:
            rows = conn.execute("SELECT version, name, applied_at FROM schema_migrations ORDER BY version").fetchall()
        assert [r["version"] for r in rows] == [m.version for m in MIGRATIONS]
        assert all(r["applied_at"].endswith("Z") for r in rows)
        assert store.schema_version == MIGRATIONS[-1].version
    finally:
        store.close()


def test_reopening_applies_nothing(tmp_path: Path) -> None:
    Store(tmp_path / "w.db").close()
    store = Store(tmp_path / "w.db")
    try:
        assert store.migrate() == []
    finally:
        store.close()


def test_database_uses_wal_mode(tmp_path: Path) -> None:
    Store(tmp_path / "w.db").close()
    with sqlite3.connect(tmp_path / "w.db") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    Store(tmp_path / "w.db").close()
    with sqlite3.connect(tmp_path / "w.db") as conn:
        conn.execute("INSERT INTO schema_migrations VALUES (999, 'future', '2099-01-01T00:00:00Z')")
    with pytest.raises(RuntimeError, match="schema version 999"):
        Store(tmp_path / "w.db")


def test_failing_migration_is_raised_and_rolled_back(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "w.db") as conn:
        conn.execute("CREATE TABLE fleets (x TEXT)")  # collides with migration 1
    with pytest.raises(sqlite3.OperationalError, match=r"migration 1 \(.*\) failed"):
        Store(tmp_path / "w.db")
    with sqlite3.connect(tmp_path / "w.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == 0
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "agents" not in tables


def test_concurrent_appends_from_many_threads_lose_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "w.db")
    try:
        session = store.create_session("", str(tmp_path))
        errors: list[BaseException] = []

        def append(i: int) -> None:
            try:
                for j in range(10):
                    store.append_messages(session.id, [Message.user(f"{i}-{j}")])
                    store.get_session(session.id)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=append, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        history = store.get_session(session.id).history
        assert len(history) == 200
        assert len({m["content"][0]["text"] for m in history}) == 200
    finally:
        store.close()


def test_history_round_trips_every_block_type(tmp_path: Path) -> None:
    from wingman_actors.core import ContentBlock

    store = Store(tmp_path / "w.db")
    try:
        session = store.create_session("", str(tmp_path))
        messages = [
            Message.user("hi"),
            Message.assistant([ContentBlock.text_block("let me look"),
                               ContentBlock.tool_use_block("c1", "read", {"path": "a.txt"})]),
            Message.tool_results([ContentBlock.tool_result_block("c1", "nope", is_error=True)]),
            Message.user(ContentBlock.image_block("aGk=", "image/png")),
        ]
        store.append_messages(session.id, messages)
        assert store.load_history(session.id) == messages
    finally:
        store.close()


def _database_with_one_run(path: Path, monkeypatch: pytest.MonkeyPatch, *, migrations: int) -> None:
    """A server database at ``path`` made with only its first ``migrations`` migrations,
    holding one succeeded formation run ``r1`` of formation ``f1``."""
    from wingman_actors.server import _db as db

    monkeypatch.setattr(db, "MIGRATIONS", MIGRATIONS[:migrations])
    old = db.Database(path)
    with old.write() as conn:
        conn.execute("INSERT INTO runs (id, formation_id, formation_name, status, created_at) "
                     "VALUES ('r1', 'f1', 'digest', 'succeeded', '2026-01-01T00:00:00Z')")
    old.close()
    monkeypatch.setattr(db, "MIGRATIONS", MIGRATIONS)


def test_formation_runs_recorded_before_fleet_runs_existed_survive_the_migration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _database_with_one_run(tmp_path / "w.db", monkeypatch, migrations=2)
    store = Store(tmp_path / "w.db")
    try:
        run = store.get_run("r1")
        assert (run.kind, run.formation_id, run.formation_name, run.fleet_id) == ("formation", "f1", "digest", None)
        assert [r.id for r in store.list_runs("f1")] == ["r1"]
    finally:
        store.close()


def test_a_database_from_before_durable_runs_keeps_its_runs_and_takes_the_run_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wingman_actors.store import RunStore

    _database_with_one_run(tmp_path / "w.db", monkeypatch, migrations=4)
    store = Store(tmp_path / "w.db")
    try:
        assert store.get_run("r1").status == "succeeded"
        with RunStore(tmp_path / "w.db") as journal:  # the journal accepts the file now
            assert journal.runs() == []
    finally:
        store.close()


def test_run_records_of_many_threads_without_a_journal_are_committed_and_a_failing_one_fails_alone(
        tmp_path: Path) -> None:
    store = Store(tmp_path / "w.db")
    try:
        formation = store.create_formation("f", [{"name": "a", "kind": "function", "function": "f"}], [])
        runs = [store.create_run(formation, n) for n in range(40)]
        errors: list[BaseException] = []
        told: list[BaseException | None] = []
        done = threading.Event()

        def finish(run: Any) -> None:
            try:
                if run.input % 2:  # SQLite holds no integer this large: its write fails, alone
                    store.finish_run(run.model_copy(update={"status": "succeeded", "output": run.input,
                                                            "duration_s": 2**70}))
                else:
                    store.finish_run(run.model_copy(update={"status": "succeeded", "output": run.input}),
                                     wait=False, on_commit=lambda record, error: (told.append(error), done.set()))
            except Exception as exc:
                errors.append(exc)

        threads = [threading.Thread(target=finish, args=(run,)) for run in runs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert done.wait(10)
        store.close()  # commits what is still queued
        store = Store(tmp_path / "w.db")
        statuses = {r.input: (r.status, r.output) for r in store.list_runs(limit=100)}
        assert statuses == {n: ("succeeded", n) if n % 2 == 0 else ("running", None) for n in range(40)}
        assert len(errors) == 20 and all(isinstance(e, OverflowError) for e in errors)
        assert told == [None] * 20
    finally:
        store.close()


def _finished(tmp_path: Path, outputs: dict[str, object], error: str | None = None, secret: str | None = None) -> dict[str, Any]:
    from wingman_actors.server._redact import Redactor

    store = Store(tmp_path / "w.db", Redactor([secret] if secret else []))
    try:
        formation = store.create_formation("f", [{"name": "a", "kind": "function", "function": "f"}], [])
        run = store.create_run(formation, "x")
        returned = store.finish_run(run.model_copy(update={"status": "failed", "outputs": outputs, "error": error}))
        stored = store.get_run(run.id)
        assert returned.model_dump() == stored.model_dump()  # the answer is what was stored
        return stored.model_dump()
    finally:
        store.close()


def test_a_finished_run_record_masks_a_secret_in_its_outputs_and_error(tmp_path: Path) -> None:
    secret = "sk-test-0123456789abcdef"
    record = _finished(tmp_path, {"a": {"said": f"key {secret}"}}, error=f"refused {secret}", secret=secret)
    assert record["outputs"] == {"a": {"said": "key [redacted]"}}
    assert record["error"] == "refused [redacted]"


def test_a_finished_run_record_replaces_a_lone_surrogate_in_its_outputs(tmp_path: Path) -> None:
    record = _finished(tmp_path, {"a": ["ok", "bad \ud800"], "\udc00": 1})
    assert record["outputs"] == {"a": ["ok", "bad \ufffd"], "\ufffd": 1}


def test_a_finished_run_record_replaces_a_lone_surrogate_in_its_error(tmp_path: Path) -> None:
    record = _finished(tmp_path, {"a": 1}, error="bad \udc00 text")
    assert record["error"] == "bad \ufffd text" and record["outputs"] == {"a": 1}


def test_a_new_run_record_masks_a_secret_and_replaces_a_lone_surrogate_in_its_input(tmp_path: Path) -> None:
    from wingman_actors.server._redact import Redactor

    secret = "sk-test-0123456789abcdef"
    store = Store(tmp_path / "w.db", Redactor([secret]))
    try:
        formation = store.create_formation("f", [{"name": "a", "kind": "function", "function": "f"}], [])
        masked = store.create_run(formation, {"text": f"key {secret}"})
        scrubbed = store.create_run(formation, ["bad \ud800"])
        plain = store.create_run(formation, {"text": "hello"})
        assert store.get_run(masked.id).input == masked.input == {"text": "key [redacted]"}
        assert store.get_run(scrubbed.id).input == scrubbed.input == ["bad \ufffd"]
        assert store.get_run(plain.id).input == plain.input == {"text": "hello"}
    finally:
        store.close()


def test_a_clean_finished_run_record_is_stored_as_given(tmp_path: Path) -> None:
    record = _finished(tmp_path, {"a": ["x", 1, 2.5, None, True], "b": {"n": "é"}}, error="plain")
    assert record["outputs"] == {"a": ["x", 1, 2.5, None, True], "b": {"n": "é"}}
    assert record["error"] == "plain"


def test_run_records_written_with_the_journal_commit_on_their_own_once_it_is_closed(tmp_path: Path) -> None:
    from wingman_actors.store import RunStore

    store = Store(tmp_path / "w.db")
    journal = RunStore(tmp_path / "w.db")
    try:
        store.commit_with(journal)
        formation = store.create_formation("f", [{"name": "a", "kind": "function", "function": "f"}], [])
        run = store.create_run(formation, "x")
        assert store.get_run(run.id).status == "running"
        journal.close()  # as when the server stops
        store.finish_run(run.model_copy(update={"status": "interrupted"}))
        assert store.get_run(run.id).status == "interrupted"
    finally:
        journal.close()
        store.close()
