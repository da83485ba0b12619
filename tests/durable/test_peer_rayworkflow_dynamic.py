"""Behaviours ported from Ray Workflows' own tests (ray-project/ray,
``python/ray/workflow/tests/``: ``test_recovery.py``'s gather of many sub-workflows,
``test_basic_workflows_2.py``'s named outputs of nested steps, ``test_workflow_manager.py``'s
cancel-then-resume, ``test_dynamic_workflow_ref.py``, ``test_wait.py``): dynamic workflows (a step that fans
out into N sub-workflows, a continuation) are map nodes and nested formations here, and
``workflow.wait(..., num_returns=1)`` is a ``join="any"`` node.

Deliberately different: Ray names a nested step's output ``<name>_<n>`` in the one
workflow's storage; we journal a nested formation's visits as an inner run of its own
(``"<run id>/<node>/<visit>"``), listed by ``store.runs(nested=True)``.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest

from tests.support.peers import Counter, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore


def rid(future: Future[Any]) -> str:
    """The run id a ``submit`` future carries."""
    return str(future.run_id)  # type: ignore[attr-defined]


def test_a_gather_of_many_sub_workflows_resumes_only_the_ones_that_failed(store: RunStore) -> None:
    """From test_recovery.py::test_dedupe_downloads_list (gather of many identity
    workflows) with test_recovery_simple_1's failed step: a map over a nested formation."""
    counter = Counter()
    state = {"down": True}

    def identity(x: int) -> int:
        counter.hit(x)
        if x == 3 and state["down"]:
            raise ConnectionError("lost worker")
        return x

    sub = Formation("sub").add_function("identity", identity)
    f = Formation("gather").add_map("each", formation=sub, max_workers=2).add_function("gather", tuple)
    f.connect("each", "gather")
    with pytest.raises(FormationRuntimeError) as failed:
        f.run(list(range(8)), store=store)
    state["down"] = False
    result = f.resume(str(failed.value.run_id), store=store)
    assert result.output == tuple(range(8))
    assert counter.calls == {**{i: 1 for i in range(8)}, 3: 2}


def test_a_nested_steps_outputs_are_journalled_as_an_inner_run(store: RunStore) -> None:
    """From test_basic_workflows_2.py::test_get_named_step_default (each step of a
    continuation has its output, readable after the run)."""
    inner = (Formation("inner").add_function("double", lambda v: 2 * v).add_function("inc", lambda v: v + 1)
             .connect("double", "inc"))
    f = Formation("outer").add_formation("nested", inner).add_function("last", lambda v: v * 10)
    f.connect("nested", "last")
    result = f.run(2, store=store)
    assert result.output == 50
    [inner_run] = [r for r in store.runs(nested=True) if r.parent == result.run_id]
    assert [(v.node, v.output) for v in store.history(inner_run.id)] == [("double", 4), ("inc", 5)]
    assert [r.id for r in store.runs()] == [result.run_id]


def test_a_cancelled_map_resumes_without_rerunning_the_items_that_finished(store: RunStore) -> None:
    """From test_workflow_manager.py::test_workflow_cancel_parallel then resume_all: the
    items that finished before the cancel are journalled and not run again."""
    counter = Counter()
    release = threading.Event()

    def item(x: int) -> int:
        counter.hit(x)
        if x == 2 and counter.count(x) == 1:
            release.wait(10)
        return x * x

    f = Formation("squares").add_map("each", item, max_workers=4)
    with f.start(store=store) as running:
        future = running.submit([0, 1, 2, 3])
        try:
            assert until(lambda: len(store.load(rid(future)).items.get(("each", 1), {})) == 3, within=10)
            assert future.cancel()
        finally:
            release.set()
        assert until(lambda: store.get(rid(future)).status == "cancelled", within=10)
        result = running.resume(rid(future)).result(timeout=10)
    assert result.output == [0, 1, 4, 9]
    assert counter.calls == {0: 1, 1: 1, 2: 2, 3: 1}


def test_a_cancelled_runs_error_route_gets_the_journalled_failure_on_resume(store: RunStore) -> None:
    """From test_workflow_manager.py::test_workflow_manager (cancel, then resume) with
    catch_exceptions: the handler was in flight when the run was cancelled; on resume the
    failed step does not run again and the handler gets the same failure."""
    counter = Counter()
    reached, release = threading.Event(), threading.Event()
    seen: list[tuple[str, str, int, Any]] = []

    def step(x: int) -> int:
        counter.hit("step")
        raise ValueError(f"bad {x}")

    def handler(failure: NodeFailure) -> str:
        seen.append((failure.node, str(failure.error), failure.attempts, failure.input))
        if len(seen) == 1:
            reached.set()
            release.wait(10)
        return f"caught {failure.error}"

    f = (Formation("cancel-catch").add_function("step", step, retries=1, backoff=0.001, jitter=False)
         .add_function("handler", handler).connect("step", "handler", on_error=True))
    with f.start(store=store) as running:
        future = running.submit(7)
        try:
            assert reached.wait(10)
            assert future.cancel()
        finally:
            release.set()
        assert until(lambda: store.get(rid(future)).status == "cancelled", within=10)
        result = running.resume(rid(future)).result(timeout=10)
    assert result.outputs == {"handler": "caught bad 7"}
    assert counter.count("step") == 2
    assert seen == [("step", "bad 7", 2, 7)] * 2


def test_a_fork_of_a_failed_run_at_its_failed_step_with_an_output_finishes_it(store: RunStore) -> None:
    """From test_dynamic_workflow_ref.py (a later workflow takes a step's output by
    reference) and test_basic_workflows.py::test_dynamic_output (the failed workflow's
    last good step): the original run stays failed."""
    counter = Counter()

    def fetch(x: int) -> int:
        counter.hit("fetch")
        return x + 1

    def flaky(x: int) -> int:
        raise ConnectionError("always down")

    f = (Formation("forkfail").add_function("fetch", fetch).add_function("flaky", flaky)
         .add_function("last", lambda x: f"last {x}").connect("fetch", "flaky").connect("flaky", "last"))
    with pytest.raises(FormationRuntimeError) as failed:
        f.run(1, store=store)
    run_id = str(failed.value.run_id)
    assert [(v.node, v.status, v.output if v.status == "succeeded" else v.error) for v in store.history(run_id)] == [
        ("fetch", "succeeded", 2), ("flaky", "failed", "ConnectionError: always down")]
    forked = f.fork(run_id, store=store, at="flaky", output=20)
    assert store.get(forked).status == "succeeded"
    assert store.load(forked).visits["last"] == {1: "last 20"}
    assert store.get(run_id).status == "failed"
    assert counter.count("fetch") == 1


class Race:
    """Two branches racing into a ``join="any"`` node (Ray's ``workflow.wait(num_returns=1)``):
    the branch named in ``slow`` waits until ``release`` (at most 5 s); ``pick`` fails while
    ``state["pick_down"]``, ``after`` while ``state["after_down"]``."""

    def __init__(self, counter: Counter) -> None:
        self.counter = counter
        self.slow = "two"
        self.release = threading.Event()
        self.state = {"pick_down": False, "after_down": False}

    def branch(self, name: str) -> Any:
        def node(x: int) -> str:
            self.counter.hit(name)
            if self.slow == name:
                self.release.wait(5)
            return name
        return node

    def pick(self, **won: str) -> str:
        self.counter.hit("pick")
        if self.state["pick_down"]:
            raise ConnectionError("pick down")
        return next(iter(won.values()))

    def after(self, x: str) -> str:
        if self.state["after_down"]:
            raise ConnectionError("after down")
        return f"won by {x}"

    def formation(self) -> Formation:
        return (Formation("race").add_function("start", lambda x: x)
                .add_function("one", self.branch("one")).add_function("two", self.branch("two"))
                .add_function("pick", self.pick, join="any").add_function("after", self.after)
                .connect("start", "one").connect("start", "two").connect("one", "pick").connect("two", "pick")
                .connect("pick", "after"))


@pytest.mark.parametrize("failing", ["after", "pick"])
def test_a_waits_winner_is_the_same_when_the_run_resumes_after_a_failure(store: RunStore, failing: str) -> None:
    """From test_wait.py::test_wait_failure_recovery_1 (a step using the output of
    ``workflow.wait`` recovers with the same ready list) and ::test_wait_recovery_step_id:
    the branch that won before the failure wins again, though the other one is now the
    faster."""
    race = Race(Counter())
    race.state[f"{failing}_down"] = True
    f = race.formation()
    try:
        with pytest.raises(FormationRuntimeError, match=failing) as failed:
            f.run(0, store=store)
        race.state[f"{failing}_down"] = False
        race.slow = "one"  # now "two" would win a new race
        result = f.resume(str(failed.value.run_id), store=store)
    finally:
        race.release.set()
    assert result.output == "won by one"
    assert race.counter.count("one") == 1


def test_a_wait_cancelled_before_any_branch_finished_is_won_by_the_first_to_finish_on_resume(
        store: RunStore) -> None:
    """From test_wait.py::test_wait_failure_recovery_2 (cancelled while waiting, resumed)."""
    race = Race(Counter())
    gate = threading.Event()

    def blocked(name: str) -> Any:
        def node(x: int) -> str:
            race.counter.hit(name)
            if race.counter.count(name) == 1:
                gate.wait(5)
            elif name == "two":
                race.release.wait(5)
            return name
        return node

    f = (Formation("race").add_function("start", lambda x: x)
         .add_function("one", blocked("one")).add_function("two", blocked("two"))
         .add_function("pick", race.pick, join="any").add_function("after", race.after)
         .connect("start", "one").connect("start", "two").connect("one", "pick").connect("two", "pick")
         .connect("pick", "after"))
    with f.start(store=store) as running:
        future = running.submit(0)
        try:
            assert until(lambda: race.counter.count("one") == 1 and race.counter.count("two") == 1, within=10)
            assert future.cancel()
            gate.set()
            assert until(lambda: store.get(rid(future)).status == "cancelled", within=10)
            result = running.resume(rid(future)).result(timeout=10)
        finally:
            gate.set()
            race.release.set()
    assert result.output == "won by one"
    assert race.counter.count("pick") == 1
