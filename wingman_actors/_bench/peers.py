"""Peers measured on the same graph in the same run, when they are installed.

Only LangGraph for now: the same three increment nodes compiled into a ``StateGraph``,
without a checkpointer, and with its SQLite checkpointer (``SqliteSaver``, from
``langgraph-checkpoint-sqlite``) for the durable scenario. Install them with
``pip install "wingman-actors[peers]"``; without them the scenarios report that instead
of a number. Peer numbers are context, except where a target is a ratio to LangGraph
(``durable_pipeline_throughput``: >= 30 x LangGraph with SqliteSaver; ``cold_run`` and
``large_formation``: ours over LangGraph's build, compile (and invoke) of the same chain);
those scenarios time :func:`langgraph_graph` themselves, alternating with ours.
"""

from __future__ import annotations

import importlib
import itertools
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypedDict

__all__ = ["NOT_INSTALLED", "SQLITE_NOT_INSTALLED", "langgraph_graph", "langgraph_overhead",
           "langgraph_sqlite_repetition", "langgraph_sqlite_throughput", "langgraph_sqlite_version",
           "langgraph_throughput", "langgraph_version"]

NOT_INSTALLED = 'not installed (pip install "wingman-actors[peers]")'
SQLITE_NOT_INSTALLED = 'skipped: install the peers extra (pip install "wingman-actors[peers]")'


class _State(TypedDict):
    x: int


def langgraph_graph(fns: list[Callable[[int], int]]) -> Any | None:
    """The chain of ``fns`` as an uncompiled LangGraph ``StateGraph`` (one node per
    function, ``START`` to the first, the last to ``END``; each node maps ``{"x": v}`` to
    ``{"x": fn(v)}``), or None when LangGraph is missing. ``.compile()`` makes it runnable."""
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
    return graph


def _langgraph_chain(fns: list[Callable[[int], int]], checkpointer: Any = None) -> Any | None:
    """The chain as a compiled LangGraph graph (with ``checkpointer``, if given), or None
    when LangGraph is missing."""
    graph = langgraph_graph(fns)
    return None if graph is None else graph.compile(checkpointer=checkpointer)


def _node(fn: Callable[[int], int]) -> Callable[[_State], dict[str, int]]:
    def node(state: _State) -> dict[str, int]:
        return {"x": fn(state["x"])}

    return node


def langgraph_version(package: str = "langgraph") -> str:
    """The installed version of ``package`` ("unknown" without its metadata)."""
    try:
        return version(package)
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
    return {"version": langgraph_version(), "invoke_us": round(statistics.median(medians) * 1e6, 1)}


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
    return {"version": langgraph_version(), "batch_inputs_per_s": round(statistics.median(rates)), "inputs": n}


def langgraph_sqlite_repetition(fns: list[Callable[[int], int]], n: int, folder: str) -> Callable[[], float] | str:
    """One timed repetition of the chain checkpointed by LangGraph's ``SqliteSaver``, to call
    as often as wanted (each call: a new SQLite file in ``folder``, one ``thread_id`` per
    input, ``n`` inputs in flight through ``batch``; it returns inputs/s and checks every
    run reached the end). A short untimed repetition warms it up first. A str saying why,
    when the ``peers`` extra is not installed.

    The saver's file gets the durability of a ``RunStore``: WAL (the saver's own setting)
    and ``synchronous=NORMAL``, so both survive a killed process and neither syncs the
    disk at every commit. (With SQLite's default, ``FULL``, LangGraph is several times
    slower on this kind of machine.)"""
    try:
        saver_cls = importlib.import_module("langgraph.checkpoint.sqlite").SqliteSaver
    except ImportError:
        return SQLITE_NOT_INSTALLED
    if _langgraph_chain(fns) is None:
        return SQLITE_NOT_INSTALLED
    count = itertools.count()

    def repetition(size: int = n) -> float:
        rep = next(count)
        conn = sqlite3.connect(os.path.join(folder, f"langgraph-checkpoints-{rep}.sqlite"), check_same_thread=False)
        try:
            saver = saver_cls(conn)
            saver.setup()  # its tables, and WAL
            conn.execute("PRAGMA synchronous = NORMAL")
            app = _langgraph_chain(fns, checkpointer=saver)
            assert app is not None  # (LangGraph was found above)
            configs = [{"configurable": {"thread_id": f"{rep}-{i}"}} for i in range(size)]
            t0 = time.perf_counter()
            outputs = app.batch([{"x": i} for i in range(size)], configs)
            elapsed = time.perf_counter() - t0
        finally:
            conn.close()
        if [o["x"] for o in outputs] != [i + len(fns) for i in range(size)]:
            raise RuntimeError("langgraph_sqlite_throughput: a LangGraph run did not reach the end")
        return size / elapsed

    repetition(max(1, n // 10))  # warms up
    return repetition


def langgraph_sqlite_version() -> str:
    """LangGraph's version and its SQLite saver's."""
    return f"{langgraph_version()}, langgraph-checkpoint-sqlite {langgraph_version('langgraph-checkpoint-sqlite')}"


def langgraph_sqlite_throughput(fns: list[Callable[[int], int]], n: int, reps: int) -> dict[str, Any] | str:
    """Inputs/s of the chain checkpointed by LangGraph's ``SqliteSaver``, median over ``reps``
    repetitions (see :func:`langgraph_sqlite_repetition`)."""
    with tempfile.TemporaryDirectory(prefix="wingman-bench-langgraph-") as folder:
        repetition = langgraph_sqlite_repetition(fns, n, folder)
        if isinstance(repetition, str):
            return repetition
        rates = [repetition() for _ in range(reps)]
    return {"version": langgraph_sqlite_version(), "batch_inputs_per_s": round(statistics.median(rates)), "inputs": n}
