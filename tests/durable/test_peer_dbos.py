"""Behaviours ported from DBOS Transact's own test suite (dbos-inc/dbos-transact-py,
``tests/test_dbos.py``, ``test_failures.py``, ``test_workflow_management.py``,
``test_workflow_cancel.py``): a DBOS workflow is our journalled run, a step is a node
visit, ``SetWorkflowID`` is ``run_id=``, recovery and ``resume_workflow`` are ``resume``,
``fork_workflow`` is ``fork``. (Listing, introspection, the CLI and crashes are in
``test_peer_dbos_more.py``.)

Deliberately different (DESIGN.md documents ours):
- Calling a workflow again with an id it already ran under returns the recorded result
  without running it (DBOS's idempotency); ``run(..., run_id=)`` with an id the store
  already holds is refused, naming the fix, whatever the input: the run's result is read
  from the store, an unfinished run is continued with ``resume``.
- ``resume_workflow`` of a finished workflow returns its result again; ``resume`` of a
  finished run is refused (``RunNotResumableError``, naming ``store.load``).
- ``fork_workflow(id, step)`` counts steps from 1; ours names the node (and visit) to fork at.
"""

from __future__ import annotations

import itertools
import time
from concurrent.futures import CancelledError, ThreadPoolExecutor
from typing import Any

import pytest

from tests.support.peers import Counter, Gate
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, WingmanError
from wingman_actors.store import (
    FormationMismatchError,
    FormationShape,
    RunNotResumableError,
    RunStore,
    SerializationError,
    StoreError,
    UnknownRunError,
)


def counted(counter: Counter, name: str, fn: Any = None) -> Any:
    """A node function that counts its calls under ``name`` (then applies ``fn``)."""

    def node(x: Any) -> Any:
        counter.hit(name)
        return x if fn is None else fn(x)

    node.__name__ = name
    return node


def chain(counter: Counter, *names: str, name: str = "chain") -> Formation:
    """``names[0] -> names[1] -> ...``, each appending its name to a string input."""
    f = Formation(name)
    for n in names:
        f.add_function(n, counted(counter, n, lambda x, n=n: f"{x}{n}"))
    for a, b in itertools.pairwise(names):
        f.connect(a, b)
    return f


def gated(counter: Counter, gate: Gate) -> Formation:
    """``one -> wait -> two``: ``wait`` blocks on ``gate`` (a ``Gate(counter, suffix="wait")``)."""
    return (Formation("gated").add_function("one", counted(counter, "one", lambda x: f"{x}one"))
            .add_function("wait", gate).add_function("two", counted(counter, "two", lambda x: f"{x}two"))
            .connect("one", "wait").connect("wait", "two"))


# --- idempotency by run id ------------------------------------------------------------


def test_a_run_id_already_in_the_store_is_refused_naming_the_fix_and_nothing_runs_again(store: RunStore) -> None:
    # DBOS test_dbos.py::test_simple_workflow (OAOO under SetWorkflowID); ours refuses, as DESIGN's run_id= implies
    counter = Counter()
    f = chain(counter, "a", "b")
    assert f.run("x", store=store, run_id="wf-1").output == "xab"
    for again in ("x", "other input"):  # the same input, and a different one: never silently reused
        with pytest.raises(StoreError, match=r"run id 'wf-1' already exists .*pass a new run_id, or None"):
            f.run(again, store=store, run_id="wf-1")
    assert counter.calls == {"a": 1, "b": 1}
    assert store.get("wf-1").input == "x" and store.load("wf-1").visits["b"] == {1: "xab"}


def test_two_runs_started_at_once_with_one_id_run_once(store: RunStore) -> None:
    # DBOS test_dbos.py::test_simple_workflow / test_concurrent_workflows (one id, one execution)
    counter = Counter()

    def slow(x: str) -> str:
        counter.hit("slow")
        time.sleep(0.2)
        return x + "!"

    f = Formation("once").add_function("slow", slow)
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(f.run, "x", store=store, run_id="same") for _ in range(2)]
        outcomes = [f.exception() or f.result().output for f in futures]
    assert sorted(map(str, outcomes)) == sorted(["x!", str(next(o for o in outcomes if isinstance(o, StoreError)))])
    assert counter.calls == {"slow": 1}


def test_a_submitted_run_id_already_in_the_store_is_refused_before_the_run_starts(store: RunStore) -> None:
    # DBOS test_dbos.py::test_start_workflow (start_workflow under an existing id)
    counter = Counter()
    with chain(counter, "a").start(store=store) as running:
        running.submit("x", run_id="s-1").result(10)
        with pytest.raises(StoreError, match=r"'s-1' already exists"):
            running.submit("y", run_id="s-1")
    assert counter.calls == {"a": 1}


def test_a_run_whose_input_the_store_cannot_journal_is_refused_before_it_begins(store: RunStore) -> None:
    # DBOS test_failures.py::test_nonserializable_args (a workflow's arguments must serialise)
    counter = Counter()
    with pytest.raises(SerializationError, match=r"input of run 'bad-in'.*allow_pickle=True"):
        chain(counter, "a").run(object(), store=store, run_id="bad-in")
    assert counter.calls == {}
    with pytest.raises(UnknownRunError):
        store.get("bad-in")  # nothing half-begun left in the listing


def test_a_node_output_the_store_cannot_journal_fails_the_run_naming_the_node_and_the_fix(store: RunStore) -> None:
    # DBOS test_failures.py::test_nonserializable_return (a step's return value must serialise)
    f = Formation("unjournalled").add_function("bad", lambda x: object())
    with pytest.raises(FormationRuntimeError, match=r"node 'bad'.*cannot journal.*allow_pickle=True"):
        f.run(1, store=store, run_id="bad-out")
    record = store.get("bad-out")
    assert record.status == "failed" and record.error is not None and "SerializationError" in record.error


# --- recovery: journalled steps are not run again ---------------------------------------


def test_a_failed_run_resumes_without_running_its_journalled_visits_again(store: RunStore) -> None:
    # DBOS test_dbos.py::test_recovery_workflow (recovery skips the recorded transaction)
    counter, broken = Counter(), [True]

    def flaky(x: str) -> str:
        counter.hit("flaky")
        if broken[0]:
            raise ConnectionError("down")
        return x + "flaky"

    f = chain(counter, "a", "b").add_function("flaky", flaky).connect("b", "flaky")
    with pytest.raises(FormationRuntimeError, match=r"node 'flaky'"):
        f.run("x", store=store, run_id="rec-1")
    broken[0] = False
    assert f.resume("rec-1", store=store).output == "xabflaky"
    assert counter.calls == {"a": 1, "b": 1, "flaky": 2}


def test_a_node_that_returns_none_is_journalled_and_not_run_again_on_resume(store: RunStore) -> None:
    # DBOS test_dbos.py::test_recovery_workflow_step / test_workflow_returns_none (a None output is recorded)
    counter, broken = Counter(), [True]

    def after(x: Any) -> str:
        counter.hit("after")
        if broken[0]:
            raise RuntimeError("later")
        return f"got {x!r}"

    f = (Formation("nones").add_function("none", counted(counter, "none", lambda x: None))
         .add_function("after", after).connect("none", "after"))
    with pytest.raises(FormationRuntimeError):
        f.run("x", store=store, run_id="none-1")
    assert store.load("none-1").visits == {"none": {1: None}}
    broken[0] = False
    assert f.resume("none-1", store=store).output == "got None"
    assert counter.calls == {"none": 1, "after": 2}


def test_two_resumes_of_one_run_at_once_run_its_missing_visit_once(store: RunStore) -> None:
    # DBOS test_dbos.py::test_recovery_thread / test_workflow_recovery (one recovery executes it)
    counter, broken = Counter(), [True]

    def last(x: str) -> str:
        counter.hit("last")
        time.sleep(0.2)
        if broken[0]:
            raise RuntimeError("down")
        return x + "!"

    f = chain(counter, "a").add_function("last", last).connect("a", "last")
    with pytest.raises(FormationRuntimeError):
        f.run("x", store=store, run_id="twice")
    broken[0] = False
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(f.resume, "twice", store=store) for _ in range(2)]
        outcomes = [fu.exception() or fu.result().output for fu in futures]
    assert "xa!" in outcomes
    refused = [o for o in outcomes if isinstance(o, RunNotResumableError)]
    assert len(refused) == 1 and "it is running" in str(refused[0])
    assert counter.calls == {"a": 1, "last": 2}


def test_resuming_a_run_that_already_succeeded_is_refused_and_runs_nothing(store: RunStore) -> None:
    # DBOS test_workflow_management.py::test_cancel_resume ("resume again: it does not run again");
    # ours refuses the second resume instead of returning the result again (DESIGN: resume continues an unfinished run)
    counter = Counter()
    f = chain(counter, "a", "b")
    f.run("x", store=store, run_id="done")
    with pytest.raises(RunNotResumableError, match=r"already succeeded; read its outputs with store.load"):
        f.resume("done", store=store)
    assert counter.calls == {"a": 1, "b": 1}


def test_resuming_a_run_the_store_does_not_hold_names_the_listing(store: RunStore) -> None:
    # DBOS test_workflow_management.py::test_restart ("restarting a nonexistent workflow throws")
    with pytest.raises(UnknownRunError, match=r"no run 'fake_id' .*store.runs\(\)") as raised:
        chain(Counter(), "a").resume("fake_id", store=store)
    assert isinstance(raised.value, WingmanError)


def test_a_run_resumes_only_in_the_formation_it_started_with(store: RunStore) -> None:
    # DBOS test_dbos.py::test_nonexistent_workflow / test_failures.py (recovering a workflow whose code changed)
    counter = Counter()
    with pytest.raises(FormationRuntimeError):
        chain(counter, "a").add_function("b", lambda x: 1 / 0).connect("a", "b").run("x", store=store, run_id="shape")
    with pytest.raises(FormationMismatchError, match=r"node 'b' \(function\) is missing") as raised:
        chain(counter, "a").resume("shape", store=store)
    assert "Rebuild the formation" in str(raised.value)
    assert store.get("shape").status == "failed"  # the refused resume changed nothing


# --- step retries -----------------------------------------------------------------------


def test_a_node_retried_until_it_succeeds_is_journalled_once_with_its_attempts(store: RunStore) -> None:
    # DBOS test_dbos.py::test_step_retries (a step with retries_allowed runs until it succeeds)
    counter = Counter()

    def flaky(x: str) -> str:
        if counter.hit("flaky") < 3:
            raise ConnectionError("try again")
        return x + "!"

    result = Formation("retry").add_function("flaky", flaky, retries=2, backoff=0.01).run("x", store=store)
    assert (result.output, result.nodes["flaky"].attempts) == ("x!", 3)
    assert [(v.node, v.visit, v.output) for v in store.history(result.run_id)] == [("flaky", 1, "x!")]


def test_a_node_whose_retries_are_spent_fails_the_run_with_the_attempts_in_its_journalled_error(
        store: RunStore) -> None:
    # DBOS test_dbos.py::test_step_retries (DBOSMaxStepRetriesExceeded after max_attempts)
    counter = Counter()

    def down(x: str) -> str:
        counter.hit("down")
        raise ConnectionError("still down")

    f = Formation("spent").add_function("down", down, retries=2, backoff=0.01)
    with pytest.raises(FormationRuntimeError, match=r"node 'down' failed after 3 attempt") as raised:
        f.run("x", store=store, run_id="spent")
    assert raised.value.nodes["down"].attempts == 3 and counter.calls == {"down": 3}
    record = store.get("spent")
    assert record.status == "failed" and record.error is not None and "3 attempt" in record.error
    assert "ConnectionError: still down" in record.error


def test_a_step_that_raises_is_not_retried_without_retries_and_its_error_is_journalled(store: RunStore) -> None:
    # DBOS test_dbos.py::test_exception_workflow (a step's exception reaches the caller; recorded once)
    counter = Counter()

    def raises(x: str) -> str:
        counter.hit("raises")
        raise ValueError("test error")

    f = chain(counter, "a").add_function("raises", raises).connect("a", "raises")
    with pytest.raises(FormationRuntimeError) as raised:
        f.run("x", store=store, run_id="exc")
    assert isinstance(raised.value.__cause__, ValueError) and str(raised.value.__cause__) == "test error"
    assert counter.calls == {"a": 1, "raises": 1}
    assert "ValueError: test error" in (store.get("exc").error or "")


def test_a_run_past_its_timeout_is_journalled_failed_and_resumes_to_its_end(store: RunStore) -> None:
    # DBOS test_dbos.py::test_workflow_timeout (a timed-out workflow ends; ours resumes, DESIGN: a failed run resumes)
    counter, slow = Counter(), [True]

    def sleepy(x: str) -> str:
        counter.hit("sleepy")
        if slow[0]:
            time.sleep(2)
        return x + "z"

    f = chain(counter, "a").add_function("sleepy", sleepy).connect("a", "sleepy")
    started = time.monotonic()
    with pytest.raises(FormationRuntimeError, match=r"timed out after 0.3s; unfinished: sleepy"):
        f.run("x", store=store, run_id="late", timeout=0.3)
    assert time.monotonic() - started < 1.5
    assert store.get("late").status == "failed"
    slow[0] = False
    assert f.resume("late", store=store).output == "xaz"
    assert counter.calls == {"a": 1, "sleepy": 2}


# --- cancel and resume ------------------------------------------------------------------


def test_a_cancelled_run_stops_after_its_journalled_step_and_resume_runs_only_the_rest(store: RunStore) -> None:
    # DBOS test_workflow_management.py::test_cancel_resume (stops after step one; resume runs step two once)
    counter = Counter()
    gate = Gate(counter, suffix="wait")
    f = gated(counter, gate)
    with f.start(store=store) as running:
        future = running.submit("x", run_id="cr")
        assert gate.reached.wait(5)
        assert running.cancel("cr") is True
        gate.opened.set()
        with pytest.raises(CancelledError):
            future.result(5)
    assert store.get("cr").status == "cancelled"
    assert counter.calls == {"one": 1, "wait": 1}
    assert f.resume("cr", store=store).output == "xonewaittwo"
    assert counter.calls == {"one": 1, "wait": 2, "two": 1}  # wait was in flight at the cancel: at-least-once
    with pytest.raises(RunNotResumableError):
        f.resume("cr", store=store)
    assert counter.calls == {"one": 1, "wait": 2, "two": 1}


def test_a_cancel_requested_through_another_store_stops_the_run_and_sticks(path: Any) -> None:
    # DBOS test_workflow_cancel.py::test_two_steps_cancel (cancel_workflow by id, from outside the workflow)
    counter = Counter()
    gate = Gate(counter, suffix="wait")
    with RunStore(path) as store, gated(counter, gate).start(store=store) as running:
        future = running.submit("x", run_id="far")
        assert gate.reached.wait(5)
        with RunStore(path) as other:  # as another process would
            assert other.request_cancel("far") is True
        with pytest.raises(CancelledError):
            future.result(5)
        gate.opened.set()
        assert store.get("far").status == "cancelled"
        assert running.cancel("far") is False  # already ended
    with RunStore(path) as reopened:
        assert reopened.get("far").status == "cancelled"  # still cancelled in a new process's store
        assert reopened.request_cancel("far") is False
    assert "two" not in counter.calls


def test_cancelling_a_finished_run_changes_nothing(store: RunStore) -> None:
    # DBOS test_workflow_management.py (cancel_workflow of a completed workflow leaves it SUCCESS)
    chain(Counter(), "a").run("x", store=store, run_id="fin")
    assert store.request_cancel("fin") is False
    with chain(Counter(), "a").start(store=store) as running:
        assert running.cancel("fin") is False
    record = store.get("fin")
    assert (record.status, record.cancel_requested) == ("succeeded", None)


def test_a_cancel_during_a_retry_backoff_ends_the_run_at_once_without_more_attempts(store: RunStore) -> None:
    # DBOS test_dbos.py::test_step_retries with cancel (a cancelled workflow stops retrying its step)
    counter = Counter()

    def down(x: str) -> str:
        counter.hit("down")
        raise ConnectionError("down")

    f = Formation("backoff").add_function("down", down, retries=5, backoff=2.0, jitter=False)
    with f.start(store=store) as running:
        future = running.submit("x", run_id="bo")
        deadline = time.monotonic() + 5
        while counter.count("down") < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.monotonic()
        assert running.cancel("bo") is True
        with pytest.raises(CancelledError):
            future.result(5)
        assert time.monotonic() - started < 1.0
        time.sleep(0.1)
    assert counter.calls == {"down": 1} and store.get("bo").status == "cancelled"


def test_a_suspended_run_cancelled_through_the_store_is_resumed_with_its_answer(store: RunStore) -> None:
    # DBOS test_workflow_management.py::test_cancel_resume on a workflow waiting in recv
    counter = Counter()

    def ask(x: str) -> str:
        counter.hit("ask")
        return f"{x}:{interrupt({'approve': x})}"

    f = chain(counter, "a").add_function("ask", ask).connect("a", "ask")
    first = f.run("x", store=store, run_id="asked")
    assert (first.status, first.interrupt) == ("suspended", {"node": "ask", "payload": {"approve": "xa"}})
    store.set_status("asked", "cancelled", error="cancelled by the operator")
    assert [r.id for r in store.runs("cancelled")] == ["asked"]
    result = f.resume("asked", store=store, answer="yes")
    assert (result.status, result.output) == ("succeeded", "xa:yes")
    assert counter.calls == {"a": 1, "ask": 2}


# --- child runs: ids derived from the parent's ------------------------------------------


def test_an_inner_run_id_taken_by_a_finished_top_level_run_fails_the_outer_run_instead_of_reusing_its_journal(
        store: RunStore) -> None:
    # DBOS test_dbos.py::test_child_workflow (a child's id derives from its parent's; it runs once, for that parent)
    counter = Counter()
    inner = chain(counter, "i", name="inner")
    inner.run("other input ", store=store, run_id="o/child/1")  # a user's run, under the id "o"'s child will want
    outer = Formation("outer").add_formation("child", inner)
    with pytest.raises(FormationRuntimeError, match=r"node 'child'") as raised:
        outer.run("x", store=store, run_id="o")
    assert "'o/child/1'" in str(raised.value) and "top-level run" in str(raised.value)
    assert "another run_id" in str(raised.value)
    assert store.load("o/child/1").visits == {"i": {1: "other input i"}}  # the user's run is left as it was
    assert counter.calls == {"i": 1}


def test_an_inner_run_id_taken_by_an_unfinished_top_level_run_is_not_taken_over_by_the_outer_run(
        store: RunStore) -> None:
    # DBOS test_dbos.py::test_child_workflow (a child workflow id is never another workflow's)
    counter, broken = Counter(), [True]

    def flaky(x: str) -> str:
        counter.hit("flaky")
        if broken[0]:
            raise RuntimeError("down")
        return x + "!"

    inner = Formation("inner").add_function("flaky", flaky)
    with pytest.raises(FormationRuntimeError):
        inner.run("theirs", store=store, run_id="p/child/1")
    broken[0] = False
    with pytest.raises(FormationRuntimeError, match=r"'p/child/1'.*top-level run"):
        Formation("outer").add_formation("child", inner).run("mine", store=store, run_id="p")
    record = store.get("p/child/1")
    assert (record.status, record.input, record.parent) == ("failed", "theirs", None)
    assert counter.calls == {"flaky": 1}
    assert inner.resume("p/child/1", store=store).output == "theirs!"  # still its owner's to resume


def test_the_store_refuses_an_outer_run_the_claim_of_a_top_level_run_as_its_inner_run(location: str) -> None:
    # DBOS test_dbos.py::test_child_workflow (the store, on both backends, never hands a run to another as its child)
    f = chain(Counter(), "i", name="inner")
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError):
            f.add_function("boom", lambda x: 1 / 0).connect("i", "boom").run("x", store=store, run_id="q/child/1")
        store.begin_run("outer", Formation("outer").add_formation("child", chain(Counter(), "i")).graph, "x",
                        run_id="q")
        for shape in (FormationShape.of(f.graph), None):  # with the shape check, and the claim alone
            with pytest.raises(RunNotResumableError, match=r"holds a top-level run of formation 'inner' \(failed\)"):
                store.claim_run("q/child/1", shape, formation="inner", parent="q")
        record = store.get("q/child/1")
        assert (record.status, record.parent) == ("failed", None)
