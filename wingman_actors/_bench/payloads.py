"""Benchmark scenario for payload isolation.

* ``payload_isolation``: what isolating payloads costs a pipeline's throughput. A started
  formation ``make → (left, right)`` whose ``make`` returns a 4-key dict holding a list,
  fanned out to two receivers, so every input makes two copies. Blocks of inputs are
  submitted at once and waited for, alternating *after* (the library as it is) and
  *before* (what a function node did with its payload before payloads were isolated),
  in the same process on the same started formation. Each block's CPU time (all the
  process's threads, ``time.process_time``) and wall time are taken; the headline is the
  median of the paired CPU-time ratios (quartiles beside it), so a machine whose speed
  drifts cannot fake or hide a cost. The pipeline runs one thread at a time (the GIL), so
  on an unshared machine its throughput is the inverse of its CPU time per input; on a
  shared one the wall-clock ratio also counts other processes' use of the CPUs (it swung
  by 10 to 20 % per pair at load 3 to 5), so it is reported beside the headline, not judged.

  Beside them, reported and not judged, ``copy_share_pct``: the CPU time of the two copies
  alone (``isolate`` on the payload, the fastest of 9 timed loops) over the median CPU time
  per input of the *after* blocks of unannotated receivers. It moves little with the
  machine's load, but leaves out what the copies cost the collector afterwards (tracked
  objects), which the paired blocks include.

  *Before* depends on the receivers' annotations, so both are measured:

  - receivers taking ``d: dict``: before isolation pydantic validated the payload against
    ``dict`` (``TypeAdapter(dict).validate_python``, which made a shallow copy); now the
    node copies it (:func:`~wingman_actors.actors._payloads.isolate`) and skips pydantic;
  - receivers taking an unannotated ``d``: before, the payload was handed over as it was.

  The switch between *before* and *after* replaces the function actors' module-level
  ``isolate`` (our own private module; the bench is the only code that does this, and
  ``tests/test_bench.py`` checks that the switch reaches the nodes).
"""

from __future__ import annotations

import contextlib
import gc
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import TypeAdapter

from ..actors import _function
from ..formation import Formation
from ._measurement import Measurement

__all__ = ["isolation_replaced", "payload_isolation"]

_AS_DICT = TypeAdapter(dict)
_SEAM = "isolate"  # the name function nodes call on their payload (actors/_function.py)


def _validated(value: Any) -> Any:
    # What a node whose parameter is `d: dict` did before isolation (its input adapter's
    # check); other payloads (make's int) were passed as they are.
    return _AS_DICT.validate_python(value) if type(value) is dict else value


def _as_is(value: Any) -> Any:
    return value


@contextlib.contextmanager
def isolation_replaced(replacement: Callable[[Any], Any]) -> Iterator[None]:
    """Function nodes use ``replacement`` instead of isolating their payloads (bench only)."""
    real = getattr(_function, _SEAM)
    setattr(_function, _SEAM, replacement)
    try:
        yield
    finally:
        setattr(_function, _SEAM, real)


def _make(i: int) -> dict[str, Any]:
    return {"id": i, "text": "hello world", "tags": ["a", "b"], "score": 0.5}


def _left_typed(d: dict) -> int:  # type: ignore[type-arg]
    return int(d["id"])


def _right_typed(d: dict) -> str:  # type: ignore[type-arg]
    return str(d["text"])


def _left_plain(d):  # type: ignore[no-untyped-def]
    return d["id"]


def _right_plain(d):  # type: ignore[no-untyped-def]
    return d["text"]


def _fan(left: Callable[[Any], Any], right: Callable[[Any], Any]) -> Formation:
    return (
        Formation("bench-fan").add_function("make", _make).add_function("left", left)
        .add_function("right", right).connect("make", "left").connect("make", "right")
    )


def _block(running: Any, n: int) -> tuple[float, float]:
    """Inputs per second and CPU µs per input for ``n`` inputs submitted at once."""
    gc.collect()  # no block pays for another's garbage
    c0, t0 = time.process_time(), time.perf_counter()
    futures = [running.submit(i) for i in range(n)]
    for future in futures:
        future.result(120)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return n / wall, cpu / n * 1e6


def _pct(ratios: list[float], sign: int) -> dict[str, float]:
    """The median and quartiles of paired after/before ratios as a cost in percent
    (``sign`` 1: a ratio of CPU times; -1: of throughputs, where a cost is a drop)."""
    q1, median, q3 = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
    costs = sorted(round(100 * sign * (r - 1), 1) for r in (q1, median, q3))
    return {"median": round(100 * sign * (median - 1), 1), "q1": costs[0], "q3": costs[2]}


def _cost(formation: Formation, before: Callable[[Any], Any], n: int, pairs: int) -> dict[str, Any]:
    throughput: list[float] = []  # after / before, per pair
    cpu: list[float] = []
    after_cpus: list[float] = []  # CPU µs per input of each after block
    with formation.start() as running:
        _block(running, n)  # warm
        for pair in range(pairs):
            if pair % 2:  # which block goes first alternates: neither gets the other's warm-up
                after_rate, after_cpu = _block(running, n)
            with isolation_replaced(before):
                before_rate, before_cpu = _block(running, n)
            if not pair % 2:
                after_rate, after_cpu = _block(running, n)
            throughput.append(after_rate / before_rate)
            cpu.append(after_cpu / before_cpu)
            after_cpus.append(after_cpu)
    cpu_cost, throughput_cost = _pct(cpu, 1), _pct(throughput, -1)
    return {
        "after_cpu_us_per_input": round(statistics.median(after_cpus), 2),
        "cpu_cost_pct": cpu_cost["median"], "cpu_cost_quartiles": [cpu_cost["q1"], cpu_cost["q3"]],
        "throughput_cost_pct": throughput_cost["median"],
        "throughput_cost_quartiles": [throughput_cost["q1"], throughput_cost["q3"]],
    }


def _copy_us(loops: int) -> float:
    """CPU µs of one input's two copies of ``make``'s payload (the fastest of 9 loops)."""
    payload = _make(1)
    isolate = getattr(_function, _SEAM)
    best = float("inf")
    for _ in range(9):
        c0 = time.process_time()
        for _ in range(loops):
            isolate(payload)
            isolate(payload)
        best = min(best, time.process_time() - c0)
    return best / loops * 1e6


def payload_isolation(quick: bool) -> Measurement:
    n, pairs = (300, 3) if quick else (2_000, 31)
    typed = _cost(_fan(_left_typed, _right_typed), _validated, n, pairs)
    plain = _cost(_fan(_left_plain, _right_plain), _as_is, n, pairs)
    worst = max(typed["cpu_cost_pct"], plain["cpu_cost_pct"])
    copies = _copy_us(2_000 if quick else 50_000)
    return Measurement(
        "payload_isolation", worst, "% CPU/input",
        "<= 5 % of a fan-out pipeline's throughput (dict to 2 receivers; median paired CPU ratio)",
        worst <= 5.0, None, {"typed_receivers": typed, "unannotated_receivers": plain, "inputs_per_block": n,
                             "copies_us_per_input": round(copies, 3),
                             "copy_share_pct": round(100 * copies / plain["after_cpu_us_per_input"], 1),
                             "pairs": pairs, "load": [round(x, 1) for x in os.getloadavg()]},
    )
