"""Pipelining: start a formation once and keep many runs in flight. ``submit(input)``
returns a ``Future[FormationResult]`` at once; each node works on one run while the
next node works on another. Here 1,000 inputs go through a four-node chain (with a
fan-in), every result is checked, and the throughput of this particular run is printed.

The number depends on the machine and load; it is printed for curiosity, not as a
benchmark.

Run it with::

    python examples/pipelining.py
"""

from __future__ import annotations

import time

from wingman_actors import Formation

N = 1_000


def parse(line: str) -> int:
    return int(line.removeprefix("n="))


def square(n: int) -> int:
    return n * n


def triple(n: int) -> int:
    return 3 * n


def total(square: int, triple: int) -> str:
    return f"{square + triple}"


def main() -> None:
    formation = (
        Formation("pipeline")
        .add_function("parse", parse)
        .add_function("square", square, concurrency=2)  # two replicas behind one address
        .add_function("triple", triple)
        .add_function("total", total)
        .connect("parse", "square", "total")
        .connect("parse", "triple", "total")
    )
    inputs = [f"n={i}" for i in range(N)]

    with formation.start() as running:
        t0 = time.perf_counter()
        futures = [running.submit(line) for line in inputs]
        submitted = time.perf_counter() - t0
        print(f"submitted {N} inputs in {submitted * 1000:.0f} ms; {running.in_flight} still in flight")
        results = [f.result(timeout=30) for f in futures]
        elapsed = time.perf_counter() - t0

    wrong = [i for i, r in enumerate(results) if r.output != str(i * i + 3 * i)]
    assert not wrong, f"wrong results for inputs {wrong[:10]}"
    print(f"all {N} results correct, in submission order: first {results[0].output!r}, last {results[-1].output!r}")
    print(f"run ids are distinct: {len({r.run_id for r in results}) == N}")
    print(f"this run: {elapsed:.2f}s wall time, about {N / elapsed:,.0f} inputs/s on this machine")


if __name__ == "__main__":
    main()
