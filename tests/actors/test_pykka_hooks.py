"""A guard of exactly what the node actors rely on in Pykka, beyond its plain public API.

Node actors are ``pykka.ThreadingActor`` subclasses that use Pykka's public API
(``start``, ``on_start``, ``on_receive``, ``on_stop``, ``on_failure``, ``Actor.stop``,
``ActorRef.tell`` and ``stop``, ``ActorRegistry``, ``use_daemon_thread``) and one of the methods Pykka documents
for implementors of new actor types: ``_create_actor_inbox``, which returns a
:class:`~wingman_actors.actors._inbox.Lane`. What the lane relies on is tested here, on
Pykka's own actors: every test fails if a Pykka release changes it. CI runs these with
the oldest and the newest Pykka that pyproject.toml admits.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Any, ClassVar

import pykka

from wingman_actors.actors._address import RuntimeActor, start_actor
from wingman_actors.actors._inbox import Lane


def _wait_for(predicate: Any, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


class _Recorder(pykka.ThreadingActor):
    """A plain Pykka actor on a lane, recording what happens to it."""

    use_daemon_thread = True
    made: ClassVar[list[Lane]] = []
    instances: ClassVar[list[_Recorder]] = []

    def __init__(self, shared: queue.SimpleQueue[Any] | None = None, hold: bool = False) -> None:
        super().__init__()
        self.seen: list[Any] = []
        self.events: list[str] = []
        self.lane = self.actor_inbox
        assert isinstance(self.lane, Lane)
        if shared is not None:
            self.lane.share(shared)
        if hold:
            self.lane.hold_stop(self)
        _Recorder.instances.append(self)

    @staticmethod
    def _create_actor_inbox() -> Lane:
        lane = Lane()
        _Recorder.made.append(lane)
        return lane

    def on_receive(self, message: Any) -> Any:
        self.seen.append(message)
        if message == "retire":
            self.lane.release_stop()
        if message == "boom":
            raise ValueError("boom")
        return message

    def on_stop(self) -> None:
        self.events.append("stop")

    def on_failure(self, *exc_info: Any) -> None:
        self.events.append(f"failure:{exc_info[0].__name__}")


def _start(**kwargs: Any) -> tuple[_Recorder, pykka.ActorRef[Any]]:
    _Recorder.made.clear()
    _Recorder.instances.clear()
    ref = _Recorder.start(**kwargs)
    (lane,) = _Recorder.made  # made once, in Actor.__init__
    (actor,) = _Recorder.instances
    assert actor.actor_inbox is lane and ref.actor_inbox is lane  # the actor's and the ref's inbox
    return actor, ref


def test_pykka_makes_the_inbox_with_create_actor_inbox_and_tells_and_asks_through_it() -> None:
    actor, ref = _start()
    try:
        ref.tell("hello")
        assert ref.ask("again", timeout=3) == "again"
        assert actor.seen == ["hello", "again"]
    finally:
        ref.stop()


def test_a_shared_lane_puts_to_and_gets_from_the_queue_it_shares() -> None:
    shared: queue.SimpleQueue[Any] = queue.SimpleQueue()
    _, ref = _start(shared=shared)
    try:
        assert ref.ask("via the shared queue", timeout=3) == "via the shared queue"
    finally:
        ref.stop()
    assert shared.empty()


def test_a_stopped_actor_leaves_what_waits_in_a_shared_queue_to_the_others() -> None:
    # Pykka drains a stopped actor's inbox while empty() says False: a shared lane
    # says True, so the inputs of the replicas that stay are not taken.
    shared: queue.SimpleQueue[Any] = queue.SimpleQueue()
    gate = threading.Event()

    class Slow(_Recorder):
        def on_receive(self, message: Any) -> Any:
            gate.wait(3)
            return super().on_receive(message)

    ref = Slow.start(shared=shared)
    ref.tell("first")  # taken at once: the actor waits at the gate
    _wait_for(lambda: shared.empty())
    stopped = ref.stop(block=False)
    ref.tell("for another replica")  # queued after the stop: the actor never takes it
    gate.set()
    assert stopped.get(timeout=3) is True
    assert shared.qsize() == 1


def test_a_held_stop_is_one_put_and_stops_the_actor_when_released_before_queued_messages() -> None:
    shared: queue.SimpleQueue[Any] = queue.SimpleQueue()
    actor, ref = _start(shared=shared, hold=True)
    assert shared.empty()  # Actor.stop() at birth put its request in the lane only
    gate = threading.Event()

    def hold_then_retire(message: Any) -> Any:
        gate.wait(3)
        return _Recorder.on_receive(actor, message)

    actor.on_receive = hold_then_retire  # type: ignore[method-assign]
    ref.tell("retire")  # the actor releases its held stop while handling this
    ref.tell("after")  # queued behind it in the shared queue
    gate.set()
    _wait_for(lambda: not ref.is_alive())
    _wait_for(lambda: actor.events == ["stop"])  # Pykka stopped it as for any stop: on_stop ran
    assert actor.seen == ["retire"]
    assert shared.qsize() == 1  # "after" is left for the other replicas


def test_holding_a_stop_makes_no_reply_future() -> None:
    made: list[Any] = []

    class Counting(_Recorder):
        @staticmethod
        def _create_future() -> pykka.Future[Any]:
            made.append(1)
            return pykka.ThreadingActor._create_future()

    _Recorder.made.clear()
    ref = Counting.start(shared=queue.SimpleQueue(), hold=True)
    try:
        assert made == []  # Actor.stop() tells; ref.stop(block=False) would have made two
    finally:
        ref.tell("retire")
        ref.actor_stopped.wait(3)
    assert ref not in pykka.ActorRegistry.get_all()


def test_an_exception_in_on_receive_of_a_told_message_calls_on_failure_and_stops_the_actor() -> None:
    actor, ref = _start()
    ref.tell("boom")
    _wait_for(lambda: actor.events == ["failure:ValueError"])
    _wait_for(lambda: not ref.is_alive())


class _Kept(RuntimeActor):
    def __init__(self, tag: str) -> None:
        super().__init__()
        self.tag = tag
        self.thread_name = f"kept-{tag}"
        self.init_thread = threading.current_thread()

    def on_receive(self, message: Any) -> Any:
        return threading.current_thread().name


def test_start_actor_returns_the_object_start_made_in_the_calling_thread() -> None:
    actor = start_actor(_Kept, "a")
    try:
        assert isinstance(actor, _Kept) and actor.tag == "a"
        assert actor.init_thread is threading.current_thread()  # __init__ ran inside start()
        assert actor.actor_ref in pykka.ActorRegistry.get_all()
    finally:
        actor.actor_ref.stop()
        actor.thread.join(3)


def test_on_start_runs_on_the_actors_daemon_thread_before_any_message() -> None:
    actor = start_actor(_Kept, "b")
    try:
        assert actor.actor_ref.ask("name?", timeout=3) == "kept-b"
        assert actor.thread.daemon and actor.thread.name == "kept-b"
    finally:
        actor.actor_ref.stop()
        actor.thread.join(3)
    assert not actor.thread.is_alive()
