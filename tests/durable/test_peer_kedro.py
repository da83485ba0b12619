"""Resuming after a failure, ported from Kedro's own test suite (kedro-org/kedro,
``tests/runner/test_resume_logic.py``, ``test_sequential_runner.py::TestSuggestResumeScenario``
and ``tests/pipeline/test_pipeline.py``'s ``from_nodes``/``only_nodes`` filters), on both stores.

Kedro logs a suggestion after a failure (``kedro run --from-nodes node3_A,node3_B``), from
which a new run starts again, recomputing what the persisted datasets do not hold. Ours
journals every node visit: ``resume(run_id)`` of the failed run runs only what was not
journalled, exactly once. ``pipeline.from_nodes(n)`` (run ``n`` and everything after it) is
``fork(run_id, at=n, input=...)``: a new run that reuses the journal before ``n``.

Deliberately different (DESIGN.md documents ours; each test that touches one says so):
- Kedro recomputes a memory dataset a resumed node needs (it resumes from the nearest
  persisted one); every node output is journalled here, so nothing that finished runs
  again, whatever its output's type.
- ``only_nodes``/``to_nodes``/tags run a sub-pipeline; a formation has no filters (a gap):
  a fork starts from one node and runs what follows it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore

BRANCHES = ("node1_A", "node1_B", "node2", "node3_A", "node3_B", "node4_A", "node4_B")


class Failing:
    """The node names that raise ``Exception("test exception")`` while listed."""

    def __init__(self, *names: str) -> None:
        self.names = set(names)


def two_branches_crossed(counter: Counter, failing: Failing) -> Formation:
    """Kedro's ``two_branches_crossed_pipeline``: node1_A, node1_B → node2 → node3_A → node4_A
    and node3_B → node4_B; every call counted by node."""

    def step(name: str) -> Any:
        def fn(x: Any) -> Any:
            counter.hit(name)
            if name in failing.names:
                raise Exception("test exception")
            return x
        return fn

    def node2(node1_A: int, node1_B: int) -> list[int]:
        counter.hit("node2")
        if "node2" in failing.names:
            raise Exception("test exception")
        return [node1_A, node1_B]

    f = Formation("two_branches_crossed")
    for name in BRANCHES:
        f.add_function(name, node2 if name == "node2" else step(name))
    f.connect("node1_A", "node2").connect("node1_B", "node2")
    return f.connect("node2", "node3_A", "node4_A").connect("node2", "node3_B", "node4_B")


def journalled(store: RunStore, run_id: str) -> set[str]:
    """The nodes whose visit the journal holds as finished."""
    return {v.node for v in store.history(run_id) if v.status == "succeeded"}


@pytest.mark.parametrize("failing_nodes", [
    ("node1_A",), ("node2",), ("node3_A",), ("node4_A",), ("node3_A", "node4_A"), ("node2", "node4_A")])
def test_a_resumed_failed_run_runs_only_what_the_journal_does_not_hold(
        location: str, failing_nodes: tuple[str, ...]) -> None:
    """Ported from kedro-org/kedro tests/runner/test_sequential_runner.py::TestSuggestResumeScenario::test_suggest_resume_scenario
    and tests/runner/test_resume_logic.py::TestResumeLogicBehaviour::test_suggestion_consistency."""
    counter, failing = Counter(), Failing(*failing_nodes)
    f = two_branches_crossed(counter, failing)
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError, match=r"test exception") as err:
            f.run(0, store=store)
        assert err.value.node in failing_nodes
        done = journalled(store, err.value.run_id or "")
        first = {n: counter.count(n) for n in BRANCHES}
        failing.names.clear()
        result = f.resume(err.value.run_id or "", store=store)
    assert result.status == "succeeded" and result.outputs == {"node4_A": [0, 0], "node4_B": [0, 0]}
    rerun = {n for n in BRANCHES if counter.count(n) > first[n]}
    assert rerun == set(BRANCHES) - done  # nothing journalled ran again; everything else ran
    assert err.value.node in rerun
    assert all(counter.count(n) - first[n] == 1 for n in rerun)


def test_a_resume_after_every_node_but_the_last_finished_runs_that_node_alone(location: str) -> None:
    """Ported from kedro-org/kedro tests/runner/test_resume_logic.py::TestResumeLogicBehaviour::test_all_datasets_persistent
    (when every dataset is persisted, exactly the remaining nodes run again)."""
    counter, failing = Counter(), Failing("node4_A")
    f = two_branches_crossed(counter, failing)
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError) as err:
            f.run(0, store=store)
        failing.names.clear()
        before = {n: counter.count(n) for n in BRANCHES}
        f.resume(err.value.run_id or "", store=store)
        assert journalled(store, err.value.run_id or "") == set(BRANCHES)
    assert {n for n in BRANCHES if counter.count(n) > before[n]} <= {"node4_A", "node4_B"}
    assert counter.count("node4_A") == before["node4_A"] + 1


def test_a_fork_from_a_node_runs_that_node_and_only_what_follows_it(location: str) -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestPipelineFilterHelpers::test_from_nodes
    (``from_nodes("node3_A")``: the node and every node that depends on it). Kedro selects by
    the graph; a fork reuses the journal in time order (DESIGN: "the journal before node at's
    visit"), so the other branch's visits journalled after node3_A's may run again."""
    counter = Counter()
    f = two_branches_crossed(counter, Failing())
    with RunStore(location) as store:
        original = f.run(1, store=store).run_id
        before = {n: counter.count(n) for n in BRANCHES}
        forked = f.fork(original, store=store, at="node3_A", input=[7, 7])
        assert store.get(forked).status == "succeeded"
        visits = store.load(forked).visits
    rerun = {n for n in BRANCHES if counter.count(n) > before[n]}
    assert {"node3_A", "node4_A"} <= rerun <= {"node3_A", "node4_A", "node3_B", "node4_B"}
    assert counter.count("node3_A") == before["node3_A"] + 1 and counter.count("node4_A") == before["node4_A"] + 1
    assert (visits["node4_A"], visits["node4_B"]) == ({1: [7, 7]}, {1: [1, 1]})


def test_a_fork_at_the_crossing_node_reruns_both_branches_after_it(location: str) -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestPipelineFilter::test_one_filter
    (``from_nodes=["node4"]`` of the complex pipeline: the node and all its descendants)."""
    counter = Counter()
    f = two_branches_crossed(counter, Failing())
    with RunStore(location) as store:
        original = f.run(1, store=store).run_id
        before = {n: counter.count(n) for n in BRANCHES}
        forked = f.fork(original, store=store, at="node2", output=[2, 3])
        visits, kept = store.load(forked).visits, store.load(original).visits
    assert {n for n in BRANCHES if counter.count(n) > before[n]} == {"node3_A", "node3_B", "node4_A", "node4_B"}
    assert (visits["node4_A"], visits["node4_B"]) == ({1: [2, 3]}, {1: [2, 3]})
    assert (kept["node4_A"], kept["node2"]) == ({1: [1, 1]}, {1: [1, 1]})  # the original run is unchanged


def test_a_fork_at_an_unknown_node_is_refused_listing_the_nodes(path: str) -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestPipelineFilterHelpers::test_from_nodes_unknown."""
    f = two_branches_crossed(Counter(), Failing())
    with RunStore(path) as store:
        run_id = f.run(1, store=store).run_id
        with pytest.raises(ValueError, match=r"has no node 'missing_node' to fork at; its nodes are 'node1_A'"):
            f.fork(run_id, store=store, at="missing_node", output=1)


def test_a_fork_at_a_node_inside_a_namespace_is_refused_naming_the_namespace_to_fork_at(path: str) -> None:
    """Ported from kedro-org/kedro tests/pipeline/test_pipeline.py::TestPipelineFilterHelpers::test_only_nodes_with_namespacing
    (a namespaced node named: the suggestion names the right one)."""
    inner = Formation("inner").add_function("node1", lambda x: x + 1).add_function("node2", lambda x: x * 2)
    f = Formation("outer").add_formation("PREFIX", inner.connect("node1", "node2"))
    with RunStore(path) as store:
        run_id = f.run(1, store=store).run_id
        with pytest.raises(ValueError, match=r"'PREFIX/node1' is inside the nested formation 'PREFIX'.*at='PREFIX'"):
            f.fork(run_id, store=store, at="PREFIX/node1", output=1)


def nested_failing(counter: Counter, failing: Failing) -> Formation:
    """src → PRE (mid: node1 → PREFIX (inner: node2 → boom)) → end."""

    def step(name: str) -> Any:
        def fn(x: int) -> int:
            counter.hit(name)
            if name in failing.names:
                raise RuntimeError("test exception")
            return x + 1
        return fn

    inner = Formation("inner").add_function("node2", step("node2")).add_function("boom", step("boom"))
    mid = Formation("mid").add_function("node1", step("node1")).add_formation("PREFIX", inner.connect("node2", "boom"))
    outer = Formation("outer").add_function("src", step("src")).add_formation("PRE", mid.connect("node1", "PREFIX"))
    return outer.add_function("end", step("end")).connect("src", "PRE", "end")


def test_resuming_a_run_that_failed_two_namespaces_deep_runs_only_the_failed_node_and_what_follows(location: str) -> None:
    """Ported from kedro-org/kedro tests/runner/test_sequential_runner.py::TestSuggestResumeScenario::test_suggest_resume_scenario
    on a modular pipeline nested twice (``PRE.PREFIX.boom`` fails)."""
    counter, failing = Counter(), Failing("boom")
    f = nested_failing(counter, failing)
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError, match=r"node 'PRE' failed.*test exception") as err:
            f.run(0, store=store)
        assert err.value.nodes["PRE/PREFIX/boom"].status == "failed"
        failing.names.clear()
        result = f.resume(err.value.run_id or "", store=store)
    assert result.output == 5  # five steps of +1
    assert {n: counter.count(n) for n in ("src", "node1", "node2", "boom", "end")} == {
        "src": 1, "node1": 1, "node2": 1, "boom": 2, "end": 1}
    assert result.nodes["PRE/PREFIX/node2"].attempts == 0 and result.nodes["PRE/PREFIX/boom"].attempts == 1


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_failed_run_on_ray_resumes_without_rerunning_what_finished(tmp_path: Path) -> None:
    """Ported from kedro-org/kedro tests/runner/test_parallel_runner.py (a run in processes) and
    TestSuggestResumeScenario: the journal, not the runner, decides what runs again."""
    marker = tmp_path / "fixed"
    calls = tmp_path / "calls"
    f = Formation("ray_chain").add_function("node1", _RayStep(calls, "node1", None))
    f.add_function("node2", _RayStep(calls, "node2", marker)).connect("node1", "node2")
    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(FormationRuntimeError, match=r"node 'node2' failed") as err:
            f.run(1, store=store, backend="ray", timeout=120)
        marker.touch()
        assert f.resume(err.value.run_id or "", store=store, backend="ray", timeout=120).output == 1
    assert calls.read_text().split() == ["node1", "node2", "node2"]


class _RayStep:
    """A picklable step that appends its name to a file (shared with Ray's workers) and fails
    until ``marker`` exists (when one is given)."""

    def __init__(self, calls: Path, name: str, marker: Path | None) -> None:
        self.calls, self.name, self.marker = calls, name, marker

    def __call__(self, x: int) -> int:
        with self.calls.open("a") as out:
            out.write(self.name + "\n")
        if self.marker is not None and not self.marker.exists():
            raise RuntimeError("test exception")
        return x
