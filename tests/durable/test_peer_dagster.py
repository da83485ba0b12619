"""Re-execution behaviours ported from Dagster's own test suite (dagster-io/dagster,
``python_modules/dagster/dagster_tests/``: ``core_tests/execution_tests/test_retries.py``,
``execution_tests/dynamic_tests/test_dynamic_execution.py`` and ``test_reexecute.py``) on
journalled runs: a Dagster run is a journalled run, its run storage our ``RunStore``;
``reexecute_pipeline(parent_run_id=...)`` of a failed run is ``resume`` (what the journal
holds is not run again); a re-execution from a step (``step_selection=["sum_numbers*"]``)
is ``fork(run_id, at=node, ...)``, a new run that reuses the journal before that visit.
(``test_peer_dagster.py`` in tests/formation maps ops, jobs and graphs onto formations.)

Deliberately different (DESIGN.md documents ours; each test that touches one says so):
- ``reexecute_pipeline`` of a run that succeeded runs it again from its start; ``resume``
  of a finished run is refused (``RunNotResumableError``): ``fork`` at its source is the
  re-execution.
- Dagster selects mapped steps by mapping key (``multiply_by_two[1]*``); a fork replaces
  or reruns a whole visit of a node (a map node's list), and names a formation node, not a
  node inside it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunNotResumableError, RunStore


class Switch:
    """What the failing step of a test does: fail while ``on`` (Dagster's ``config: fail``)."""

    def __init__(self) -> None:
        self.on = True
        self.lock = threading.Lock()


def dynamic(counter: Counter, broken: set[int], emit_fails: Switch | None = None) -> Formation:
    """``emit`` → ``each`` (item * 10, failing the items in ``broken``) → ``sum_numbers`` →
    ``double_total``; every call counted by step (and item)."""

    def emit(num: int) -> list[int]:
        counter.hit("emit")
        if emit_fails is not None and emit_fails.on:
            raise RuntimeError("FAILURE")
        return list(range(num))

    def multiply(x: int) -> int:
        counter.hit(("each", x))
        if x in broken:
            raise ValueError(f"item {x} is broken")
        return x * 10

    def sum_numbers(nums: list[int]) -> int:
        counter.hit("sum_numbers")
        return sum(nums)

    def double_total(n: int) -> int:
        counter.hit("double_total")
        return n * 2

    return (Formation("dynamic_pipeline").add_function("emit", emit).add_map("each", multiply)
            .add_function("sum_numbers", sum_numbers).add_function("double_total", double_total)
            .connect("emit", "each", "sum_numbers", "double_total"))


def test_reexecuting_a_failed_run_reruns_the_failed_step_on_and_keeps_the_skipped_branch_skipped(store: RunStore) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_retries
    (re-executed with ``fail: False``: ``downstream_of_failed`` gets "okay perfect", the
    ``will_be_skipped`` steps are skipped again)."""
    counter, fails = Counter(), Switch()

    def can_fail(_: Any) -> str:
        counter.hit("can_fail")
        if fails.on:
            raise RuntimeError("blah")
        return "okay perfect"

    def two_outputs(_: Any) -> dict[str, bool]:
        counter.hit("two_outputs")
        return {"start_fail": True}  # never start_skip

    f = (Formation("pipe").add_function("two_outputs", two_outputs).add_function("can_fail", can_fail)
         .add_function("downstream_of_failed", lambda s: s).add_function("will_be_skipped", lambda x: x)
         .add_function("will_be_skipped_2", lambda x: x)
         .connect("two_outputs", "can_fail", when=lambda o: "start_fail" in o)
         .connect("two_outputs", "will_be_skipped", when=lambda o: "start_skip" in o)
         .connect("can_fail", "downstream_of_failed").connect("will_be_skipped", "will_be_skipped_2"))
    with pytest.raises(FormationRuntimeError, match=r"node 'can_fail' failed"):
        f.run(None, store=store, run_id="first")
    fails.on = False
    result = f.resume("first", store=store)
    assert result.outputs == {"downstream_of_failed": "okay perfect"}
    assert (result.nodes["will_be_skipped"].status, result.nodes["will_be_skipped_2"].status) == ("skipped", "skipped")
    assert counter.calls == {"two_outputs": 1, "can_fail": 2}


def test_resuming_after_a_mapped_item_failed_reruns_only_that_item(store: RunStore) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_reexecute.py::test_map_fail_reexecute
    (only the failed mapping key is executed again)."""
    counter, broken = Counter(), {1}
    f = dynamic(counter, broken)
    with pytest.raises(FormationRuntimeError, match=r"map node 'each': 1 of 3 item\(s\) failed; first: item 1"):
        f.run(3, store=store, run_id="mapped")
    broken.clear()
    result = f.resume("mapped", store=store)
    assert (result.output, result.nodes["each"].output) == (60, [0, 10, 20])
    assert counter.calls == {"emit": 1, ("each", 0): 1, ("each", 1): 2, ("each", 2): 1, "sum_numbers": 1, "double_total": 1}


def test_resuming_after_the_emitter_failed_maps_every_item(store: RunStore) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_map_reexecute_after_fail."""
    counter, emit_fails = Counter(), Switch()
    f = dynamic(counter, set(), emit_fails)
    with pytest.raises(FormationRuntimeError, match=r"node 'emit' failed.*FAILURE"):
        f.run(3, store=store, run_id="emit_failed")
    assert store.get("emit_failed").status == "failed"
    emit_fails.on = False
    assert f.resume("emit_failed", store=store).output == 60
    assert [counter.count(("each", i)) for i in range(3)] == [1, 1, 1]
    assert store.get("emit_failed").status == "succeeded"


def test_reexecuting_from_the_sum_reuses_the_mapped_results(store: RunStore) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_partial_reexecute
    (``step_selection=["sum_numbers*"]``); ours ``fork(at="sum_numbers", input=...)``
    reruns the step with the input it had (read from the history) and what follows."""
    counter = Counter()
    f = dynamic(counter, set())
    f.run(3, store=store, run_id="parent")
    mapped = next(v.output for v in store.history("parent") if v.node == "each")
    child = f.fork("parent", store=store, at="sum_numbers", input=mapped)
    assert store.get(child).status == "succeeded"
    assert [(v.node, v.output) for v in store.history(child)][-2:] == [("sum_numbers", 30), ("double_total", 60)]
    assert (counter.count("emit"), counter.count(("each", 1)), counter.count("sum_numbers")) == (1, 1, 2)


def test_reexecuting_the_map_with_other_items_reruns_it_and_what_follows(store: RunStore) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_partial_reexecute
    (``step_selection=["multiply_by_two[1]*"]``); a fork reruns the map node's whole
    visit, here with new items, and leaves the parent run as it was."""
    counter = Counter()
    f = dynamic(counter, set())
    f.run(3, store=store, run_id="parent")
    child = f.fork("parent", store=store, at="each", input=[5, 6])
    assert [(v.node, v.output) for v in store.history(child)] == [
        ("emit", [0, 1, 2]), ("each", [50, 60]), ("sum_numbers", 110), ("double_total", 220)]
    assert [v.output for v in store.history("parent")] == [[0, 1, 2], [0, 10, 20], 30, 60]
    assert counter.count("emit") == 1


def test_a_run_that_succeeded_is_reexecuted_by_forking_at_its_source(store: RunStore) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_full_reexecute
    (Dagster re-executes a successful run from its start; ours refuses ``resume`` of a
    finished run, naming the way, and ``fork`` at the source with the same input is the
    re-execution)."""
    counter = Counter()
    f = dynamic(counter, set())
    f.run(3, store=store, run_id="done")
    with pytest.raises(RunNotResumableError):
        f.resume("done", store=store)
    child = f.fork("done", store=store, at="emit", input=3)
    assert store.get(child).status == "succeeded"
    assert [v.output for v in store.history(child)][-1] == 60
    assert (counter.count("emit"), counter.count(("each", 2)), counter.count("double_total")) == (2, 2, 2)


def test_the_history_lists_each_step_once_in_order(store: RunStore) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_map
    (``events_by_step_key``); ours ``store.history(run_id)``, one visit per node."""
    dynamic(Counter(), set()).run(2, store=store, run_id="listed")
    assert [(v.node, v.visit, v.status) for v in store.history("listed")] == [
        ("emit", 1, "succeeded"), ("each", 1, "succeeded"), ("sum_numbers", 1, "succeeded"),
        ("double_total", 1, "succeeded")]


def test_the_history_says_failed_for_a_step_whose_failure_hook_handled_it(store: RunStore) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/hook_tests/test_hook_run.py::test_failure_hook
    (the step's STEP_FAILURE is in the run's events beside the hook's): the history
    lists the visit that failed into its error edges as ``failed``, as its trace says,
    with the error, not as ``skipped``; a node skipped by ``on_error="skip"`` stays
    ``skipped``."""

    def broken(_: Any) -> int:
        raise ValueError("op broke")

    f = (Formation("hooked").add_function("op", broken).add_function("after", lambda x: x)
         .add_function("hook", lambda failure: "handled").add_function("skipper", broken, on_error="skip")
         .connect("op", "after").connect("op", "hook", on_error=True))
    result = f.run(1, store=store, run_id="hooked")
    assert (result.nodes["op"].status, result.outputs) == ("failed", {"hook": "handled"})
    visits = {v.node: v for v in store.history("hooked")}
    assert visits["op"].status == "failed"
    assert visits["op"].output == "failed after 1 attempt(s) into its error edges: ValueError: op broke"
    assert (visits["hook"].status, visits["skipper"].status) == ("succeeded", "skipped")


def inner_graph(counter: Counter, fails: Switch) -> Formation:
    """``add_one`` → ``maybe_fails`` (fails while ``fails.on``)."""

    def add_one(x: int) -> int:
        counter.hit(("add_one", x))
        return x + 1

    def maybe_fails(x: int) -> int:
        counter.hit(("maybe_fails", x))
        if fails.on and x == 2:
            raise ValueError("inner step failed")
        return x * 2

    return Formation("inner").add_function("add_one", add_one).add_function("maybe_fails", maybe_fails).connect(
        "add_one", "maybe_fails")


def test_resuming_a_failed_nested_graph_does_not_repeat_its_steps_that_succeeded(store: RunStore) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/execution_tests/test_retries.py::test_retries
    with the failing op inside a graph (re-execution runs from the failed step in the graph)."""
    counter, fails = Counter(), Switch()
    f = (Formation("job").add_function("src", lambda x: x).add_formation("graph", inner_graph(counter, fails))
         .add_function("out", lambda x: x).connect("src", "graph", "out"))
    with pytest.raises(FormationRuntimeError, match=r"failed at node graph/maybe_fails"):
        f.run(1, store=store, run_id="nested")
    fails.on = False
    result = f.resume("nested", store=store)
    assert (result.output, result.nodes["graph/add_one"].status) == (4, "succeeded")
    assert counter.calls == {("add_one", 1): 1, ("maybe_fails", 2): 2}


def test_resuming_a_map_over_a_graph_reruns_only_the_failed_step_of_the_failed_item(store: RunStore) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_reexecute.py
    (a mapped graph's failed step re-executed for its mapping key alone)."""
    counter, fails = Counter(), Switch()
    f = Formation("job").add_map("each", formation=inner_graph(counter, fails)).add_function("total", sum)
    f.connect("each", "total")
    with pytest.raises(FormationRuntimeError, match=r"1 of 3 item\(s\) failed; first: item 1"):
        f.run([0, 1, 2], store=store, run_id="mapped_graph")
    fails.on = False
    assert f.resume("mapped_graph", store=store).output == 2 + 4 + 6
    assert counter.calls == {("add_one", 0): 1, ("add_one", 1): 1, ("add_one", 2): 1,
                             ("maybe_fails", 1): 1, ("maybe_fails", 2): 2, ("maybe_fails", 3): 1}


def test_forking_at_a_step_inside_a_nested_graph_is_refused_naming_the_graph_node_to_fork_at(store: RunStore) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_dynamic_execution.py::test_bad_step_selection
    (a step selection that cannot be re-executed is refused); a fork names this
    formation's own nodes, and a path into a nested one names the fix."""
    counter, fails = Counter(), Switch()
    fails.on = False
    f = Formation("job").add_formation("graph", inner_graph(counter, fails)).add_function("out", lambda x: x)
    f.connect("graph", "out").run(1, store=store, run_id="parent")
    with pytest.raises(ValueError, match=r"'graph/maybe_fails' is inside the nested formation 'graph'.*at='graph'"):
        f.fork("parent", store=store, at="graph/maybe_fails", output=100)
    assert [r.id for r in store.runs()] == ["parent"]


def test_a_failed_mapped_item_resumes_on_either_store(location: str) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_reexecute.py::test_map_fail_reexecute
    on SQLite and PostgreSQL (the run storage decides what is re-executed)."""
    counter, broken = Counter(), {2}
    f = dynamic(counter, broken)
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError):
            f.run(4, store=store, run_id="either")
    broken.clear()
    with RunStore(location) as store:
        assert f.resume("either", store=store).output == 120
    assert [counter.count(("each", i)) for i in range(4)] == [1, 1, 2, 1]


@pytest.mark.parametrize("mapped", [False, True], ids=["graph", "mapped_graph"])
def test_reexecuting_a_graph_with_an_input_its_ops_cannot_take_is_refused_before_anything_is_written(
        store: RunStore, mapped: bool) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/core_tests/types_tests/test_types.py::test_input_type_failure
    with re-execution: a fork's ``input=`` that the graph's first op would refuse (its
    type check) is refused by ``fork``, naming the node, the inner op and its type, as it
    is for a function node, and no new run is written."""
    counter, fails = Counter(), Switch()
    fails.on = False
    f = Formation("job").add_function("src", lambda x: [x] if mapped else x)
    f.add_map("graph", formation=inner_graph(counter, fails)) if mapped else f.add_formation("graph", inner_graph(counter, fails))
    f.connect("src", "graph").run(1, store=store, run_id="parent")
    wrong = ["not a number"] if mapped else "not a number"
    with pytest.raises(ValueError, match=r"fork: (item 0 of )?input= for (map|formation) node 'graph' does not fit the source 'graph/add_one'.*takes int"):
        f.fork("parent", store=store, at="graph", input=wrong)
    assert [r.id for r in store.runs()] == ["parent"]
    assert counter.calls == {("add_one", 1): 1, ("maybe_fails", 2): 1}


def file_counted(folder: Path) -> Any:
    """A map function for Ray (another process): each call appends its item to
    ``calls.txt``; an item fails while ``broken-<item>`` exists."""

    def multiply(x: int) -> int:
        with (folder / "calls.txt").open("a") as calls:
            calls.write(f"{x}\n")
        if (folder / f"broken-{x}").exists():
            raise ValueError(f"item {x} is broken")
        return x * 10

    return multiply


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_failed_mapped_item_on_ray_resumes_alone(store: RunStore, tmp_path: Path) -> None:
    """Ported from dagster-io/dagster python_modules/dagster/dagster_tests/execution_tests/dynamic_tests/test_reexecute.py::test_map_fail_reexecute
    (the ``multiprocess`` executor) on backend="ray"."""
    (tmp_path / "broken-1").touch()
    f = Formation("ray_map").add_map("each", file_counted(tmp_path)).add_function("total", sum).connect("each", "total")
    with pytest.raises(FormationRuntimeError, match=r"1 of 3 item\(s\) failed; first: item 1"):
        f.run([0, 1, 2], store=store, run_id="on_ray", backend="ray", timeout=120)
    (tmp_path / "broken-1").unlink()
    assert f.resume("on_ray", store=store, backend="ray", timeout=120).output == 30
    assert sorted((tmp_path / "calls.txt").read_text().split()) == ["0", "1", "1", "2"]
