"""Benchmark scenarios of the Ray backend, each measured beside the threads backend.

* ``ray_cpu_stage``: a function node doing ~100 ms of pure-Python CPU per input, 20 inputs,
  ``concurrency=2``: the makespan on threads (one interpreter's GIL) over the makespan on
  Ray (one process per replica). Target: >= 1.7 x on a 2-core machine.
* ``ray_hop_overhead``: the per-hop latency of a 3-node chain of trivial functions on Ray
  (each hop a call to another process and back through the driver), beside threads. No
  target: it says what a hop costs.
* ``ray_agent_makespan``: 40 runs through agent → function → agent with 50 ms model calls,
  ``concurrency=4``: the makespan on Ray over the makespan on threads. Target: <= 1.10.

Ray's start (``ray.init``, ~10 s) is reported in the details, not in the numbers; without
Ray installed both scenarios report "ray not installed".
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from ..formation import Formation
from ._measurement import Measurement

__all__ = ["ray_agent_makespan", "ray_cpu_stage", "ray_hop_overhead"]

NOT_INSTALLED = 'ray not installed (pip install "wingman-actors[ray]")'


def _burn(n: int) -> int:
    """Pure-Python CPU work: ``n`` loop iterations (holds the GIL throughout)."""
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def _calibrate(seconds: float) -> int:
    n = 100_000
    while True:
        t0 = time.perf_counter()
        _burn(n)
        took = time.perf_counter() - t0
        if took > 0.02:
            return max(1, int(n * seconds / took))
        n *= 2


def _inc(x: int) -> int:
    return x + 1


def _ray() -> Any | None:
    try:
        import ray
    except ImportError:
        return None
    return ray


def _start_ray(ray: Any) -> float:
    t0 = time.perf_counter()
    if not ray.is_initialized():
        # Ray runs its workers at nice 15 (so they never starve its own daemons); the
        # threads baseline runs at nice 0, so on a shared, loaded machine the comparison
        # would measure the scheduler's priorities, not the backends: same priority here.
        ray.init(address="local", num_cpus=os.cpu_count() or 2, include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR", _system_config={"worker_niceness": 0})
    return time.perf_counter() - t0


def _missing(name: str, unit: str, target: str) -> Measurement:
    return Measurement(name, 0.0, unit, target, False, None, {"skipped": NOT_INSTALLED})


def _makespan(formation: Formation, backend: str, inputs: list[Any], reps: int) -> list[float]:
    samples = []
    replicas = max(int(formation.graph.nodes[n].get("concurrency", 1)) for n in formation.graph)
    with formation.start(backend=backend) as running:
        for f in [running.submit(inputs[0]) for _ in range(2 * replicas)]:  # warm every replica
            f.result()
        for _ in range(reps):
            t0 = time.perf_counter()
            for f in [running.submit(x) for x in inputs]:
                f.result()
            samples.append(time.perf_counter() - t0)
    return samples


def ray_cpu_stage(quick: bool) -> Measurement:
    target = ">= 1.7 x faster than threads (20 x 100 ms CPU, concurrency=2, 2 cores)"
    ray = _ray()
    if ray is None:
        return _missing("ray_cpu_stage", "x threads", target)
    started = _start_ray(ray)
    try:
        n = _calibrate(0.1)
        inputs = [n] * 20
        formation = Formation("bench-ray-cpu").add_function("burn", _burn, concurrency=2)
        reps = 1 if quick else 3
        threads = statistics.median(_makespan(formation, "threads", inputs, reps))
        on_ray = statistics.median(_makespan(formation, "ray", inputs, reps))
    finally:
        ray.shutdown()
    ratio = threads / on_ray
    return Measurement("ray_cpu_stage", round(ratio, 2), "x threads", target, ratio >= 1.7, round(threads, 3), {
        "threads_makespan_s": round(threads, 3), "ray_makespan_s": round(on_ray, 3),
        "ray_init_s": round(started, 1), "cpus": os.cpu_count(),
    })


def _hops(formation: Formation, backend: str, runs: int) -> list[float]:
    samples = []
    with formation.start(backend=backend) as running:
        running.submit(0).result()  # warm
        for i in range(runs):
            t0 = time.perf_counter()
            running.submit(i).result()
            samples.append((time.perf_counter() - t0) / 3)
    return sorted(samples)


def ray_hop_overhead(quick: bool) -> Measurement:
    target = "none: per-hop latency on Ray, reported beside threads"
    ray = _ray()
    if ray is None:
        return _missing("ray_hop_overhead", "µs p50 per hop", target)
    started = _start_ray(ray)
    try:
        formation = Formation("bench-ray-hops").add_function("a", _inc).add_function("b", _inc)
        formation.add_function("c", _inc).connect("a", "b", "c")
        runs = 50 if quick else 300
        threads = _hops(formation, "threads", runs)
        on_ray = _hops(formation, "ray", runs)
    finally:
        ray.shutdown()

    def p(xs: list[float], q: float) -> float:
        return xs[min(len(xs) - 1, int(len(xs) * q))] * 1e6

    value = p(on_ray, 0.5)
    return Measurement("ray_hop_overhead", round(value, 1), "µs p50 per hop", target, True, round(p(threads, 0.5), 1), {
        "ray_p99_us": round(p(on_ray, 0.99), 1), "threads_p50_us": round(p(threads, 0.5), 1),
        "ratio": round(value / max(p(threads, 0.5), 1e-9), 1), "ray_init_s": round(started, 1),
    })


def _shout(text: str) -> str:
    return text.upper()


def ray_agent_makespan(quick: bool) -> Measurement:
    from ..agents._agent import Agent
    from ..providers._scripted import ScriptedProvider

    target = "<= 1.10 x threads (agent → function → agent, 50 ms model calls, concurrency=4)"
    ray = _ray()
    if ray is None:
        return _missing("ray_agent_makespan", "x threads", target)
    started = _start_ray(ray)
    try:
        def model() -> ScriptedProvider:
            return ScriptedProvider(["a short answer"], latency_s=0.05, cycle=True, record=False)

        formation = Formation("bench-ray-agents").add_agent("draft", Agent("draft", provider=model()), concurrency=4)
        formation.add_function("shout", _shout, concurrency=4)
        formation.add_agent("review", Agent("review", provider=model()), concurrency=4)
        formation.connect("draft", "shout", "review")
        inputs: list[Any] = [f"topic {i}" for i in range(40)]
        reps = 1 if quick else 3
        threads = statistics.median(_makespan(formation, "threads", inputs, reps))
        on_ray = statistics.median(_makespan(formation, "ray", inputs, reps))
    finally:
        ray.shutdown()
    ratio = on_ray / threads
    return Measurement("ray_agent_makespan", round(ratio, 3), "x threads", target, ratio <= 1.10, round(threads, 3), {
        "threads_makespan_s": round(threads, 3), "ray_makespan_s": round(on_ray, 3),
        # two 50 ms stages pipelined: 10 waves of 4, plus one fill
        "ideal_s": 0.55, "ray_init_s": round(started, 1),
    })
