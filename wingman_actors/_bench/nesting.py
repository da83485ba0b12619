"""Benchmark scenario for nested formations.

* ``nested_overhead``: a 3-node formation nested in a 3-node formation (``a`` → ``sub``
  (``x`` → ``y`` → ``z``) → ``c``... six function nodes in all, one of the outer three
  being the formation node, so the flat baseline has the same six nodes: ``a`` → ``x``
  → ``y`` → ``z`` → ``b`` → ``c``), warm: the median time of one run submitted to a
  started formation and waited for, against the same six nodes declared flat.
"""

from __future__ import annotations

import statistics
import time

from ..formation import Formation
from ._measurement import Measurement

__all__ = ["nested_overhead"]


def _inc(x: int) -> int:
    return x + 1


def _nested() -> Formation:
    inner = Formation("bench-inner").add_function("x", _inc).add_function("y", _inc).add_function("z", _inc)
    inner.connect("x", "y", "z")
    outer = Formation("bench-nested").add_function("a", _inc).add_formation("sub", inner)
    outer.add_function("b", _inc).add_function("c", _inc)
    return outer.connect("a", "sub", "b", "c")


def _flat() -> Formation:
    flat = Formation("bench-flat")
    for name in ("a", "x", "y", "z", "b", "c"):
        flat.add_function(name, _inc)
    return flat.connect("a", "x", "y", "z", "b", "c")


def _median_run(formation: Formation, n: int) -> float:
    with formation.start() as running:
        for i in range(50):  # warm
            running.submit(i).result()
        samples = []
        for i in range(n):
            t0 = time.perf_counter()
            running.submit(i).result()
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def nested_overhead(quick: bool) -> Measurement:
    n = 300 if quick else 2_000
    nested: list[float] = []
    flat: list[float] = []
    for _ in range(3 if quick else 5):
        flat.append(_median_run(_flat(), n))
        nested.append(_median_run(_nested(), n))
    ratio = statistics.median(o / p for o, p in zip(nested, flat, strict=True))
    value, base = statistics.median(nested) * 1e6, statistics.median(flat) * 1e6
    return Measurement(
        "nested_overhead", round(value, 1), "µs", "<= 1.3 x the same six nodes declared flat", ratio <= 1.3,
        round(base, 1), {"ratio": round(ratio, 3), "inputs": n},
    )
