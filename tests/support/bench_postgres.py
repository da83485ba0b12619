"""A measurement, not a test: ``durable_pipeline_throughput`` on PostgreSQL — the bench's
3-function chain journalled in ``RunStore(url)``, inputs submitted from 8 threads — against
LangGraph with its PostgreSQL saver (``PostgresSaver``, the ``peers`` extra) on the same
loopback server, started here with fsync on. Prints the inputs/s of both (medians of 3)
and their ratio::

    python -m tests.support.bench_postgres [INPUTS]
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from tests.support.postgres import PostgresServer, find_bindir
from wingman_actors._bench.durable import _SUBMITTERS, _chain, _inc, _submit_all
from wingman_actors._bench.peers import _langgraph_chain
from wingman_actors.store import RunStore


def _schema(server: PostgresServer, name: str) -> str:
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return server.url(schema=name)


def ours(server: PostgresServer, n: int) -> list[float]:
    rates = []
    for rep in range(3):
        with RunStore(_schema(server, f"ours{rep}")) as store, _chain().start(store=store) as running:
            rates.append(_submit_all(running, n, _SUBMITTERS))
            assert len(store.runs("succeeded")) == n
    return rates


def langgraph(server: PostgresServer, n: int) -> list[float]:
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    rates = []
    kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    for rep in range(3):
        with ConnectionPool(_schema(server, f"lg{rep}"), max_size=_SUBMITTERS, kwargs=kwargs) as pool:
            saver = PostgresSaver(pool)  # type: ignore[arg-type]
            saver.setup()
            app = _langgraph_chain([_inc, _inc, _inc], checkpointer=saver)
            configs = [{"configurable": {"thread_id": f"{rep}-{i}"}, "max_concurrency": _SUBMITTERS} for i in range(n)]
            t0 = time.perf_counter()
            outputs = app.batch([{"x": i} for i in range(n)], configs)
            rates.append(n / (time.perf_counter() - t0))
            assert [o["x"] for o in outputs] == [i + 3 for i in range(n)]
    return rates


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    bindir = find_bindir()
    assert bindir is not None, "no PostgreSQL server binaries"
    server = PostgresServer(bindir, fsync=True).start()
    try:
        mine, theirs = ours(server, n), langgraph(server, max(200, n // 10))
    finally:
        server.stop()
    print(f"RunStore(postgresql://...): {[round(r) for r in mine]} inputs/s, median {statistics.median(mine):.0f}")
    print(f"LangGraph + PostgresSaver: {[round(r) for r in theirs]} inputs/s, median {statistics.median(theirs):.0f}")
    print(f"ratio {statistics.median(mine) / statistics.median(theirs):.1f}")


if __name__ == "__main__":
    main()
