"""A journalled run's bookkeeping is freed when the run ends, without the garbage collector:
a reference cycle per run (its list of dispatched visits, each referring to the run) made the
collector find every finished run, a quarter of a busy durable pipeline's CPU time."""

from __future__ import annotations

import gc

from wingman_actors import Formation
from wingman_actors.store import RunStore


def _inc(x: int) -> int:
    return x + 1


def test_finished_journalled_runs_leave_no_reference_cycle_for_the_collector(store: RunStore) -> None:
    chain = Formation("chain").add_function("a", _inc).add_function("b", _inc).add_function("c", _inc) \
        .connect("a", "b", "c")
    enabled = gc.isenabled()
    with chain.start(store=store) as running:
        assert [fut.result(10).output for fut in [running.submit(i) for i in range(20)]] == [i + 3 for i in range(20)]
        gc.collect()
        gc.disable()  # (for the count only) what 200 runs leave for the collector to find
        try:
            outputs = [fut.result(10).output for fut in [running.submit(i) for i in range(200)]]
            store.flush()
            unreachable = gc.collect()
        finally:
            if enabled:
                gc.enable()
    assert outputs == [i + 3 for i in range(200)]
    # 0 on CPython 3.11; 18 objects per run (the run, its works, their scopes...) before
    assert unreachable <= 20
    assert [r.status for r in store.runs()] == ["succeeded"] * 220
