"""The threads backend on its own: node groups of Pykka actors sharing one queue."""

from __future__ import annotations

import threading
import time
from typing import Any

from wingman_actors.actors._envelope import EnvelopeType, Work, new_envelope
from wingman_actors.actors._function import FunctionActor
from wingman_actors.backends import BACKENDS, NodeRecipe, ThreadsBackend, new_backend


class _Run:
    """The bits of a run's bookkeeping node actors read."""

    done = False
    listeners: list[Any] = []  # noqa: RUF012


class _Observer:
    def __init__(self) -> None:
        self.outputs: list[Any] = []
        self.got = threading.Event()

    def started(self, work: Work) -> None: ...

    def wants_events(self, work: Work) -> bool:
        return False

    def agent_event(self, work: Work, event: Any) -> None: ...

    def attempt_timeout(self, work: Work) -> float | None:
        return None

    def completed(self, work: Work, attempt: int, output: Any, usage: Any, started: float, finished: float) -> None:
        self.outputs.append(output)
        self.got.set()

    def failed(self, work: Work, attempt: int, exc: BaseException, started: float, finished: float, actor: Any) -> bool:
        return False


def _work(payload: Any, run: Any) -> Work:
    return Work(new_envelope(EnvelopeType.WORK, payload, run_id="r", sender="input", target="f", run=run))


def test_the_threads_backend_is_the_default_one_and_new_backend_builds_it() -> None:
    assert sorted(BACKENDS) == ["ray", "threads"]
    assert isinstance(new_backend("threads"), ThreadsBackend)


def test_an_abandoned_replica_is_replaced_at_once_and_the_queue_keeps_flowing() -> None:
    release, entered = threading.Event(), threading.Event()

    def fn(x: int) -> int:
        if x == 0:
            entered.set()
            release.wait(10)
        return x

    observer = _Observer()
    backend = ThreadsBackend("t")
    node = backend.start_node(NodeRecipe("f", FunctionActor, (fn,), {"name": "f"}), 1, observer)
    try:
        stuck_run, other_run = _Run(), _Run()
        stuck = _work(0, stuck_run)
        node.tell(stuck)
        assert entered.wait(3)
        (first,) = node.actors()
        assert node.working_on(stuck_run) and not node.working_on(other_run)
        assert node.abandon(stuck, "test gave up")
        (fresh,) = node.actors()
        assert fresh is not first and first.abandoned
        node.tell(_work(7, other_run))
        assert observer.got.wait(3) and observer.outputs == [7]
    finally:
        release.set()
        backend.stop(1.0)
    deadline = time.monotonic() + 3
    while first.thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not first.thread.is_alive() and not fresh.thread.is_alive()


class _QuickToStop(FunctionActor):
    """An interruptible node whose work returns the moment it is interrupted, while the
    caller of ``interrupt`` is still inside the call (a slow hand-off on a busy machine)."""

    stop_now = threading.Event()

    @property
    def interruptible(self) -> bool:
        return True

    def interrupt(self, reason: str = "") -> None:
        self.stop_now.set()
        time.sleep(0.2)  # the work has returned by now: it must already count as abandoned


def test_an_interruptible_replica_abandoned_mid_work_stops_instead_of_taking_more_work() -> None:
    entered = threading.Event()
    _QuickToStop.stop_now = threading.Event()

    def fn(x: int) -> int:
        entered.set()
        _QuickToStop.stop_now.wait(10)
        return x

    backend = ThreadsBackend("t")
    node = backend.start_node(NodeRecipe("f", _QuickToStop, (fn,), {"name": "f"}), 1, _Observer())
    try:
        stuck = _work(0, _Run())
        node.tell(stuck)
        assert entered.wait(3)
        (first,) = node.actors()
        assert node.abandon(stuck, "test gave up")
        # Had it gone back to the shared queue, it would take inputs meant for the fresh
        # replica, and the one STOP that stop() sends the live replica.
        first.thread.join(3)
        assert not first.thread.is_alive()
    finally:
        backend.stop(1.0)


class _CountedThread:
    """Stands in for an actor's thread: counts how often it is asked whether it is alive."""

    asked = 0

    def __init__(self, alive: bool) -> None:
        self.alive = alive

    def is_alive(self) -> bool:
        _CountedThread.asked += 1
        return self.alive


class _Actor:
    def __init__(self, alive: bool) -> None:
        self.thread = _CountedThread(alive)


def test_remembering_started_actors_costs_time_linear_in_their_number() -> None:
    backend = ThreadsBackend("big")
    _CountedThread.asked = 0
    for _ in range(5_000):
        backend.remember(_Actor(alive=True))
    assert len(backend.spawned) == 5_000
    # the old per-start check of every actor once past 256 asked ~12 million times here
    assert _CountedThread.asked <= 2 * 5_000


def test_actors_that_have_ended_are_forgotten_as_restarts_add_more() -> None:
    backend = ThreadsBackend("restarts")
    ended = [_Actor(alive=False) for _ in range(256)]
    for actor in ended:
        backend.remember(actor)
    live = _Actor(alive=True)
    backend.remember(live)
    assert backend.spawned == [live]
