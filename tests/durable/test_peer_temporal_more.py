"""More behaviours ported from Temporal's Python SDK's own tests (temporalio/sdk-python,
``tests/worker/test_workflow.py``, ``tests/worker/test_replayer.py``,
``tests/worker/test_worker.py``): workflow ids and their reuse (``run_id=``), replay after
a worker crash (``resume`` from the journal), replay of changed code (the formation's
shape is checked), cancellation from another process (``request_cancel``), execution
timeouts, on SQLite and PostgreSQL where the store decides, and on ``backend="ray"``.
(Child workflows, signals and queries: ``test_peer_temporal.py``.)

Deliberately different (DESIGN.md documents ours):
- Temporal's ``WorkflowIDReusePolicy`` may allow a new run under the id of a finished
  (or failed) workflow; ``run_id=`` never reuses an id the store holds, whatever the
  run's status: the run's result is read from the store, and an unfinished run is
  continued with ``resume``.
- Temporal replays a workflow's code against its history and fails on a nondeterministic
  command; a resume checks the formation's shape (nodes, kinds, edges, nested ones
  included) before anything runs, and refuses another shape listing the differences.
  Changing what a node's code does is not detected (its journalled outputs are used).
- Gap: Temporal's continue-as-new (a workflow restarting itself with a fresh history)
  has no counterpart: a looping run's journal grows with every visit.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path
from typing import Any

import pytest

from tests.durable import temporal_worker
from tests.durable.test_peer_temporal import child_of as child
from tests.durable.test_peer_temporal import counted
from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from tests.support.store_fixtures import until_the_server_has_seen_dead_owners_go
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import FormationMismatchError, RunNotResumableError, RunStore, StoreError


def parent(inner: Formation, counter: Counter, **policies: Any) -> Formation:
    return (Formation("parent").add_formation("child", inner, **policies)
            .add_function("end", counted(counter, "end", str.upper)).connect("child", "end"))


class Hold:
    """A node that says it was reached, then waits until released (at most 5 s)."""

    def __init__(self, counter: Counter, name: str = "b") -> None:
        self.counter, self.name = counter, name
        self.reached, self.released = threading.Event(), threading.Event()

    def __call__(self, x: Any) -> Any:
        self.counter.hit(self.name)
        self.reached.set()
        self.released.wait(5)
        return f"{x}{self.name}"


def wait_until(condition: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.005)


# --- workflow ids and their reuse -------------------------------------------------------


@pytest.mark.parametrize("outcome", ["failed", "cancelled"])
def test_the_id_of_an_unfinished_run_is_not_taken_by_a_new_run_which_is_pointed_to_resume(
        location: str, outcome: str) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_id_reuse_policy
    (ALLOW_DUPLICATE_FAILED_ONLY lets a new run take a failed workflow's id; ours refuses)."""
    counter = Counter()
    broken = [outcome == "failed"]

    def b(x: str) -> str:
        counter.hit("b")
        if broken[0]:
            raise RuntimeError("down")
        return f"{x}b"

    f = child(counter, b)
    with RunStore(location) as store:
        if outcome == "failed":
            with pytest.raises(FormationRuntimeError):
                f.run("x", store=store, run_id="wf")
        else:
            store.begin_run("child", f.graph, "x", run_id="wf")
            store.set_status("wf", "cancelled")
        with pytest.raises(StoreError, match=r"run id 'wf' already exists.*pass a new run_id"):
            f.run("y", store=store, run_id="wf")
        assert store.get("wf").status == outcome and store.get("wf").input == "x"
        broken[0] = False
        assert f.resume("wf", store=store).output == "xab"


def test_a_second_start_under_the_id_of_a_running_run_is_refused_and_the_first_finishes(location: str) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_already_started
    (WorkflowAlreadyStartedError while the first run is open)."""
    counter = Counter()
    hold = Hold(counter)
    f = child(counter, hold)
    with RunStore(location) as store, f.start(store=store) as running:
        first = running.submit("x", run_id="busy")
        assert hold.reached.wait(5)
        with pytest.raises(StoreError, match=r"'busy' already exists"):
            running.submit("y", run_id="busy")
        with pytest.raises(StoreError, match=r"'busy' already exists"):
            f.run("z", store=store, run_id="busy")
        hold.released.set()
        assert first.result(5).output == "xab"
    assert counter.calls == {"a": 1, "b": 1}


def test_an_inner_runs_id_cannot_be_resumed_on_its_own(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow
    (a child workflow is a workflow of its own; ours is resumed through its parent)."""
    counter = Counter()
    down = [True]

    def b(x: str) -> str:
        if down[0]:
            raise RuntimeError("down")
        return f"{x}b"

    inner = child(counter, b)
    with pytest.raises(FormationRuntimeError):
        parent(inner, counter).run("x", store=store, run_id="p")
    down[0] = False
    with pytest.raises(RunNotResumableError, match=r"'p/child/1'") as raised:
        inner.resume("p/child/1", store=store)
    assert "'p'" in str(raised.value)
    assert parent(inner, counter).resume("p", store=store).output == "XAB"


# --- replay: after a crash, and of changed code -----------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_parent_killed_inside_its_async_child_resumes_without_rerunning_journalled_visits(
        location: str, tmp_path: Path) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow
    with the worker killed (tests/worker/test_replayer.py: the new worker replays the history)."""
    log, hold = tmp_path / "visits.log", tmp_path / "holding"
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.durable.temporal_worker"])
    worker = ctx.Process(target=temporal_worker.work, args=(location, str(log), str(hold)))
    worker.start()
    deadline = time.monotonic() + 60
    while not hold.exists():
        assert worker.is_alive() and time.monotonic() < deadline, "the worker never reached the async node"
        time.sleep(0.01)
    worker.kill()
    worker.join(10)
    until_the_server_has_seen_dead_owners_go(location)
    with RunStore(location) as store:
        assert store.get(temporal_worker.RUN_ID).status == "interrupted"
        result = temporal_worker.build(log, 1).resume(temporal_worker.RUN_ID, store=store)
        assert store.get(f"{temporal_worker.RUN_ID}/child/1").status == "succeeded"
    assert result.output == "end 22"  # ((1 + 1) * 10) + 2
    assert log.read_text().split("\n") == ["0 start", "0 activity", "0 slow", "1 slow", "1 end", ""]


def test_a_stopped_worker_leaves_its_run_interrupted_and_another_formation_resumes_it(location: str) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_worker.py::test_worker_shutdown
    (a workflow outlives its worker and completes on another)."""
    counter = Counter()
    hold = Hold(counter)
    f = parent(child(counter, hold), counter)
    with RunStore(location) as store:
        running = f.start(store=store)
        try:
            future = running.submit("x", run_id="w1")
            assert hold.reached.wait(5)
        finally:
            running.stop(timeout=0.1)
        hold.released.set()
        with pytest.raises(FormationRuntimeError, match=r"stopped before run w1 finished"):
            future.result(0)
        assert store.get("w1").status == "interrupted"
        assert parent(child(counter), counter).resume("w1", store=store).output == "XAB"
    assert counter.calls == {"a": 1, "b": 2, "end": 1}  # b was in flight: at-least-once


def test_a_resume_with_an_edge_added_is_refused_before_anything_runs(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_replayer.py::test_replayer_workflow_nondeterministic."""
    counter = Counter()
    with pytest.raises(FormationRuntimeError):
        child(counter, lambda x: 1 / 0).run("x", store=store, run_id="nd1")
    changed = child(counter).add_function("c", counted(counter, "c", str)).connect("b", "c")
    with pytest.raises(FormationMismatchError, match=r"node 'c' \(function\) is new") as raised:
        changed.resume("nd1", store=store)
    assert "edge 'b' → 'c' is new" in str(raised.value)
    assert counter.calls == {"a": 1} and store.get("nd1").status == "failed"


def test_a_resume_with_a_changed_child_formation_is_refused_naming_the_inner_nodes(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_child_workflow_versioning.py
    (a parent replayed against a changed child; Temporal versions it, we refuse it)."""
    counter = Counter()
    with pytest.raises(FormationRuntimeError):
        parent(child(counter, lambda x: 1 / 0), counter).run("x", store=store, run_id="nd2")
    other = Formation("child").add_function("a", str).add_function("c", str).connect("a", "c")
    with pytest.raises(FormationMismatchError, match=r"node 'child/b' \(function\) is missing") as raised:
        parent(other, counter).resume("nd2", store=store)
    assert "node 'child/c' (function) is new" in str(raised.value)
    assert counter.calls == {"a": 1}


def test_a_resume_with_a_node_of_another_kind_is_refused(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_replayer.py::test_replayer_workflow_nondeterministic
    (an activity replaced by a child workflow is a nondeterministic command)."""
    counter = Counter()
    f = Formation("kinds").add_function("a", counted(counter, "a", str)).add_function("b", lambda x: 1 / 0)
    with pytest.raises(FormationRuntimeError):
        f.connect("a", "b").run("x", store=store, run_id="nd3")
    swapped = (Formation("kinds").add_function("a", str).add_formation("b", Formation("inner").add_function("i", str))
               .connect("a", "b"))
    with pytest.raises(FormationMismatchError, match=r"node 'b'"):
        swapped.resume("nd3", store=store)
    assert counter.calls == {"a": 1}


# --- cancel from elsewhere, and execution timeouts --------------------------------------


def test_a_cancel_requested_through_the_store_cancels_the_parent_and_its_child(location: str) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_cancel_child_started
    (the client cancels the parent from another process)."""
    counter = Counter()
    hold = Hold(counter)
    f = parent(child(counter, hold), counter)
    with RunStore(location) as store, f.start(store=store) as running:
        future = running.submit("x", run_id="rc")
        assert hold.reached.wait(5)
        with RunStore(location) as other:
            with pytest.raises(StoreError, match=r"'rc/child/1'.*'rc'"):
                other.request_cancel("rc/child/1")  # the inner run is cancelled through its parent
            assert other.request_cancel("rc") is True
        with pytest.raises(CancelledError):
            future.result(5)
        hold.released.set()
        wait_until(lambda: store.get("rc/child/1").status == "cancelled")
        assert store.get("rc").status == "cancelled"
    assert "end" not in counter.calls


def test_a_signal_in_a_child_is_answered_on_either_store(location: str) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_signal_and_query
    (the answer is durable: another store connection resumes the run)."""
    counter = Counter()

    def ask(x: str) -> str:
        counter.hit("ask")
        return f"{x}:{interrupt({'approve?': x})}"

    f = parent(Formation("child").add_function("a", counted(counter, "a", lambda x: f"{x}a")).add_function("ask", ask)
               .connect("a", "ask"), counter)
    with RunStore(location) as store:
        assert f.run("x", store=store, run_id="sg").interrupt == {"node": "child/ask", "payload": {"approve?": "xa"}}
    with RunStore(location) as store:
        assert store.get("sg").status == "suspended"
        assert f.resume("sg", store=store, answer="yes").output == "XA:YES"
    assert counter.calls == {"a": 1, "ask": 2, "end": 1}


def test_a_run_past_its_execution_timeout_fails_journalled_and_resumes_its_child(location: str) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_timeout_support
    (execution_timeout fails the workflow; ours resumes, DESIGN: a failed run resumes)."""
    counter = Counter()
    hold = Hold(counter)
    f = parent(child(counter, hold), counter)
    with RunStore(location) as store:
        started = time.monotonic()
        with pytest.raises(FormationRuntimeError, match=r"timed out after 0.2s; unfinished: child"):
            f.run("x", store=store, run_id="to", timeout=0.2)
        assert time.monotonic() - started < 0.2 + 1.0
        hold.released.set()
        assert store.get("to").status == "failed"
        wait_until(lambda: store.get("to/child/1").status == "cancelled")
        assert parent(child(counter), counter).resume("to", store=store, timeout=10).output == "XAB"
    assert counter.calls == {"a": 1, "b": 2, "end": 1}


# --- backend="ray" ----------------------------------------------------------------------


def _ray_a(x: str) -> str:
    return f"{x}a"


def _ray_down(x: str) -> str:
    raise ConnectionError("down")


def _ray_b(x: str) -> str:
    return f"{x}b"


def _ray_marker(path: str) -> Any:
    def a(x: str) -> str:
        with open(path, "a") as fh:
            fh.write("a\n")
        return f"{x}a"

    return a


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_a_child_on_ray_resumes_without_rerunning_its_journalled_node(tmp_path: Path) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow
    with a worker restart, on backend="ray"."""
    marker = tmp_path / "a.log"

    def build(b: Any) -> Formation:
        inner = Formation("child").add_function("a", _ray_marker(str(marker))).add_function("b", b).connect("a", "b")
        return Formation("parent").add_formation("child", inner).add_function("end", str.upper).connect("child", "end")

    with RunStore(tmp_path / "runs.sqlite") as store:
        with pytest.raises(FormationRuntimeError, match=r"node 'child'"):
            build(_ray_down).run("x", store=store, run_id="ray1", backend="ray", timeout=120)
        result = build(_ray_b).resume("ray1", store=store, backend="ray", timeout=120)
    assert result.output == "XAB"
    assert marker.read_text() == "a\n"  # a ran once, in the first run
