"""Behaviours ported from AWS's durable execution SDK for Python's own test suite
(aws/aws-durable-execution-sdk-python, ``tests/retries_test.py``, ``tests/waits_test.py``,
``tests/operation/callback_test.py``, ``map_test.py``, ``child_test.py``): retries around a
callback, jitter, time limits and what a resume keeps of a visit cut short. See
``test_peer_awsdurable.py`` for the mapping of AWS's names to ours.

Deliberately different (DESIGN.md documents ours):
- AWS's ``JitterStrategy`` is FULL by default (a delay between the exponential one and twice
  it), with NONE and HALF to choose; ours draws from the upper half of the exponential delay
  (AWS's HALF) or, with ``jitter=False``, waits it exactly.
- AWS's ``WaitStrategy`` of ``wait_for_condition`` decides the delay between checks; a loop
  on a back edge checks again at once (a node that must wait sleeps, or asks through
  ``interrupt()``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support.durable_peers import fails_first
from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore


def test_a_step_that_fails_after_its_callback_was_answered_is_retried_with_the_same_answer(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py (a callback's
    result is checkpointed: a retry of the code after it does not wait again)."""
    counter = Counter()

    def ask(order: str) -> str:
        answer = interrupt({"order": order})
        if counter.hit("after") == 1:
            raise ConnectionError("the step after the answer fails once")
        return f"{order}: {answer}"

    f = Formation("retried").add_function("ask", ask, retries=2, backoff=0)
    first = f.run("o-1", store=store)
    assert first.status == "suspended"
    done = f.resume(first.run_id, store=store, answer="approved")
    assert (done.status, done.output, done.interrupt) == ("succeeded", "o-1: approved", None)
    assert counter.count("after") == 2


def test_a_failed_run_whose_step_had_its_answer_is_resumed_without_asking_again(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py
    (test_create_callback_handler_existing_succeeded: a replay gets the checkpointed result)."""
    counter = Counter()
    broken = {"on": True}

    def ask(order: str) -> str:
        answer = interrupt({"order": order})
        counter.hit("after")
        if broken["on"]:
            raise ConnectionError("down after the answer")
        return f"{order}: {answer}"

    f = Formation("asked").add_function("ask", ask)
    run_id = f.run("o-2", store=store).run_id
    with pytest.raises(FormationRuntimeError):
        f.resume(run_id, store=store, answer="yes")
    broken["on"] = False
    done = f.resume(run_id, store=store)
    assert (done.status, done.output) == ("succeeded", "o-2: yes")


def test_with_jitter_a_retry_waits_between_half_the_exponential_delay_and_all_of_it(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/retries_test.py (test_half_jitter_range,
    test_half_jitter_boundary_values)."""
    times: list[float] = []
    f = Formation("jitter").add_function("step", fails_first(times), retries=1, backoff=0.6)
    assert f.run("x", store=store).output == "x"
    assert 0.3 <= times[1] - times[0] < 2.6


def test_a_node_timeout_is_retried_when_retry_on_names_timeout_error(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/retries_test.py (test_retryable_error_type
    with a timeout); a node timeout counts as a ``TimeoutError``."""
    counter = Counter()
    release = threading.Event()

    def slow(x: str) -> str:
        if counter.hit("slow") == 1:
            release.wait(5)
        return x

    f = Formation("timeouts").add_function("slow", slow, timeout=0.3, retries=1, backoff=0, retry_on=TimeoutError)
    try:
        result = f.run("x", store=store)
    finally:
        release.set()
    assert (result.output, result.nodes["slow"].attempts) == ("x", 2)


def test_a_map_cut_short_by_its_timeout_keeps_the_items_that_finished_for_the_resume(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/map_test.py (iterations that
    completed before the execution stopped are checkpointed)."""
    counter = Counter()
    stuck = {"on": True}
    release = threading.Event()

    def work(i: int) -> int:
        counter.hit(i)
        if i == 2 and stuck["on"]:
            release.wait(5)
        return i * 10

    f = Formation("cut").add_map("each", work, timeout=0.8, max_workers=3)
    try:
        with pytest.raises(FormationRuntimeError) as caught:
            f.run([0, 1, 2], store=store)
    finally:
        stuck["on"] = False
        release.set()
    assert "timed out" in str(caught.value)
    assert f.resume(caught.value.run_id, store=store).output == [0, 10, 20]
    assert counter.calls == {0: 1, 1: 1, 2: 2}


def test_a_child_context_cut_short_by_its_timeout_keeps_its_finished_steps_for_the_resume(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/child_test.py (a child's
    checkpointed steps survive the invocation that ran out of time)."""
    counter = Counter()
    stuck = {"on": True}
    release = threading.Event()

    def one(x: str) -> str:
        counter.hit("one")
        return f"{x}>one"

    def two(x: str) -> str:
        counter.hit("two")
        if stuck["on"]:
            release.wait(5)
        return f"{x}>two"

    inner = Formation("inner").add_function("one", one).add_function("two", two).connect("one", "two")
    f = Formation("outer").add_formation("box", inner, timeout=0.8)
    try:
        with pytest.raises(FormationRuntimeError) as caught:
            f.run("x", store=store)
    finally:
        stuck["on"] = False
        release.set()
    assert f.resume(caught.value.run_id, store=store).output == "x>one>two"
    assert counter.calls == {"one": 1, "two": 2}


def test_a_run_timeout_while_waiting_for_a_callback_leaves_the_run_suspended(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/waits_test.py (a wait suspends the execution
    rather than failing it): a run's ``timeout`` ends the wait for the visits in flight, and the
    run suspends."""
    release = threading.Event()

    def slow(x: str) -> str:
        release.wait(5)
        return x

    f = Formation("wait").add_function("ask", lambda x: interrupt({"q": x})).add_function("slow", slow)
    f.add_function("both", lambda ask, slow: f"{ask}/{slow}").connect("ask", "both").connect("slow", "both")
    try:
        result = f.run("x", store=store, timeout=1.0)
    finally:
        release.set()
    assert result.status == "suspended" and result.interrupt == {"node": "ask", "payload": {"q": "x"}}
    done = f.resume(result.run_id, store=store, answer="yes")
    assert (done.status, done.output) == ("succeeded", "yes/x")


def test_a_condition_loop_that_sleeps_between_checks_is_resumed_at_its_last_check(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/wait_for_condition_test.py (the
    wait strategy's delay between checks; a replay goes on from the last state)."""
    counter = Counter()
    times: list[float] = []

    def check(state: dict[str, Any]) -> dict[str, Any]:
        n = counter.hit("check")
        times.append(time.monotonic())
        if n == 3:
            raise ConnectionError("poll failed")
        if state["n"] > 0:
            time.sleep(0.05)  # the wait strategy's delay
        return {"n": state["n"] + 1}

    f = (Formation("poll").add_function("check", check, max_visits=10).add_function("done", lambda s: s["n"])
         .connect("check", "check", when=lambda s: s["n"] < 4).connect("check", "done", otherwise=True))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run({"n": 0}, store=store)
    assert store.load(caught.value.run_id).visits["check"] == {1: {"n": 1}, 2: {"n": 2}}
    assert f.resume(caught.value.run_id, store=store).output == 4
    assert counter.count("check") == 5 and times[1] - times[0] < 2.0


def test_a_map_item_that_fails_while_another_waits_for_its_callback_runs_again_on_resume(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/e2e/map_with_concurrent_waits_int_test.py
    (iterations that wait and iterations that fail in one map): the run suspends for the
    callback, and the failed item runs again on resume with the answered one."""
    counter = Counter()
    broken = {"on": True}

    def work(i: int) -> str:
        counter.hit(i)
        if i == 0:
            return f"0={interrupt('q0')}"
        if i == 1 and broken["on"]:
            raise ConnectionError("item 1 down")
        return str(i)

    f = Formation("mixed").add_map("each", work, max_workers=3)
    first = f.run([0, 1, 2], store=store)
    assert (first.status, first.interrupt) == ("suspended", {"node": "each", "payload": "q0"})
    broken["on"] = False
    done = f.resume(first.run_id, store=store, answer="A")
    assert (done.status, done.output) == ("succeeded", ["0=A", "1", "2"])
    assert counter.calls == {0: 2, 1: 2, 2: 1}


def test_an_answer_of_none_is_no_answer_and_the_run_asks_again(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py (a callback that
    succeeds with no result gives the step None). Ours differs: ``answer=None`` is the default
    and means "no answer", so the run suspends again at the same question; an external system
    with nothing to say answers with a value of its own (``{}``, ``True``). Open question."""
    f = Formation("none").add_function("ask", lambda _: repr(interrupt("done yet?")))
    first = f.run(None, store=store)
    again = f.resume(first.run_id, store=store, answer=None)
    assert (again.status, again.interrupt) == ("suspended", {"node": "ask", "payload": "done yet?"})
    assert f.resume(first.run_id, store=store, answer={}).output == "{}"


def test_a_retried_map_of_formations_reruns_only_the_failed_items_inner_step(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/concurrency_test.py (a retried iteration is
    a child context that replays its checkpointed steps): the retry reruns item 1 only, and
    of it only the step that failed."""
    counter = Counter()

    def fetch(i: int) -> int:
        counter.hit(("fetch", i))
        return i

    def put(i: int) -> int:
        if counter.hit(("put", i)) == 1 and i == 1:
            raise ConnectionError("put of item 1 fails once")
        return i * 10

    inner = Formation("item").add_function("fetch", fetch).add_function("put", put).connect("fetch", "put")
    f = Formation("retried").add_map("each", formation=inner, retries=1, backoff=0)
    assert f.run([0, 1], store=store).output == [0, 10]
    assert counter.calls == {("fetch", 0): 1, ("put", 0): 1, ("fetch", 1): 1, ("put", 1): 2}


def test_a_retried_child_context_keeps_the_answer_its_callback_got(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/child_test.py with a callback
    inside: the child fails after the answer, its retry does not ask again."""
    counter = Counter()

    def ask(x: str) -> str:
        answer = interrupt("approve?")
        if counter.hit("after") == 1:
            raise ConnectionError("fails once after the answer")
        return f"{x}:{answer}"

    f = Formation("outer").add_formation("box", Formation("inner").add_function("ask", ask), retries=1, backoff=0)
    first = f.run("x", store=store)
    assert first.interrupt == {"node": "box/ask", "payload": "approve?"}
    done = f.resume(first.run_id, store=store, answer="A")
    assert (done.status, done.output, done.interrupt) == ("succeeded", "x:A", None)
    assert counter.count("after") == 2
