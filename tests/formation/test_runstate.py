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


def test_a_sealed_run_keeps_its_traces_and_ignores_a_visit_that_ends_after_it() -> None:
    run = RunState("r", 1, [], 1, ["a", "b"])
    run.record("a", 1, 0.0, 0.1, None, 2)
    run.record("b", 1, 0.1, 0.2, None, 3)
    run.seal()
    run.record("a", 1, 0.3, 0.4, None, 99)  # a late visit (a branch a join="any" left behind)
    traces = run.traces()
    assert [t.outputs for t in traces.values()] == [[2], [3]]
    assert [t.status.value for t in traces.values()] == ["succeeded", "succeeded"]


def test_a_cleanly_succeeded_runs_result_keeps_nothing_the_collector_tracks_but_itself() -> None:
    # The guard of RunState.seal and RunState.trace_source: a clean run's result keeps its
    # node order and sealed log, tuples of plain values the collector stops tracking once
    # it has seen them, not the run; results kept by thousands (submit() of many inputs)
    # cost the collector one object each beside their futures.
    import gc

    from wingman_actors import Formation

    def inc(x: int) -> int:
        return x + 1

    chain = Formation("chain").add_function("a", inc).add_function("b", inc).connect("a", "b")
    with chain.start() as running:
        result = running.submit(1).result(10)
    assert result.outputs == {"b": 3}
    gc.collect()
    kept = [o for o in gc.get_referents(result) if gc.is_tracked(o) and o is not type(result)]
    assert kept == []
    traces = result.nodes
    assert [(t.name, t.status.value, t.output) for t in traces.values()] == [("a", "succeeded", 2), ("b", "succeeded", 3)]


def test_a_succeeded_run_with_a_skipped_failure_keeps_it_in_its_results_traces() -> None:
    from wingman_actors import Formation

    def bad(x: int) -> int:
        raise ValueError("boom")

    f = (Formation("f").add_function("s", lambda x: x).add_function("bad", bad, on_error="skip")
         .add_function("good", lambda x: x + 1).connect("s", "bad").connect("s", "good"))
    result = f.run(1)
    assert result.outputs == {"good": 2}
    assert {n: (t.status.value, t.error) for n, t in result.nodes.items()} == {
        "s": ("succeeded", None), "bad": ("skipped", "ValueError: boom"), "good": ("succeeded", None),
    }


def test_a_runs_outputs_are_each_nodes_last_successful_output_read_from_its_log() -> None:
    run = RunState("r", 0, [], 1, ["a", "b"])
    run.record("a", 1, 0.0, 0.1, None, "first")
    run.record("b", 1, 0.1, 0.2, None, "b's")
    run.record("a", 1, 0.2, 0.3, None, "second")  # a loop visited a again
    assert run.outputs == {"a": "second", "b": "b's"}
    assert (run.output_of("a"), run.output_of("b")) == ("second", "b's")


def test_output_of_a_node_that_has_not_succeeded_is_the_default() -> None:
    run = RunState("r", 0, [], 1, ["a", "b"])
    missing = object()
    assert run.output_of("a", missing) is missing
    run.record("a", 1, 0.0, 0.1, None, None)
    assert run.output_of("a", missing) is None and run.output_of("b", missing) is missing
