"""Several servers on one PostgreSQL run store (``serve --run-store postgresql://...``): a run
started on one server that is killed mid-run reads ``interrupted`` on another once the
first server's lease lapses, and resumes there without running its journalled visits again;
a run going on in one is cancelled from another, through the store."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.harness import FUNCTIONS_MODULE, running
from tests.server.test_restart import FUNCTIONS, calls, server_process
from wingman_actors.server import ServerConfig
from wingman_actors.server._cli import build_config
from wingman_actors.store import RunStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

HEADERS = {"Content-Type": "application/json"}
PIPELINE = {"name": "pipeline", "nodes": [{"name": n, "kind": "function", "function": n}
                                          for n in ("first", "slow", "last")],
            "edges": [{"from": "first", "to": "slow"}, {"from": "slow", "to": "last"}]}


def test_a_run_of_a_killed_server_is_resumed_on_another_server_sharing_the_run_store(
        tmp_path: Path, postgres_url: str) -> None:
    with _a_run_held_by_server_a(tmp_path, postgres_url) as (proc_a, b, run_id, deadline):
        with RunStore(postgres_url, recover=False) as journal:
            while "first" not in journal.load(run_id).visits:
                assert time.monotonic() < deadline, "the first visit was never journalled"
                time.sleep(0.02)
        assert b.get(f"/runs/{run_id}").json()["status"] == "running"  # server A holds its lease
        os.kill(proc_a.pid, signal.SIGKILL)
        proc_a.wait(10)
        killed = time.monotonic()
        while not (listed := b.get("/runs", params={"status": "interrupted"}).json()):
            assert time.monotonic() - killed < 10, "the run was never listed as interrupted on server B"
            time.sleep(0.05)
        assert [r["id"] for r in listed] == [run_id]
        record = b.get(f"/runs/{run_id}").json()
        assert record["status"] == "interrupted", record
        assert f"POST /runs/{run_id}/resume" in record["error"]
        (tmp_path / "block").unlink()
        resumed = b.post(f"/runs/{run_id}/resume", json={})
        assert resumed.status_code == 200, resumed.text
        assert (resumed.json()["status"], resumed.json()["output"]) == ("succeeded", "x 1 2 3")
    with RunStore(postgres_url, recover=False) as journal:
        assert journal.get(run_id).status == "succeeded"
    assert calls(tmp_path) == ["first", "slow", "slow", "last"]  # first journalled: not run again


def test_a_frozen_servers_run_is_resumed_on_another_server_and_the_thawed_server_cannot_journal_into_it(
        tmp_path: Path, postgres_url: str) -> None:
    with _a_run_held_by_server_a(tmp_path, postgres_url) as (proc_a, b, run_id, deadline):
        os.kill(proc_a.pid, signal.SIGSTOP)
        try:
            while b.get(f"/runs/{run_id}").json()["status"] == "running":
                assert time.monotonic() < deadline, "the frozen server's run never read as interrupted"
                time.sleep(0.05)
            (tmp_path / "block").unlink()
            resumed = b.post(f"/runs/{run_id}/resume", json={})
            assert (resumed.status_code, resumed.json()["status"]) == (200, "succeeded"), resumed.text
        finally:
            os.kill(proc_a.pid, signal.SIGCONT)
        time.sleep(1.5)  # server A finishes its slow visit (the block is gone) and tries to journal it
    with RunStore(postgres_url, recover=False) as journal:
        run = journal.load(run_id)
        assert (run.run.status, run.visits["slow"], run.visits["last"]) == ("succeeded", {1: "x 1 2"}, {1: "x 1 2 3"})


def test_a_run_of_another_server_sharing_the_run_store_is_cancelled_through_it(
        tmp_path: Path, postgres_url: str) -> None:
    with _a_run_held_by_server_a(tmp_path, postgres_url) as (_, b, run_id, deadline):
        requested = b.post(f"/runs/{run_id}/cancel", json={})
        assert (requested.status_code, requested.json()["status"]) == (202, "running"), requested.text
        while (record := b.get(f"/runs/{run_id}").json())["status"] == "running":
            assert time.monotonic() < deadline, "server A never cancelled the run"
            time.sleep(0.05)
        assert record["status"] == "cancelled", record
        (tmp_path / "block").unlink()  # the abandoned attempt ends
    with RunStore(postgres_url, recover=False) as journal:
        assert journal.get(run_id).status == "cancelled"


@contextlib.contextmanager
def _a_run_held_by_server_a(
        tmp_path: Path, postgres_url: str) -> Iterator[tuple[subprocess.Popen[str], httpx.Client, str, float]]:
    """Servers A and B on one PostgreSQL run store (lease 1 s); a run started on A that is
    held in its ``slow`` node (until ``block`` is removed). Yields A's process, a client of
    B, the run's id and a deadline 20 s from the start."""
    (tmp_path / "steps.py").write_text(FUNCTIONS)
    (tmp_path / "block").touch()
    shared = ("--run-store", postgres_url, "--run-store-lease", "1")
    with server_process(tmp_path, *shared) as (proc_a, url_a), server_process(tmp_path, *shared) as (_, url_b), \
            httpx.Client(base_url=url_a, headers=HEADERS, timeout=30) as a, \
            httpx.Client(base_url=url_b, headers=HEADERS, timeout=30) as b:
        fid = a.post("/formations", json=PIPELINE).json()["id"]
        threading.Thread(target=lambda: _post_dying(a, f"/formations/{fid}/run"), daemon=True).start()
        deadline = time.monotonic() + 20
        while "slow" not in calls(tmp_path):
            assert time.monotonic() < deadline, "the run never reached its slow node"
            time.sleep(0.02)
        run_id = b.get("/runs", params={"formation_id": fid}).json()[0]["id"]
        yield proc_a, b, run_id, deadline


def _post_dying(client: httpx.Client, path: str) -> None:
    try:
        client.post(path, json={"input": "x"})
    except httpx.TransportError:  # the server dies under the request
        pass


def test_a_server_on_a_postgresql_run_store_journals_its_runs_there(tmp_path: Path, postgres_url: str) -> None:
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, functions=(FUNCTIONS_MODULE,),
                          entry_points=False, run_store=postgres_url)
    declaration = {"name": "upper", "nodes": [{"name": "up", "kind": "function", "function": "shout"}]}
    with running(config) as server, server.client() as client:
        fid = client.post("/formations", json=declaration).json()["id"]
        run = client.post(f"/formations/{fid}/run", json={"input": "hi"}).json()
        assert run["status"] == "succeeded", run
    with RunStore(postgres_url, recover=False) as journal:
        assert (journal.get(run["id"]).status, journal.load(run["id"]).visits["up"][1]) == ("succeeded", "HI")
    with RunStore(tmp_path / "w.db", recover=False) as local:
        assert local.runs() == []  # nothing journalled in the database file


def test_a_run_store_that_is_not_a_postgresql_url_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=re.escape("run_store must be a postgresql:// URL, got 'runs.sqlite'")):
        ServerConfig(db_path=tmp_path / "w.db", run_store="runs.sqlite")


def test_a_run_store_lease_without_a_run_store_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="run_store_lease applies to a PostgreSQL run store"):
        ServerConfig(db_path=tmp_path / "w.db", run_store_lease=5.0)


def test_the_run_store_options_reach_the_configuration(tmp_path: Path) -> None:
    import argparse

    from wingman_actors.server._cli import add_serve_parser

    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers())
    args = parser.parse_args(["serve", "--db", str(tmp_path / "w.db"), "--run-store", "postgresql://u:pw@h/db",
                              "--run-store-lease", "3"])
    config = build_config(args)
    assert (config.run_store, config.run_store_lease) == ("postgresql://u:pw@h/db", 3.0)


def test_runs_answered_on_a_postgresql_run_store_have_their_records_committed(
        tmp_path: Path, postgres_url: str) -> None:
    import sqlite3

    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, functions=(FUNCTIONS_MODULE,),
                          entry_points=False, run_store=postgres_url)
    declaration = {"name": "upper", "nodes": [{"name": "up", "kind": "function", "function": "shout"}]}
    with running(config) as server, server.client() as client:
        fid = client.post("/formations", json=declaration).json()["id"]
        for i in range(10):  # the first on a worker thread, the next ones on the event loop
            response = client.post(f"/formations/{fid}/run", json={"input": f"run {i}"})
            assert response.status_code == 200, response.text
            # read at once on a connection of its own: only what is committed shows
            with sqlite3.connect(server.config.database) as conn:
                row = conn.execute("SELECT status, output FROM run_records WHERE id = ?",
                                   (response.json()["id"],)).fetchone()
            assert row == ("succeeded", f'"RUN {i}"')
