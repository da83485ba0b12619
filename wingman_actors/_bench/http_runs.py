"""``http_formation_runs``: formation runs over HTTP against a bare FastAPI handler.

The real server (``create_app``, served by uvicorn as ``wingman-actors serve`` does, in a
subprocess on a loopback port) with a formation of two function nodes declared; 8 client
threads, each with its own ``httpx.Client``, POST ``/formations/{id}/run`` for a fixed time.
The same clients then POST to a bare FastAPI app (one POST handler echoing its JSON body,
served the same way), alternating over the repetitions so the machine's drift hits both.
Reported: requests/s of both, their ratio (the median of the repetitions' paired ratios)
and p50 latencies, with the runs journalled in the server's SQLite file and, when a
PostgreSQL server is at hand (as for ``durable_pipeline_throughput_postgres``:
``WINGMAN_BENCH_POSTGRES_URL``, else a throwaway one when ``initdb`` is installed), in
``--run-store postgresql://...``; otherwise that half is skipped and says why. Target:
ours >= 0.5 x the bare handler's requests/s on each store.

On a shared machine the rates drift, so each half also reports what a request costs, read
beside the judged ratio: the server process's CPU time per request, ours and the bare
handler's (from ``/proc``; None elsewhere), and on PostgreSQL the write transactions
(commits) and WAL bytes per run, counted on the server over our repetitions (exact: the
transaction ids handed out and the WAL position moved; a server given by URL counts its
other clients' writes too).

``WINGMAN_BENCH_SERVER_PATH`` puts another checkout first on the server's ``PYTHONPATH``
(to measure an older server with the same clients).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ._measurement import Measurement

__all__ = ["http_formation_runs"]

_NAME = "http_formation_runs"
_TARGET = ">= 0.5 x a bare FastAPI POST handler's requests/s, same clients, same run, on SQLite and PostgreSQL"
_CLIENTS = 8
_SERVER_PATH_ENV = "WINGMAN_BENCH_SERVER_PATH"

_FUNCTIONS = '''
from wingman_actors.server import function


@function
def bench_clean(text: str) -> str:
    return text.strip()


@function
def bench_count(text: str) -> int:
    return len(text)
'''

_SERVE = '''
import socket, sys
import uvicorn

kind = sys.argv[1]
if kind == "bare":
    from fastapi import FastAPI, Request

    app = FastAPI()

    @app.post("/echo")
    async def echo(request: Request) -> dict:
        return {"input": (await request.json())["input"]}
else:
    from wingman_actors.server import ServerConfig, create_app

    config = ServerConfig(db_path=sys.argv[2], work_root=sys.argv[3], functions=("wingman_bench_http_functions",),
                          entry_points=False, run_store=sys.argv[4] or None)
    app = create_app(config)
    from wingman_actors.server._app import freeze_startup_heap

    freeze_startup_heap()  # as `wingman-actors serve` does before serving
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # Nagle off (asyncio's rule)
sock.bind(("127.0.0.1", 0))
print(sock.getsockname()[1], flush=True)
uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5)).run(sockets=[sock])
'''


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user + system, every thread) process ``pid`` has used so far, from
    Linux's ``/proc``; None where there is none."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # (the name, in parentheses, may hold spaces)
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _pg_writes(url: str) -> tuple[int, int]:
    """(transaction ids handed out, WAL bytes written) so far by the PostgreSQL server at
    ``url``: every write transaction takes one id, and neither read moves either count."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint, "
                           "pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


@contextmanager
def _served(kind: str, folder: Path, run_store: str = "") -> Iterator[tuple[str, int]]:
    """A server subprocess (``bare`` or ``wingman``): its base URL and process id; stopped after."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "wingman_bench_http_functions.py").write_text(_FUNCTIONS)
    env = dict(os.environ)
    path = [str(folder), *filter(None, [os.environ.get(_SERVER_PATH_ENV), env.get("PYTHONPATH")])]
    env["PYTHONPATH"] = os.pathsep.join(path)
    args = [sys.executable, "-c", _SERVE, kind, str(folder / "wingman.db"), str(folder), run_store]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True, cwd=folder)
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().strip()
        if not port:
            raise RuntimeError(f"{_NAME}: the {kind} server did not start (exit code {proc.wait(30)})")
        url = f"http://127.0.0.1:{port}"
        import httpx

        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(url + "/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"{_NAME}: the {kind} server does not answer") from None
                time.sleep(0.05)
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _load(url: str, path: str, seconds: float) -> tuple[float, list[float]]:
    """8 client threads POST ``path`` for ``seconds``: requests/s and every latency (s)."""
    import httpx

    latencies: list[list[float]] = [[] for _ in range(_CLIENTS)]
    errors: list[str] = []
    start = threading.Barrier(_CLIENTS + 1)
    stop_at = [0.0]

    def client(i: int) -> None:
        mine = latencies[i]
        with httpx.Client(base_url=url, timeout=30, headers={"Content-Type": "application/json"}) as c:
            c.post(path, json={"input": f" warm {i} "})
            start.wait()
            n = 0
            while time.perf_counter() < stop_at[0]:
                t0 = time.perf_counter()
                response = c.post(path, json={"input": f" request {i}-{n} "})
                mine.append(time.perf_counter() - t0)
                n += 1
                if response.status_code not in (200, 201):
                    errors.append(f"{response.status_code} {response.text[:200]}")
                    return

    threads = [threading.Thread(target=client, args=(i,), name=f"wingman-bench-client-{i}") for i in range(_CLIENTS)]
    for t in threads:
        t.start()
    stop_at[0] = time.perf_counter() + 3600  # set for real once every client is warm
    start.wait()
    t0 = time.perf_counter()
    stop_at[0] = t0 + seconds
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"{_NAME}: POST {path} failed: {errors[0]}")
    every = [x for mine in latencies for x in mine]
    return len(every) / elapsed, every


def _declare(url: str) -> str:
    import httpx

    body = {"name": "bench-http", "nodes": [{"name": "clean", "kind": "function", "function": "bench_clean"},
                                            {"name": "count", "kind": "function", "function": "bench_count"}],
            "edges": [{"from": "clean", "to": "count"}]}
    response = httpx.post(url + "/formations", json=body, timeout=30)
    if response.status_code != 201:
        raise RuntimeError(f"{_NAME}: declaring the formation failed: {response.status_code} {response.text[:300]}")
    formation_id: str = response.json()["id"]
    run = httpx.post(f"{url}/formations/{formation_id}/run", json={"input": " abc "}, timeout=30).json()
    if run.get("output") != 3:
        raise RuntimeError(f"{_NAME}: the formation's run did not answer 3: {run}")
    return formation_id


class _Cost:
    """What a server spent over some loads: CPU seconds, requests, and (PostgreSQL) writes."""

    def __init__(self, pid: int, pg_url: str | None = None) -> None:
        self.pid, self.pg_url = pid, pg_url
        self.cpu: float | None = 0.0
        self.requests = 0
        self.transactions = self.wal_bytes = 0

    def load(self, url: str, path: str, seconds: float) -> tuple[float, list[float]]:
        """:func:`_load`, its cost added."""
        cpu0 = cpu_seconds(self.pid)
        pg0 = _pg_writes(self.pg_url) if self.pg_url else (0, 0)
        rate, latencies = _load(url, path, seconds)
        cpu1 = cpu_seconds(self.pid)
        pg1 = _pg_writes(self.pg_url) if self.pg_url else (0, 0)
        self.cpu = None if self.cpu is None or cpu0 is None or cpu1 is None else self.cpu + cpu1 - cpu0
        self.requests += len(latencies)
        self.transactions += pg1[0] - pg0[0]
        self.wal_bytes += pg1[1] - pg0[1]
        return rate, latencies

    def cpu_ms(self) -> float | None:
        return None if self.cpu is None or not self.requests else round(self.cpu * 1000 / self.requests, 3)


def _one_store(run_store: str, seconds: float, reps: int) -> dict[str, Any]:
    ours: list[float] = []
    bare: list[float] = []
    ours_lat: list[float] = []
    bare_lat: list[float] = []
    with tempfile.TemporaryDirectory(prefix="wingman-bench-http-") as tmp, \
            _served("bare", Path(tmp) / "bare", "") as (bare_url, bare_pid), \
            _served("wingman", Path(tmp) / "server", run_store) as (url, pid):
        path = f"/formations/{_declare(url)}/run"
        _load(url, path, seconds / 3)  # warm up both
        _load(bare_url, "/echo", seconds / 3)
        ours_cost, bare_cost = _Cost(pid, run_store or None), _Cost(bare_pid)
        for _ in range(reps):
            rate, lat = bare_cost.load(bare_url, "/echo", seconds)
            bare.append(rate)
            bare_lat += lat
            rate, lat = ours_cost.load(url, path, seconds)
            ours.append(rate)
            ours_lat += lat
    ratio = statistics.median(a / b for a, b in zip(ours, bare, strict=True))
    result = {"runs_per_s": round(statistics.median(ours), 1), "bare_per_s": round(statistics.median(bare), 1),
              "ratio": round(ratio, 2), "p50_ms": round(statistics.median(ours_lat) * 1000, 1),
              "bare_p50_ms": round(statistics.median(bare_lat) * 1000, 1),
              "runs": [round(r, 1) for r in ours], "bare_runs": [round(r, 1) for r in bare],
              "server_cpu_ms_per_run": ours_cost.cpu_ms(), "bare_server_cpu_ms_per_request": bare_cost.cpu_ms()}
    if run_store and ours_cost.requests:
        result["pg_transactions_per_run"] = round(ours_cost.transactions / ours_cost.requests, 3)
        result["pg_wal_bytes_per_run"] = round(ours_cost.wal_bytes / ours_cost.requests)
    return result


def http_formation_runs(quick: bool) -> Measurement:
    """The scenario (see the module docs)."""
    try:
        import fastapi  # noqa: F401
        import httpx  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        reason = 'the server is not installed (pip install "wingman-actors[server]")'
        print(f"{_NAME}: skipped: {reason}", file=sys.stderr, flush=True)
        return Measurement(_NAME, 0.0, "x bare FastAPI", _TARGET, False, None, {"skipped": reason})
    seconds, reps = (1.5, 2) if quick else (4.0, 3)
    details: dict[str, Any] = {"clients": _CLIENTS, "seconds": seconds, "repetitions": reps}
    if os.environ.get(_SERVER_PATH_ENV):
        details["server_path"] = os.environ[_SERVER_PATH_ENV]
    details["sqlite"] = _one_store("", seconds, reps)
    ratios = [details["sqlite"]["ratio"]]
    from .durable_postgres import _schema, _server

    try:
        import psycopg  # noqa: F401
    except ImportError:
        details["postgres"] = {"skipped": 'psycopg is not installed (pip install "wingman-actors[postgres]")'}
    else:
        with _server() as server:
            if isinstance(server, str):
                details["postgres"] = {"skipped": server}
            else:
                with _schema(server[0]) as schema:
                    details["postgres"] = {**_one_store(schema, seconds, reps), "server": server[1]}
                ratios.append(details["postgres"]["ratio"])
    if "skipped" in details["postgres"]:
        print(f"{_NAME}: PostgreSQL half skipped: {details['postgres']['skipped']}", file=sys.stderr, flush=True)
    value = min(ratios)
    return Measurement(_NAME, value, "x bare FastAPI", _TARGET, value >= 0.5, details["sqlite"]["bare_per_s"],
                       details)


def main() -> None:
    """Print the measurement as JSON (``python -m wingman_actors._bench.http_runs [--quick]``)."""
    import json

    print(json.dumps(http_formation_runs("--quick" in sys.argv).to_dict(), indent=2))


if __name__ == "__main__":
    main()
