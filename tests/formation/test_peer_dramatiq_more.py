"""Retries meeting time limits, aborts and groups, ported from Dramatiq's own test suite
(Bogdanp/dramatiq ``tests/test_actors.py``, ``tests/middleware/test_retries.py``,
``tests/test_abortable.py``, ``tests/test_composition.py``, ``tests/test_stub_broker.py``):
where Dramatiq's middlewares combine (a retried message that also ran out of time, a message
aborted while it waits for its retry, a group's message that failed), here a node's
policies combine the same way.

Deliberately different: Dramatiq's ``time_limit`` bounds each message of a group; a map
node's ``timeout`` bounds the node's whole visit (docs/formations.md), and a retry after it
runs again only the items that had not finished.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import threading
from typing import Any

import pytest

from tests.support.peers import Counter, sleeps_until_cancelled, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError, NodeTimeoutError
from wingman_actors.formation import NodeFailure


def test_a_groups_retry_after_a_time_limit_runs_again_only_the_item_that_had_not_finished() -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actors_can_be_assigned_time_limits in a group with
    retries (only the message that ran out of time is retried; the others' results stand)."""
    counter = Counter()

    async def item(i: int) -> int:
        if counter.hit(i) == 1 and i == 3:
            await asyncio.sleep(5)
        return i * 10

    f = Formation("group").add_map("items", item, max_workers=2, timeout=0.3, retries=1, backoff=0)
    result = f.run(list(range(5)))
    assert result.output == [0, 10, 20, 30, 40]
    assert [counter.count(i) for i in range(5)] == [1, 1, 1, 2, 1]
    assert result.nodes["items"].attempts == 2


def test_aborting_a_run_while_its_node_waits_out_a_retry_backoff_makes_no_further_attempt() -> None:
    """Ported from Bogdanp/dramatiq tests/test_abortable.py (a message aborted while it waits to be retried is
    not run again)."""
    counter = Counter()

    def do_work(_: Any) -> None:
        counter.hit("attempt")
        raise RuntimeError("failure")

    retrying = threading.Event()

    def on_event(event: Any) -> None:
        if event.type == "node_retry":
            retrying.set()

    f = Formation("abort").add_function("do_work", do_work, retries=3, backoff=0.4, jitter=False)
    with f.start() as running:
        future = running.submit(None, on_event=on_event)
        assert retrying.wait(5)
        assert future.cancel() is True
        with pytest.raises(cf.CancelledError):
            future.result(5)
        assert not until(lambda: counter.count("attempt") > 1, within=0.8)  # past the 0.4 s backoff
    assert counter.count("attempt") == 1


def test_a_failure_callback_of_a_node_that_ran_out_of_time_gets_the_time_limit_error_and_the_attempts() -> None:
    """Ported from Bogdanp/dramatiq tests/test_callbacks.py::test_actors_can_define_failure_callbacks with a time
    limit (the failure callback is sent ``TimeLimitExceeded``)."""
    seen: list[NodeFailure] = []

    def report(failure: NodeFailure) -> str:
        seen.append(failure)
        return type(failure.error).__name__

    cancelled = threading.Event()
    f = (Formation("cb").add_function("do_work", sleeps_until_cancelled(cancelled), timeout=0.1, retries=1, backoff=0)
         .add_function("report", report).connect("do_work", "report", on_error=True))
    result = f.run(7)
    assert result.outputs == {"report": "NodeTimeoutError"}
    [failure] = seen
    assert (failure.node, failure.input, failure.attempts, failure.run_id) == ("do_work", 7, 2, result.run_id)
    assert isinstance(failure.error, NodeTimeoutError) and failure.error.attempt == 2
    assert cancelled.wait(3)


def test_an_aborted_run_does_not_call_its_failure_callback() -> None:
    """Ported from Bogdanp/dramatiq tests/test_abortable.py (an aborted message is not a failed one: its
    ``on_failure`` callback is not sent)."""
    counter = Counter()
    entered = threading.Event()

    async def do_work(_: Any) -> None:
        entered.set()
        await asyncio.sleep(5)

    def report(failure: NodeFailure) -> str:
        counter.hit("report")
        return "reported"

    f = Formation("cb").add_function("do_work", do_work).add_function("report", report).connect(
        "do_work", "report", on_error=True)
    events: list[str] = []
    with f.start() as running:
        future = running.submit(None, on_event=lambda e: events.append(e.type))
        assert entered.wait(5)
        future.cancel()
        with pytest.raises(cf.CancelledError):
            future.result(5)
        assert until(lambda: "run_cancelled" in events)
    assert counter.count("report") == 0
    assert "node_failed" not in events


def test_failure_callbacks_of_runs_in_flight_together_each_get_their_own_runs_input() -> None:
    """Ported from Bogdanp/dramatiq tests/test_callbacks.py::test_actors_can_define_failure_callbacks with many
    messages (each ``on_failure`` is sent its own message's data)."""

    def maybe(x: int) -> int:
        if x % 2:
            raise ValueError(f"odd {x}")
        return x

    def report(failure: NodeFailure) -> tuple[Any, str, str]:
        return failure.input, failure.run_id, str(failure.error)

    f = Formation("cb").add_function("maybe", maybe, concurrency=3).add_function("report", report).connect(
        "maybe", "report", on_error=True)
    with f.start() as running:
        futures = [running.submit(i) for i in range(12)]
        results = [future.result(10) for future in futures]
    for i, result in enumerate(results):
        expected = {"report": (i, result.run_id, f"odd {i}")} if i % 2 else {"maybe": i}
        assert result.outputs == expected


def test_waiting_for_the_first_failure_among_many_runs_returns_while_the_others_still_work() -> None:
    """Ported from Bogdanp/dramatiq tests/test_stub_broker.py (``join(queue, fail_fast=True)`` raises the first
    actor error without waiting for the rest of the queue)."""
    release = threading.Event()

    def do_work(x: int) -> int:
        if x < 0:
            raise ValueError("negative")
        release.wait(5)
        return x

    with Formation("ff").add_function("do_work", do_work, concurrency=3).start() as running:
        futures = [running.submit(1), running.submit(2), running.submit(-1)]
        try:
            done, pending = cf.wait(futures, timeout=5, return_when=cf.FIRST_EXCEPTION)
            assert done == {futures[2]} and len(pending) == 2
            assert isinstance(futures[2].exception(0), FormationRuntimeError)
        finally:
            release.set()
        assert [f.result(5).output for f in futures[:2]] == [1, 2]


def test_a_group_of_pipelines_where_one_pipeline_skipped_its_last_step_fails_saying_which_item() -> None:
    """Ported from Bogdanp/dramatiq tests/test_composition.py::test_groups_of_pipelines_can_have_completion_callbacks
    with a pipeline whose last message is skipped (``SkipMessage``): the group has no result
    for it, and says so instead of giving the callback a hole."""

    def step(x: int) -> int:
        if x == 1:
            raise ValueError("skip me")
        return x * 10

    pipe = Formation("pipe").add_function("first", lambda x: x).add_function("last", step, on_error="skip").connect(
        "first", "last")
    f = Formation("group").add_map("pipes", formation=pipe).add_function("finalize", sum).connect("pipes", "finalize")
    with pytest.raises(FormationRuntimeError, match=r"item 1 has no result: formation 'pipe' skipped its sink 'last'"):
        f.run([0, 1, 2])


def test_a_nested_pipelines_time_limit_cancels_the_step_it_was_in() -> None:
    """Ported from Bogdanp/dramatiq tests/middleware/test_time_limit.py::test_time_limits_are_handled for a
    pipeline run as one step (the time limit reaches the actor inside)."""
    cancelled = threading.Event()
    inner = Formation("inner").add_function("first", lambda x: x).add_function(
        "hang", sleeps_until_cancelled(cancelled)).connect("first", "hang")
    f = Formation("outer").add_formation("sub", inner, timeout=0.2)
    with pytest.raises(FormationRuntimeError, match=r"node 'sub'.*timed out after 0.2s") as info:
        f.run(1)
    assert isinstance(info.value.__cause__, NodeTimeoutError)
    assert cancelled.wait(3)


def test_a_timed_out_attempt_that_returns_while_its_retry_runs_is_dropped_and_the_retrys_value_goes_on() -> None:
    """Ported from Bogdanp/dramatiq tests/test_actors.py::test_actors_can_be_assigned_time_limits with
    ``max_retries=1``: only the retry's result is the message's. Here the abandoned first attempt
    returns while its retry still works (see the module's docs): its value is dropped, no event
    reports it, and the next node runs once, on the retry's value."""
    counter = Counter()
    first_returned = threading.Event()
    release_first = threading.Event()

    def racy(_: Any) -> str:
        if counter.hit("attempt") == 1:
            release_first.wait(5)
            first_returned.set()
            return "late"
        release_first.set()  # the retry lets the abandoned attempt return, and waits for it
        assert first_returned.wait(5)
        return "retry"

    def after(x: str) -> str:
        counter.hit(("after", x))
        return x

    finished: list[tuple[str | None, Any]] = []
    f = (Formation("race").add_function("racy", racy, timeout=0.2, retries=1, backoff=0)
         .add_function("after", after).connect("racy", "after"))
    result = f.run(None, on_event=lambda e: finished.append((e.node, e.data["output"]))
                   if e.type == "node_finished" else None)
    assert result.output == "retry"
    assert result.nodes["racy"].outputs == ["retry"] and result.nodes["racy"].attempts == 2
    assert finished == [("racy", "retry"), ("after", "retry")]
    assert (counter.count(("after", "retry")), counter.count(("after", "late"))) == (1, 0)
