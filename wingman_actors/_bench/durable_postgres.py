"""``durable_pipeline_throughput_postgres``: ``durable_pipeline_throughput`` on PostgreSQL.

The bench's 3-function chain journalled in ``RunStore("postgresql://...")``, inputs
submitted from 8 threads, against the same graph in LangGraph checkpointed by its
``PostgresSaver`` (``langgraph-checkpoint-postgres``, the ``peers`` extra; ``batch`` with
8 in flight over a pool of 8 connections), on the same loopback server, alternating
repetitions, each in a fresh schema. Target: ours >= 10 x LangGraph's inputs/s (the
median of the repetitions' paired ratios).

The server: the one ``WINGMAN_BENCH_POSTGRES_URL`` names (``wingman-actors bench --postgres
URL``; the user must be allowed to create schemas; each repetition's is dropped after
it), else a throwaway one started in a temporary directory when PostgreSQL's binaries
(``initdb``) are installed, with ``fsync`` on as a real server has it, and stopped at the
end. With neither, or without psycopg (the ``postgres`` extra), the scenario is skipped
and says why.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..store import RunStore
from ._measurement import Measurement
from .durable import _SUBMITTERS, _chain, _inc, _submit_all
from .peers import _langgraph_chain, langgraph_version

__all__ = ["ENV", "durable_pipeline_throughput_postgres"]

ENV = "WINGMAN_BENCH_POSTGRES_URL"
"""The environment variable naming the PostgreSQL server to measure on (a URL)."""

_NAME = "durable_pipeline_throughput_postgres"
_TARGET = ">= 10 x LangGraph + PostgresSaver, same server, same run"
_PEER_MISSING = 'skipped: install the peers extra (pip install "wingman-actors[peers]")'


def _skipped(reason: str) -> Measurement:
    print(f"{_NAME}: skipped: {reason}", file=sys.stderr, flush=True)
    return Measurement(_NAME, 0.0, "inputs/s", _TARGET, False, None, {"skipped": reason})


def _in_schema(url: str, schema: str) -> str:
    return url + ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"


@contextmanager
def _schema(url: str) -> Iterator[str]:
    """A fresh schema on the server at ``url`` (dropped after): the URL that uses it."""
    import psycopg

    name = f"wingman_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    try:
        yield _in_schema(url, name)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {name} CASCADE")


@contextmanager
def _server() -> Iterator[tuple[str, str] | str]:
    """(the server's URL, where it came from), or why there is none."""
    given = os.environ.get(ENV)
    if given:
        yield given, f"given by {ENV}"
        return
    from .pg_server import PostgresServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        yield (f"no PostgreSQL server: set {ENV} (or pass --postgres URL), or install PostgreSQL's server "
               "binaries (initdb; e.g. the postgresql package) for a throwaway one")
        return
    server = PostgresServer(bindir, fsync=True).start()
    try:
        yield server.url(), f"throwaway, started from {bindir} (fsync on)"
    finally:
        server.stop()


def _ours(url: str, n: int) -> float:
    with _schema(url) as schema, RunStore(schema) as store, _chain().start(store=store) as running:
        rate = _submit_all(running, n, _SUBMITTERS)
        store.flush()
        if len(store.runs("succeeded")) != n:
            raise RuntimeError(f"{_NAME}: not every run succeeded")
    return rate


def _theirs(url: str, n: int, saver_cls: Any) -> float:
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    with _schema(url) as schema, ConnectionPool(schema, min_size=_SUBMITTERS, max_size=_SUBMITTERS, kwargs=kwargs,
                                                open=True) as pool:
        saver = saver_cls(pool)
        saver.setup()
        app = _langgraph_chain([_inc, _inc, _inc], checkpointer=saver)
        assert app is not None  # (the saver imported: LangGraph is installed)
        configs = [{"configurable": {"thread_id": str(i)}, "max_concurrency": _SUBMITTERS} for i in range(n)]
        t0 = time.perf_counter()
        outputs = app.batch([{"x": i} for i in range(n)], configs)
        rate = n / (time.perf_counter() - t0)
    if [o["x"] for o in outputs] != [i + 3 for i in range(n)]:
        raise RuntimeError(f"{_NAME}: a LangGraph run did not reach the end")
    return rate


def durable_pipeline_throughput_postgres(quick: bool) -> Measurement:
    """The scenario (see the module docs)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return _skipped('psycopg is not installed (pip install "wingman-actors[postgres]")')
    try:
        saver_cls: Any = __import__("langgraph.checkpoint.postgres", fromlist=["PostgresSaver"]).PostgresSaver
        __import__("psycopg_pool")
    except ImportError:
        saver_cls = None
    n, n_peer, reps = (600, 60, 3) if quick else (5_000, 300, 3)
    ours: list[float] = []
    theirs: list[float] = []
    with _server() as server:
        if isinstance(server, str):
            return _skipped(server)
        url, origin = server
        _ours(url, max(50, n // 10))  # warm up (imports, the schema's first creation)
        for _ in range(reps):  # alternating: the machine's drift hits both
            ours.append(_ours(url, n))
            if saver_cls is not None:
                theirs.append(_theirs(url, n_peer, saver_cls))
    value = statistics.median(ours)
    details: dict[str, Any] = {"inputs": n, "submitters": _SUBMITTERS, "runs": [round(r) for r in ours],
                               "server": origin}
    if saver_cls is None:
        details["peers"] = {"langgraph_postgres": _PEER_MISSING}
        return Measurement(_NAME, round(value), "inputs/s", _TARGET, False, None, details)
    peer = statistics.median(theirs)
    details["peers"] = {"langgraph_postgres": {
        "version": f"{langgraph_version()}, langgraph-checkpoint-postgres "
                   f"{langgraph_version('langgraph-checkpoint-postgres')}",
        "batch_inputs_per_s": round(peer), "inputs": n_peer, "runs": [round(r) for r in theirs]}}
    # Each repetition ran ours, then theirs: the median of the paired ratios is steadier than
    # a ratio of medians on a machine whose load drifts (both are reported).
    details["ratio"] = round(statistics.median(a / b for a, b in zip(ours, theirs, strict=True)), 1)
    details["ratio_of_medians"] = round(value / peer, 1)
    return Measurement(_NAME, round(value), "inputs/s", _TARGET, details["ratio"] >= 10, round(peer), details)


def main() -> None:
    """Print the measurement as JSON (``python -m wingman_actors._bench.durable_postgres [--quick]``)."""
    import json

    print(json.dumps(durable_pipeline_throughput_postgres("--quick" in sys.argv).to_dict(), indent=2))


if __name__ == "__main__":
    main()
