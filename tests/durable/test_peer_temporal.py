"""Behaviours ported from Temporal's Python SDK's own tests (temporalio/sdk-python,
``tests/worker/test_workflow.py``, ``tests/worker/test_child_workflow_versioning.py``,
``tests/worker/test_signals.py``): child workflows are nested formations
(``add_formation``) journalled under ids derived from the outer run's; a signal or update
a workflow waits for is an ``interrupt()`` answered through ``resume(..., answer=)``; a
query of a running workflow is ``store.get`` / ``store.load`` / ``store.history`` (and the
run's events). (Ids, replay after a crash, timeouts and PostgreSQL:
``test_peer_temporal_more.py``.)

Deliberately different (DESIGN.md documents ours):
- A child workflow has an id of its own the parent chooses; an inner run's id is derived
  from the outer run's (``"<run>/<node>/<visit>"``) and is not resumed, cancelled or
  answered on its own: the outer run is.
- A Temporal signal sent before the workflow waits for it is buffered; an answer is given
  to a run waiting at an ``interrupt()`` only (``NoPendingInterruptError`` otherwise).
- A signal reaches a running workflow; a suspended run has stopped, and ``resume``
  continues it in any process with the answer.
- ``store.get(run_id).interrupt`` is the journal's record: for an interrupt inside a
  nested formation it names the outer run's formation node (the inner run's record names
  the inner node); ``FormationResult.interrupt`` and ``runs show`` name it by path.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError
from wingman_actors.formation import NestedRunError, NodeFailure
from wingman_actors.formation.events import FormationEvent
from wingman_actors.store import NoPendingInterruptError, RunNotResumableError, RunStore, UnknownRunError


def counted(counter: Counter, name: str, fn: Any) -> Any:
    def node(x: Any) -> Any:
        counter.hit(name)
        return fn(x)

    return node


def child_of(counter: Counter, last: Any = None) -> Formation:
    """The child workflow: ``a`` (appends "a") → ``b`` (``last``, else appends "b")."""
    return (Formation("child").add_function("a", counted(counter, "a", lambda x: f"{x}a"))
            .add_function("b", last or counted(counter, "b", lambda x: f"{x}b")).connect("a", "b"))


def parent_of(child: Formation, counter: Counter, **policies: Any) -> Formation:
    """``start`` → ``child`` (the nested formation) → ``end`` (upper-cases)."""
    return (Formation("parent").add_function("start", counted(counter, "start", str.strip))
            .add_formation("child", child, **policies).add_function("end", counted(counter, "end", str.upper))
            .connect("start", "child", "end"))


class Flaky:
    """A node failing while ``broken`` is set, counting its calls."""

    def __init__(self, counter: Counter, name: str) -> None:
        self.counter, self.name, self.broken = counter, name, True

    def __call__(self, x: Any) -> Any:
        self.counter.hit(self.name)
        if self.broken:
            raise RuntimeError(f"{self.name} is down")
        return f"{x}{self.name}"


def wait_until(condition: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.005)


# --- child workflows --------------------------------------------------------------------


def test_a_child_formations_output_is_its_nodes_output_in_the_parent(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow."""
    counter = Counter()
    result = parent_of(child_of(counter), counter).run(" x ", store=store)
    assert result.output == "XAB"
    assert [result.nodes[n].status for n in ("child/a", "child/b", "child")] == ["succeeded"] * 3
    assert counter.calls == {"start": 1, "a": 1, "b": 1, "end": 1}


def test_a_child_run_is_journalled_under_an_id_derived_from_its_parent_and_names_it(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow
    (the child's info names its parent workflow)."""
    counter = Counter()
    result = parent_of(child_of(counter), counter).run("x", store=store, run_id="p1")
    child = store.get("p1/child/1")
    assert (child.formation, child.parent, child.status, child.input) == ("child", "p1", "succeeded", "x")
    assert [r.id for r in store.runs()] == ["p1"]  # a listing of top-level runs
    assert sorted(r.id for r in store.runs(nested=True)) == ["p1", "p1/child/1"]
    assert result.run_id == "p1"


def test_a_failing_child_fails_the_parent_with_the_child_error_wrapping_the_nodes_own(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow_error
    (ChildWorkflowError whose cause is the child's ApplicationError)."""
    counter = Counter()
    down = Flaky(counter, "b")
    with pytest.raises(FormationRuntimeError, match=r"node 'child'") as raised:
        parent_of(child_of(counter, down), counter).run("x", store=store, run_id="p2")
    nested = raised.value.__cause__
    assert isinstance(nested, NestedRunError) and (nested.node, nested.formation) == ("child", "child")
    assert nested.inner.node == "b" and nested.inner.run_id == "p2/child/1"
    assert type(nested.inner.__cause__) is RuntimeError and str(nested.inner.__cause__) == "b is down"
    assert nested.nodes["child/b"].status == "failed" and nested.nodes["child/a"].output == "xa"
    assert (store.get("p2").status, store.get("p2/child/1").status) == ("failed", "failed")


def test_an_error_edge_on_a_child_hands_its_handler_the_child_error(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow_error
    (the parent catches ChildWorkflowError and goes on)."""
    counter = Counter()

    def handle(failure: NodeFailure) -> str:
        assert isinstance(failure.error, NestedRunError)
        return f"{failure.node} failed at {failure.error.inner.node}: {failure.error.inner.__cause__}"

    f = (Formation("parent").add_formation("child", child_of(counter, Flaky(counter, "b")))
         .add_function("handle", handle).connect("child", "handle", on_error=True))
    result = f.run("x", store=store)
    assert result.outputs == {"handle": "child failed at b: b is down"}


def test_a_resumed_parent_does_not_rerun_the_child_nodes_that_finished(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow
    with a worker restart (a replayed parent does not start the finished child again)."""
    counter = Counter()
    end = Flaky(counter, "end")
    f = (Formation("parent").add_formation("child", child_of(counter)).add_function("end", end)
         .connect("child", "end"))
    with pytest.raises(FormationRuntimeError, match=r"node 'end'"):
        f.run("x", store=store, run_id="p3")
    end.broken = False
    assert f.resume("p3", store=store).output == "xabend"
    assert counter.calls == {"a": 1, "b": 1, "end": 2}


def test_a_resumed_parent_reruns_only_the_child_node_that_failed(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow_error
    then a retry of the parent (the child's finished activities are replayed, not run)."""
    counter = Counter()
    down = Flaky(counter, "b")
    f = parent_of(child_of(counter, down), counter)
    with pytest.raises(FormationRuntimeError):
        f.run("x", store=store, run_id="p4")
    down.broken = False
    assert f.resume("p4", store=store).output == "XAB"
    assert counter.calls == {"start": 1, "a": 1, "b": 2, "end": 1}
    assert store.get("p4/child/1").status == "succeeded"


def test_a_child_node_retried_by_its_policy_resumes_the_child_run_in_a_journalled_run(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow
    with a RetryPolicy on the child (Temporal reruns the child from its start; a journalled
    retry keeps the child's finished visits)."""
    counter = Counter()
    down = Flaky(counter, "b")

    def mend(event: FormationEvent) -> None:
        if event.type == "node_retry" and event.node == "child":
            down.broken = False

    result = parent_of(child_of(counter, down), counter, retries=1, backoff=0.001).run("x", store=store, on_event=mend)
    assert (result.output, result.nodes["child"].attempts) == ("XAB", 2)
    assert counter.calls == {"start": 1, "a": 1, "b": 2, "end": 1}


def test_a_child_node_retried_without_a_store_reruns_the_whole_child() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow
    with a RetryPolicy on the child (each attempt of the child starts over)."""
    counter = Counter()
    down = Flaky(counter, "b")

    def mend(event: FormationEvent) -> None:
        if event.type == "node_retry" and event.node == "child":
            down.broken = False

    result = parent_of(child_of(counter, down), counter, retries=1, backoff=0.001).run("x", on_event=mend)
    assert result.output == "XAB"
    assert counter.calls == {"start": 1, "a": 2, "b": 2, "end": 1}


def test_cancelling_the_parent_cancels_the_running_child_whose_cleanup_runs(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_cancel_child_started."""
    counter, started, cleaned = Counter(), threading.Event(), threading.Event()

    async def slow(x: str) -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            cleaned.set()
        return x

    f = parent_of(child_of(counter, slow), counter)
    with f.start(store=store) as running:
        future = running.submit("x", run_id="p5")
        assert started.wait(5)
        assert running.cancel("p5") is True
        with pytest.raises(CancelledError):
            future.result(5)
        assert cleaned.wait(2)
    assert (store.get("p5").status, store.get("p5/child/1").status) == ("cancelled", "cancelled")
    assert "end" not in counter.calls


def test_a_cancelled_parent_resumes_its_child_without_rerunning_its_finished_nodes(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_cancel_child_started
    (then the workflow is started again; ours resumes the cancelled run)."""
    counter, started, release = Counter(), threading.Event(), threading.Event()

    def hold(x: str) -> str:
        counter.hit("hold")
        started.set()
        release.wait(5)
        return f"{x}h"

    f = parent_of(child_of(counter, hold), counter)
    with f.start(store=store) as running:
        future = running.submit("x", run_id="p6")
        assert started.wait(5)
        running.cancel("p6")
        with pytest.raises(CancelledError):
            future.result(5)
    release.set()
    assert f.resume("p6", store=store).output == "XAH"
    assert counter.calls == {"start": 1, "a": 1, "hold": 2, "end": 1}  # hold was in flight: at-least-once


def test_a_child_past_its_nodes_timeout_fails_the_parent_and_its_child_run_ends_cancelled(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow_timeout
    (execution_timeout on the child: ChildWorkflowError caused by TimeoutError)."""
    counter, release = Counter(), threading.Event()

    def stuck(x: str) -> str:
        release.wait(5)
        return x

    started = time.monotonic()
    try:
        with pytest.raises(FormationRuntimeError, match=r"node 'child'") as raised:
            parent_of(child_of(counter, stuck), counter, timeout=0.2).run("x", store=store, run_id="p7")
        assert time.monotonic() - started < 0.2 + 1.0
    finally:
        release.set()
    assert isinstance(raised.value.__cause__, NodeTimeoutError) and raised.value.__cause__.node == "child"
    wait_until(lambda: store.get("p7/child/1").status == "cancelled")
    assert store.get("p7").status == "failed"


# --- signals and updates: interrupts ----------------------------------------------------


def approval(counter: Counter, questions: int = 1) -> Formation:
    """``draft`` → ``ask``: ``ask`` waits for ``questions`` answers in a row."""

    def ask(text: str) -> str:
        counter.hit("ask")
        return " ".join([text, *(str(interrupt({"approve?": text, "n": i})) for i in range(questions))])

    return (Formation("approval").add_function("draft", counted(counter, "draft", lambda t: f"draft {t}"))
            .add_function("ask", ask).connect("draft", "ask"))


def test_a_run_waiting_for_a_signal_is_suspended_and_the_answer_is_what_interrupt_returns(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_signal_and_query."""
    counter = Counter()
    f = approval(counter)
    waiting = f.run("cats", store=store, run_id="sig1")
    assert (waiting.status, waiting.interrupt) == ("suspended", {"node": "ask", "payload": {"approve?": "draft cats",
                                                                                          "n": 0}})
    done = f.resume("sig1", store=store, answer="approved")
    assert (done.status, done.output) == ("succeeded", "draft cats approved")
    assert counter.calls == {"draft": 1, "ask": 2}  # ask runs again to its interrupt; draft does not


def test_each_signal_answers_the_next_wait_in_order(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_signal_and_query
    (several signals, each handled in turn)."""
    counter = Counter()
    f = approval(counter, questions=3)
    result = f.run("dogs", store=store, run_id="sig2")
    for answer in ("one", "two"):
        result = f.resume("sig2", store=store, answer=answer)
        assert result.status == "suspended"
    assert result.interrupt == {"node": "ask", "payload": {"approve?": "draft dogs", "n": 2}}
    assert f.resume("sig2", store=store, answer="three").output == "draft dogs one two three"


def test_an_answer_may_be_any_journalled_value_and_reaches_the_node_as_it_was_sent(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_update_handlers_happy
    (an update's argument reaches the handler; its result goes back)."""
    seen: list[Any] = []

    def update(x: Any) -> str:
        arg = interrupt({"update": "set"})
        seen.append(arg)
        return f"{x} set to {arg['value']}"

    f = Formation("upd").add_function("update", update)
    f.run("count", store=store, run_id="upd1")
    assert f.resume("upd1", store=store, answer={"value": [1, 2], "by": None}).output == "count set to [1, 2]"
    assert seen == [{"value": [1, 2], "by": None}]


def test_a_running_formation_resumes_a_suspended_run_with_its_answer_as_a_future(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_signal_and_query
    (handle.signal from a client while a worker runs)."""
    counter = Counter()
    f = approval(counter)
    assert f.run("x", store=store, run_id="sig3").status == "suspended"
    with f.start(store=store) as running:
        future = running.resume("sig3", answer="yes")
        assert future.run_id == "sig3"
        assert future.result(5).output == "draft x yes"


def test_a_signal_inside_a_child_suspends_the_parent_and_the_answer_reaches_the_child(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_child_workflow_signal
    (signalling a child workflow the parent started)."""
    counter = Counter()
    f = parent_of(approval(counter), counter)
    waiting = f.run("cats", store=store, run_id="sig4")
    assert waiting.interrupt == {"node": "child/ask", "payload": {"approve?": "draft cats", "n": 0}}
    assert f.resume("sig4", store=store, answer="ok").output == "DRAFT CATS OK"
    assert counter.calls == {"start": 1, "draft": 1, "ask": 2, "end": 1}


async def _async_ask(x: str) -> str:
    await asyncio.sleep(0)
    return f"{x}:{interrupt({'async': x})}"


def test_an_async_node_waits_for_its_signal_and_aresume_answers_it(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_signal_and_query
    (an async workflow awaiting its signal)."""
    f = Formation("async").add_formation("child", Formation("inner").add_function("ask", _async_ask))

    async def main() -> tuple[Any, Any]:
        first = await f.arun("x", store=store, run_id="sig5")
        return first.interrupt, (await f.aresume("sig5", store=store, answer="go")).output

    assert asyncio.run(main()) == ({"node": "child/ask", "payload": {"async": "x"}}, "x:go")


def test_an_answer_for_a_run_not_waiting_for_one_is_refused_and_changes_nothing(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_signal_and_query_errors.
    Temporal buffers a signal sent before the workflow waits; an answer is refused."""
    counter = Counter()
    down = Flaky(counter, "b")
    f = child_of(counter, down)
    with pytest.raises(FormationRuntimeError):
        f.run("x", store=store, run_id="sig6")
    with pytest.raises(NoPendingInterruptError, match=r"no pending interrupt.*without answer="):
        f.resume("sig6", store=store, answer="too early")
    assert store.get("sig6").status == "failed" and counter.calls == {"a": 1, "b": 1}


def test_an_answer_for_a_run_that_is_still_running_is_refused(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_signal_and_query_errors
    (ours: the run is not waiting; a second process may not take it over)."""
    reached, release = threading.Event(), threading.Event()

    def hold(x: str) -> str:
        reached.set()
        release.wait(5)
        return x

    f = Formation("busy").add_function("hold", hold)
    with f.start(store=store) as running:
        future = running.submit("x", run_id="sig7")
        assert reached.wait(5)
        with pytest.raises(RunNotResumableError, match=r"it is running"):
            f.resume("sig7", store=store, answer="now")
        release.set()
        assert future.result(5).output == "x"


def test_an_answer_for_an_unknown_run_names_the_listing(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_signal_and_query_errors
    (signalling a workflow that does not exist: RPCError not found)."""
    with pytest.raises(UnknownRunError, match=r"no run 'nope'.*store.runs\(\)"):
        approval(Counter()).resume("nope", store=store, answer="x")


# --- queries ----------------------------------------------------------------------------


def test_a_running_run_can_be_queried_for_its_status_and_finished_visits(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_signal_and_query
    (a query reads a running workflow's state)."""
    counter, reached, release = Counter(), threading.Event(), threading.Event()

    def hold(x: str) -> str:
        reached.set()
        release.wait(5)
        return f"{x}h"

    f = parent_of(child_of(counter, hold), counter)
    with f.start(store=store) as running:
        future = running.submit(" x ", run_id="q1")
        assert reached.wait(5)
        store.flush()
        assert store.get("q1").status == "running" and store.get("q1/child/1").status == "running"
        assert store.load("q1").visits == {"start": {1: "x"}}
        assert store.load("q1/child/1").visits == {"a": {1: "xa"}}
        release.set()
        assert future.result(5).output == "XAH"
    assert [(v.node, v.visit, v.output) for v in store.history("q1")] == [
        ("start", 1, "x"), ("child", 1, "xah"), ("end", 1, "XAH")]


def test_a_suspended_run_can_be_queried_for_what_it_waits_on(store: RunStore) -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_signal_and_query
    (querying a workflow blocked on a signal)."""
    counter = Counter()
    parent_of(approval(counter), counter).run("cats", store=store, run_id="q2")
    record = store.get("q2")
    assert record.status == "suspended" and record.expires is not None
    assert record.interrupt is not None and record.interrupt.node == "child"  # the journal's own node
    assert record.interrupt.payload == {"approve?": "draft cats", "n": 0} and not record.interrupt.answered
    inner = store.get("q2/child/1").interrupt
    assert inner is not None and (inner.node, inner.visit) == ("ask", 1)
    assert [r.id for r in store.runs("suspended")] == ["q2"]


def test_a_runs_events_report_each_visits_input_and_output_as_it_happens() -> None:
    """Ported from temporalio/sdk-python tests/worker/test_workflow.py::test_workflow_history_info
    (the workflow's history lists each activity's scheduling and result)."""
    counter = Counter()
    seen: list[tuple[str, str | None, Any]] = []

    def listen(event: FormationEvent) -> None:
        if event.type == "node_started":
            seen.append(("started", event.node, event.data["input"]))
        elif event.type == "node_finished":
            seen.append(("finished", event.node, event.data["output"]))

    parent_of(child_of(counter), counter).run(" x ", on_event=listen)
    assert ("started", "child/a", "x") in seen and ("finished", "child/b", "xab") in seen
    assert seen[0] == ("started", "start", " x ") and seen[-1] == ("finished", "end", "XAB")
