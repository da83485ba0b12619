"""Durable tasks, their waits, child spawns and replays, ported from the Hatchet Python SDK's
examples and their e2e tests (hatchet-dev/hatchet, ``sdks/python/examples/durable``,
``conditions``, ``bug_tests/payload_bug_on_replay``, ``bug_tests/durable_child_key_duplicate_child``,
``bug_tests/durable_dag_child``, ``sdks/python/tests/child_spawn_cache_on_retry``): a durable
task's ``ctx.aio_wait_for(UserEventCondition)`` is ``interrupt()`` and the event that fulfils it
``resume(..., answer=)``; ``ctx.aio_sleep_for`` is a node whose finished visit the journal keeps,
so a resume does not sleep again; a spawned child workflow is a nested formation (journalled
with its parent); ``hatchet.runs.aio_replay`` of a cancelled or failed run is ``resume``.

Deliberately different (docs/durable-runs.md documents ours): Hatchet replays a *completed*
run (``test_durable_completed_replay``: its memoised sleeps return at once); our ``resume``
refuses a succeeded run, saying so and pointing at its outputs, and ``fork(run_id, at=node,
...)`` is the replay: it reruns from that node on with the journal before it reused.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import CancelledError
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import Counter, until
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import FormationMismatchError, RunNotResumableError, RunStore


class SleepResult(BaseModel):
    """Hatchet's memo example's result (importable: the journal reads it back by its path)."""

    message: str
    duration: float


@pytest.fixture
def gate() -> Iterator[tuple[threading.Event, threading.Event]]:
    """``(entered, release)`` for a node held until the test releases it (released at the
    end of the test, pass or fail, so no thread outlives it)."""
    entered, release = threading.Event(), threading.Event()
    try:
        yield entered, release
    finally:
        release.set()


def sleeper(counter: Counter, name: str = "sleep") -> Any:
    """A stand-in for ``ctx.aio_sleep_for``: counts its runs (no real sleep)."""

    def sleep(x: Any) -> Any:
        counter.hit(name)
        return x

    return sleep


def test_a_durable_task_waits_for_its_event_and_finishes_once_the_event_comes(store: RunStore) -> None:
    """From hatchet examples/durable/test_durable.py test_durable (durable_task sleeps, waits
    for EVENT_KEY, then returns status success once the event is pushed)."""
    counter = Counter()

    def wait_for_event(x: Any) -> dict[str, str]:
        event = interrupt({"event_key": "durable-example:event"})
        return {"status": "success", "event": event["test"]}

    f = (Formation("DurableWorkflow").add_function("sleep", sleeper(counter))
         .add_function("durable_task", wait_for_event).connect("sleep", "durable_task"))
    first = f.run(None, store=store)
    assert (first.status, first.interrupt) == ("suspended",
                                               {"node": "durable_task", "payload": {"event_key": "durable-example:event"}})
    assert [r.id for r in store.runs(status="suspended")] == [first.run_id]
    done = f.resume(first.run_id, store=store, answer={"test": "test"})
    assert (done.status, done.output) == ("succeeded", {"status": "success", "event": "test"})
    assert counter.count("sleep") == 1 and store.get(first.run_id).status == "succeeded"


def test_a_task_waiting_only_for_an_event_gets_what_the_event_carries(store: RunStore) -> None:
    """From hatchet examples/conditions/test_conditions.py test_wait_for_user_event
    (wfe_target runs once ``wait_for_event_only:go`` is pushed)."""
    f = (Formation("WaitForEventOnlyWorkflow").add_function("wfe_start", lambda _: 1)
         .add_function("wfe_target", lambda n: {"random_number": n + interrupt("wait_for_event_only:go")})
         .connect("wfe_start", "wfe_target"))
    first = f.run(None, store=store)
    assert first.nodes["wfe_target"].status == "suspended" and first.nodes["wfe_start"].output == 1
    assert f.resume(first.run_id, store=store, answer=4).output == {"random_number": 5}


def test_two_waits_in_one_task_get_their_answers_in_turn(store: RunStore) -> None:
    """From hatchet examples/bug_tests/test_durable_event_wait_scopes (each wait of a task
    is answered by its own event, in order)."""
    counter = Counter()

    def two_waits(_: Any) -> list[str]:
        counter.hit("two_waits")
        return [interrupt("first"), interrupt("second")]

    f = Formation("scopes").add_function("two_waits", two_waits)
    first = f.run(None, store=store)
    assert first.interrupt == {"node": "two_waits", "payload": "first"}
    second = f.resume(first.run_id, store=store, answer="a")
    assert second.interrupt == {"node": "two_waits", "payload": "second"}
    assert f.resume(first.run_id, store=store, answer="b").output == ["a", "b"]
    assert counter.count("two_waits") == 3  # the code before each wait runs again: keep side effects after it


def test_a_wait_for_the_first_of_a_sleep_and_an_event_ends_with_the_sleep_without_suspending(
        store: RunStore) -> None:
    """From hatchet examples/durable/worker.py wait_for_or_group_1 (``or_(SleepCondition,
    UserEventCondition)``: the sleep comes first, its key is returned): ``join="any"`` over
    a branch that would wait for an answer and one that finishes first; the waiting one is
    cancelled before it asks."""
    won = threading.Event()

    def event(x: Any) -> Any:
        won.wait(5)  # the sleep has won by now: this branch is a loser, its question goes nowhere
        return interrupt("durable-example:event")

    def wait_for_or_group_1(first: dict[str, str]) -> dict[str, str]:
        won.set()
        return first

    f = (Formation("or_group").add_function("start", lambda x: x).add_function("event", event)
         .add_function("sleep", lambda x: "CREATE").add_function("wait_for_or_group_1", wait_for_or_group_1, join="any")
         .connect("start", "event", "wait_for_or_group_1").connect("start", "sleep", "wait_for_or_group_1"))
    result = f.run(None, store=store)
    assert (result.status, result.interrupt, result.output) == ("succeeded", None, {"sleep": "CREATE"})
    assert result.nodes["event"].status == "cancelled" and store.get(result.run_id).status == "succeeded"


def test_a_wait_asked_before_the_sleep_ends_is_withdrawn_when_the_sleep_wins_and_the_run_goes_on(
        store: RunStore) -> None:
    """From hatchet examples/durable/worker.py wait_for_or_group_2 (``or_`` of a long sleep
    and an event: the sleep ends first, and the run ends with it without waiting for
    anyone). The branch that asks starts the run's suspension; the sleep, in flight then,
    finishes and wins the ``join="any"``, so the question is withdrawn and the run goes on."""
    asked = threading.Event()

    def event(x: Any) -> Any:
        try:
            return interrupt("durable-example:event")
        finally:
            asked.set()

    def sleep(x: Any) -> str:
        assert asked.wait(5)
        time.sleep(0.1)  # the run has taken the question by now
        return "CREATE"

    f = (Formation("or_group").add_function("start", lambda x: x).add_function("event", event)
         .add_function("sleep", sleep).add_function("wait_for_or_group_2", lambda first: first, join="any")
         .connect("start", "event", "wait_for_or_group_2").connect("start", "sleep", "wait_for_or_group_2"))
    result = f.run(None, store=store)
    assert (result.status, result.interrupt, result.output) == ("succeeded", None, {"sleep": "CREATE"})
    assert result.nodes["event"].status == "cancelled"
    record = store.load(result.run_id)
    assert (record.run.status, record.pending_interrupt) == ("succeeded", None)
    assert [(i.node, i.withdrawn, i.answered) for i in record.interrupts] == [("event", True, False)]


def test_a_run_cancelled_mid_sleep_resumes_without_repeating_what_finished(store: RunStore,
                                                                          gate: tuple[threading.Event,
                                                                                      threading.Event]) -> None:
    """From hatchet examples/durable/test_durable.py test_durable_sleep_cancel_replay
    (cancelled half-way through its sleep, then replayed: it finishes, and the sleep
    already done is not slept again)."""
    entered, release = gate
    counter = Counter()

    def wait_for_sleep_twice(x: str) -> dict[str, str]:
        if counter.hit("wait") == 1:
            entered.set()
            release.wait(10)
        return {"runtime": x}

    f = (Formation("sleep_twice").add_function("sleep", sleeper(counter))
         .add_function("wait", wait_for_sleep_twice).connect("sleep", "wait"))
    with f.start(store=store) as running:
        future = running.submit("slept")
        assert entered.wait(5)
        assert future.cancel() is True
        with pytest.raises(CancelledError):
            future.result(timeout=5)
        assert until(lambda: store.get(future.run_id).status == "cancelled")
        release.set()
        resumed = running.resume(future.run_id).result(timeout=10)
    assert resumed.output == {"runtime": "slept"}
    assert (counter.count("sleep"), counter.count("wait")) == (1, 2)


def test_a_completed_run_is_not_resumed_and_a_fork_replays_it_from_a_node(store: RunStore) -> None:
    """From hatchet examples/durable/test_durable.py test_durable_completed_replay (a
    completed run replayed: its sleep is not slept again; differs: see the module docstring)."""
    counter = Counter()
    f = (Formation("completed").add_function("sleep", sleeper(counter))
         .add_function("report", lambda x: {"runtime": x}).connect("sleep", "report"))
    first = f.run(5, store=store)
    with pytest.raises(RunNotResumableError) as caught:
        f.resume(first.run_id, store=store)
    assert "already succeeded" in str(caught.value) and "store.load" in str(caught.value)
    forked = f.fork(first.run_id, store=store, at="report", input=0)
    assert store.load(forked).visits["report"][1] == {"runtime": 0}
    assert counter.count("sleep") == 1 and store.load(first.run_id).visits["report"][1] == {"runtime": 5}


def child_workflow() -> Formation:
    return Formation("spawn_child_task").add_function("spawn_child_task", lambda _: {"message": "hello from child"})


def test_a_durable_task_gets_its_spawned_childs_output(store: RunStore) -> None:
    """From hatchet examples/durable/test_durable.py test_durable_child_spawn."""
    f = (Formation("durable_with_spawn").add_formation("child", child_workflow())
         .add_function("durable_with_spawn", lambda out: {"child_output": out}).connect("child", "durable_with_spawn"))
    assert f.run(None, store=store).output == {"child_output": {"message": "hello from child"}}


def test_a_replayed_run_after_sleep_event_and_spawn_does_not_repeat_them(store: RunStore) -> None:
    """From hatchet examples/durable/test_durable.py test_durable_sleep_event_spawn_replay
    (sleep, wait for the event, spawn a child; the replay is faster than the sleep: none of
    the three is done again)."""
    counter = Counter()
    state = {"fail": True}

    def child_task(_: Any) -> dict[str, str]:
        counter.hit("child")
        return {"message": "hello from child"}

    def finish(out: dict[str, str]) -> dict[str, Any]:
        if state["fail"]:
            raise ConnectionError("worker lost")
        return {"child_output": out}

    f = (Formation("durable_sleep_event_spawn").add_function("sleep", sleeper(counter))
         .add_function("wait", lambda x: interrupt("event"))
         .add_formation("spawn", Formation("child").add_function("child_task", child_task))
         .add_function("finish", finish).connect("sleep", "wait", "spawn", "finish"))
    first = f.run(None, store=store)
    with pytest.raises(FormationRuntimeError) as caught:
        f.resume(first.run_id, store=store, answer={"test": "test"})
    assert caught.value.node == "finish"
    state["fail"] = False
    done = f.resume(first.run_id, store=store)
    assert done.output == {"child_output": {"message": "hello from child"}}
    assert (counter.count("sleep"), counter.count("child")) == (1, 1)


def test_a_retried_parent_does_not_spawn_again_the_child_work_that_finished(store: RunStore) -> None:
    """From hatchet tests/child_spawn_cache_on_retry (the parent times out and is retried;
    the child it spawned is run once, not once per attempt): a journalled run's retry of a
    formation node resumes its inner run."""
    counter = Counter()

    def flaky(x: int) -> int:
        if counter.hit("flaky") == 1:
            raise ConnectionError("parent attempt lost")
        return x

    inner = (Formation("inner").add_function("child", sleeper(counter, "child")).add_function("flaky", flaky)
             .connect("child", "flaky"))
    f = Formation("parent").add_formation("parent", inner, retries=2, backoff=0.001)
    result = f.run(7, store=store)
    assert (result.output, result.nodes["parent"].attempts) == (7, 2)
    assert (counter.count("child"), counter.count("flaky")) == (1, 2)


def test_children_with_the_same_input_are_each_run_and_journalled_by_their_place(store: RunStore) -> None:
    """From hatchet examples/bug_tests/durable_child_key_duplicate_child (children spawned
    with the same input; ours has no child keys: each item is its own child, and a resume
    reruns only the one that failed)."""
    counter = Counter()
    state = {"fail": True}

    def child(x: str) -> str:
        n = counter.hit(x)
        if state["fail"] and x == "dup" and n == 2:
            raise ConnectionError("second dup lost")
        return f"{x}:{n}"

    f = Formation("children").add_map("spawn", child, max_workers=1)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(["dup", "dup", "unique"], store=store)
    state["fail"] = False
    assert caught.value.run_id is not None
    done = f.resume(caught.value.run_id, store=store)
    assert done.output == ["dup:1", "dup:3", "unique:1"]
    assert (counter.count("dup"), counter.count("unique")) == (3, 1)


def test_a_durable_task_whose_child_is_a_dag_resumes_with_the_dags_joined_output(store: RunStore) -> None:
    """From hatchet examples/bug_tests/durable_dag_child and durable/worker.py
    durable_spawn_dag (the spawned child is a DAG of two tasks)."""
    counter = Counter()

    def child_2(_: Any) -> dict[str, str]:
        counter.hit("dag_child_2")
        return {"result": "child2"}

    dag = (Formation("dag-child-workflow").add_function("start", lambda x: x)
           .add_function("dag_child_1", lambda _: {"result": "child1"}).add_function("dag_child_2", child_2)
           .add_function("joined", lambda dag_child_1, dag_child_2: [dag_child_1, dag_child_2])
           .connect("start", "dag_child_1", "joined").connect("start", "dag_child_2", "joined"))
    f = (Formation("durable_spawn_dag").add_function("sleep", lambda x: interrupt("sleep"))
         .add_formation("spawn", dag).connect("sleep", "spawn"))
    first = f.run(None, store=store)
    done = f.resume(first.run_id, store=store, answer="slept")
    assert done.output == [{"result": "child1"}, {"result": "child2"}]
    assert done.nodes["spawn/dag_child_2"].status == "succeeded" and counter.count("dag_child_2") == 1


class Input(BaseModel):
    random_number: int


class StepOutput(BaseModel):
    should_cancel: bool


def test_a_resumed_run_gives_the_rerun_task_the_same_payload_as_the_first_run(
        store: RunStore, gate: tuple[threading.Event, threading.Event]) -> None:
    """From hatchet examples/bug_tests/payload_bug_on_replay (a run cancelled after step1,
    then replayed: step2 got no payload; here it gets step1's journalled output and the
    run's input reaches the source that had not run)."""
    entered, release = gate
    seen: list[Any] = []

    def step1(inp: Input) -> StepOutput:
        return StepOutput(should_cancel=inp.random_number > 0)

    def step2(out: StepOutput) -> StepOutput:
        seen.append(out)
        if len(seen) == 1:
            entered.set()
            release.wait(10)
        return StepOutput(should_cancel=False)

    def later(inp: Input) -> int:
        return inp.random_number

    f = (Formation("payload").add_function("step1", step1).add_function("step2", step2)
         .add_function("held", lambda x: x).add_function("later", later)
         .add_function("end", lambda step2, later: [step2, later])
         .connect("step1", "step2", "end").connect("held", "later", "end"))
    with f.start(store=store) as running:
        future = running.submit(Input(random_number=3))
        assert entered.wait(5)
        assert future.cancel()
        release.set()
        resumed = running.resume(future.run_id).result(timeout=10)
    assert seen == [StepOutput(should_cancel=True)] * 2
    assert resumed.output == [StepOutput(should_cancel=False), 3]


def test_a_changed_formation_is_refused_on_resume_naming_the_difference(store: RunStore) -> None:
    """From hatchet examples/durable/worker.py durable_non_determinism (a replay that takes
    another path than the history raises NonDeterminismError naming the node)."""
    first = (Formation("nd").add_function("sleep", lambda x: x).add_function("ask", lambda x: interrupt("?"))
             .connect("sleep", "ask")).run(None, store=store)
    changed = (Formation("nd").add_function("sleep", lambda x: x).add_function("sleep_again", lambda x: x)
               .add_function("ask", lambda x: interrupt("?")).connect("sleep", "sleep_again", "ask"))
    with pytest.raises(FormationMismatchError) as caught:
        changed.resume(first.run_id, store=store, answer="x")
    assert "sleep_again" in str(caught.value)


def test_a_memoised_models_result_comes_back_from_the_journal_as_the_model(store: RunStore) -> None:
    """From hatchet examples/durable/worker.py memo_task (``ctx.aio_memo(expensive_computation,
    SleepResult, ...)``: computed once, read back as a SleepResult)."""
    counter = Counter()

    def expensive_computation(message: str) -> SleepResult:
        counter.hit("expensive")
        return SleepResult(message=message, duration=5)

    def memo_task(res: SleepResult) -> str:
        return f"{type(res).__name__} {res.message} {interrupt('again?')}"

    f = (Formation("memo").add_function("expensive", expensive_computation).add_function("memo_task", memo_task)
         .connect("expensive", "memo_task"))
    first = f.run("hi", store=store)
    assert f.resume(first.run_id, store=store, answer="yes").output == "SleepResult hi yes"
    assert counter.count("expensive") == 1
    assert store.load(first.run_id).visits["expensive"][1] == SleepResult(message="hi", duration=5)
