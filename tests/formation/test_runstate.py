"""Per-run bookkeeping: RunState's lazily owned containers (shared empty ones until a run
writes) never let one run's writes reach another, also under concurrent first use."""

from __future__ import annotations

import sys
import threading

import pytest

from wingman_actors.formation._runstate import RunState


def test_own_gives_every_thread_the_same_container_on_concurrent_first_use() -> None:
    threads_per_run, runs = 8, 300
    lost = 0
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: widen any race
    try:
        for r in range(runs):
            run = RunState(f"r{r}", None, [], 1, ["a"])
            barrier = threading.Barrier(threads_per_run)

            def record(i: int, run: RunState = run, barrier: threading.Barrier = barrier) -> None:
                barrier.wait()
                run.own("failures").append(("a", i, 0.0, 0.0, "boom"))
                run.own("skipped")[f"n{i}"] = None

            workers = [threading.Thread(target=record, args=(i,)) for i in range(threads_per_run)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            lost += (threads_per_run - len(run.failures)) + (threads_per_run - len(run.skipped))
    finally:
        sys.setswitchinterval(old)
    assert lost == 0, f"{lost} writes were lost to a race in RunState.own()"


def test_a_runs_writes_through_own_never_reach_another_run() -> None:
    fields = ("joins", "visits", "failures", "skipped", "dropped", "handled", "nested")
    first = RunState("r1", None, [], 1, ["a"])
    for field in fields:
        owned = first.own(field)
        if isinstance(owned, list):
            owned.append(("a", 1, 0.0, 0.0, "boom"))
        else:
            owned["a"] = 1

    second = RunState("r2", None, [], 1, ["a"])

    assert {field: len(getattr(first, field)) for field in fields} == dict.fromkeys(fields, 1)
    assert {field: len(getattr(second, field)) for field in fields} == dict.fromkeys(fields, 0)


def test_a_write_that_bypasses_own_raises_instead_of_reaching_every_run() -> None:
    run = RunState("r", None, [], 1, ["a"])

    with pytest.raises(TypeError):
        run.visits["a"] = 1
    with pytest.raises(AttributeError):
        run.failures.append(("a", 1, 0.0, 0.0, "boom"))
    assert RunState("other", None, [], 1, ["a"]).visits == {}
