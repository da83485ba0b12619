"""Cancelling runs: ``future.cancel()`` and ``running.cancel(run_id)``, queued and in flight."""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError, Future, as_completed
from concurrent.futures import wait as futures_wait
from typing import Any

import pytest

from wingman_actors import Agent, Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation._result import NodeStatus
from wingman_actors.formation.events import FormationEvent, FormationEventType
from wingman_actors.testing import ScriptedProvider


def _resolves(future: Future[Any], within: float = 3.0) -> bool:
    """Whether ``future`` resolves within ``within`` seconds, asked from another thread
    (the bug this guards against made every future method block forever)."""
    done = threading.Event()

    def probe() -> None:
        future.cancelled()
        done.set()

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    return done.wait(within)


def _gate() -> tuple[threading.Event, threading.Event, Any]:
    """A function node that signals it started, then blocks until released."""
    entered, release = threading.Event(), threading.Event()

    def wait(x: int) -> int:
        entered.set()
        release.wait(10)
        return x

    return entered, release, wait


def test_cancelling_a_submitted_future_resolves_it_and_frees_the_node() -> None:
    entered, release, wait = _gate()
    formation = Formation("c").add_function("wait", wait).add_function("inc", lambda x: x + 1).connect("wait", "inc")
    try:
        with formation.start() as running:
            first = running.submit(1)
            assert entered.wait(3)
            assert first.cancel() is True
            assert _resolves(first)
            assert first.cancelled()
            with pytest.raises(CancelledError):
                first.result(timeout=1)
            release.set()
            assert running.submit(2).result(timeout=3).output == 3
    finally:
        release.set()


def test_wait_and_as_completed_see_a_cancelled_run_at_once() -> None:
    entered, release, wait = _gate()
    try:
        with Formation("c").add_function("wait", wait).start() as running:
            future = running.submit(1)
            assert entered.wait(3)
            assert future.cancel()
            done, pending = futures_wait([future], timeout=1)
            assert done == {future} and not pending
            assert list(as_completed([future], timeout=1)) == [future]
    finally:
        release.set()


def test_cancel_returns_false_once_the_run_has_finished() -> None:
    with Formation("c").add_function("inc", lambda x: x + 1).start() as running:
        future = running.submit(1)
        assert future.result(timeout=3).output == 2
        assert future.cancel() is False
        assert running.cancel(future.run_id) is False
        assert not future.cancelled()


def test_cancelling_a_queued_run_by_id_never_runs_it() -> None:
    entered, release, wait = _gate()
    seen: list[int] = []

    def record(x: int) -> int:
        seen.append(x)
        return x

    formation = Formation("c").add_function("wait", wait).add_function("record", record).connect("wait", "record")
    try:
        with formation.start() as running:
            first = running.submit(1)
            assert entered.wait(3)
            queued = running.submit(2)
            assert running.cancel(queued.run_id) is True
            assert queued.cancelled()
            release.set()
            assert first.result(timeout=3).output == 1
            assert seen == [1]
    finally:
        release.set()


def test_cancelling_an_in_flight_function_abandons_the_attempt_and_other_runs_continue() -> None:
    entered, release, wait = _gate()
    events: list[FormationEvent] = []
    formation = Formation("c").add_function("wait", wait, concurrency=2)
    try:
        with formation.start(on_event=events.append) as running:
            stuck = running.submit(1)
            assert entered.wait(3)
            other = running.submit(5)
            assert stuck.cancel()
            assert _resolves(stuck, 1.0)
            # the other run is untouched: it still waits on the gate, like any work
            assert not other.done()
            release.set()
            assert other.result(timeout=3).output == 5
    finally:
        release.set()
    cancelled = [e for e in events if e.type is FormationEventType.RUN_CANCELLED]
    assert [e.run_id for e in cancelled] == [stuck.run_id]
    nodes = cancelled[0].data["nodes"]
    assert nodes["wait"].status is NodeStatus.CANCELLED


def test_cancelling_an_agent_node_in_a_long_model_call_stops_its_session() -> None:
    provider = ScriptedProvider(["slow answer"], latency_s=5.0, cycle=True)
    agent = Agent("writer", provider=provider)
    formation = Formation("c").add_function("prep", lambda x: f"topic {x}").add_agent("writer", agent)
    formation.connect("prep", "writer")
    events: list[FormationEvent] = []
    with formation.start(on_event=events.append) as running:
        future = running.submit(1)
        deadline = time.monotonic() + 3
        while provider.calls == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        started = time.perf_counter()
        assert future.cancel()
        assert _resolves(future, 1.0)
        assert time.perf_counter() - started < 1.0
        cancelled = next(e for e in events if e.type is FormationEventType.RUN_CANCELLED)
        assert cancelled.data["outputs"] == {"prep": "topic 1"}
        assert cancelled.data["unfinished"] == ["writer"]
        # the agent node serves the next run at once (a fresh session, no 5 s wait)
        provider.latency_s = 0.0
        assert running.submit(2).result(timeout=3).output == "slow answer"


def test_cancelling_a_fleet_node_cancels_every_item() -> None:
    provider = ScriptedProvider(["item done"], latency_s=5.0, cycle=True)
    formation = Formation("c").add_fleet("team", Agent("worker", provider=provider), max_workers=4)
    with formation.start() as running:
        future = running.submit(["a", "b", "c", "d", "e", "f"])
        deadline = time.monotonic() + 3
        while provider.calls < 4 and time.monotonic() < deadline:
            time.sleep(0.005)
        started = time.perf_counter()
        assert running.cancel(future.run_id)
        assert _resolves(future, 1.0)
        assert future.cancelled()
        assert time.perf_counter() - started < 1.0
    assert provider.calls == 4  # the items still queued never started


def test_cancelling_a_fan_in_run_waiting_on_one_branch() -> None:
    entered, release, wait = _gate()

    def join(fast: int, slow: int) -> int:
        return fast + slow

    formation = (
        Formation("c").add_function("src", lambda x: x).add_function("fast", lambda x: x)
        .add_function("slow", wait).add_function("join", join)
        .connect("src", "fast", "join").connect("src", "slow", "join")
    )
    try:
        with formation.start() as running:
            future = running.submit(1)
            assert entered.wait(3)
            assert future.cancel()
            assert _resolves(future, 1.0)
            release.set()
            entered.clear()
            assert running.submit(2).result(timeout=3).output == 4
    finally:
        release.set()


def test_cancelling_a_run_inside_a_loop_stops_its_next_visits() -> None:
    visits: list[int] = []
    step = threading.Event()

    def inc(x: int) -> int:
        visits.append(x)
        step.set()
        time.sleep(0.01)
        return x + 1

    formation = (
        Formation("c").add_function("start", lambda x: x).add_function("inc", inc, max_visits=10_000)
        .connect("start", "inc").connect("inc", "inc", when=lambda x: x < 1_000_000)
    )
    with formation.start() as running:
        future = running.submit(0)
        assert step.wait(3)
        assert future.cancel()
        assert _resolves(future, 1.0)
        count = len(visits)
        time.sleep(0.1)
        assert len(visits) <= count + 1  # at most the visit in flight when cancelled


def test_a_run_failed_by_one_branch_interrupts_an_agent_busy_on_another(caplog: pytest.LogCaptureFixture) -> None:
    provider = ScriptedProvider(["essay"], latency_s=5.0, cycle=True)
    def boom(x: int) -> int:
        while provider.calls == 0:  # fail once the writer is in its model call
            time.sleep(0.005)
        raise ValueError("bad input")

    formation = (
        Formation("c").add_function("src", lambda x: x).add_function("boom", boom)
        .add_agent("writer", Agent("writer", provider=provider), prompt="write about {input}")
        .connect("src", "boom").connect("src", "writer")
    )
    with formation.start() as running:
        with pytest.raises(FormationRuntimeError, match="bad input"):
            running.submit(1).result(timeout=3)
        deadline = time.monotonic() + 1.5  # not the 5 s model call
        while time.monotonic() < deadline:
            if all(a.current is None for a in running.actors() if a.name == "writer"):
                break
            time.sleep(0.01)
        assert all(a.current is None for a in running.actors() if a.name == "writer")
    assert not [r for r in caplog.records if "abandoned" in r.getMessage()]  # functions are left to finish


def test_many_runs_cancelled_from_several_threads_while_others_flow_all_resolve() -> None:
    def slow_inc(x: int) -> int:
        time.sleep(0.001)
        return x + 1

    formation = (
        Formation("c").add_function("a", slow_inc, concurrency=2).add_function("b", slow_inc)
        .add_function("c", slow_inc, concurrency=2).connect("a", "b", "c")
    )
    with formation.start() as running:
        futures = [running.submit(i) for i in range(300)]
        answers: dict[int, bool] = {}

        def cancel_some(k: int) -> None:
            for i in range(k, 300, 8):  # threads 0..3 cancel every other run between them
                answers[i] = futures[i].cancel()

        workers = [threading.Thread(target=cancel_some, args=(k,)) for k in (0, 2, 4, 6)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(10)
        _, pending = futures_wait(futures, timeout=10)
        assert not pending, f"{len(pending)} run(s) never resolved"
        for i, future in enumerate(futures):
            if answers.get(i):
                assert future.cancelled()
            else:
                assert future.result(timeout=1).output == i + 3
        assert running.in_flight == 0


@pytest.mark.parametrize("run_id", [3, None, b"abc-1"])
def test_cancel_refuses_a_run_id_that_is_not_a_str(run_id: Any) -> None:
    # a run id is a str (future.run_id): anything else named no run and returned False,
    # which reads as "that run had already finished"
    with Formation("c").add_function("a", lambda x: x).start() as running:
        with pytest.raises(TypeError, match=r"run_id must be a str.*future\.run_id"):
            running.cancel(run_id)
