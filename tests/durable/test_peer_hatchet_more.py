"""Durable runs across retries, shutdowns, duplicate keys and waits inside fan-outs, ported
from the Hatchet Python SDK's examples and e2e tests (hatchet-dev/hatchet,
``sdks/python/tests/child_spawn_cache_on_retry``, ``examples/dedupe``,
``bug_tests/worker_shutdown_no_premature_reassignment``, ``bug_tests/durable_evict_timeout``,
``examples/durable``, ``examples/bulk_operations``); see ``test_peer_hatchet.py`` for the
module map (waits are ``interrupt()``, replays are ``resume``).

Deliberately different: Hatchet's dedupe key refuses a second *run* with the key; ours names
runs by ``run_id``, and a second submit with the id of a journalled run is refused at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.peers import Counter
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation.events import FormationEvent
from wingman_actors.store import RunNotResumableError, RunStore, StoreError


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set at the end of the test, pass or fail, so no held node outlives it."""
    event = threading.Event()
    try:
        yield event
    finally:
        event.set()


def test_a_parent_that_times_out_is_retried_without_running_its_finished_child_work_again(
        store: RunStore, release: threading.Event) -> None:
    """From hatchet tests/child_spawn_cache_on_retry (the parent exceeds its execution
    timeout and is retried; the child it had spawned is not spawned again)."""
    counter = Counter()

    def child(x: int) -> int:
        counter.hit("child")
        return x

    def slow(x: int) -> int:
        if counter.hit("slow") == 1:
            release.wait(5)
        return x

    inner = Formation("inner").add_function("child", child).add_function("slow", slow).connect("child", "slow")
    f = Formation("outer").add_formation("parent", inner, timeout=0.3, retries=2, backoff=0.001)
    result = f.run(3, store=store)
    assert (result.output, result.nodes["parent"].attempts) == (3, 2)
    assert (counter.count("child"), counter.count("slow")) == (1, 2)


def test_a_second_run_with_the_id_of_a_journalled_run_is_refused(store: RunStore, release: threading.Event) -> None:
    """From hatchet examples/dedupe (a run triggered again with the same dedupe key is
    refused while the first one runs; differs: see the module docstring)."""

    def slow(x: int) -> int:
        release.wait(5)
        return x

    with Formation("dedupe").add_function("slow", slow, concurrency=2).start(store=store) as running:
        first = running.submit(1, run_id="key1")
        with pytest.raises(StoreError) as caught:
            running.submit(2, run_id="key1")
        assert "key1" in str(caught.value) and "already exists" in str(caught.value)
        release.set()
        assert first.result(timeout=5).output == 1
    assert [r.id for r in store.runs()] == ["key1"]


def test_a_run_in_flight_when_its_formation_stops_is_interrupted_and_resumes_where_it_was(store: RunStore) -> None:
    """From hatchet bug_tests/worker_shutdown_no_premature_reassignment and
    worker_pause_on_sigterm (a worker shutting down hands its runs back, and they finish
    elsewhere without what was done being done again)."""
    counter = Counter()
    entered = threading.Event()

    def first(x: int) -> int:
        counter.hit("first")
        return x

    async def second(x: int) -> int:
        if counter.hit("second") == 1:
            entered.set()
            await asyncio.sleep(20)  # cancelled by the stop
        return x * 2

    f = Formation("shutdown").add_function("first", first).add_function("second", second).connect("first", "second")
    running = f.start(store=store)
    try:
        future = running.submit(4)
        assert entered.wait(5)
    finally:
        running.stop()
    with pytest.raises(FormationRuntimeError, match="stopped before run"):
        future.result(timeout=5)
    run_id = future.run_id
    assert store.get(run_id).status == "interrupted"
    assert f.resume(run_id, store=store).output == 8
    assert (counter.count("first"), counter.count("second")) == (1, 2)


def test_a_suspended_run_ended_by_hand_is_no_longer_waiting_and_can_still_be_resumed(store: RunStore) -> None:
    """From hatchet examples/bulk_operations/cancel.py and durable/test_durable.py (a durable
    task waiting for an event is cancelled; a replay runs it again)."""
    f = (Formation("waiting").add_function("a", lambda x: x)
         .add_function("ask", lambda x: f"{x}:{interrupt('go?')}").connect("a", "ask"))
    first = f.run("x", store=store)
    assert store.request_cancel(first.run_id) is False  # not running: it waits
    store.set_status(first.run_id, "cancelled")
    assert store.get(first.run_id).status == "cancelled" and store.runs(status="suspended") == []
    assert f.resume(first.run_id, store=store, answer="yes").output == "x:yes"


def test_a_wait_inside_one_child_of_a_fan_out_suspends_the_parent_and_only_that_child_runs_again(
        store: RunStore) -> None:
    """From hatchet examples/durable (a durable child waiting for an event inside a fan-out
    of children: the others finish, and the replay runs only the waiting one)."""
    counter = Counter()

    def item(x: str) -> str:
        counter.hit(x)
        if x == "b":
            return f"{x}:{interrupt(f'ok {x}?')}"
        return x

    f = Formation("fanout").add_map("each", formation=Formation("child").add_function("item", item))
    first = f.run(["a", "b", "c"], store=store)
    assert (first.status, first.interrupt) == ("suspended", {"node": "each/1/item", "payload": "ok b?"})
    done = f.resume(first.run_id, store=store, answer="yes")
    assert done.output == ["a", "b:yes", "c"]
    assert [counter.count(x) for x in "abc"] == [1, 2, 1]


def test_a_wait_in_a_task_with_retries_and_a_timeout_is_not_a_failure(store: RunStore) -> None:
    """From hatchet bug_tests/durable_evict_timeout (a durable task evicted while it waits
    does not count the wait against its execution timeout, nor retry)."""
    events: list[FormationEvent] = []
    f = Formation("evict").add_function("ask", lambda x: x + interrupt("?"), retries=3, backoff=0.001, timeout=5)
    first = f.run(1, store=store, on_event=events.append)
    assert (first.status, first.nodes["ask"].attempts) == ("suspended", 1)
    assert [e.type.value for e in events] == ["run_started", "node_started", "run_finished"]
    assert f.resume(first.run_id, store=store, answer=4).output == 5


def test_a_run_still_running_cannot_be_replayed_beside_itself(store: RunStore, release: threading.Event) -> None:
    """From hatchet examples/bulk_operations/test_bulk_replay.py (replaying runs: a replay
    must not run a task a second time at once): resuming a run that runs is refused, from
    its own formation or another one on the same store."""
    counter = Counter()

    def slow(x: int) -> int:
        counter.hit("slow")
        release.wait(5)
        return x

    f = Formation("replay").add_function("slow", slow, concurrency=2)
    with f.start(store=store) as running:
        future = running.submit(1)
        run_id = future.run_id
        with pytest.raises(RunNotResumableError, match="it is running"):
            running.resume(run_id)
        with pytest.raises(RunNotResumableError, match="it is running"):
            f.resume(run_id, store=store)
        release.set()
        assert future.result(timeout=5).output == 1
    assert counter.count("slow") == 1


def test_an_awaited_run_cut_short_by_its_callers_time_limit_is_cancelled_and_resumes_from_async_code(
        store: RunStore) -> None:
    """From hatchet examples/durable/test_durable.py test_durable_sleep_cancel_replay (the
    awaiting code gives up mid-sleep; the run is cancelled, then replayed with ``aio_replay``
    and waits for its event): ``asyncio.wait_for`` around ``arun``, then ``aresume``."""
    counter = Counter()

    def first(x: int) -> int:
        counter.hit("first")
        return x

    async def sleep(x: int) -> int:
        if counter.hit("sleep") == 1:
            await asyncio.sleep(20)
        return x

    f = (Formation("sleep_twice").add_function("first", first).add_function("sleep", sleep)
         .add_function("ask", lambda x: f"{x}:{interrupt('event?')}").connect("first", "sleep", "ask"))

    async def main() -> tuple[str, Any, Any]:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(f.arun(1, store=store, run_id="r1"), 0.3)
        for _ in range(400):
            if store.get("r1").status != "running":
                break
            await asyncio.sleep(0.005)
        status = store.get("r1").status
        waiting = await f.aresume("r1", store=store)
        done = await f.aresume("r1", store=store, answer="yes")
        return status, waiting.interrupt, done.output

    status, waiting, output = asyncio.run(main())
    assert (status, waiting, output) == ("cancelled", {"node": "ask", "payload": "event?"}, "1:yes")
    assert (counter.count("first"), counter.count("sleep")) == (1, 2)


def test_a_failure_handler_that_asks_a_person_suspends_and_the_failed_task_is_not_retried_on_resume(
        store: RunStore) -> None:
    """From hatchet examples/on_failure/worker.py (the on-failure task does cleanup or
    notifies a user; here it waits for their decision) and durable/worker.py (a wait)."""
    counter = Counter()

    def step1(_: Any) -> None:
        counter.hit("step1")
        raise RuntimeError("step1 failed")

    def on_failure(failure: Any) -> str:
        counter.hit("on_failure")
        return f"{failure.node}: {failure.error} -> {interrupt('retry or drop?')}"

    f = (Formation("OnFailureWorkflow").add_function("step1", step1, retries=1, backoff=0.001)
         .add_function("on_failure", on_failure).connect("step1", "on_failure", on_error=True))
    first = f.run(None, store=store)
    assert (first.status, first.interrupt) == ("suspended", {"node": "on_failure", "payload": "retry or drop?"})
    done = f.resume(first.run_id, store=store, answer="drop")
    assert done.outputs == {"on_failure": "step1: step1 failed -> drop"}
    assert (done.nodes["step1"].status, done.nodes["step1"].attempts) == ("failed", 2)
    assert (counter.count("step1"), counter.count("on_failure")) == (2, 2)
