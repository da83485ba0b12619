"""Parallel and Map states of AWS Step Functions, as LocalStack's own suite tests them
(localstack/localstack, ``tests/aws/services/stepfunctions/v2/scenarios/test_base_scenarios.py``
and the ASL templates under ``tests/aws/services/stepfunctions/templates/scenarios/``). A
Parallel state is a fan-out into branches and a join after them, or, when the branches share a
Retry or Catch, a nested formation (``add_formation``) whose policies and error edges apply to
the branches as a whole; a Map state is ``add_map`` (``MaxConcurrency`` is ``max_workers``), and
a Map whose ItemProcessor has several states maps a formation (``add_map(name, formation=...)``).

Deliberately different (DESIGN.md "The formation language" documents ours):
- A Parallel state outputs the list of its branches' outputs in branch order; a join receives
  a dict keyed by branch (predecessor) name, and a nested formation with one sink outputs that
  sink's value (a dict of sink outputs with several).
- Retrying a Map state reruns every iteration; a map node's ``retries`` rerun only the items
  that failed. ``ToleratedFailureCount``/``Percentage`` have no counterpart: an item that still
  fails fails the node (a ``MapItemsError`` by item index); items that may fail return a value
  saying so themselves. A failing iteration does not stop the Map: every item runs, and the
  ``MapItemsError`` lists every failed one (SFN starts no iteration after the failure).
- Without a store, retrying a formation node reruns its whole inner run (as SFN reruns every
  branch); in a journalled run, the retry skips the inner visits already journalled.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.peers import Counter, Gate, InFlight, sleeps_until_cancelled, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, MapItemsError, NoRouteError
from wingman_actors.formation import NodeFailure
from wingman_actors.store import RunStore


class FailureType(Exception):
    """What the Fail states of the parallel templates raise (``"Error": "FailureType"``)."""


class HandleItemFailError(Exception):
    """What map_state_retry_multiple_retriers.json5's item processor raises."""


def fail_with(error: BaseException, counter: Counter | None = None, name: str = "fail") -> Any:
    def node(x: Any) -> Any:
        if counter is not None:
            counter.hit(name)
        raise error

    return node


@pytest.fixture
def gate() -> Iterator[Gate]:
    g = Gate()
    yield g
    g.opened.set()


def test_a_parallel_states_join_gets_every_branchs_output_whatever_order_they_finish_in(gate: Gate) -> None:
    """From LocalStack test_base_scenarios.py::test_parallel_state_order (parallel_state_order.json5:
    the output keeps the branches' order, not the order they end in)."""
    def opener(x: int) -> str:
        assert until(lambda: gate.reached.is_set())
        gate.opened.set()  # the first branch finishes last
        return f"b{x}"

    f = (Formation("order").add_function("start", lambda x: x)
         .add_function("branch1", gate).add_function("branch2", opener)
         .add_function("branch3", lambda x: f"c{x}")
         .add_function("join", lambda v: [v["branch1"], v["branch2"], v["branch3"]])
         .connect("start", "branch1", "join").connect("start", "branch2", "join").connect("start", "branch3", "join"))
    assert f.run(1).output == [1, "b1", "c1"]


def test_a_branch_of_several_states_delivers_its_last_states_output_to_the_join() -> None:
    """From LocalStack test_base_scenarios.py::test_parallel_state (parallel_state.json5: each
    branch is a small state machine)."""
    f = (Formation("branches").add_function("start", lambda x: x)
         .add_function("a1", lambda x: x + 1).add_function("a2", lambda x: x * 10)
         .add_function("b1", lambda x: f"{x}!")
         .add_function("join", lambda v: (v["a2"], v["b1"]))
         .connect("start", "a1", "a2", "join").connect("start", "b1", "join"))
    result = f.run(1)
    assert result.output == (20, "1!")
    assert sorted(n for n, t in result.nodes.items() if t.status == "succeeded") == ["a1", "a2", "b1", "join", "start"]


def test_a_failing_branch_stops_an_async_branch_still_running_and_the_next_run_takes_its_node_at_once() -> None:
    """From LocalStack test_base_scenarios.py::test_parallel_state_fail (parallel_state_fail.json5:
    a branch's Fail state fails the Parallel state and the execution; the other branches are
    stopped). An ``async def`` branch is cancelled; a blocking function branch is left to finish
    (Python cannot stop a thread), its late value dropped."""
    cancelled, entered = threading.Event(), threading.Event()
    slow = sleeps_until_cancelled(cancelled)

    async def maybe_slow(x: str) -> str:
        if x != "fail":
            return f"slow {x}"
        entered.set()
        return await slow(x)

    def fails(x: str) -> str:
        if x == "fail":
            assert entered.wait(5)  # the other branch is running
            raise FailureType("Cause description")
        return f"ok {x}"

    f = (Formation("parallel_fail").add_function("start", lambda x: x)
         .add_function("slow", maybe_slow).add_function("fails", fails)
         .add_function("join", lambda v: (v["slow"], v["fails"]))
         .connect("start", "slow", "join").connect("start", "fails", "join"))
    with f.start() as running:
        started = time.monotonic()
        with pytest.raises(FormationRuntimeError) as caught:
            running.submit("fail").result(timeout=10)
        assert time.monotonic() - started < 4  # not the branch's 5 s
        assert caught.value.node == "fails" and isinstance(caught.value.__cause__, FailureType)
        assert caught.value.nodes["join"].status == "skipped"
        assert until(cancelled.is_set)
        assert running.submit("next").result(timeout=4).output == ("slow next", "ok next")


def branches(counter: Counter, failures: int = 99, ready: Callable[[], bool] | None = None) -> Formation:
    """parallel_state_catch.json5 / parallel_state_retry.json5's branches as a formation: one
    that fails its first ``failures`` calls (once ``ready`` holds, when given), one that
    succeeds (both counted)."""
    def flaky(x: int) -> int:
        if counter.hit("flaky") <= failures:
            assert ready is None or until(ready)
            raise FailureType("Cause description")
        return x + 1

    def steady(x: int) -> int:
        counter.hit("steady")
        return x * 10

    return (Formation("branches").add_function("start", lambda x: x)
            .add_function("flaky", flaky).add_function("steady", steady)
            .add_function("join", lambda v: (v["flaky"], v["steady"]))
            .connect("start", "flaky", "join").connect("start", "steady", "join"))


def test_a_catcher_on_a_parallel_state_takes_a_branchs_failure_naming_the_branch() -> None:
    """From LocalStack test_base_scenarios.py::test_parallel_state_catch (parallel_state_catch.json5:
    a branch's FailureType reaches the Parallel state's catcher, which goes on to FinalCaught)."""
    counter = Counter()
    f = (Formation("parallel_catch").add_formation("parallel", branches(counter))
         .add_function("final", lambda v: v).add_function("final_caught", lambda f: f)
         .connect("parallel", "final").connect("parallel", "final_caught", on_error=True))
    result = f.run(1)
    failure = result.outputs["final_caught"]
    assert isinstance(failure, NodeFailure) and failure.node == "parallel" and failure.input == 1
    assert "flaky" in str(failure.error) and "Cause description" in str(failure.error)
    assert result.nodes["final"].status == "skipped"


def test_a_retrier_on_a_parallel_state_runs_every_branch_again_unless_the_run_is_journalled(store: RunStore) -> None:
    """From LocalStack test_base_scenarios.py::test_parallel_state_retry (parallel_state_retry.json5:
    ``MaxAttempts: 2`` on the Parallel state reruns its branches). Without a store, a retry of a
    formation node runs the whole inner run again, the branch that had succeeded too, as SFN
    does; in a journalled run the retry resumes the inner run and the finished branch is not
    run again (DESIGN.md "Durable runs")."""
    counter = Counter()

    def steady_ran() -> bool:  # in this attempt: the failure comes after the other branch ran
        return counter.count("steady") >= counter.count("flaky")

    inner = branches(counter, failures=2, ready=steady_ran)
    result = Formation("parallel_retry").add_formation("parallel", inner, retries=2, backoff=0).run(1)
    assert result.output == (2, 10)
    assert result.nodes["parallel"].attempts == 3
    assert (counter.count("flaky"), counter.count("steady")) == (3, 3)

    journalled = Counter()

    def steady_journalled() -> bool:  # the failure comes after the other branch's visit is journalled
        try:
            return any(v.node == "steady" for v in store.history("r1/parallel/1"))
        except KeyError:  # the inner run is not in the store yet
            return False

    inner = branches(journalled, failures=2, ready=steady_journalled)
    f = Formation("parallel_retry").add_formation("parallel", inner, retries=2, backoff=0)
    assert f.run(1, store=store, run_id="r1").output == (2, 10)
    assert (journalled.count("flaky"), journalled.count("steady")) == (3, 1)


def test_a_retrier_then_a_catcher_on_a_parallel_state_hand_over_after_the_last_attempt() -> None:
    """From LocalStack test_base_scenarios.py::test_parallel_state_retry and _catch together (the
    catcher sees the failure once the retrier's attempts are spent)."""
    counter = Counter()
    f = (Formation("retry_catch").add_formation("parallel", branches(counter), retries=1, backoff=0)
         .add_function("caught", lambda f: f.attempts).connect("parallel", "caught", on_error=True))
    assert f.run(1).outputs == {"caught": 2}
    assert counter.count("flaky") == 2


def test_parallel_states_nested_in_a_parallel_state_give_nested_outputs() -> None:
    """From LocalStack test_base_scenarios.py::test_parallel_state_nested (parallel_state_nested.json5)."""
    inner = (Formation("inner").add_function("start", lambda x: x)
             .add_function("x2", lambda x: x * 2).add_function("x3", lambda x: x * 3)
             .add_function("join", lambda v: [v["x2"], v["x3"]])
             .connect("start", "x2", "join").connect("start", "x3", "join"))
    outer = (Formation("outer").add_function("start", lambda x: x)
             .add_formation("left", inner).add_formation("right", inner)
             .add_function("join", lambda v: {"left": v["left"], "right": v["right"]})
             .connect("start", "left", "join").connect("start", "right", "join"))
    result = outer.run(5)
    assert result.output == {"left": [10, 15], "right": [10, 15]}


def test_a_branch_whose_choice_matches_nothing_fails_the_run_naming_the_inner_state() -> None:
    """From LocalStack test_base_scenarios.py::test_parallel_state with a Choice branch
    (States.NoChoiceMatched inside a branch fails the Parallel state)."""
    inner = (Formation("inner").add_function("decide", lambda x: x)
             .add_function("small", lambda x: "small").connect("decide", "small", when=lambda x: x < 10))
    f = (Formation("outer").add_formation("parallel", inner).add_function("other", lambda x: x)
         .add_function("start", lambda x: x).connect("start", "parallel").connect("start", "other"))
    with pytest.raises(FormationRuntimeError) as caught:
        f.run(50)
    err = caught.value
    assert err.node == "parallel"
    causes = []
    cause: BaseException | None = err
    while cause is not None:
        causes.append(cause)
        cause = cause.__cause__
    assert any(isinstance(c, NoRouteError) for c in causes)
    assert "decide" in str(err)


def test_a_map_with_max_concurrency_one_runs_on_past_a_failing_item_and_reports_it_by_index() -> None:
    """From LocalStack test_base_scenarios.py::test_map_state_break_condition
    (map_state_break_condition.json5: ``MaxConcurrency: 1``; the item equal to 3 reaches a Fail
    state). SFN stops the Map there and never runs the items after it; ours runs every item
    (a retry reruns only the failed ones, an error edge gets every failed item), then fails the
    node with the failed item's index."""
    seen: list[Any] = []

    def each(item: Any) -> Any:
        seen.append(item)
        if isinstance(item, int | float) and not isinstance(item, bool) and item == 3:
            raise FailureType("This state machines raises a 'SomeFailure' failure.")
        return item

    f = Formation("break").add_map("map", each, max_workers=1)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run([1, "Hello", {}, 3.3, 3, 4, 5])
    err = caught.value.__cause__
    assert isinstance(err, MapItemsError) and list(err.errors) == [4]
    assert "item 4" in str(err) and "SomeFailure" in str(err)
    assert seen == [1, "Hello", {}, 3.3, 3, 4, 5]


def test_a_catcher_on_a_map_state_gets_the_failed_items_and_goes_on() -> None:
    """From LocalStack test_base_scenarios.py::test_map_state_catch (map_state_catch.json5)."""
    def each(item: int) -> int:
        if item % 2:
            raise FailureType(f"odd {item}")
        return item

    f = (Formation("map_catch").add_map("map", each).add_function("final", lambda v: v)
         .add_function("caught", lambda f: {i: str(e) for i, e in f.error.errors.items()})
         .connect("map", "final").connect("map", "caught", on_error=True))
    result = f.run([0, 1, 2, 3])
    assert result.outputs == {"caught": {1: "odd 1", 3: "odd 3"}}
    assert result.nodes["final"].status == "skipped"


def test_a_retrier_on_a_map_state_reruns_only_its_failed_items() -> None:
    """From LocalStack test_base_scenarios.py::test_map_state_retry (map_state_retry.json5): SFN
    reruns every iteration; ours reruns the failed item alone."""
    counter = Counter()

    def each(item: int) -> int:
        if counter.hit(item) == 1 and item == 2:
            raise HandleItemFailError("once")
        return item * 2

    result = Formation("map_retry").add_map("map", each, retries=1, backoff=0).run([1, 2, 3])
    assert result.output == [2, 4, 6]
    assert [counter.count(i) for i in (1, 2, 3)] == [1, 2, 1]


def test_a_map_retrier_for_another_error_leaves_a_failing_item_failed_after_one_attempt() -> None:
    """From LocalStack test_base_scenarios.py::test_map_state_retry_multiple_retriers (a retrier for
    ``NoSuchError`` beside others: ours retries only what ``retry_on`` names)."""
    counter = Counter()

    def each(item: int) -> int:
        counter.hit(item)
        raise HandleItemFailError("HandleItemFailCause")

    f = Formation("retriers").add_map("map", each, max_workers=1, retries=2, backoff=0, retry_on=ConnectionError)
    with pytest.raises(FormationRuntimeError) as caught:
        f.run([1])
    assert counter.count(1) == 1 and caught.value.attempts == 1
    assert isinstance(caught.value.__cause__, MapItemsError)


def test_a_map_of_a_formation_runs_every_items_states_and_keeps_item_order() -> None:
    """From LocalStack test_base_scenarios.py::test_map_state (map_state.json5: an ItemProcessor
    of several states per item)."""
    per_item = (Formation("per_item").add_function("double", lambda x: x * 2)
                .add_function("label", lambda x: f"item {x}").connect("double", "label"))
    f = Formation("map").add_map("map", formation=per_item, max_workers=2)
    assert f.run([3, 1, 2]).output == ["item 6", "item 2", "item 4"]


def test_a_map_with_max_concurrency_runs_no_more_items_at_once() -> None:
    """From LocalStack test_base_scenarios.py::test_map_state_nested (map_state_nested.json5
    and map_state_nested_config_distributed.json5: nested Maps with MaxConcurrency): a map of
    formations holding a map, each bounded."""
    flight = InFlight()

    def work(x: int) -> int:
        with flight:
            time.sleep(0.01)
        return x + 1

    inner = Formation("inner").add_map("inner_map", work, max_workers=2)
    f = Formation("outer").add_map("outer_map", formation=inner, max_workers=2)
    result = f.run([[1, 2, 3], [4, 5, 6], [7]])
    assert result.output == [[2, 3, 4], [5, 6, 7], [8]]
    assert 1 <= flight.peak <= 4


def test_a_choice_inside_a_maps_items_routes_each_item_on_its_own() -> None:
    """From LocalStack test_base_scenarios.py::test_map_state_break_condition (a Choice inside the
    ItemProcessor, with a Default). An item's output in SFN is the End state it reached; so is
    ours: the mapped formation's two sinks exclude each other (a condition and its ``otherwise``),
    so each item gives the value of the sink that ran (a ``join="any"`` node after both gives
    the same)."""
    per_item = (Formation("per_item").add_function("equals3", lambda x: x)
                .add_function("three", lambda x: "three").add_function("other", lambda x: f"pass {x}")
                .connect("equals3", "three", when=lambda x: x == 3).connect("equals3", "other", otherwise=True))
    result = Formation("map").add_map("map", formation=per_item).run([1, 3, 5])
    assert result.output == ["pass 1", "three", "pass 5"]
    per_item.add_function("end", lambda v: next(iter(v.values())), join="any").connect("three", "end")
    per_item.connect("other", "end")
    assert Formation("map").add_map("map", formation=per_item).run([1, 3, 5]).output == ["pass 1", "three", "pass 5"]


def test_a_maps_time_limit_bounds_the_whole_map_not_each_item(release: threading.Event) -> None:
    """From LocalStack timeouts/test_timeouts.py::test_service_lambda_map_timeout (TimeoutSeconds
    on a Map state ends it, however many iterations are left)."""
    counter = Counter()

    def each(x: int) -> int:
        counter.hit("item")
        release.wait(0.15)
        return x

    started = time.monotonic()
    with pytest.raises(FormationRuntimeError) as caught:
        Formation("map_timeout").add_map("map", each, max_workers=1, timeout=0.4).run(list(range(20)))
    assert time.monotonic() - started < 4
    assert "timed out" in str(caught.value.__cause__)
    assert counter.count("item") < 20


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()
