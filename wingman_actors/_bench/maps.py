"""The map node's benchmark: a function mapped over 1,000 items inside a formation,
against the plain-thread floor measured alternately in the same run."""

from __future__ import annotations

import gc
import statistics
import time
from typing import TYPE_CHECKING

from ..formation import Formation

if TYPE_CHECKING:
    from ._measurement import Measurement

__all__ = ["map_makespan"]


def map_makespan(quick: bool) -> Measurement:
    """A map node calling a function that sleeps 50 ms on each of 1,000 items, 100 at
    once, inside a formation; the baseline is as many plain threads taking item numbers
    from a shared counter, each item only waiting the 50 ms (the thread floor)."""
    from ._measurement import Measurement, _makespan_reps
    from .scenarios import FLOOR_TARGET, _over_floor, _thread_floor_ratio

    items = 200 if quick else 1_000
    workers = 100 if not quick else 40
    latency = 0.05
    ideal = -(-items // workers) * latency

    def work(x: int) -> int:
        time.sleep(latency)
        return x

    def numbers(n: int) -> list[int]:
        return list(range(n))

    formation = (Formation("bench-map").add_function("items", numbers)
                 .add_map("work", work, max_workers=workers).connect("items", "work"))
    node_ratios: list[float] = []
    floor_ratios: list[float] = []
    with formation.start() as running:
        for _ in range(_makespan_reps(quick)):
            gc.collect()  # as in fleet_node_makespan: no full collection inside either timing
            t0 = time.perf_counter()
            outputs = running.submit(items).result(60).output
            node_ratios.append((time.perf_counter() - t0) / ideal)
            if len(outputs) != items:
                raise RuntimeError("map node benchmark: items went missing")
            gc.collect()
            floor_ratios.append(_thread_floor_ratio(items, workers, latency))
    value, floor = round(statistics.median(node_ratios), 3), round(statistics.median(floor_ratios), 3)
    over = _over_floor(node_ratios, floor_ratios)
    return Measurement(
        "map_makespan", value, "x ideal", FLOOR_TARGET, over <= 0.02, floor,
        {"items": items, "over_floor": over, "max_workers": workers, "item_s": latency, "ideal_s": ideal,
         "node_runs": [round(r, 3) for r in node_ratios], "floor_runs": [round(r, 3) for r in floor_ratios],
         "baseline_is": "plain threads whose items only wait the latency (the thread floor), alternating "
                        "with the node in the same run",
         "gc": "collected before each timed run (node and floor alike)"},
    )
