"""Behaviours ported from AWS's durable execution SDK for Python's own test suite
(aws/aws-durable-execution-sdk-python, ``tests/execution_test.py``, ``tests/state_test.py``,
``tests/serdes_test.py``, ``tests/operation/map_test.py``, ``callback_test.py``,
``child_test.py``): what a replayed execution refuses, what cannot be checkpointed, and the
same durable behaviours on both stores (SQLite and PostgreSQL, the ``location`` fixture).
See ``test_peer_awsdurable.py`` for the mapping of AWS's names to ours.

Deliberately different (DESIGN.md documents ours):
- AWS's ``context.wait(Duration)`` suspends an execution and the service re-invokes it when the
  time is up; we have no durable timer: a run waits for a person or system through
  ``interrupt()``, and ``resume`` is what continues it.
- AWS checks a step's checkpoint size (large results are replayed from children); a journalled
  value has no size limit here beyond the store's.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.support.durable_peers import Final, failed_run
from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, MapItemsError
from wingman_actors.store import RunStore, SerializationError


class Handle:
    """A value the journal cannot store (an open connection, say)."""


def inc(i: int) -> int:
    return i + 1


def total(xs: list[int]) -> int:
    return sum(xs)


# --- what cannot be checkpointed is refused, naming what and where ------------------------


def test_a_map_item_result_that_cannot_be_journalled_fails_the_node_naming_the_item(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/serdes_test.py (a serialization error names
    the operation); the map's item index is named."""
    f = Formation("items").add_map("each", lambda i: Handle() if i == 1 else i)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run([0, 1, 2], store=store)
    cause = caught.value.__cause__
    assert isinstance(cause, MapItemsError) and list(cause.errors) == [1]
    assert isinstance(cause.errors[1], SerializationError)
    assert "item 1" in str(cause.errors[1]) and "Handle" in str(cause.errors[1])


def test_a_run_input_that_cannot_be_journalled_is_refused_before_the_run_starts(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/execution_test.py (an input that cannot be
    serialized is an error of the invocation)."""
    counter = Counter()

    def step(x: Any) -> int:
        counter.hit("step")
        return 1

    with pytest.raises(SerializationError) as caught:
        Formation("input").add_function("step", step).run(Handle(), store=store)
    assert "input" in str(caught.value) and "Handle" in str(caught.value)
    assert counter.count("step") == 0


def test_an_interrupt_payload_that_cannot_be_journalled_fails_the_node_naming_it(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py (a callback's
    configuration is serialized with the operation)."""
    f = Formation("payload").add_function("ask", lambda _: interrupt(Handle()))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(None, store=store)
    assert isinstance(caught.value.__cause__, SerializationError)
    assert "interrupt payload" in str(caught.value) and "ask" in str(caught.value)


def test_an_answer_that_cannot_be_journalled_is_refused_and_the_run_still_waits_for_one(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py (a callback result
    is deserialized with the operation's serdes; a bad one is an error)."""
    f = Formation("answer").add_function("ask", lambda _: f"got {interrupt('question')}")
    run_id = f.run(None, store=store).run_id
    with pytest.raises(SerializationError, match="answer"):
        f.resume(run_id, store=store, answer=Handle())
    assert store.get(run_id).status == "suspended"
    assert f.resume(run_id, store=store, answer="ok").output == "got ok"


def test_a_fatal_error_in_a_map_item_is_not_retried(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/step_test.py
    (test_step_handler_fatal_error) inside a map iteration."""
    counter = Counter()

    def work(i: int) -> int:
        counter.hit(i)
        if i == 1:
            raise Final("no")
        return i

    with pytest.raises(FormationRuntimeError):
        Formation("fatal").add_map("each", work, retries=3, backoff=0).run([0, 1], store=store)
    assert counter.calls == {0: 1, 1: 1}


def test_a_large_step_result_is_journalled_and_read_back_whole(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/child_test.py (large results of a
    child context are kept); ours journals the value as it is."""
    counter = Counter()
    big = "x" * (3 * 1024 * 1024)

    def use(text: str) -> int:
        if counter.hit("use") == 1:
            raise ConnectionError("once")
        return len(text)

    f = Formation("big").add_function("make", lambda _: big).add_function("use", use).connect("make", "use")
    run_id = failed_run(f, None, store)
    assert f.resume(run_id, store=store).output == len(big)


def two_resumes_at_once(counter: Counter, first: RunStore, second: RunStore) -> list[str]:
    """Fail a run of ``a -> slow`` in ``first``, then resume it through ``first`` and, while that
    resume is inside ``slow`` (which counts its calls), through ``second``: each resume's
    outcome, its status or the name of the error it raised."""
    broken = {"on": True}
    started, release = threading.Event(), threading.Event()

    def slow(x: int) -> int:
        counter.hit("slow")
        if broken["on"]:
            raise ConnectionError("down")
        started.set()
        assert release.wait(10)
        return x

    f = Formation("race").add_function("a", lambda x: x).add_function("slow", slow).connect("a", "slow")
    run_id = failed_run(f, 1, first)
    broken["on"] = False
    outcomes: list[str] = []

    def resume(store: RunStore) -> None:
        try:
            outcomes.append(str(f.resume(run_id, store=store).status))
        except Exception as error:  # the refused one
            outcomes.append(type(error).__name__)

    thread = threading.Thread(target=resume, args=(first,))
    thread.start()
    try:
        assert started.wait(10)
        resume(second)  # while the first runs
    finally:
        release.set()
        thread.join(10)
    return outcomes


# --- a replay that must not happen twice, or at all --------------------------------------


def test_a_run_is_resumed_once_when_two_resumes_race(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/state_test.py (one execution's state has one
    writer): a second resume of the same run while the first runs is refused."""
    counter = Counter()
    assert sorted(two_resumes_at_once(counter, store, store)) == ["RunNotResumableError", "succeeded"]
    assert counter.count("slow") == 2


def test_a_run_that_already_succeeded_is_not_run_again_by_a_resume(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/execution_test.py (a completed execution
    returns its result; nothing runs again)."""
    counter = Counter()

    def step(x: int) -> int:
        counter.hit("step")
        return x

    f = Formation("done").add_function("step", step)
    run_id = f.run(1, store=store).run_id
    with pytest.raises(Exception, match="already succeeded"):
        f.resume(run_id, store=store, answer="x")
    assert counter.count("step") == 1


def test_an_async_map_resumed_after_a_failure_reruns_only_the_failed_item(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/map_test.py (checkpointed
    iterations replayed) with ``async def`` items."""
    counter = Counter()
    broken = {"on": True}

    async def work(i: int) -> int:
        counter.hit(i)
        await asyncio.sleep(0.01)
        if i == 1 and broken["on"]:
            raise ConnectionError("item 1 down")
        return i * 2

    f = Formation("async").add_map("each", work)
    run_id = failed_run(f, [0, 1, 2], store)
    broken["on"] = False
    assert f.resume(run_id, store=store).output == [0, 2, 4]
    assert counter.calls == {0: 1, 1: 2, 2: 1}


def test_callbacks_inside_a_map_of_formations_are_answered_item_by_item(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/e2e/map_with_concurrent_waits_int_test.py
    (each map iteration is a child context that waits)."""
    inner = Formation("inner").add_function("ask", lambda i: f"{i}:{interrupt({'i': i})}")
    f = Formation("outer").add_map("each", formation=inner, max_workers=2)
    result = f.run([0, 1], store=store)
    asked = []
    while result.status == "suspended":
        assert result.interrupt is not None
        asked.append(result.interrupt["node"])
        result = f.resume(result.run_id, store=store, answer=f"a{result.interrupt['payload']['i']}")
    assert asked == ["each/0/ask", "each/1/ask"]
    assert result.output == ["0:a0", "1:a1"]


# --- replaying from a chosen point (fork) --------------------------------------------------


def test_a_fork_replaces_a_map_nodes_output_and_runs_what_follows(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/context_replay_property_test.py (a replay
    feeds checkpointed results forward); a fork feeds a replaced one."""
    f = Formation("fm").add_map("each", inc).add_function("total", total).connect("each", "total")
    run_id = f.run([1, 2], store=store).run_id
    forked = f.fork(run_id, store=store, at="each", output=[10, 20])
    assert store.load(forked).visits["total"] == {1: 30}
    assert store.load(run_id).visits["total"] == {1: 5}


def test_a_fork_refuses_a_map_output_whose_items_do_not_fit_naming_the_item(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/serdes_test.py (a value that does not
    deserialize to the type is refused)."""
    f = Formation("fm").add_map("each", inc).add_function("total", total).connect("each", "total")
    run_id = f.run([1, 2], store=store).run_id
    with pytest.raises(ValueError) as caught:
        f.fork(run_id, store=store, at="each", output=["a"])
    assert "each" in str(caught.value) and "list[int]" in str(caught.value) and "0" in str(caught.value)


def test_a_fork_refuses_a_map_input_with_a_bad_item_naming_that_item(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/serdes_test.py (a value that does not
    deserialize to the type is refused, saying where). It used to say "the value" for any
    item, which left a user with a long list to find the bad one alone."""
    f = Formation("fm").add_map("each", inc).add_function("total", total).connect("each", "total")
    run_id = f.run([1, 2], store=store).run_id
    with pytest.raises(ValueError) as caught:
        f.fork(run_id, store=store, at="each", input=[1, 2, "b"])
    assert "item 2" in str(caught.value) and "'i' of type int" in str(caught.value)
    inner = Formation("inner").add_function("inc", inc)
    g = Formation("fmf").add_map("each", formation=inner)
    run_id = g.run([1], store=store).run_id
    with pytest.raises(ValueError) as caught:
        g.fork(run_id, store=store, at="each", input=[1, "b"])
    assert "item 1" in str(caught.value) and "'each/inc'" in str(caught.value)


def test_a_fork_at_a_nested_formation_with_a_new_input_runs_the_child_again(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/child_test.py (a child context
    not yet succeeded runs its function)."""
    inner = Formation("in").add_function("inc", inc)
    f = Formation("nf").add_formation("box", inner).add_function("double", lambda x: x * 2).connect("box", "double")
    run_id = f.run(1, store=store).run_id
    forked = f.fork(run_id, store=store, at="box", input=9)
    assert store.load(forked).visits == {"box": {1: 10}, "double": {1: 20}}


def test_a_fork_at_a_node_inside_a_nested_formation_says_to_fork_at_the_nested_node(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/child_test.py (a child's operations
    are scoped to it)."""
    inner = Formation("in").add_function("inc", inc)
    f = Formation("nf").add_formation("box", inner)
    run_id = f.run(1, store=store).run_id
    with pytest.raises(ValueError) as caught:
        f.fork(run_id, store=store, at="box/inc", output=5)
    assert "at='box'" in str(caught.value)


# --- the same on both stores -----------------------------------------------------------------


def test_a_resumed_map_reruns_only_its_failed_items_on_both_stores(location: str) -> None:
    """From aws-durable-execution-sdk-python tests/operation/map_test.py (checkpointed
    iterations are replayed)."""
    counter = Counter()
    broken = {"on": True}

    def work(i: int) -> int:
        counter.hit(i)
        if i == 2 and broken["on"]:
            raise ConnectionError("item 2 down")
        return i

    f = Formation("map").add_map("each", work, max_workers=2)
    with RunStore(location) as store:
        run_id = failed_run(f, [1, 2, 3], store)
        broken["on"] = False
        assert f.resume(run_id, store=store).output == [1, 2, 3]
    assert counter.calls == {1: 1, 2: 2, 3: 1}


def test_a_callback_answered_from_another_store_on_the_same_location_resumes_the_run(location: str) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py (the callback is
    answered by another system, from another process)."""
    f = Formation("cb").add_function("ask", lambda order: f"{order}: {interrupt({'order': order})}")
    with RunStore(location) as first:
        run_id = f.run("o-1", store=first).run_id
    with RunStore(location) as other:
        assert other.get(run_id).interrupt is not None
        assert f.resume(run_id, store=other, answer="approved").output == "o-1: approved"
        assert other.get(run_id).status == "succeeded"


def test_a_nested_formations_journalled_steps_are_not_rerun_on_both_stores(location: str) -> None:
    """From aws-durable-execution-sdk-python tests/operation/child_test.py (a child context's
    checkpointed steps are replayed)."""
    counter = Counter()
    broken = {"on": True}

    def one(x: str) -> str:
        counter.hit("one")
        return f"{x}>one"

    def two(x: str) -> str:
        counter.hit("two")
        if broken["on"]:
            raise ConnectionError("two down")
        return f"{x}>two"

    inner = Formation("inner").add_function("one", one).add_function("two", two).connect("one", "two")
    f = Formation("outer").add_formation("child", inner)
    with RunStore(location) as store:
        run_id = failed_run(f, "x", store)
        broken["on"] = False
        assert f.resume(run_id, store=store).output == "x>one>two"
    assert counter.calls == {"one": 1, "two": 2}


def test_two_stores_resuming_one_run_at_once_run_it_once_on_both_stores(location: str) -> None:
    """From aws-durable-execution-sdk-python tests/state_test.py (one execution's checkpoints
    have one writer): two processes (two stores on one location) resume the same failed run;
    one runs it, the other is refused."""
    counter = Counter()
    with RunStore(location) as one, RunStore(location) as other:
        outcomes = two_resumes_at_once(counter, one, other)
    assert sorted(outcomes) == ["RunNotResumableError", "succeeded"]
    assert counter.count("slow") == 2


def test_two_answers_to_one_callback_at_once_resume_the_run_with_one_of_them(location: str) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py (a callback is
    completed once; a second completion is refused)."""
    f = Formation("answers").add_function("ask", lambda x: f"{x}:{interrupt('which?')}")
    outcomes: list[str] = []
    together = threading.Barrier(2, timeout=10)

    def answer(store: RunStore, run_id: str, value: str) -> None:
        together.wait()
        try:
            outcomes.append(str(f.resume(run_id, store=store, answer=value).output))
        except Exception as error:  # the refused one
            outcomes.append(type(error).__name__)

    with RunStore(location) as one, RunStore(location) as other:
        run_id = f.run("x", store=one).run_id
        threads = [threading.Thread(target=answer, args=(store, run_id, value))
                   for store, value in ((one, "A"), (other, "B"))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
        winner = [o for o in outcomes if o in ("x:A", "x:B")]
        # the other is refused, by timing: before it began, once the winner took the run, or once it answered
        # (never by taking the run over from the winner: RunTakenOverError, StoreWriteError)
        refusals = ("RunNotResumableError", "NoPendingInterruptError")
        assert len(winner) == 1 and [o for o in outcomes if o not in winner] in ([r] for r in refusals), outcomes
        assert one.load(run_id).visits == {"ask": {1: winner[0]}}


def step_up(s: int) -> int:
    return s + 1


def test_a_fork_at_a_later_visit_of_a_loop_goes_on_from_the_replaced_state(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/wait_for_condition_test.py (a
    replay goes on from a checkpointed state); a fork replaces the second check's state."""
    f = (Formation("loop").add_function("step", step_up, max_visits=10).add_function("done", lambda s: s)
         .connect("step", "step", when=lambda s: s < 4).connect("step", "done", otherwise=True))
    run_id = f.run(0, store=store).run_id
    forked = f.fork(run_id, store=store, at=("step", 2), output=3)
    assert store.load(forked).visits == {"step": {1: 1, 2: 3, 3: 4}, "done": {1: 4}}
    assert store.load(run_id).visits["step"] == {1: 1, 2: 2, 3: 3, 4: 4}
