"""Behaviours ported from Ray Workflows' own tests (ray-project/ray,
``python/ray/workflow/tests/``: ``test_basic_workflows*.py``, ``test_recovery.py``,
``test_dynamic_workflow_ref.py``, ``test_dag_to_workflow.py``): a workflow is our journalled
run, a workflow step (a task in a DAG) is a node, ``workflow.continuation`` (a step that
returns more steps) is a loop or a nested formation, a ``workflow_id`` is a ``run_id``,
``workflow.resume`` is ``Formation.resume`` and ``get_output(workflow_id, name=...)`` reads
the journal (``store.load(run_id).visits`` / ``store.history``). Error handling, the
workflow manager and cancellation are in ``test_peer_rayworkflow_more.py``; events in
``test_peer_rayworkflow_events.py``; the Ray backend in ``test_peer_rayworkflow_ray.py``.

Deliberately different (DESIGN.md and docs/durable-runs.md document ours):
- ``workflow.run(workflow_id=...)`` of a workflow id that already finished returns its
  checkpointed output without running anything; we refuse to start a second run under a
  taken id (a ``StoreError`` saying the id exists) and the finished run stays as it was.
- ``workflow.resume`` of a finished workflow returns its output from the checkpoint; we
  refuse to resume a succeeded run (``RunNotResumableError``): its output is in the
  journal (``store.load``), and ``fork`` runs it again from any node.
- A continuation is built at run time (the DAG grows as steps return steps); our formations
  are declared before they run, so "dynamic" work is a bounded loop, a map over a list or a
  nested formation.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any

import pytest

from tests.support.peers import Counter, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunNotResumableError, RunStore, StoreError, UnknownRunError


def rid(future: Future[Any]) -> str:
    """The run id a ``submit`` future carries."""
    return str(future.run_id)  # type: ignore[attr-defined]


def counted(counter: Counter, name: str, fn: Any) -> Any:
    """``fn`` that counts its calls under ``name``."""

    def node(*args: Any, **kwargs: Any) -> Any:
        counter.hit(name)
        return fn(*args, **kwargs)

    return node


class Mark:
    """Ray's ``utils.set_global_mark``: the failed step fails until the mark is set."""

    def __init__(self, counter: Counter) -> None:
        self.set = False
        self.counter = counter

    def the_failed_step(self, x: str) -> str:
        self.counter.hit("the_failed_step")
        if not self.set:
            raise ConnectionError("worker crashed")
        return f"foo({x})"


def failed_run(f: Formation, value: Any, store: RunStore) -> str:
    """Run ``f`` until it fails; the failed run's id."""
    with pytest.raises(FormationRuntimeError) as failed:
        f.run(value, store=store)
    assert failed.value.run_id is not None
    return str(failed.value.run_id)


# --- basic workflows -------------------------------------------------------------------


def test_a_sequential_workflow_gives_each_steps_output_to_the_next(store: RunStore) -> None:
    """From test_basic_workflows.py::test_basic_workflows (simple_sequential)."""
    f = (Formation("seq").add_function("source1", lambda _: "[source1]")
         .add_function("append1", lambda x: x + "[append1]").add_function("append2", lambda x: x + "[append2]")
         .connect("source1", "append1").connect("append1", "append2"))
    result = f.run(None, store=store)
    assert result.output == "[source1][append1][append2]"
    assert [(v.node, v.output) for v in store.history(result.run_id)] == [
        ("source1", "[source1]"), ("append1", "[source1][append1]"), ("append2", "[source1][append1][append2]")]


def test_a_fork_join_workflow_joins_both_branches_of_one_source(store: RunStore) -> None:
    """From test_basic_workflows.py::test_basic_workflows (fork_join)."""
    f = (Formation("fj").add_function("source1", lambda _: "[source1]")
         .add_function("append1", lambda x: x + "[append1]").add_function("identity", lambda x: x)
         .add_function("append2", lambda x: x + "[append2]")
         .add_function("join", lambda identity, append2: f"join({identity}, {append2})")
         .connect("source1", "append1").connect("append1", "identity").connect("source1", "append2")
         .connect("identity", "join").connect("append2", "join"))
    assert f.run(None, store=store).output == "join([source1][append1], [source1][append2])"


def loop_sequential(counter: Counter, fail_at: dict[str, int]) -> Formation:
    """``source1`` then ``append1`` in a loop of three visits (a continuation's recursion),
    then ``append2``; ``append1``'s visit ``fail_at["visit"]`` fails while ``fail_at`` says so."""
    state = {"visit": 0}

    def append1(x: str) -> str:
        state["visit"] += 1
        counter.hit("append1")
        if state["visit"] == fail_at.get("visit"):
            raise ConnectionError("lost the worker")
        return x + "[append1]"

    return (Formation("loop").add_function("source1", counted(counter, "source1", lambda _: "[source1]"))
            .add_function("append1", append1).add_function("append2", lambda x: x + "[append2]")
            .connect("source1", "append1")
            .connect("append1", "append1", when=lambda x: x.count("[append1]") < 3)
            .connect("append1", "append2", when=lambda x: x.count("[append1]") >= 3))


def test_a_recursive_continuation_runs_as_a_bounded_loop(store: RunStore) -> None:
    """From test_basic_workflows.py::test_basic_workflows (loop_sequential)."""
    counter = Counter()
    result = loop_sequential(counter, {}).run(None, store=store)
    assert result.output == "[source1]" + "[append1]" * 3 + "[append2]"
    assert result.nodes["append1"].visits == 3


def test_a_loop_that_failed_at_its_second_iteration_resumes_there(store: RunStore) -> None:
    """From test_recovery.py::test_recovery_cluster_failure (a recursive continuation cut
    short resumes from its last checkpoint, not from the start)."""
    counter = Counter()
    fail_at = {"visit": 2}
    f = loop_sequential(counter, fail_at)
    run_id = failed_run(f, None, store)
    fail_at.clear()
    result = f.resume(run_id, store=store)
    assert result.output == "[source1]" + "[append1]" * 3 + "[append2]"
    assert counter.calls == {"source1": 1, "append1": 4}  # visits 1, 2 (failed), 2 again, 3


def test_a_factorial_continuation_gives_the_same_result_as_a_loop(store: RunStore) -> None:
    """From test_basic_workflows.py::test_basic_workflows (factorial)."""

    def mul(state: tuple[int, int]) -> tuple[int, int]:
        n, acc = state
        return n - 1, acc * n

    f = (Formation("fact").add_function("start", lambda n: (n, 1)).add_function("mul", mul)
         .add_function("done", lambda state: state[1]).connect("start", "mul")
         .connect("mul", "mul", when=lambda s: s[0] > 1).connect("mul", "done", when=lambda s: s[0] <= 1))
    f.validate()
    result = f.run(10, store=store)
    assert result.output == 3628800
    assert len(store.history(result.run_id)) == 11  # start, 9 visits of mul, done


def test_a_nested_formation_is_a_nested_continuation(store: RunStore) -> None:
    """From test_basic_workflows.py::test_basic_workflows (nested) and
    test_dag_to_workflow.py::test_workflow_continuation (f -> g -> h, 43)."""
    h = Formation("h").add_function("h", lambda x: 42 + x)
    g = Formation("g").add_function("one", lambda _: 1).add_formation("h", h).connect("one", "h")
    f = Formation("f").add_formation("g", g)
    result = f.run(None, store=store)
    assert result.output == 43
    assert result.nodes["g"].status == "succeeded"


def test_a_dag_with_keyword_inputs_from_several_steps_gets_each_by_name(store: RunStore) -> None:
    """From test_dag_to_workflow.py::test_dag_to_workflow_execution."""

    def begin(inp: dict[str, Any]) -> float:
        return float(2 * inp["a"] + inp["pos"][1])

    def end(left: str, right: str) -> str:
        return f"{left},{right}"

    f = (Formation("dag").add_function("begin", begin)
         .add_function("left", lambda x: f"left({x}, hello)").add_function("right", lambda x: f"right({x})")
         .add_function("end", end).connect("begin", "left").connect("begin", "right")
         .connect("left", "end").connect("right", "end"))
    result = f.run({"a": 10, "pos": [2, 3.14]}, store=store)
    assert result.output == "left(23.14, hello),right(23.14)"
    assert len(store.history(result.run_id)) == 4


# --- running, resuming and reading runs by id -------------------------------------------


def test_a_second_run_under_a_finished_runs_id_is_refused_and_runs_nothing(store: RunStore) -> None:
    """From test_basic_workflows_3.py::test_wf_run (Ray returns the checkpoint instead: see
    the module docstring)."""
    counter = Counter()
    f = Formation("once").add_function("f", counted(counter, "f", lambda x: x))
    assert f.run(1, store=store, run_id="abc").output == 1
    with pytest.raises(StoreError, match="'abc' already exists"):
        f.run(2, store=store, run_id="abc")
    assert counter.count("f") == 1
    assert store.get("abc").status == "succeeded"
    assert store.load("abc").visits["f"] == {1: 1}


def test_resuming_a_succeeded_run_is_refused_and_its_output_stays_in_the_journal(store: RunStore) -> None:
    """From test_recovery.py::test_recovery_simple_1 (the second resume, from the output
    checkpoint: ours is refused, see the module docstring)."""
    counter = Counter()
    mark = Mark(counter)
    f = Formation("simple").add_function("the_failed_step", mark.the_failed_step)
    run_id = failed_run(f, "x", store)
    assert store.get(run_id).status == "failed"
    mark.set = True
    assert f.resume(run_id, store=store).output == "foo(x)"
    with pytest.raises(RunNotResumableError) as refused:
        f.resume(run_id, store=store)
    assert refused.value.status == "succeeded"
    assert store.load(run_id).visits["the_failed_step"] == {1: "foo(x)"}
    assert counter.count("the_failed_step") == 2


def test_a_run_id_in_flight_can_be_neither_started_again_nor_resumed(store: RunStore) -> None:
    """From test_basic_workflows.py::test_run_or_resume_during_running."""
    release = threading.Event()

    def slow(x: str) -> str:
        release.wait(10)
        return x + "[done]"

    f = Formation("busy").add_function("slow", slow)
    with f.start(store=store) as running:
        future = running.submit("w", run_id="running_workflow")
        try:
            with pytest.raises(StoreError, match="already exists"):
                running.submit("w", run_id="running_workflow")
            with pytest.raises(RunNotResumableError) as refused:
                running.resume("running_workflow").result(timeout=10)
            assert refused.value.status == "running"
        finally:
            release.set()
        assert future.result(timeout=10).output == "w[done]"


def test_resuming_an_unknown_run_id_says_how_to_list_the_runs(store: RunStore) -> None:
    """From test_recovery.py::test_recovery_non_exists_workflow."""
    f = Formation("any").add_function("a", lambda x: x)
    with pytest.raises(UnknownRunError, match=r"store\.runs\(\)") as caught:
        f.resume("this_workflow_id_does_not_exist", store=store)
    assert caught.value.run_id == "this_workflow_id_does_not_exist"


def test_a_step_shared_by_two_branches_runs_once_per_run(store: RunStore) -> None:
    """From test_basic_workflows_3.py::test_dedupe_indirect."""
    counter = Counter()
    f = (Formation("dedupe").add_function("incr", counted(counter, "incr", lambda x: x))
         .add_function("i1", lambda x: x).add_function("i2", lambda x: x)
         .add_function("join", lambda i1, i2: counter.count("incr"))
         .connect("incr", "i1").connect("incr", "i2").connect("i1", "join").connect("i2", "join"))
    assert f.run(0, store=store).output == 1
    assert f.run(0, store=store).output == 2


def test_a_failed_runs_finished_steps_are_readable_from_the_journal(store: RunStore) -> None:
    """From test_basic_workflows_2.py::test_get_named_step_output_error."""

    def outer(v: int) -> int:
        raise RuntimeError("outer fails")

    f = Formation("double").add_function("inner", lambda v: 2 * v).add_function("outer", outer).connect("inner", "outer")
    run_id = failed_run(f, 1, store)
    assert store.load(run_id).visits["inner"] == {1: 2}
    assert "outer" not in store.load(run_id).visits
    assert "outer fails" in (store.get(run_id).error or "")


def test_reading_a_failed_runs_journal_runs_nothing_and_a_resume_does(store: RunStore) -> None:
    """From test_basic_workflows_2.py::test_get_output_3 (max_retries=0; get_output does not
    rerun the step, resume does)."""
    counter = Counter()
    state = {"error": True}

    def incr(_: Any) -> int:
        counter.hit("incr")
        if state["error"]:
            raise ValueError("flagged")
        return 10

    f = Formation("incr").add_function("incr", incr, retries=0)
    run_id = failed_run(f, None, store)
    assert counter.count("incr") == 1
    assert store.load(run_id).visits == {}
    assert store.get(run_id).status == "failed"
    state["error"] = False
    assert counter.count("incr") == 1
    assert f.resume(run_id, store=store).output == 10
    assert counter.count("incr") == 2


def test_a_running_runs_journal_has_the_inner_step_before_the_outer_one_finishes(store: RunStore) -> None:
    """From test_basic_workflows_2.py::test_get_named_step_output_running."""
    release = threading.Event()

    def outer(v: int) -> int:
        release.wait(10)
        return 2 * v

    f = Formation("double2").add_function("inner", lambda v: 2 * v).add_function("outer", outer).connect("inner", "outer")
    with f.start(store=store) as running:
        future = running.submit(1)
        try:
            assert until(lambda: "inner" in store.load(rid(future)).visits, within=10)
            assert store.get(rid(future)).status == "running"
            assert "outer" not in store.load(rid(future)).visits
        finally:
            release.set()
        assert future.result(timeout=10).output == 4
    assert store.load(rid(future)).visits == {"inner": {1: 2}, "outer": {1: 4}}


def test_every_visit_of_a_looping_step_is_journalled_under_its_own_number(store: RunStore) -> None:
    """From test_basic_workflows_3.py::test_task_id_generation and
    test_basic_workflows_2.py::test_get_named_step_default (simple, simple_1, ... simple_19)."""
    f = (Formation("ids").add_function("simple", lambda x: x + 1, max_visits=25)
         .connect("simple", "simple", when=lambda x: x < 19).add_function("out", lambda x: x)
         .connect("simple", "out", when=lambda x: x >= 19))
    result = f.run(-1, store=store)
    assert result.output == 19
    assert store.load(result.run_id).visits["simple"] == {i + 1: i for i in range(20)}


def test_a_run_started_off_the_main_thread_is_journalled_succeeded(store: RunStore) -> None:
    """From test_basic_workflows_3.py::test_run_off_main_thread."""
    f = Formation("data").add_function("fake_data", lambda n: list(range(n)))
    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.update(r=f.run(10, store=store, run_id="run")))
    worker.start()
    worker.join(30)
    assert out["r"].output == list(range(10))
    assert store.get("run").status == "succeeded"


def test_an_input_mutated_by_the_caller_after_submit_does_not_change_the_run(store: RunStore) -> None:
    """From test_variable_mutable.py::test_variable_mutable (a list mutated after ``bind``
    is not what the step gets): the run gets its input as it was at ``submit``, as its
    journal does, so a resumed run gets what an uninterrupted one got."""
    release = threading.Event()

    def first(xs: Any) -> Any:
        release.wait(10)
        return list(xs) if isinstance(xs, list) else xs

    f = Formation("mut").add_function("first", first)
    with f.start(store=store) as running:
        busy = running.submit("busy")  # holds the node: the next input waits in its queue
        a: list[int] = []
        future = running.submit(a)
        a.append(1)
        release.set()
        assert busy.result(timeout=10).output == "busy"
        assert future.result(timeout=10).output == []
    assert store.get(rid(future)).input == []


def test_an_input_mutated_after_asubmit_changes_neither_the_run_nor_its_journal(store: RunStore) -> None:
    """From test_variable_mutable.py::test_variable_mutable, through ``asubmit``."""
    release = threading.Event()

    def first(xs: Any) -> Any:
        release.wait(10)
        return list(xs) if isinstance(xs, list) else xs

    async def main() -> tuple[str, Any]:
        async with Formation("amut").add_function("first", first).astart(store=store) as running:
            busy = running.asubmit("busy")
            a: list[int] = []
            run = running.asubmit(a)
            a.append(1)
            release.set()
            assert (await busy).output == "busy"
            return run.run_id, (await run).output

    run_id, output = asyncio.run(main())
    assert output == []
    assert store.get(run_id).input == []
