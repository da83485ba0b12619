"""The benchmark scenarios. Each measures itself and its baseline in the same process,
several repetitions, and reports the median, so ratios survive a noisy machine.

Model calls are simulated with the scripted provider's ``latency_s``.
"""

from __future__ import annotations

import gc
import importlib
import os
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ..agents._agent import Agent
from ..agents._fleet import Fleet, Task
from ..formation import Formation
from ..providers._scripted import ScriptedProvider
from ._measurement import Measurement, _makespan_reps, _reps
from ._registry import WHERE
from .baselines import EchoActor, PlainChain
from .peers import langgraph_overhead, langgraph_throughput

__all__ = ["SCENARIOS", "Measurement", "run_scenarios"]


def _inc(x: int) -> int:
    return x + 1


def _chain() -> Formation:
    return (
        Formation("bench-chain")
        .add_function("a", _inc)
        .add_function("b", _inc)
        .add_function("c", _inc)
        .connect("a", "b", "c")
    )


def _model(replies: list[str], latency: float) -> ScriptedProvider:
    """A simulated model: the scripted replies, repeated, after ``latency`` seconds each;
    it keeps no requests (a real provider keeps nothing)."""
    return ScriptedProvider(replies, latency_s=latency, cycle=True, record=False)


def _submitted_all(submit: Callable[[int], Future[Any]], n: int) -> tuple[float, float]:
    """Inputs per second and CPU seconds of ``n`` inputs submitted at once, then waited
    for in order; from a collected heap, and the futures freed on return, so neither side
    walks the other's leftovers in its collections."""
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    futures = [submit(i) for i in range(n)]
    for future in futures:
        future.result(120)
    return n / (time.perf_counter() - t0), time.process_time() - c0


def pipeline_throughput(quick: bool) -> Measurement:
    n = 2_000 if quick else 20_000
    ours: list[float] = []
    plain: list[float] = []
    cpu_ratios: list[float] = []  # plain's CPU time per input / ours, per repetition
    for _ in range(_reps(quick)):
        # The baseline hands each result back through a Future, as submit() does, and
        # the caller collects them in order the same way.
        chain = PlainChain([_inc, _inc, _inc])
        try:
            rate, plain_cpu = _submitted_all(chain.submit, n)
        finally:
            chain.stop()
        plain.append(rate)
        with _chain().start() as running:
            rate, cpu = _submitted_all(running.submit, n)
        ours.append(rate)
        cpu_ratios.append(plain_cpu / cpu)
    value, base = statistics.median(ours), statistics.median(plain)
    # Each repetition measures both back to back; the median of the paired ratios is
    # steadier than a ratio of medians on a machine whose speed drifts. The CPU-time
    # ratio (the process's threads) is reported beside it: on a shared machine it
    # moves less than the wall-clock one.
    ratio = statistics.median(o / p for o, p in zip(ours, plain, strict=True))
    peer = langgraph_throughput([_inc, _inc, _inc], n // 10, 3)
    return Measurement(
        "pipeline_throughput", round(value), "inputs/s", ">= 0.8 x plain 3-actor Pykka chain", ratio >= 0.8,
        round(base), {"ratio": round(ratio, 3), "cpu_ratio": round(statistics.median(cpu_ratios), 3),
                      "load": [round(x, 1) for x in os.getloadavg()], "inputs": n, "runs": [round(x) for x in ours],
                      "plain_runs": [round(x) for x in plain], "peers": {"langgraph": peer}},
    )


def run_overhead(quick: bool) -> Measurement:
    n = 300 if quick else 2_000
    ours: list[float] = []
    plain: list[float] = []
    for _ in range(_reps(quick)):
        chain = PlainChain([_inc, _inc, _inc])
        try:
            samples = []
            for i in range(n):
                t0 = time.perf_counter()
                chain.ask(i)
                samples.append(time.perf_counter() - t0)
            plain.append(statistics.median(samples))
        finally:
            chain.stop()
        with _chain().start() as running:
            samples = []
            for i in range(n):
                t0 = time.perf_counter()
                running.submit(i).result()
                samples.append(time.perf_counter() - t0)
            ours.append(statistics.median(samples))
    value, base = statistics.median(ours) * 1e6, statistics.median(plain) * 1e6
    ratio = statistics.median(o / p for o, p in zip(ours, plain, strict=True))
    peer = langgraph_overhead([_inc, _inc, _inc], n // 4, 3)
    return Measurement(
        "run_overhead", round(value, 1), "µs", "<= 1.3 x plain 3-actor Pykka chain", ratio <= 1.3,
        round(base, 1), {"ratio": round(ratio, 3), "inputs": n, "peers": {"langgraph": peer}},
    )


def hop_latency(quick: bool) -> Measurement:
    from ..actors._address import start_actor
    from ..actors._envelope import Envelope, EnvelopeType, new_envelope
    from ..actors._nodes import FunctionActor

    n = 500 if quick else 5_000
    ours: list[float] = []
    raw: list[float] = []
    box: list[Future[Envelope]] = []

    def reply(env: Envelope) -> None:
        box[0].set_result(env)

    node = start_actor(FunctionActor, _inc, name="hop", reply_to=reply)
    echo = EchoActor.start()
    try:
        for _ in range(_reps(quick)):
            samples = []
            for i in range(n):
                t0 = time.perf_counter()
                echo.ask(i)
                samples.append(time.perf_counter() - t0)
            raw.extend(samples)
            samples = []
            for i in range(n):
                fut: Future[Envelope] = Future()
                box[:] = [fut]
                t0 = time.perf_counter()
                node.actor_ref.tell(new_envelope(EnvelopeType.WORK, i))
                fut.result()
                samples.append(time.perf_counter() - t0)
            ours.extend(samples)
    finally:
        node.actor_ref.stop()
        echo.stop()
    ours.sort()
    raw.sort()

    def pct(xs: list[float], p: float) -> float:
        return xs[min(len(xs) - 1, int(len(xs) * p))] * 1e6

    p50, p99, raw50 = pct(ours, 0.5), pct(ours, 0.99), pct(raw, 0.5)
    ratio = p50 / raw50  # the repetitions are pooled: one sorted sample each
    return Measurement(
        "hop_latency", round(p50, 1), "µs p50", "p50 <= 1.5 x raw Pykka ask; p99 <= 1 ms",
        ratio <= 1.5 and p99 <= 1000, round(raw50, 1),
        {"ratio": round(ratio, 3), "p99_us": round(p99, 1), "raw_p99_us": round(pct(raw, 0.99), 1)},
    )


def fleet_makespan(quick: bool) -> Measurement:
    tasks = 200 if quick else 1_000
    workers = 100 if not quick else 40
    latency = 0.05
    ideal = -(-tasks // workers) * latency
    ratios = []
    floors = []
    for _ in range(_makespan_reps(quick)):
        agent = Agent("bench", provider=_model(["ok"], latency))
        fleet = Fleet(agent, [Task(f"task {i}") for i in range(tasks)], max_workers=workers)
        # As in fleet_node_makespan: a full collection of the previous runs' garbage falls
        # due every few runs; collecting first keeps it out of the timed run.
        gc.collect()
        t0 = time.perf_counter()
        results = fleet.run()
        elapsed = time.perf_counter() - t0
        if any(r.error for r in results):
            raise RuntimeError("fleet benchmark: a task failed")
        ratios.append(elapsed / ideal)
        gc.collect()
        floors.append(_thread_floor_ratio(tasks, workers, latency))
    value, floor = round(statistics.median(ratios), 3), round(statistics.median(floors), 3)
    over = _over_floor(ratios, floors)
    return Measurement(
        "fleet_makespan", value, "x ideal", FLOOR_TARGET, over <= 0.02, floor,
        {"tasks": tasks, "max_workers": workers, "ideal_s": ideal, "over_floor": over,
         "runs": [round(r, 3) for r in ratios], "floor_runs": [round(r, 3) for r in floors],
         "baseline_is": "plain threads whose tasks only wait the latency (the thread floor), alternating "
                        "with the fleet in the same run",
         "gc": "collected before each timed run (fleet and floor alike)"},
    )


FLOOR_TARGET = "within 0.02 of the plain-thread floor, same run"
"""The target of the makespan scenarios: a margin over the floor measured beside them."""


def _over_floor(runs: list[float], floors: list[float]) -> float:
    """The margin a makespan scenario is judged on: the median, over repetitions, of each
    run's ratio minus the floor measured right after it (a burst of load on the machine
    hits one pair, not the two medians apart)."""
    return round(statistics.median(r - f for r, f in zip(runs, floors, strict=True)), 3)


def _thread_floor_ratio(tasks: int, workers: int, latency: float) -> float:
    """Makespan / ideal of ``workers`` plain threads taking task numbers from a shared
    counter, each task only waiting ``latency``: what starting and waking the threads
    costs on this machine, with no runtime at all (the physical floor)."""
    untaken = iter(range(tasks))
    lock = threading.Lock()

    def loop() -> None:
        while True:
            with lock:
                index = next(untaken, None)
            if index is None:
                return
            threading.Event().wait(latency)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=loop, name=f"bench-floor-{i}") for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (time.perf_counter() - t0) / (-(-tasks // workers) * latency)


def fleet_node_makespan(quick: bool) -> Measurement:
    """A fleet node fed structured items (dicts) inside a formation, against the plain-thread
    floor, with the bare :class:`Fleet` over as many plain-string tasks as a detail; the
    three measured alternately in the same run."""
    tasks = 200 if quick else 1_000
    workers = 100 if not quick else 40
    latency = 0.05
    ideal = -(-tasks // workers) * latency
    node_ratios: list[float] = []
    bare_ratios: list[float] = []
    floor_ratios: list[float] = []
    agent = Agent("bench", provider=_model(["ok"], latency))
    # Built once, outside the timing, as the bare fleet's tasks are: the node is measured,
    # not the making of test data.
    items = [{"id": i, "topic": f"topic {i}", "weight": i % 7} for i in range(tasks)]

    def source(n: int) -> list[dict[str, Any]]:
        return items[:n]

    formation = (
        Formation("bench-fleet-node")
        .add_function("items", source)
        .add_fleet("work", agent, max_workers=workers)
        .connect("items", "work")
    )
    with formation.start() as running:
        for _ in range(_makespan_reps(quick)):
            # A full collection (50-100 ms here) falls due every few runs: collecting
            # before each timed run keeps it out of both, instead of in whichever it hits.
            gc.collect()
            t0 = time.perf_counter()
            outputs = running.submit(tasks).result(60).output
            node_ratios.append((time.perf_counter() - t0) / ideal)
            if len(outputs) != tasks:
                raise RuntimeError("fleet node benchmark: items went missing")
            fleet = Fleet(agent, [Task(f"task {i}") for i in range(tasks)], max_workers=workers)
            gc.collect()
            t0 = time.perf_counter()
            results = fleet.run()
            bare_ratios.append((time.perf_counter() - t0) / ideal)
            if any(r.error for r in results):
                raise RuntimeError("fleet node benchmark: a bare fleet task failed")
            gc.collect()
            floor_ratios.append(_thread_floor_ratio(tasks, workers, latency))
    value, floor = round(statistics.median(node_ratios), 3), round(statistics.median(floor_ratios), 3)
    over = _over_floor(node_ratios, floor_ratios)
    return Measurement(
        "fleet_node_makespan", value, "x ideal", FLOOR_TARGET, over <= 0.02, floor,
        {"items": tasks, "item_type": "dict", "max_workers": workers, "ideal_s": ideal,
         "over_floor": over, "bare_fleet": round(statistics.median(bare_ratios), 3),
         "node_runs": [round(r, 3) for r in node_ratios], "bare_runs": [round(r, 3) for r in bare_ratios],
         "floor_runs": [round(r, 3) for r in floor_ratios],
         "baseline_is": "plain threads whose tasks only wait the latency (the thread floor), alternating with "
                        "the node and with the bare Fleet over as many string tasks (bare_fleet), same run",
         "gc": "collected before each timed run (node, bare fleet and floor alike)"},
    )


def _research_dag(latency: float, width: int) -> Formation:
    sections = f"[{', '.join(f'{chr(34)}s{i}{chr(34)}' for i in range(width))}]"
    outline = Agent("outline", provider=_model([sections], latency), output_schema=list[str])
    researcher = Agent("researcher", provider=_model(["notes"], latency))
    assembler = Agent("assembler", provider=_model(["report"], latency))
    return (
        Formation("bench-dag")
        .add_agent("outline", outline)
        .add_fleet("research", researcher, max_workers=width)
        .add_agent("assemble", assembler)
        .connect("outline", "research", "assemble")
    )


def dag_makespan(quick: bool) -> Measurement:
    latency, width = 0.05, 20
    ideal = 3 * latency
    ratios = []
    floors = []
    for _ in range(_reps(quick)):
        with _research_dag(latency, width).start() as running:
            t0 = time.perf_counter()
            running.submit("topic").result(30)
            ratios.append((time.perf_counter() - t0) / ideal)
        # Context, not the target: what the fleet step's 20 threads cost with no runtime at
        # all (started per run, as they must be), measured right after each run.
        floors.append(_thread_floor_ratio(width, width, latency) * latency - latency)
    value = statistics.median(ratios)
    return Measurement(
        "dag_makespan", round(value, 3), "x critical path", "<= 1.05", value <= 1.05, None,
        {"fleet_width": width, "critical_path_s": ideal, "runs": [round(r, 3) for r in ratios],
         "fleet_step_thread_floor_ms": round(statistics.median(floors) * 1e3, 2)},
    )


def inflight_runs(quick: bool) -> Measurement:
    runs = 200
    conc, latency = 20, 0.05
    ideal = (-(-runs // conc) + 1) * latency
    ratios = []
    for _ in range(_reps(quick)):
        first = Agent("first", provider=_model(["a"], latency))
        second = Agent("second", provider=_model(["b"], latency))
        f = (
            Formation("bench-inflight")
            .add_agent("first", first, concurrency=conc)
            .add_function("mid", str.upper)
            .add_agent("second", second, concurrency=conc)
            .connect("first", "mid", "second")
        )
        with f.start() as running:
            t0 = time.perf_counter()
            futures = [running.submit(f"run {i}") for i in range(runs)]
            for fut in futures:
                fut.result(60)
            ratios.append((time.perf_counter() - t0) / ideal)
    value = statistics.median(ratios)
    return Measurement(
        "inflight_runs", round(value, 3), "x ideal", "<= 1.10", value <= 1.10, None,
        {"runs": runs, "concurrency": conc, "ideal_s": ideal},
    )


def _rss_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("cannot read VmRSS from /proc/self/status")


def actor_memory(quick: bool) -> Measurement:
    n = 200 if quick else 1_000
    f = Formation("bench-memory")
    for i in range(n):
        f.add_function(f"n{i}", _inc)
    samples = []
    for _ in range(_reps(quick)):
        gc.collect()
        time.sleep(0.05)
        before = _rss_bytes()
        with f.start():
            gc.collect()
            time.sleep(0.05)
            after = _rss_bytes()
        samples.append((after - before) / n / 1024)
    value = statistics.median(samples)
    return Measurement(
        "actor_memory", round(value, 1), "KB/actor", "<= 64 KB", value <= 64, None,
        {"actors": n, "threads_alive_after": threading.active_count()},
    )


def _elsewhere(module: str, name: str) -> Callable[[bool], Measurement]:
    """Scenario ``name`` of module ``module`` of this package, imported when it runs (with
    ``--in-process``; a scenario's own interpreter imports its module alone, see :mod:`._child`)."""
    def measure(quick: bool) -> Measurement:
        scenario: Callable[[bool], Measurement] = getattr(importlib.import_module(f".{module}", __package__), name)
        return scenario(quick)

    measure.__name__ = measure.__qualname__ = name
    return measure


SCENARIOS: dict[str, Callable[[bool], Measurement]] = {
    name: globals()[name] if module == "scenarios" else _elsewhere(module, name) for name, module in WHERE.items()
}


def _bytecode_compiled() -> None:
    """Compile this package's modules to bytecode where it is missing or stale, as ``pip
    install`` does for a wheel: with ``PYTHONDONTWRITEBYTECODE`` set (as on these CI
    machines) and an editable checkout, every scenario's interpreter would otherwise
    compile the runtime from source on its first run (60-90 ms, counted in
    ``timeout_overshoot`` and every first run), which no installed copy pays. A package
    directory that cannot be written is left as it is."""
    import compileall
    from pathlib import Path

    compileall.compile_dir(str(Path(__file__).resolve().parent.parent), quiet=2, workers=1)


def run_scenarios(names: list[str] | None = None, *, quick: bool = False,
                  progress: Callable[[str], None] | None = None, in_process: bool = False) -> list[Measurement]:
    """Run the named scenarios (all when None), in order, each in an interpreter of its own
    unless ``in_process`` (see :mod:`._child` for why)."""
    chosen = names or list(SCENARIOS)
    unknown = [n for n in chosen if n not in SCENARIOS]
    if unknown:
        raise ValueError(f"unknown scenario(s) {unknown}; scenarios: {', '.join(SCENARIOS)}")
    from ._child import measure_in_child
    _bytecode_compiled()
    out = []
    for name in chosen:
        if progress is not None:
            progress(name)
        out.append(SCENARIOS[name](quick) if in_process else measure_in_child(name, quick)[1])
    return out
