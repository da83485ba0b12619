"""A measurement, not a test: ``durable_pipeline_throughput_postgres`` (the bench's
3-function chain journalled in ``RunStore("postgresql://...")``, 8 submitters, against
LangGraph with its ``PostgresSaver`` on the same server), on a throwaway server with fsync
on, or on the one ``WINGMAN_BENCH_POSTGRES_URL`` names. Prints both inputs/s and their
ratio::

    python -m tests.support.bench_postgres [--quick]

(the same as ``wingman-actors bench --scenario durable_pipeline_throughput_postgres``).
"""

from __future__ import annotations

import sys

from wingman_actors._bench.durable_postgres import durable_pipeline_throughput_postgres


def main() -> None:
    result = durable_pipeline_throughput_postgres("--quick" in sys.argv)
    peer = result.details.get("peers", {}).get("langgraph_postgres")
    print(f"RunStore(postgresql://...): {result.details.get('runs')} inputs/s, median {result.value:g}")
    print(f"LangGraph + PostgresSaver: {peer}")
    print(f"ratio {result.details.get('ratio')} ({result.details.get('server')})")


if __name__ == "__main__":
    main()
