"""More behaviours ported from the Inngest Python SDK's own test suite (inngest/inngest-py,
``tests/test_function/cases/*.py``; see ``test_peer_inngest.py`` for the mapping):
``step.wait_for_event`` is ``interrupt()`` answered by ``resume(..., answer=)``, cancelling
a function run is cancelling our run (``future.cancel()``, ``RunStore.request_cancel``),
``step.invoke`` is a nested formation node (``add_formation``), function middleware hooks
are the run's events, and ``asyncio.gather`` of steps is ``async def`` nodes in parallel.

Deliberately different (DESIGN.md documents ours):
- ``wait_for_event(timeout=...)`` returns None when nothing came in time; a suspended run
  waits until its store's ``suspend_ttl``, then it is ``expired`` and cannot be resumed.
- ``wait_for_event(if_exp=...)`` only accepts a matching event; ``resume(answer=...)``
  takes any value as the answer (the node checks it).
- Inngest's cancel ends a run that sleeps or waits for an event; ``request_cancel`` only
  asks a running run, and a suspended one is ended with ``set_status(run_id, "cancelled")``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError
from typing import Any

import pytest

from tests.support.durable_peers import Final, counted
from tests.support.peers import Counter, InFlight, until
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError
from wingman_actors.formation import NestedRunError, NodeFailure
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.store import RunNotResumableError, RunStore

# --- wait_for_event: interrupt() and its answer -----------------------------------------


def test_a_run_waiting_for_an_event_suspends_and_the_answer_is_what_the_wait_returns(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/wait_for_event_fulfill.py."""
    counter = Counter()

    def wait(order: str) -> str:
        event = interrupt({"event": "app/approved", "order": order})
        counter.hit("after the wait")
        return f"{order} {event['status']}"

    f = (Formation("wait").add_function("before", counted(counter, "before", str.upper)).add_function("wait", wait)
         .connect("before", "wait"))
    first = f.run("o1", store=store)
    assert (first.status, first.interrupt) == ("suspended", {"node": "wait", "payload": {"event": "app/approved",
                                                                                           "order": "O1"}})
    assert store.get(first.run_id).status == "suspended"
    assert counter.count("after the wait") == 0
    done = f.resume(first.run_id, store=store, answer={"status": "approved"})
    assert (done.status, done.output) == ("succeeded", "O1 approved")
    assert counter.calls == {"before": 1, "after the wait": 1}


def test_two_waits_in_one_step_get_their_answers_in_order_across_two_resumes(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/wait_for_event_fulfill.py (several waits in
    one function, each fulfilled in turn)."""

    def wait_twice(x: str) -> str:
        first = interrupt("first?")
        second = interrupt("second?")
        return f"{x}:{first}:{second}"

    f = Formation("twice").add_function("wait", wait_twice)
    one = f.run("x", store=store)
    assert one.interrupt == {"node": "wait", "payload": "first?"}
    two = f.resume(one.run_id, store=store, answer="a")
    assert (two.status, two.interrupt) == ("suspended", {"node": "wait", "payload": "second?"})
    done = f.resume(one.run_id, store=store, answer="b")
    assert done.output == "x:a:b"


def test_a_parallel_branch_finishes_and_is_journalled_while_another_waits(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/parallel_steps.py with wait_for_event_fulfill.py."""
    counter = Counter()

    def slow(x: str) -> str:
        counter.hit("slow")
        time.sleep(0.2)
        return f"{x} slow"

    f = (Formation("branches").add_function("start", str).add_function("slow", slow)
         .add_function("ask", lambda x: f"{x} {interrupt('go?')}").add_function("join", lambda slow, ask: [slow, ask])
         .connect("start", "slow", "join").connect("start", "ask", "join"))
    first = f.run("x", store=store)
    assert first.status == "suspended" and store.load(first.run_id).visits["slow"] == {1: "x slow"}
    done = f.resume(first.run_id, store=store, answer="yes")
    assert done.output == ["x slow", "x yes"]
    assert counter.count("slow") == 1


def test_a_wait_nobody_answers_expires_after_the_stores_suspend_ttl_and_cannot_be_resumed(tmp_path: Any) -> None:
    """From inngest-py tests/test_function/cases/wait_for_event_timeout.py (differs: the wait
    ends as an expired run, not with None; see the module docstring)."""
    with RunStore(tmp_path / "ttl.sqlite", suspend_ttl=0.3) as store:
        f = Formation("ttl").add_function("wait", lambda x: interrupt("anyone?"))
        run_id = f.run("x", store=store).run_id
        assert until(lambda: store.get(run_id).status == "expired", within=10)
        with pytest.raises(RunNotResumableError, match="expired"):
            f.resume(run_id, store=store, answer="too late")


def test_an_answer_of_any_shape_is_taken_and_the_node_decides_what_it_means(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/wait_for_event_timeout_if_exp_not_match.py
    (differs: no match expression; the node checks the answer and may ask again)."""

    def approve(x: str) -> str:
        answer = interrupt({"expect": "approved"})
        while answer != "approved":
            answer = interrupt({"expect": "approved", "got": answer})
        return f"{x} approved"

    f = Formation("match").add_function("approve", approve)
    run_id = f.run("x", store=store).run_id
    again = f.resume(run_id, store=store, answer="maybe")
    assert again.interrupt == {"node": "approve", "payload": {"expect": "approved", "got": "maybe"}}
    assert f.resume(run_id, store=store, answer="approved").output == "x approved"


# --- cancellation -------------------------------------------------------------------


def test_a_cancelled_run_stops_before_its_next_step_and_is_journalled_cancelled(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/cancel.py."""
    counter = Counter()
    reached, release = threading.Event(), threading.Event()

    def step_1(x: str) -> str:
        counter.hit("step_1")
        reached.set()
        release.wait(10)
        return x

    f = (Formation("cancel").add_function("step_1", step_1).add_function("step_2", counted(counter, "step_2", str))
         .connect("step_1", "step_2"))
    try:
        with f.start(store=store) as running:
            future = running.submit("x")
            assert reached.wait(5)
            assert future.cancel()
            with pytest.raises(CancelledError):
                future.result(5)
            release.set()
            assert until(lambda: store.get(future.run_id).status == "cancelled")
    finally:
        release.set()
    assert counter.count("step_2") == 0


def test_a_run_cancelled_through_the_store_ends_cancelled_and_its_resume_skips_the_journalled_steps(
        store: RunStore, tmp_path: Any) -> None:
    """From inngest-py tests/test_function/cases/cancel.py (a cancel sent from outside the
    process running the function), with a resume of what was left."""
    counter = Counter()
    reached, release = threading.Event(), threading.Event()

    def wait(x: str) -> str:
        if counter.hit("wait") == 1:
            reached.set()
            release.wait(10)
        return f"{x} waited"

    f = (Formation("cancel").add_function("one", counted(counter, "one", str.upper)).add_function("wait", wait)
         .connect("one", "wait"))
    try:
        with f.start(store=store) as running:
            future = running.submit("x")
            assert reached.wait(5)
            with RunStore(store.path) as other:
                assert other.request_cancel(future.run_id)
            with pytest.raises(CancelledError):
                future.result(5)
            release.set()
    finally:
        release.set()
    assert store.get(future.run_id).status == "cancelled"
    done = f.resume(future.run_id, store=store)
    assert done.output == "X waited"
    assert counter.calls == {"one": 1, "wait": 2}


def test_a_cancelled_run_does_not_call_its_failure_handler(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/cancel.py with on_failure.py (a cancel is
    not a failure)."""
    counter = Counter()
    reached, release = threading.Event(), threading.Event()

    def work(x: str) -> str:
        reached.set()
        release.wait(10)
        return x

    f = (Formation("cancel").add_function("work", work).add_function("handler", counted(counter, "handler", str))
         .connect("work", "handler", on_error=True))
    events: list[FormationEvent] = []
    try:
        with f.start(store=store, on_event=events.append) as running:
            future = running.submit("x")
            assert reached.wait(5)
            assert running.cancel(future.run_id)
            with pytest.raises(CancelledError):
                future.result(5)
    finally:
        release.set()
    assert counter.count("handler") == 0
    assert [e.type for e in events if e.type in (FormationEventType.RUN_CANCELLED, FormationEventType.NODE_FAILED)] \
        == [FormationEventType.RUN_CANCELLED]


def test_cancelling_a_run_that_already_finished_returns_false_and_changes_nothing(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/cancel.py (cancel only ends a live run)."""
    f = Formation("done").add_function("fn", str.upper)
    with f.start(store=store) as running:
        future = running.submit("x")
        assert future.result(10).output == "X"
        assert not future.cancel() and not running.cancel(future.run_id)
        assert not store.request_cancel(future.run_id)
    assert store.get(future.run_id).status == "succeeded"


def test_a_waiting_run_is_not_cancelled_by_a_request_and_is_ended_by_setting_its_status(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/cancel.py (Inngest cancels a waiting run;
    differs: see the module docstring)."""
    f = Formation("waiting").add_function("wait", lambda x: interrupt("answer?"))
    run_id = f.run("x", store=store).run_id
    assert not store.request_cancel(run_id)
    assert store.get(run_id).status == "suspended"
    store.set_status(run_id, "cancelled", wait=True)
    assert store.get(run_id).status == "cancelled"


# --- step.invoke: nested formations ------------------------------------------------------


def invokee(counter: Counter, fn: Any = None) -> Formation:
    """The invoked function: ``double -> label``."""
    return (Formation("invokee").add_function("double", counted(counter, "double", lambda x: x * 2))
            .add_function("label", counted(counter, "label", fn or (lambda x: f"got {x}"))).connect("double", "label"))


def test_an_invoked_formation_returns_its_output_to_the_caller(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/invoke_by_object.py."""
    counter = Counter()
    f = (Formation("invoker").add_formation("invoke", invokee(counter)).add_function("after", str.upper)
         .connect("invoke", "after"))
    result = f.run(21, store=store)
    assert result.output == "GOT 42"
    assert result.nodes["invoke/double"].output == 42


def test_a_resumed_caller_does_not_run_the_invoked_formations_journalled_steps_again(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/invoke_by_object.py (the invoke step is
    memoized), across a resume."""
    counter = Counter()

    def after(x: str) -> str:
        if counter.hit("after") == 1:
            raise ConnectionError("once")
        return x.upper()

    f = (Formation("invoker").add_formation("invoke", invokee(counter)).add_function("after", after)
         .connect("invoke", "after"))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(21, store=store)
    done = f.resume(str(caught.value.run_id), store=store)
    assert done.output == "GOT 42"
    assert counter.calls == {"double": 1, "label": 1, "after": 2}


def test_an_invoked_formation_that_fails_fails_the_caller_with_the_inner_error_in_reach(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/invoke_failure.py (the caller's error holds
    the invoked function's error name and message)."""

    class MyException(Exception):
        pass

    def oh_no(x: int) -> str:
        raise MyException("oh no")

    f = Formation("invoker").add_formation("invoke", invokee(Counter(), oh_no))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1, store=store)
    nested = caught.value.__cause__
    assert caught.value.node == "invoke" and isinstance(nested, NestedRunError)
    inner = nested.inner.__cause__
    assert isinstance(inner, MyException) and str(inner) == "oh no"
    assert "oh no" in str(caught.value)
    assert caught.value.nodes["invoke/label"].error == "MyException: oh no"


def test_a_failure_handler_of_an_invoke_gets_the_inner_failure(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/invoke_failure.py (the caller catches the
    invoke's error)."""

    def oh_no(x: int) -> str:
        raise ValueError("oh no")

    def handler(failure: NodeFailure) -> str:
        assert isinstance(failure.error, NestedRunError)
        return f"{failure.node}: {failure.error.inner.__cause__!r}"

    f = (Formation("invoker").add_formation("invoke", invokee(Counter(), oh_no)).add_function("handler", handler)
         .connect("invoke", "handler", on_error=True))
    assert f.run(1, store=store).outputs == {"handler": "invoke: ValueError('oh no')"}


def test_an_invoke_that_runs_past_its_timeout_fails_the_caller_in_time(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/invoke_timeout.py."""
    release = threading.Event()

    def stuck(x: int) -> str:
        release.wait(10)
        return "late"

    f = Formation("invoker").add_formation("invoke", invokee(Counter(), stuck), timeout=0.3)
    try:
        started = time.monotonic()
        with pytest.raises(FormationRuntimeError) as caught:
            f.run(1, store=store)
        assert time.monotonic() - started < 5
    finally:
        release.set()
    assert isinstance(caught.value.__cause__, NodeTimeoutError)


def test_a_non_retryable_error_inside_an_invoked_formation_is_not_retried_by_the_caller(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/invoke_failure.py with non_retriable_error.py."""
    counter = Counter()

    def final(x: int) -> str:
        counter.hit("final")
        raise Final("never")

    f = Formation("invoker").add_formation("invoke", invokee(Counter(), final), retries=3, backoff=0.01)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(1, store=store)
    assert (caught.value.attempts, counter.count("final")) == (1, 1)


def test_an_invoked_formation_that_waits_suspends_the_caller_and_takes_the_answer(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/invoke_by_object.py with wait_for_event_fulfill.py."""
    counter = Counter()
    f = (Formation("invoker").add_formation("invoke", invokee(counter, lambda x: f"{x} {interrupt('ok?')}"))
         .add_function("after", str.upper).connect("invoke", "after"))
    first = f.run(2, store=store)
    assert first.status == "suspended" and first.interrupt is not None
    assert first.interrupt["payload"] == "ok?"
    done = f.resume(first.run_id, store=store, answer="yes")
    assert done.output == "4 YES"
    assert counter.count("double") == 1


# --- middleware: the order of a run's hooks ------------------------------------------------


def test_a_runs_events_come_in_the_order_its_steps_ran(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/function_middleware.py (hooks before and
    after each execution, in order)."""
    events: list[FormationEvent] = []
    f = (Formation("order").add_function("step_1", lambda x: "original output").add_function("step_2", str.upper)
         .connect("step_1", "step_2"))
    f.run("x", store=store, on_event=events.append)
    assert [(e.type.value, e.node) for e in events] == [
        ("run_started", None), ("node_started", "step_1"), ("node_finished", "step_1"),
        ("node_started", "step_2"), ("node_finished", "step_2"), ("run_finished", None)]
    assert events[2].data["output"] == "original output" and events[3].data["input"] == "original output"


def test_a_resumed_run_replays_journalled_steps_as_journalled_events_before_the_new_ones(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/function_middleware.py (each re-entry first
    sees the memoized steps, then runs the next)."""
    counter = Counter()

    def step_2(x: str) -> str:
        if counter.hit("step_2") == 1:
            raise ConnectionError("once")
        return x.upper()

    f = (Formation("order").add_function("step_1", lambda x: f"{x}1").add_function("step_2", step_2)
         .connect("step_1", "step_2"))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", store=store)
    events: list[FormationEvent] = []
    f.resume(str(caught.value.run_id), store=store, on_event=events.append)
    steps = [(e.type.value, e.node, e.data.get("journalled", False)) for e in events if e.node is not None]
    assert steps == [("node_finished", "step_1", True), ("node_started", "step_2", False),
                     ("node_finished", "step_2", False)]


def test_parallel_steps_each_start_before_they_finish_and_the_join_starts_after_all(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/middleware_parallel_steps.py."""
    events: list[FormationEvent] = []
    lock = threading.Lock()

    def record(event: FormationEvent) -> None:
        with lock:
            events.append(event)

    f = Formation("fan").add_function("start", str).add_function("join", lambda a, b, c: a + b + c)
    for name in ("a", "b", "c"):
        f.add_function(name, lambda x, name=name: name).connect("start", name).connect(name, "join")
    assert f.run("x", store=store, on_event=record).output == "abc"
    kinds = [(e.type, e.node) for e in events]
    for name in ("a", "b", "c"):
        assert kinds.index((FormationEventType.NODE_STARTED, name)) < kinds.index((FormationEventType.NODE_FINISHED,
                                                                                    name))
        assert kinds.index((FormationEventType.NODE_FINISHED, name)) < kinds.index((FormationEventType.NODE_STARTED,
                                                                                     "join"))


# --- asyncio.gather of steps; run ids ---------------------------------------------------


def test_async_steps_in_parallel_run_at_once_and_a_resume_does_not_run_them_again(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/asyncio_gather.py and async_gather.py."""
    counter, flight = Counter(), InFlight()
    both = threading.Barrier(2, timeout=5)

    def step(name: str) -> Any:
        async def run(x: str) -> str:
            counter.hit(name)
            with flight:
                await asyncio.get_running_loop().run_in_executor(None, both.wait)
            return f"{x}-{name}"

        return run

    def join(a: str, b: str) -> list[str]:
        if counter.hit("join") == 1:
            raise ConnectionError("once")
        return [a, b]

    f = Formation("gather").add_function("start", str).add_function("join", join)
    for name in ("a", "b"):
        f.add_function(name, step(name)).connect("start", name).connect(name, "join")
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", store=store)
    assert flight.peak == 2
    assert f.resume(str(caught.value.run_id), store=store).output == ["x-a", "x-b"]
    assert counter.calls == {"a": 1, "b": 1, "join": 2}


@pytest.mark.parametrize("run_id", ["with spaces", "a/b/c", "ünïcödé-☃", "quote'\"%_*", "x" * 200])
def test_a_run_id_with_unusual_characters_is_journalled_failed_and_resumed_by_that_id(
        store: RunStore, run_id: str) -> None:
    """From inngest-py tests/test_function/cases/crazy_ids.py."""
    counter = Counter()

    def step(x: str) -> str:
        if counter.hit("step") == 1:
            raise ConnectionError("once")
        return x.upper()

    f = Formation("ids").add_function("first", str).add_function("step", step).connect("first", "step")
    with pytest.raises(FormationRuntimeError) as caught:
        f.run("x", store=store, run_id=run_id)
    assert caught.value.run_id == run_id and store.get(run_id).status == "failed"
    assert f.resume(run_id, store=store).output == "X"
    assert [r.id for r in store.runs()] == [run_id]


def test_large_parallel_step_outputs_are_journalled_whole_and_not_recomputed_on_resume(store: RunStore) -> None:
    """From inngest-py tests/test_function/cases/steps_that_needs_api.py (five parallel steps
    of 1 MiB each: each runs once, and the run completes)."""
    counter = Counter()

    def big(i: int) -> str:
        counter.hit(i)
        return chr(ord("a") + i) * 1024 * 1024

    def total(parts: list[str]) -> int:
        if counter.hit("total") == 1:
            raise ConnectionError("once")
        return sum(len(p) for p in parts)

    f = Formation("big").add_map("parts", big, max_workers=5).add_function("total", total).connect("parts", "total")
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(list(range(5)), store=store)
    run_id = str(caught.value.run_id)
    assert f.resume(run_id, store=store).output == 5 * 1024 * 1024
    assert counter.calls == {0: 1, 1: 1, 2: 1, 3: 1, 4: 1, "total": 2}
    parts = store.load(run_id).visits["parts"][1]
    assert [p[:1] for p in parts] == list("abcde") and all(len(p) == 1024 * 1024 for p in parts)
