"""More behaviours ported from AWS's durable execution SDK for Python's own test suite
(aws/aws-durable-execution-sdk-python, ``tests/operation/map_test.py``, ``parallel_test.py``,
``child_test.py``, ``callback_test.py``, ``wait_for_condition_test.py``,
``tests/concurrency_test.py``, ``tests/e2e/map_with_concurrent_waits_int_test.py``):
``context.map`` is a map node, ``context.parallel`` is branches that fan in to a join,
``run_in_child_context`` is a nested formation, ``create_callback``/``wait_for_callback`` is
``interrupt()`` answered by ``resume(answer=...)``, and ``wait_for_condition`` is a node that
loops on a back edge until its check holds.

Deliberately different (DESIGN.md documents ours):
- AWS's ``CompletionConfig`` (``min_successful``, ``tolerated_failure_count``,
  ``tolerated_failure_percentage``) lets a map or parallel end with some items failed, as a
  ``BatchResult`` of statuses; a map item that still fails after the node's retries fails the
  node (``MapItemsError``, its ``errors`` by index), and an error edge or ``on_error="skip"``
  decides the rest. Code that tolerates failures returns a value for them.
- AWS's ``ItemBatcher`` groups items into batches for one invocation each; a map calls its
  function once per item (batch the list in the node before it).
- AWS's ``wait_for_callback`` runs its submitter once (as a step) and then suspends; code
  before an ``interrupt()`` in the same visit runs again on resume (put side effects after it,
  or in a node of its own before the one that asks).
- A callback's ``timeout`` fails the AWS operation with a timeout error; a suspended run
  expires after the store's ``suspend_ttl`` (status ``expired``, not resumable).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.durable_peers import failed_run
from tests.support.peers import Counter, InFlight, until
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError, MapItemsError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore

# --- map: items, order, concurrency, failures ------------------------------------------


def test_a_map_gives_each_items_result_in_item_order_whatever_the_order_they_finish_in(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/map_test.py (test_map_handler:
    results by index)."""
    gates = {i: threading.Event() for i in range(3)}

    def work(i: int) -> str:
        if i < 2:
            assert gates[i + 1].wait(10)  # item 2 finishes first, then 1, then 0
        gates[i].set()
        return f"item-{i}"

    result = Formation("ordered").add_map("work", work, max_workers=3).run([0, 1, 2], store=store)
    assert result.output == ["item-0", "item-1", "item-2"]
    assert store.load(result.run_id).visits["work"][1] == ["item-0", "item-1", "item-2"]


def test_a_map_over_an_empty_list_gives_an_empty_list_and_journals_it(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/map_test.py
    (test_map_executor_from_items_empty_list)."""
    result = Formation("empty").add_map("work", lambda x: x * 2).run([], store=store)
    assert (result.status, result.output) == ("succeeded", [])
    assert store.load(result.run_id).visits == {"work": {1: []}}


def test_a_map_over_a_single_item_gives_a_list_of_one(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/map_test.py
    (test_map_executor_from_items_single_item)."""
    assert Formation("one").add_map("work", lambda s: f"processed_{s}").run(["only"], store=store).output == [
        "processed_only"]


def test_a_maps_max_workers_bounds_the_items_in_flight(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/concurrency_test.py (max_concurrency bounds
    the branches running at once)."""
    flight = InFlight()
    gate = threading.Barrier(2, timeout=10)

    def work(i: int) -> int:
        with flight:
            gate.wait()  # two at once must meet, so two did run together
        return i

    result = Formation("bounded").add_map("work", work, max_workers=2).run(list(range(6)), store=store)
    assert result.output == list(range(6)) and flight.peak == 2


def test_a_map_item_that_fails_after_its_retries_fails_the_node_with_every_failed_index(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/parallel_test.py (a batch result
    lists failed branches by index); ours fails the node (see the module docstring)."""

    def work(i: int) -> int:
        if i in (1, 3):
            raise ValueError(f"bad item {i}")
        return i

    f = Formation("fails").add_map("work", work)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run([0, 1, 2, 3], store=store)
    cause = caught.value.__cause__
    assert isinstance(cause, MapItemsError)
    assert sorted(cause.errors) == [1, 3] and cause.total == 4
    assert "bad item 1" in str(cause)


def test_a_maps_retry_reruns_only_the_items_that_failed(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/concurrency_test.py (a retried branch does
    not rerun the branches that succeeded)."""
    counter = Counter()

    def work(i: int) -> int:
        if counter.hit(i) == 1 and i == 2:
            raise ConnectionError("item 2 once")
        return i * 10

    result = Formation("retry").add_map("work", work, retries=1, backoff=0).run([1, 2, 3], store=store)
    assert result.output == [10, 20, 30]
    assert counter.calls == {1: 1, 2: 2, 3: 1}


def test_a_resumed_map_reruns_only_the_items_that_failed_in_the_failed_run(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/map_test.py (checkpointed
    iterations are replayed, not run again)."""
    counter = Counter()
    broken = {"on": True}

    def work(i: int) -> int:
        counter.hit(i)
        if i == 2 and broken["on"]:
            raise ConnectionError("item 2 down")
        return i + 100

    f = Formation("resumed").add_map("work", work)
    run_id = failed_run(f, [1, 2, 3], store)
    broken["on"] = False
    result = f.resume(run_id, store=store)
    assert result.output == [101, 102, 103]
    assert counter.calls == {1: 1, 2: 2, 3: 1}


def test_tolerated_map_failures_are_values_the_item_function_returns(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/map_test.py (CompletionConfig with
    tolerated failures: the map succeeds with some items failed); ours: the function catches
    its item's error and returns a value for it, and the node succeeds."""

    def work(i: int) -> dict[str, Any]:
        try:
            if i % 2:
                raise ValueError(f"odd {i}")
            return {"ok": i}
        except ValueError as error:
            return {"error": str(error)}

    result = Formation("tolerant").add_map("work", work).run([0, 1, 2], store=store)
    assert result.output == [{"ok": 0}, {"error": "odd 1"}, {"ok": 2}]


def test_a_failed_map_goes_to_its_error_edge_with_the_failed_items(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/parallel_test.py (the caller gets
    the batch's failures and decides); ours: the error edge's handler gets the
    ``MapItemsError``. A node whose only out-edges are error edges is a sink (its output, had
    it succeeded, is a run output), so the run has two sinks and ``output`` is None."""

    def work(i: int) -> int:
        if i == 1:
            raise ValueError("item 1 is bad")
        return i

    def handle(failure: NodeFailure) -> str:
        assert isinstance(failure.error, MapItemsError)
        return f"failed items {sorted(failure.error.errors)} of {failure.error.total}"

    f = Formation("edge").add_map("work", work).add_function("handle", handle).connect("work", "handle", on_error=True)
    result = f.run([0, 1, 2], store=store)
    # 'work' is a sink too (its only out-edge is an error edge), and the handler its alternative:
    # the run's one output is the handler's
    assert (result.status, result.output) == ("succeeded", "failed items [1] of 3")
    assert result.outputs == {"handle": "failed items [1] of 3"}


def test_items_mapped_through_a_formation_are_journalled_and_not_rerun_on_resume(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/map_test.py (each iteration is a
    child context whose steps are checkpointed)."""
    counter = Counter()
    broken = {"on": True}

    def fetch(i: int) -> int:
        counter.hit(("fetch", i))
        return i

    def store_it(i: int) -> str:
        counter.hit(("store", i))
        if i == 1 and broken["on"]:
            raise ConnectionError("store down")
        return f"stored {i}"

    inner = Formation("item").add_function("fetch", fetch).add_function("store", store_it).connect("fetch", "store")
    f = Formation("items").add_map("each", formation=inner, max_workers=2)
    run_id = failed_run(f, [0, 1], store)
    broken["on"] = False
    assert f.resume(run_id, store=store).output == ["stored 0", "stored 1"]
    assert counter.calls == {("fetch", 0): 1, ("store", 0): 1, ("fetch", 1): 1, ("store", 1): 2}


def test_items_batched_by_the_node_before_the_map_are_mapped_per_batch(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/map_test.py (ItemBatcher groups
    items per invocation); ours: a node before the map makes the batches."""
    calls: list[list[int]] = []

    def batch(items: list[int]) -> list[list[int]]:
        return [items[i:i + 2] for i in range(0, len(items), 2)]

    def work(chunk: list[int]) -> int:
        calls.append(chunk)
        return sum(chunk)

    f = Formation("batched").add_function("batch", batch).add_map("work", work).connect("batch", "work")
    assert f.run([1, 2, 3, 4, 5], store=store).output == [3, 7, 5]
    assert sorted(calls) == [[1, 2], [3, 4], [5]]


# --- parallel: branches that fan in ------------------------------------------------------


def parallel(counter: Counter, broken: dict[str, bool]) -> Formation:
    """Three branches from ``start`` into ``join``; branch ``b`` fails while ``broken["b"]``."""

    def branch(name: str) -> Any:
        def run(x: str) -> str:
            counter.hit(name)
            if broken.get(name):
                raise ConnectionError(f"branch {name} down")
            return f"{x}:{name}"

        return run

    f = Formation("parallel").add_function("start", lambda x: x)
    for name in ("a", "b", "c"):
        f.add_function(name, branch(name)).connect("start", name)
    f.add_function("join", lambda a, b, c: [a, b, c])
    for name in ("a", "b", "c"):
        f.connect(name, "join")
    return f


def test_parallel_branches_give_their_results_to_the_join_by_branch(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/parallel_test.py
    (test_parallel_handler: every branch's result)."""
    result = parallel(Counter(), {}).run("x", store=store)
    assert result.output == ["x:a", "x:b", "x:c"]


def test_a_failed_parallel_branch_fails_the_run_and_a_resume_runs_only_that_branch(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/parallel_test.py (a failed branch
    with no tolerance fails the parallel; the others are checkpointed)."""
    counter, broken = Counter(), {"b": True}
    f = parallel(counter, broken)
    run_id = failed_run(f, "x", store)
    assert {"a", "c"} <= set(store.load(run_id).visits) and "b" not in store.load(run_id).visits
    broken["b"] = False
    assert f.resume(run_id, store=store).output == ["x:a", "x:b", "x:c"]
    assert counter.calls == {"a": 1, "b": 2, "c": 1}


def test_a_skipped_parallel_branch_lets_the_others_finish_and_the_run_succeed(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/parallel_test.py (tolerated failure
    of a branch); ours: ``on_error="skip"`` on the branch, with a join that does not need it."""
    f = Formation("skip").add_function("start", lambda x: x)
    f.add_function("a", lambda x: f"{x}:a").add_function("b", lambda x: 1 / 0, on_error="skip")
    f.add_function("after_b", lambda x: x).add_function("ends", lambda x: x)
    f.connect("start", "a").connect("start", "b").connect("b", "after_b").connect("a", "ends")
    result = f.run("x", store=store)
    assert result.status == "succeeded"
    assert result.outputs.get("ends") == "x:a"
    assert result.nodes["b"].status == "skipped" and result.nodes["after_b"].status == "skipped"


# --- child contexts: nested formations ---------------------------------------------------


def nested(counter: Counter, broken: dict[str, bool], **policies: Any) -> Formation:
    """An outer formation whose ``child`` node is an inner formation of ``one`` then ``two``."""

    def step(name: str) -> Any:
        def run(x: str) -> str:
            counter.hit(name)
            if broken.get(name):
                raise ConnectionError(f"{name} down")
            return f"{x}>{name}"

        return run

    inner = Formation("inner").add_function("one", step("one")).add_function("two", step("two")).connect("one", "two")
    return (Formation("outer").add_function("before", step("before")).add_formation("child", inner, **policies)
            .connect("before", "child"))


def test_a_child_context_returns_its_last_steps_result_to_the_parent(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/child_test.py
    (test_child_handler_not_started: the child's function result is the operation's result)."""
    assert nested(Counter(), {}).run("x", store=store).output == "x>before>one>two"


def test_a_child_contexts_steps_that_succeeded_are_not_run_again_on_resume(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/child_test.py (a child context's
    checkpointed steps are replayed)."""
    counter, broken = Counter(), {"two": True}
    f = nested(counter, broken)
    run_id = failed_run(f, "x", store)
    broken["two"] = False
    assert f.resume(run_id, store=store).output == "x>before>one>two"
    assert counter.calls == {"before": 1, "one": 1, "two": 2}


def test_a_child_context_that_failed_fails_the_parent_naming_the_inner_step(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/child_test.py
    (test_child_handler_raises_error: the child's error reaches the parent)."""
    with pytest.raises(FormationRuntimeError) as caught:
        nested(Counter(), {"two": True}).run("x", store=store)
    text = str(caught.value)
    assert "child" in text and "two" in text and "two down" in text


def test_a_child_context_already_succeeded_is_not_entered_again_on_resume(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/child_test.py
    (test_child_handler_already_succeeded)."""
    counter = Counter()

    def after(x: str) -> str:
        if counter.hit("after") == 1:
            raise ConnectionError("after down")
        return x.upper()

    f = nested(counter, {}).add_function("after", after).connect("child", "after")
    run_id = failed_run(f, "x", store)
    assert f.resume(run_id, store=store).output == "X>BEFORE>ONE>TWO"
    assert (counter.count("one"), counter.count("two")) == (1, 1)


def test_a_retried_child_context_reruns_its_inner_run(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/child_test.py (a child context's
    retry replays its checkpointed steps); the node's ``retries`` apply to the inner run as a
    whole, and in a journalled run the retried inner run reuses the inner visits journalled."""
    counter = Counter()

    def one(x: str) -> str:
        counter.hit("one")
        return f"{x}>one"

    def two(x: str) -> str:
        if counter.hit("two") == 1:
            raise ConnectionError("two down once")
        return f"{x}>two"

    inner = Formation("inner").add_function("one", one).add_function("two", two).connect("one", "two")
    f = Formation("outer").add_formation("child", inner, retries=1, backoff=0)
    result = f.run("x", store=store)
    assert (result.output, result.nodes["child"].attempts) == ("x>one>two", 2)
    # the retry reruns the inner run from its journal: 'one' succeeded and is not run again
    assert counter.count("two") == 2 and counter.count("one") == 1


# --- callbacks: an external system answers ----------------------------------------------


def test_a_callback_suspends_the_run_with_its_payload_until_the_answer_comes(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py
    (test_create_callback_handler_new_operation: the execution suspends waiting)."""

    def approve(order: str) -> str:
        verdict = interrupt({"callback": "approval", "order": order})
        return f"{order}: {verdict}"

    f = Formation("cb").add_function("approve", approve)
    first = f.run("o-1", store=store)
    assert (first.status, first.interrupt) == ("suspended", {"node": "approve",
                                                             "payload": {"callback": "approval", "order": "o-1"}})
    assert store.get(first.run_id).status == "suspended"
    done = f.resume(first.run_id, store=store, answer={"approved": True})
    assert (done.status, done.output) == ("succeeded", "o-1: {'approved': True}")


def test_a_callback_answer_of_any_json_value_reaches_the_step_as_given(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py (the callback
    result is deserialized)."""
    f = Formation("json").add_function("ask", lambda _: interrupt("value?"))
    answer = {"list": [1, 2.5, None, "x"], "nested": {"ok": False}}
    first = f.run(None, store=store)
    assert f.resume(first.run_id, store=store, answer=answer).output == answer


def test_an_external_system_reports_failure_through_the_answer_and_the_step_raises(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py
    (test_create_callback_handler_existing_failed: a failed callback raises CallbackError)."""

    def wait(x: str) -> str:
        answer = interrupt({"task": x})
        if answer.get("error"):
            raise RuntimeError(f"callback failed: {answer['error']}")
        return str(answer["result"])

    f = Formation("cbfail").add_function("wait", wait)
    first = f.run("t", store=store)
    with pytest.raises(FormationRuntimeError) as caught:
        f.resume(first.run_id, store=store, answer={"error": "denied"})
    assert "callback failed: denied" in str(caught.value)
    assert store.get(first.run_id).status == "failed"


def test_two_callbacks_in_one_step_are_answered_in_order(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py (several callbacks
    of one execution each get their own answer)."""

    def both(_: Any) -> list[Any]:
        return [interrupt("first?"), interrupt("second?")]

    f = Formation("two").add_function("both", both)
    first = f.run(None, store=store)
    assert first.interrupt == {"node": "both", "payload": "first?"}
    second = f.resume(first.run_id, store=store, answer=1)
    assert (second.status, second.interrupt) == ("suspended", {"node": "both", "payload": "second?"})
    assert f.resume(first.run_id, store=store, answer=2).output == [1, 2]


def test_the_submitter_before_a_callback_runs_again_on_resume_and_a_node_before_it_does_not(
        store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py (wait_for_callback
    runs its submitter once); ours reruns code before ``interrupt()`` in the same visit (see
    the module docstring), so the submission that must happen once is a node of its own."""
    counter = Counter()

    def submit(order: str) -> str:
        counter.hit("submit")
        return f"ticket-{order}"

    def wait(ticket: str) -> str:
        counter.hit("wait")
        return f"{ticket}: {interrupt({'ticket': ticket})}"

    f = Formation("submit").add_function("submit", submit).add_function("wait", wait).connect("submit", "wait")
    first = f.run("7", store=store)
    assert f.resume(first.run_id, store=store, answer="done").output == "ticket-7: done"
    assert counter.calls == {"submit": 1, "wait": 2}


def test_a_callback_not_answered_within_the_stores_suspend_ttl_expires_and_cannot_be_resumed(path: Path) -> None:
    """From aws-durable-execution-sdk-python tests/operation/callback_test.py (a callback's
    timeout ends the wait); ours expires the suspended run."""
    f = Formation("ttl").add_function("ask", lambda _: interrupt("anyone?"))
    with RunStore(path, suspend_ttl=0.2) as store:
        run_id = f.run(None, store=store).run_id
        assert until(lambda: store.get(run_id).status == "expired", within=10)
        with pytest.raises(Exception, match="expired"):
            f.resume(run_id, store=store, answer="late")


def test_callbacks_in_several_map_items_are_answered_one_at_a_time_lowest_index_first(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/e2e/map_with_concurrent_waits_int_test.py
    (every item waits, and the map completes when each has its answer)."""
    counter = Counter()

    def item(i: int) -> str:
        counter.hit(i)
        return f"{i}={interrupt({'item': i})}"

    f = Formation("waits").add_map("each", item, max_workers=3)
    result = f.run([0, 1, 2], store=store)
    asked = []
    while result.status == "suspended":
        assert result.interrupt is not None
        index = result.interrupt["payload"]["item"]
        asked.append(index)
        result = f.resume(result.run_id, store=store, answer=f"a{index}")
    assert asked == [0, 1, 2]
    assert result.output == ["0=a0", "1=a1", "2=a2"]


# --- wait_for_condition: a check repeated until it holds ---------------------------------


def polling(counter: Counter, ready_at: int, broken_at: int | None = None, max_visits: int = 10) -> Formation:
    """A ``check`` node that loops on itself with its state until the state's ``n`` reaches
    ``ready_at``; its ``broken_at``-th call fails once."""

    def check(state: dict[str, int]) -> dict[str, int]:
        n = counter.hit("check")
        if n == broken_at:
            raise ConnectionError("poll failed")
        return {"n": state["n"] + 1}

    return (Formation("poll").add_function("check", check, max_visits=max_visits)
            .add_function("done", lambda s: f"ready after {s['n']}")
            .connect("check", "check", when=lambda s: s["n"] < ready_at).connect("check", "done", otherwise=True))


def test_a_condition_is_checked_with_the_state_of_the_last_check_until_it_holds(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/wait_for_condition_test.py
    (test_wait_for_condition_first_execution_condition_met, state passed between checks)."""
    counter = Counter()
    result = polling(counter, ready_at=3).run({"n": 0}, store=store)
    assert result.output == "ready after 3"
    assert result.nodes["check"].outputs == [{"n": 1}, {"n": 2}, {"n": 3}]


def test_a_resumed_wait_for_condition_goes_on_from_the_last_journalled_check(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/wait_for_condition_test.py
    (test_wait_for_condition_pending_... : a replay goes on from the checkpointed state)."""
    counter = Counter()
    f = polling(counter, ready_at=4, broken_at=3)
    run_id = failed_run(f, {"n": 0}, store)
    assert store.load(run_id).visits["check"] == {1: {"n": 1}, 2: {"n": 2}}
    assert f.resume(run_id, store=store).output == "ready after 4"
    assert counter.count("check") == 5


def test_a_condition_that_never_holds_ends_at_the_visit_limit_naming_the_node(store: RunStore) -> None:
    """From aws-durable-execution-sdk-python tests/operation/wait_for_condition_test.py (the
    wait strategy gives up after its attempts)."""
    with pytest.raises(FormationRuntimeError) as caught:
        polling(Counter(), ready_at=100, max_visits=3).run({"n": 0}, store=store)
    assert "check" in str(caught.value) and "3" in str(caught.value)
