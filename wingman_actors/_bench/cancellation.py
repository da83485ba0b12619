"""Benchmark scenarios for runs that must stop on time: cancellation and time limits.

* ``cancel_latency``: agent nodes are in a 5 s model call; how long from ``cancel()`` to
  the run's future resolving (p99 over every cancelled run).
* ``timeout_overshoot``: a function stuck far past its node's 0.3 s ``timeout``; how long
  ``Formation.run()`` takes to fail (the worst repetition).
"""

from __future__ import annotations

import statistics
import threading
import time
from concurrent.futures import wait
from typing import Any

from ..agents._agent import Agent
from ..errors import FormationRuntimeError
from ..formation import Formation
from ..providers._scripted import ScriptedProvider
from ._measurement import Measurement

__all__ = ["cancel_latency", "timeout_overshoot"]


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cancel_latency(quick: bool) -> Measurement:
    batch, batches = 10, (2 if quick else 10)
    samples: list[float] = []
    unwound: list[float] = []
    model = ScriptedProvider(["never seen"], latency_s=5.0, cycle=True, record=False)
    formation = Formation("bench-cancel").add_function("prep", lambda x: f"item {x}")
    formation.add_agent("writer", Agent("writer", provider=model), concurrency=batch)
    formation.connect("prep", "writer")
    with formation.start() as running:
        for b in range(batches):
            futures = [running.submit(i) for i in range(batch)]
            deadline = time.monotonic() + 10
            while model.calls < (b + 1) * batch and time.monotonic() < deadline:
                time.sleep(0.002)
            old = [a.thread for a in running.actors() if a.name == "writer" and a.current is not None]
            for future in futures:
                t0 = time.perf_counter()
                future.cancel()
                wait([future], timeout=5)
                samples.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            for thread in old:
                thread.join(5)
            unwound.append(time.perf_counter() - t0)
    p99 = _percentile(samples, 0.99) * 1e3
    return Measurement(
        "cancel_latency", round(p99, 2), "ms p99", "p99 <= 50 ms (agent nodes in a 5 s model call)", p99 <= 50,
        None, {"p50_ms": round(_percentile(samples, 0.5) * 1e3, 3), "runs": len(samples),
               "sessions_unwound_ms_max": round(max(unwound) * 1e3, 1)},
    )


def timeout_overshoot(quick: bool) -> Measurement:
    release = threading.Event()

    def stuck(x: Any) -> Any:
        release.wait(10)
        return x

    node: list[float] = []
    run: list[float] = []
    try:
        for _ in range(3 if quick else 5):
            t0 = time.perf_counter()
            try:
                Formation("bench-timeout").add_function("stuck", stuck, timeout=0.3).run(1)
            except FormationRuntimeError:
                node.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            try:
                Formation("bench-run-timeout").add_function("stuck", stuck).run(1, timeout=0.3)
            except FormationRuntimeError:
                run.append(time.perf_counter() - t0)
    finally:
        release.set()
    worst = max(node + run) if node and run and len(node) == len(run) else float("inf")
    return Measurement(
        "timeout_overshoot", round(worst, 3), "s worst", "a function stuck past a 0.3 s timeout fails its run in <= 0.4 s",
        worst <= 0.4, None, {"node_timeout_s": [round(x, 3) for x in node],
                             "run_timeout_s": [round(x, 3) for x in run],
                             "median_s": round(statistics.median(node + run), 3) if node + run else None},
    )
