"""A formation run the server started and another process cancelled through the run store
(``wingman-actors runs cancel RUN_ID``, a separate process): ``GET /runs/{id}`` and the runs
list say what the journal says, ``cancelled``, on the SQLite database and on a PostgreSQL
run store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.server.harness import FUNCTIONS_MODULE, running
from wingman_actors.server import ServerConfig

ASKING = {"name": "asking", "nodes": [{"name": "ask", "kind": "function", "function": "ask"}]}


def _suspended(client: httpx.Client) -> dict[str, Any]:
    fid = client.post("/formations", json=ASKING).json()["id"]
    run = client.post(f"/formations/{fid}/run", json={"input": "the post"})
    assert run.status_code == 200 and run.json()["status"] == "suspended", run.text
    return dict(run.json())


def _cancel_from_the_cli(run_id: str, store: str) -> None:
    done = subprocess.run([sys.executable, "-m", "wingman_actors", "runs", "cancel", run_id, "--store", store],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert f"run {run_id} cancelled (it was suspended" in done.stdout


def _reads_cancelled(client: httpx.Client, run: dict[str, Any]) -> None:
    got = client.get(f"/runs/{run['id']}").json()
    assert (got["status"], got["error_kind"]) == ("cancelled", "cancelled")
    assert "cancelled with `wingman-actors runs cancel` while suspended" in got["error"]
    listed = {r["id"]: r["status"] for r in client.get("/runs", params={"formation_id": run["formation_id"]}).json()}
    assert listed == {run["id"]: "cancelled"}


def test_a_suspended_run_cancelled_with_the_cli_reads_cancelled_over_http(tmp_path: Path) -> None:
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, functions=(FUNCTIONS_MODULE,),
                          entry_points=False)
    with running(config) as server, server.client() as client:
        run = _suspended(client)
        _cancel_from_the_cli(run["id"], str(config.database))
        _reads_cancelled(client, run)


def test_the_runs_list_filtered_by_status_follows_the_journal(tmp_path: Path) -> None:
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, functions=(FUNCTIONS_MODULE,),
                          entry_points=False)
    with running(config) as server, server.client() as client:
        run = _suspended(client)
        _cancel_from_the_cli(run["id"], str(config.database))
        assert [r["id"] for r in client.get("/runs", params={"status": "cancelled"}).json()] == [run["id"]]
        assert client.get("/runs", params={"status": "suspended"}).json() == []


def test_a_run_cancelled_outside_the_server_can_be_resumed_over_http(tmp_path: Path) -> None:
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, functions=(FUNCTIONS_MODULE,),
                          entry_points=False)
    with running(config) as server, server.client() as client:
        run = _suspended(client)
        _cancel_from_the_cli(run["id"], str(config.database))
        resumed = client.post(f"/runs/{run['id']}/resume", json={"answer": "yes"})
        assert resumed.status_code == 200, resumed.text
        assert (resumed.json()["status"], resumed.json()["output"]) == ("succeeded", "the post: yes")


def test_a_suspended_run_cancelled_with_the_cli_on_a_postgresql_run_store_reads_cancelled(
        tmp_path: Path, postgres_url: str) -> None:
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, functions=(FUNCTIONS_MODULE,),
                          entry_points=False, run_store=postgres_url)
    with running(config) as server, server.client() as client:
        run = _suspended(client)
        _cancel_from_the_cli(run["id"], postgres_url)
        _reads_cancelled(client, run)
