"""Benchmarks of durable runs beyond one process: lease takeover and forks.

* ``lease_takeover`` (PostgreSQL only: the SQLite store recognises a dead owner by its
  process, at once): another process (the owner) runs ``first -> slow -> last`` journalled
  on the PostgreSQL store with a 1 s lease, and is frozen (``SIGSTOP``) in ``slow`` right
  after a lease renewal (seen as its owner row's ``lease_until`` moving on). This process
  then tries ``resume`` every 5 ms on a started formation; the value is the time from the
  frozen owner's last renewal (the server's clock, ``lease_until - lease``) to the resumed
  run's result here. Target: <= lease + 1 s. The frozen process is killed (``SIGKILL``).
  The server is found as for ``durable_pipeline_throughput_postgres`` (``--postgres URL``,
  else a throwaway one); without one the scenario is skipped and says why.
* ``fork_cost``: a 10-node chain of function nodes (each sleeps 1 ms), journalled; then
  ``Formation.fork(run_id, store=..., at="n9", output=...)`` to its end, against running
  the 2-node chain ``n9 -> n10`` alone, journalled in a store of the same kind; alternating
  repetitions, medians. Target: fork <= 2 x alone + 10 ms, on SQLite and (when a server is
  available) on PostgreSQL; the value is the SQLite fork's, judged on both. A fork with
  ``input=`` (``n9`` runs again) is reported as a detail.

Run alone with ``python -m wingman_actors._bench.durable_extra [--quick]``.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..formation import Formation
from ..store import RunNotResumableError, RunStore
from ._measurement import Measurement

__all__ = ["fork_cost", "lease_takeover"]

_LEASE_S = 1.0
_RUN_ID = "bench-held"
_POLL_S = 0.005
_STEP_S = 0.001

# --- lease_takeover ---------------------------------------------------------------------------

_held = False  # True in the owner process: its `slow` visit never returns


def _first(x: str) -> str:
    return x + " 1"


def _slow(x: str) -> str:
    if _held:
        print("slow", flush=True)
        while True:
            time.sleep(3600)
    return x + " 2"


def _last(x: str) -> str:
    return x + " 3"


def _held_formation() -> Formation:
    return (Formation("bench-held").add_function("first", _first).add_function("slow", _slow)
            .add_function("last", _last).connect("first", "slow", "last"))


def owner_main(url: str, lease: float) -> None:
    """The owner process: run ``_RUN_ID`` on the store at ``url``, held in ``slow``."""
    global _held
    _held = True
    with RunStore(url, lease=lease) as store:
        _held_formation().run("x", store=store, run_id=_RUN_ID)


def _skipped(name: str, target: str, unit: str, reason: str) -> Measurement:
    print(f"{name}: skipped: {reason}", file=sys.stderr, flush=True)
    return Measurement(name, 0.0, unit, target, False, None, {"skipped": reason})


def _server_offset(conn: Any) -> float:
    """The server's clock minus this process's (``time.time()``), to a round trip."""
    t0 = time.time()
    row = conn.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8").fetchone()
    return float(row[0]) - (t0 + time.time()) / 2


def _lease_until(conn: Any, pid: int) -> float | None:
    row = conn.execute("SELECT max(lease_until) FROM owners WHERE pid = %s", (pid,)).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def _wait(ready: Callable[[], bool], what: str, owner: subprocess.Popen[str], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if owner.poll() is not None:
            raise RuntimeError(f"lease_takeover: the owner process ended before {what}: {owner.communicate()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"lease_takeover: timed out waiting for {what}")
        time.sleep(0.001)


def _one_takeover(url: str) -> float:
    """Seconds from a frozen owner's last lease renewal to the run resumed here."""
    import psycopg

    code = f"from wingman_actors._bench.durable_extra import owner_main; owner_main({url!r}, {_LEASE_S!r})"
    owner = subprocess.Popen([sys.executable, "-c", code], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert owner.stdout is not None
        if owner.stdout.readline().strip() != "slow":  # (blocks until the owner is in `slow`)
            raise RuntimeError(f"lease_takeover: the owner process failed: {owner.communicate()}")
        with psycopg.connect(url, autocommit=True) as conn, RunStore(url) as store, \
                _held_formation().start(store=store) as running:
            offset = _server_offset(conn)
            seen = _lease_until(conn, owner.pid)
            _wait(lambda: _lease_until(conn, owner.pid) != seen, "a lease renewal", owner)
            os.kill(owner.pid, signal.SIGSTOP)  # right after a renewal: the lease's whole length to wait
            renewed = (_lease_until(conn, owner.pid) or 0.0) - _LEASE_S - offset  # (this process's clock)
            while True:
                try:
                    result = running.resume(_RUN_ID).result(60)
                    break
                except RunNotResumableError:
                    if time.time() - renewed > 60:
                        raise RuntimeError("lease_takeover: the frozen owner's run was never taken over") from None
                    time.sleep(_POLL_S)
            took = time.time() - renewed
            if (result.status, result.output) != ("succeeded", "x 1 2 3"):
                raise RuntimeError(f"lease_takeover: the resumed run ended {result.status}: {result.output!r}")
        return took
    finally:
        if owner.poll() is None:
            owner.kill()  # SIGKILL ends a stopped process too
        owner.communicate(timeout=30)


def lease_takeover(quick: bool) -> Measurement:
    """The scenario (see the module docs)."""
    from .durable_postgres import _schema, _server

    name, unit, target = "lease_takeover", "s", f"<= lease ({_LEASE_S:g} s) + 1 s"
    if sys.platform == "win32":
        return _skipped(name, target, unit, "SIGSTOP is POSIX")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return _skipped(name, target, unit, 'psycopg is not installed (pip install "wingman-actors[postgres]")')
    reps = 3 if quick else 7
    with _server() as server:
        if isinstance(server, str):
            return _skipped(name, target, unit, server)
        url, origin = server
        runs = []
        for _ in range(reps):
            with _schema(url) as schema:
                runs.append(_one_takeover(schema))
    value = statistics.median(runs)
    details = {"lease_s": _LEASE_S, "beyond_lease_ms": round((value - _LEASE_S) * 1e3, 1),
               "runs": [round(r, 3) for r in runs], "resume_poll_ms": _POLL_S * 1e3, "server": origin}
    return Measurement(name, round(value, 3), unit, target, value <= _LEASE_S + 1, None, details)


# --- fork_cost ----------------------------------------------------------------------------------


def _step(x: int) -> int:
    time.sleep(_STEP_S)
    return x + 1


def _chain(names: list[str]) -> Formation:
    f = Formation(f"bench-fork-{len(names)}")
    for name in names:
        f.add_function(name, _step)
    return f.connect(*names)


def _median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1e3, 2)


def _fork_vs_alone(store: RunStore, reps: int) -> dict[str, Any]:
    ten = _chain([f"n{i}" for i in range(1, 11)])
    two = _chain(["n9", "n10"])
    original = ten.run(0, store=store).run_id
    two.run(8, store=store)  # warm up
    ten.fork(original, store=store, at="n9", output=9)
    forks: list[float] = []
    inputs: list[float] = []
    alone: list[float] = []
    for _ in range(reps):  # alternating: the machine's drift hits each
        t0 = time.perf_counter()
        forked = ten.fork(original, store=store, at="n9", output=9)
        forks.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        result = two.run(8, store=store)
        alone.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        again = ten.fork(original, store=store, at="n9", input=8)
        inputs.append(time.perf_counter() - t0)
        if result.output != 10:
            raise RuntimeError(f"fork_cost: n9 -> n10 gave {result.output!r}")
        for run_id in (forked, again):
            if store.load(run_id).visits.get("n10") != {1: 10}:
                raise RuntimeError(f"fork_cost: the fork {run_id} did not end at n10 with 10")
    fork_ms, alone_ms = _median_ms(forks), _median_ms(alone)
    limit = round(2 * alone_ms + 10, 2)
    return {"fork_ms": fork_ms, "alone_ms": alone_ms, "limit_ms": limit, "meets": fork_ms <= limit,
            "fork_input_ms": _median_ms(inputs), "fork_runs_ms": [round(r * 1e3, 1) for r in forks],
            "alone_runs_ms": [round(r * 1e3, 1) for r in alone]}


@contextmanager
def _postgres() -> Iterator[tuple[str, str] | str]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        yield 'psycopg is not installed (pip install "wingman-actors[postgres]")'
        return
    from .durable_postgres import _schema, _server

    with _server() as server:
        if isinstance(server, str):
            yield server
            return
        with _schema(server[0]) as url:
            yield url, server[1]


def fork_cost(quick: bool) -> Measurement:
    """The scenario (see the module docs)."""
    reps = 7 if quick else 30
    with tempfile.TemporaryDirectory(prefix="wingman-bench-fork-") as tmp, \
            RunStore(os.path.join(tmp, "runs.sqlite")) as store:
        sqlite = _fork_vs_alone(store, reps)
    details: dict[str, Any] = {"step_ms": _STEP_S * 1e3, "repetitions": reps, "sqlite": sqlite}
    with _postgres() as server:
        if isinstance(server, str):
            print(f"fork_cost: on PostgreSQL: skipped: {server}", file=sys.stderr, flush=True)
            details["postgres"] = {"skipped": server}
        else:
            with RunStore(server[0]) as store:
                details["postgres"] = {**_fork_vs_alone(store, reps), "server": server[1]}
    meets = all(d["meets"] for d in (sqlite, details["postgres"]) if "meets" in d)
    return Measurement("fork_cost", sqlite["fork_ms"], "ms", "<= 2 x running n9 -> n10 alone + 10 ms (each store)",
                       meets, sqlite["alone_ms"], details)


def main() -> None:
    """Print the measurements as JSON."""
    quick = "--quick" in sys.argv
    for measure in (lease_takeover, fork_cost):
        print(json.dumps(measure(quick).to_dict(), indent=2))


if __name__ == "__main__":
    main()
