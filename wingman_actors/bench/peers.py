"""Peers measured on the same graph in the same run, when they are installed.

Only LangGraph for now: the same three increment nodes compiled into a ``StateGraph``.
Install it with ``pip install "wingman-actors[peers]"``; without it the scenarios report
``"not installed"`` instead of a number. Peer numbers are context, never a target.
"""

from __future__ import annotations

import importlib
import itertools
import statistics
import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypedDict

__all__ = ["NOT_INSTALLED", "langgraph_overhead", "langgraph_throughput"]

NOT_INSTALLED = 'not installed (pip install "wingman-actors[peers]")'


class _State(TypedDict):
    x: int


def _langgraph_chain(fns: list[Callable[[int], int]]) -> Any | None:
    """The chain as a compiled LangGraph graph, or None when LangGraph is missing."""
    try:
        graph_mod = importlib.import_module("langgraph.graph")
    except ImportError:
        return None
    graph = graph_mod.StateGraph(_State)
    names = [f"n{i}" for i in range(len(fns))]
    for name, fn in zip(names, fns, strict=True):
        graph.add_node(name, _node(fn))
    graph.add_edge(graph_mod.START, names[0])
    for a, b in itertools.pairwise(names):
        graph.add_edge(a, b)
    graph.add_edge(names[-1], graph_mod.END)
    return graph.compile()


def _node(fn: Callable[[int], int]) -> Callable[[_State], dict[str, int]]:
    def node(state: _State) -> dict[str, int]:
        return {"x": fn(state["x"])}

    return node


def _version() -> str:
    try:
        return version("langgraph")
    except PackageNotFoundError:  # importable without metadata (a source checkout)
        return "unknown"


def langgraph_overhead(fns: list[Callable[[int], int]], n: int, reps: int) -> dict[str, Any] | str:
    """Median µs of one ``invoke`` of the chain (one input at a time), median over ``reps``."""
    app = _langgraph_chain(fns)
    if app is None:
        return NOT_INSTALLED
    app.invoke({"x": 0})  # warm up
    medians = []
    for _ in range(reps):
        samples = []
        for i in range(n):
            t0 = time.perf_counter()
            app.invoke({"x": i})
            samples.append(time.perf_counter() - t0)
        medians.append(statistics.median(samples))
    return {"version": _version(), "invoke_us": round(statistics.median(medians) * 1e6, 1)}


def langgraph_throughput(fns: list[Callable[[int], int]], n: int, reps: int) -> dict[str, Any] | str:
    """Inputs/s of ``batch`` over ``n`` inputs (LangGraph's way to run many), median over ``reps``."""
    app = _langgraph_chain(fns)
    if app is None:
        return NOT_INSTALLED
    app.batch([{"x": 0}])  # warm up
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        app.batch([{"x": i} for i in range(n)])
        rates.append(n / (time.perf_counter() - t0))
    return {"version": _version(), "batch_inputs_per_s": round(statistics.median(rates)), "inputs": n}
