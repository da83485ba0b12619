"""Benchmarks of getting a formation going, against LangGraph on the same chain, same run.

* ``cold_run``: build a 3-function-node chain, then ``Formation.run`` it once (validate,
  start every actor, run one input, stop), against LangGraph's build, ``compile()`` and
  ``invoke()`` of the same chain; the samples alternate, one of ours then one of
  LangGraph's. Target: ours <= 0.8 x LangGraph.
* ``large_formation``: chains of 100 and 500 function nodes: build and ``start()``
  (validate, start every actor), one warm run, ``stop()``; against LangGraph's build and
  ``compile()`` of the same chain, alternating. Target: the 500-node chain's build and
  start <= 2 x LangGraph's build and compile. The cost per node of each size is
  reported: start time grows linearly with the nodes when they are close.

Without LangGraph (the ``peers`` extra) both report our numbers and do not meet their
targets, which are ratios to it. Run alone with ``python -m wingman_actors._bench.startup``.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from ..formation import Formation
from ._measurement import Measurement, _reps
from .peers import NOT_INSTALLED, langgraph_graph, langgraph_version

__all__ = ["cold_run", "large_formation"]

COLD_RUN_TARGET = 0.8
"""``cold_run``: ours over LangGraph's build + compile + invoke, at most."""

LARGE_START_TARGET = 2.0
"""``large_formation``: the 500-node chain's build + start over LangGraph's build + compile, at most."""


def _inc(x: int) -> int:
    return x + 1


def _chain(n: int) -> Formation:
    names = [f"n{i}" for i in range(n)]
    f = Formation(f"bench-chain-{n}")
    for name in names:
        f.add_function(name, _inc)
    return f.connect(*names) if n > 1 else f


def _langgraph_available() -> bool:
    return langgraph_graph([_inc]) is not None


def _langgraph(fns: list[Callable[[int], int]]) -> Any:
    """The chain's uncompiled ``StateGraph``; only called once LangGraph was found."""
    graph = langgraph_graph(fns)
    if graph is None:  # pragma: no cover - checked by _langgraph_available first
        raise RuntimeError("LangGraph vanished during the benchmark")
    return graph


def _ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e3, 3)


def cold_run(quick: bool) -> Measurement:
    n = 30 if quick else 200
    peer = _langgraph_available()
    fns: list[Callable[[int], int]] = [_inc, _inc, _inc]
    _chain(3).run(0)  # imports and caches warm, on both sides
    if peer:
        _langgraph(fns).compile().invoke({"x": 0})
    ours_medians: list[float] = []
    peer_medians: list[float] = []
    ratios: list[float] = []
    for _ in range(_reps(quick)):
        ours: list[float] = []
        theirs: list[float] = []
        for i in range(n):  # alternating: the machine's drift hits both
            t0 = time.perf_counter()
            if _chain(3).run(i).output != i + 3:
                raise RuntimeError("cold_run: the chain computed a wrong output")
            ours.append(time.perf_counter() - t0)
            if peer:
                t0 = time.perf_counter()
                out = _langgraph(fns).compile().invoke({"x": i})
                theirs.append(time.perf_counter() - t0)
                if out["x"] != i + 3:
                    raise RuntimeError("cold_run: the LangGraph chain computed a wrong output")
        ours_medians.append(statistics.median(ours))
        if peer:
            peer_medians.append(statistics.median(theirs))
            ratios.append(ours_medians[-1] / peer_medians[-1])
    value = round(statistics.median(ours_medians) * 1e3, 3)
    target = f"<= {COLD_RUN_TARGET:g} x LangGraph build + compile + invoke, same run"
    details: dict[str, Any] = {"runs": n, "ours_ms": [round(m * 1e3, 3) for m in ours_medians]}
    if not peer:
        details["peers"] = {"langgraph": NOT_INSTALLED}
        return Measurement("cold_run", value, "ms", target, False, None, details)
    ratio = round(statistics.median(ratios), 3)
    details.update({"ratio": ratio, "ratios": [round(r, 3) for r in ratios],
                    "langgraph_ms": [round(m * 1e3, 3) for m in peer_medians],
                    "baseline_is": f"LangGraph {langgraph_version()}: StateGraph + add_node/add_edge, "
                                   "compile(), invoke(), alternating sample by sample with ours"})
    return Measurement("cold_run", value, "ms", target, ratio <= COLD_RUN_TARGET,
                       round(statistics.median(peer_medians) * 1e3, 3), details)


def _large_once(n: int, peer: bool) -> dict[str, float]:
    """One repetition at ``n`` nodes: ours (build, start, one run, stop), then LangGraph's
    build and compile; seconds, by phase."""
    gc.collect()  # no full collection of earlier garbage inside either timing
    t0 = time.perf_counter()
    formation = _chain(n)
    t1 = time.perf_counter()
    running = formation.start()
    t2 = time.perf_counter()
    try:
        out = running.submit(0).result(60).output
        t3 = time.perf_counter()
    finally:
        running.stop()
    t4 = time.perf_counter()
    if out != n:
        raise RuntimeError(f"large_formation: the {n}-node chain computed {out!r}, not {n}")
    got = {"build": t1 - t0, "start": t2 - t1, "run": t3 - t2, "stop": t4 - t3}
    if peer:
        gc.collect()
        t0 = time.perf_counter()
        graph = _langgraph([_inc] * n)
        t1 = time.perf_counter()
        graph.compile()
        t2 = time.perf_counter()
        got.update(lg_build=t1 - t0, lg_compile=t2 - t1)
    return got


def large_formation(quick: bool) -> Measurement:
    sizes = (100, 500)
    peer = _langgraph_available()
    _large_once(10, peer)  # warm imports and caches
    reps: dict[int, list[dict[str, float]]] = {n: [] for n in sizes}
    for _ in range(_reps(quick)):
        for n in sizes:
            reps[n].append(_large_once(n, peer))
    details: dict[str, Any] = {}
    for n in sizes:
        rows = reps[n]
        phases = {k: _ms([r[k] for r in rows]) for k in rows[0]}
        ready = [r["build"] + r["start"] for r in rows]
        details[f"nodes_{n}"] = {
            **{f"{k}_ms": v for k, v in phases.items()},
            "build_and_start_runs_ms": [round(x * 1e3, 1) for x in ready],
            "start_per_node_ms": round(phases["start"] / n, 4),
            "build_and_start_per_node_ms": round(statistics.median(ready) * 1e3 / n, 4),
        }
    small, big = details["nodes_100"], details["nodes_500"]
    details["per_node_growth_500_over_100"] = round(big["start_per_node_ms"] / small["start_per_node_ms"], 2)
    value = round(statistics.median(r["build"] + r["start"] for r in reps[500]) * 1e3, 1)
    target = f"<= {LARGE_START_TARGET:g} x LangGraph build + compile, same run"
    if not peer:
        details["peers"] = {"langgraph": NOT_INSTALLED}
        return Measurement("large_formation", value, "ms (500 nodes)", target, False, None, details)
    ratios = [(r["build"] + r["start"]) / (r["lg_build"] + r["lg_compile"]) for r in reps[500]]
    ratio = round(statistics.median(ratios), 3)
    details.update({
        "ratio": ratio, "ratios": [round(r, 3) for r in ratios],
        "start_over_compile": round(statistics.median(r["start"] / r["lg_compile"] for r in reps[500]), 3),
        "baseline_is": f"LangGraph {langgraph_version()}: StateGraph + add_node/add_edge, then compile(), "
                       "of the same chain, right after ours in each repetition",
    })
    baseline = round(statistics.median(r["lg_build"] + r["lg_compile"] for r in reps[500]) * 1e3, 1)
    return Measurement("large_formation", value, "ms (500 nodes)", target, ratio <= LARGE_START_TARGET,
                       baseline, details)


def main() -> None:
    """Print the measurements as JSON."""
    import sys

    quick = "--quick" in sys.argv
    for measure in (cold_run, large_formation):
        print(json.dumps(measure(quick).to_dict(), indent=2))


if __name__ == "__main__":
    main()
