"""A server killed with SIGKILL (or stopped) mid-run: after a restart on the same database the
run shows ``interrupted``, and ``POST /runs/{id}/resume`` finishes it without running the
node visits journalled before the kill again."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server import functions_fixture as fx
from tests.server.harness import FUNCTIONS_MODULE, RunningServer, running
from wingman_actors.server import ServerConfig
from wingman_actors.store import RunStore

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and /proc are POSIX")

FUNCTIONS = textwrap.dedent('''
    """Each function notes its call in a file: the side effects a resume must not repeat."""
    import os
    import time
    from pathlib import Path

    from wingman_actors.server import function

    LOG = Path(os.environ["WINGMAN_TEST_LOG"])
    BLOCK = Path(os.environ["WINGMAN_TEST_BLOCK"])


    def note(name):
        with LOG.open("a") as fh:
            fh.write(name + "\\n")


    @function
    def first(text: str) -> str:
        note("first")
        return text + " 1"


    @function
    def slow(text: str) -> str:
        note("slow")
        while BLOCK.exists():
            time.sleep(0.02)
        return text + " 2"


    @function
    def last(text: str) -> str:
        note("last")
        return text + " 3"
''')


@contextmanager
def server_process(tmp_path: Path, *extra: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``wingman-actors serve`` (with ``extra`` arguments) on a free port in a subprocess;
    its process and URL."""
    env = {**os.environ, "WINGMAN_TEST_LOG": str(tmp_path / "calls.log"),
           "WINGMAN_TEST_BLOCK": str(tmp_path / "block")}
    command = [sys.executable, "-m", "wingman_actors", "serve", "--port", "0", "--db", str(tmp_path / "w.db"),
               "--functions", str(tmp_path / "steps.py"), "--work-root", str(tmp_path), "--no-entry-points", *extra]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            cwd=tmp_path)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert match, line + proc.stderr.read()
        url = f"http://127.0.0.1:{match.group(1)}"
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not answer /health"
            time.sleep(0.05)
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls.log"
    return path.read_text().split() if path.exists() else []


def test_a_run_in_flight_when_the_server_is_killed_is_interrupted_and_resumes_over_http(tmp_path: Path) -> None:
    (tmp_path / "steps.py").write_text(FUNCTIONS)
    (tmp_path / "block").touch()
    headers = {"Content-Type": "application/json"}
    with server_process(tmp_path) as (proc, url), httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        declaration = {"name": "pipeline", "nodes": [{"name": n, "kind": "function", "function": n}
                                                     for n in ("first", "slow", "last")],
                       "edges": [{"from": "first", "to": "slow"}, {"from": "slow", "to": "last"}]}
        fid = client.post("/formations", json=declaration).json()["id"]
        outcome: list[BaseException | httpx.Response] = []

        def run() -> None:
            try:
                outcome.append(client.post(f"/formations/{fid}/run", json={"input": "x"}))
            except httpx.TransportError as exc:  # the server dies under the request
                outcome.append(exc)

        waiting = threading.Thread(target=run)
        waiting.start()
        deadline = time.monotonic() + 20
        while "slow" not in calls(tmp_path):
            assert time.monotonic() < deadline, "the run never reached its slow node"
            time.sleep(0.02)
        run_id = client.get("/runs", params={"formation_id": fid}).json()[0]["id"]
        with RunStore(tmp_path / "w.db", recover=False) as journal:  # the journal commits within ~1 ms
            while "first" not in journal.load(run_id).visits:
                assert time.monotonic() < deadline, "the first visit was never journalled"
                time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        waiting.join(10)
        assert isinstance(outcome[0], httpx.TransportError)

    (tmp_path / "block").unlink()
    with server_process(tmp_path) as (_, url), httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        record = client.get(f"/runs/{run_id}").json()
        assert record["status"] == "interrupted", record
        assert f"POST /runs/{run_id}/resume" in record["error"]
        assert [r["id"] for r in client.get("/runs", params={"status": "interrupted"}).json()] == [run_id]
        resumed = client.post(f"/runs/{run_id}/resume", json={})
        assert resumed.status_code == 200, resumed.text
        assert (resumed.json()["status"], resumed.json()["output"]) == ("succeeded", "x 1 2 3")
        assert client.get(f"/runs/{run_id}").json()["status"] == "succeeded"
    # first was journalled before the kill: it ran once; slow was in flight: it ran again
    assert calls(tmp_path) == ["first", "slow", "slow", "last"]


def test_a_run_in_flight_when_the_server_stops_cleanly_is_interrupted_and_resumes(tmp_path: Path) -> None:
    fx.GATE.clear()
    fx.CALLS.clear()
    config = ServerConfig(db_path=tmp_path / "w.db", work_root=tmp_path, functions=(FUNCTIONS_MODULE,),
                          entry_points=False)
    try:
        server = RunningServer(config, graceful_timeout=0.5).start()
        answers: list[Any] = []
        with server.client() as client:
            fid = client.post("/formations", json={"name": "g", "nodes": [
                {"name": n, "kind": "function", "function": n} for n in ("counted", "gated")],
                "edges": [{"from": "counted", "to": "gated"}]}).json()["id"]
            waiting = threading.Thread(target=lambda: answers.append(client.post(f"/formations/{fid}/run",
                                                                                 json={"input": "x"})))
            waiting.start()
            deadline = time.monotonic() + 10
            while not fx.CALLS["gated"]:
                assert time.monotonic() < deadline, "the run never reached its gated node"
                time.sleep(0.02)
            run_id = client.get("/runs", params={"formation_id": fid}).json()[0]["id"]
            with RunStore(tmp_path / "w.db", recover=False) as journal:
                while "counted" not in journal.load(run_id).visits:
                    assert time.monotonic() < deadline, "the first visit was never journalled"
                    time.sleep(0.02)
            server.stop()  # waits 0.5 s for the request, then stops the run
            waiting.join(10)
        fx.GATE.set()
        with running(config) as again, again.client() as client:
            record = client.get(f"/runs/{run_id}").json()
            assert record["status"] == "interrupted", record
            assert record["nodes"]["counted"]["status"] == "succeeded"  # recorded by the stopping server
            resumed = client.post(f"/runs/{run_id}/resume", json={})
            assert resumed.status_code == 200, resumed.text
            assert (resumed.json()["status"], resumed.json()["output"]) == ("succeeded", "x")
        assert fx.CALLS["counted"] == 1
    finally:
        fx.GATE.set()
