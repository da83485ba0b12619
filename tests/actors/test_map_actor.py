"""The map node actor on its own: replies, its worker threads and event loop (kept
between runs, ended when the actor stops), which functions are awaited, interrupts."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from typing import Any

from wingman_actors.actors._address import start_actor
from wingman_actors.actors._envelope import new_envelope
from wingman_actors.actors._mapping import MapActor, is_async_callable
from wingman_actors.errors import ErrorKind, MapItemsError, PayloadError
from wingman_actors.testing import ActorProbe


def run_map(actor_probe: ActorProbe, fn: Any, payload: Any, **kwargs: Any) -> Any:
    actor = start_actor(MapActor, fn, name="each", reply_to=actor_probe, **kwargs)
    try:
        actor.actor_ref.tell(new_envelope("work", payload, sender="up"))
        return actor_probe.expect_message(timeout=10)
    finally:
        actor.actor_ref.stop()
        actor.thread.join(5)


def node_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("wingman-map-each-")]


def test_a_map_actor_replies_with_the_results_in_item_order(actor_probe: ActorProbe) -> None:
    reply = run_map(actor_probe, lambda x: x + 1, [1, 2, 3], max_workers=2)

    assert (reply.type, reply.payload) == ("result", [2, 3, 4])


def test_a_payload_that_is_not_a_list_fails_naming_the_node_and_the_sender(actor_probe: ActorProbe) -> None:
    reply = run_map(actor_probe, lambda x: x, "not a list")

    assert reply.type == "failure" and isinstance(reply.payload, PayloadError)
    assert str(reply.payload) == "map node 'each' needs a list input (one call per item), got str from 'up'"


def test_later_runs_reuse_the_worker_threads_and_stopping_the_actor_ends_them(actor_probe: ActorProbe) -> None:
    actor = start_actor(MapActor, lambda x: x, name="each", reply_to=actor_probe, max_workers=3)
    try:
        for _ in range(3):
            actor.actor_ref.tell(new_envelope("work", [1, 2, 3], sender="up"))
            assert actor_probe.expect_message(timeout=10).type == "result"
        assert len(node_threads()) == 3
    finally:
        actor.actor_ref.stop()
        actor.thread.join(5)
    assert node_threads() == []


def test_the_event_loop_of_an_async_map_is_kept_between_runs_and_stopped_with_the_actor(
    actor_probe: ActorProbe,
) -> None:
    loops: set[int] = set()

    async def note(x: int) -> int:
        loops.add(id(asyncio.get_running_loop()))
        return x

    actor = start_actor(MapActor, note, name="each", reply_to=actor_probe)
    try:
        for _ in range(2):
            actor.actor_ref.tell(new_envelope("work", [1, 2], sender="up"))
            assert actor_probe.expect_message(timeout=10).payload == [1, 2]
        assert len(loops) == 1 and node_threads() == ["wingman-map-each-loop-0"]
    finally:
        actor.actor_ref.stop()
        actor.thread.join(5)
    assert node_threads() == []


def test_interrupt_starts_no_further_item_and_fails_the_rest_as_cancelled(actor_probe: ActorProbe) -> None:
    started = threading.Event()

    def slow(x: int) -> int:
        started.set()
        time.sleep(0.05)
        return x

    actor = start_actor(MapActor, slow, name="each", reply_to=actor_probe, max_workers=1)
    try:
        actor.actor_ref.tell(new_envelope("work", list(range(100)), sender="up"))
        assert started.wait(5)
        actor.interrupt("enough")
        failure = actor_probe.expect_message(type="failure", timeout=4).payload
    finally:
        actor.actor_ref.stop()
        actor.thread.join(5)
    assert isinstance(failure, MapItemsError) and len(failure.errors) >= 98
    assert all(getattr(e, "kind", None) is ErrorKind.CANCELLED for e in failure.errors.values())
    assert "stopped before item 99 finished: enough" in str(failure.errors[99])


async def _double(x: int) -> int:
    return 2 * x


class _AsyncCallable:
    async def __call__(self, x: int) -> int:
        return 2 * x


def test_async_functions_partials_of_them_and_objects_with_an_async_call_are_awaited() -> None:
    assert is_async_callable(_double)
    assert is_async_callable(functools.partial(_double))
    assert is_async_callable(_AsyncCallable())
    assert not is_async_callable(lambda x: x)
    assert not is_async_callable(_AsyncCallable)  # the class: calling it builds an instance


def test_an_object_with_an_async_call_is_awaited_per_item(actor_probe: ActorProbe) -> None:
    assert run_map(actor_probe, _AsyncCallable(), [1, 2]).payload == [2, 4]


class _SlowToStart(MapActor):
    """A map actor that pauses between taking work and setting up its visit."""

    taken = threading.Event()
    go_on = threading.Event()

    def process(self, env: Any) -> Any:
        self.taken.set()
        self.go_on.wait(5)
        return super().process(env)


def test_an_interrupt_before_the_visit_is_set_up_still_stops_it(actor_probe: ActorProbe) -> None:
    calls: list[int] = []
    _SlowToStart.taken, _SlowToStart.go_on = threading.Event(), threading.Event()
    actor = start_actor(_SlowToStart, calls.append, name="each", reply_to=actor_probe)
    try:
        actor.actor_ref.tell(new_envelope("work", [1, 2, 3], sender="up"))
        assert _SlowToStart.taken.wait(5)
        actor.interrupt("timed out")  # e.g. a node timeout on a busy machine
        _SlowToStart.go_on.set()
        failure = actor_probe.expect_message(type="failure", timeout=4).payload
    finally:
        actor.actor_ref.stop()
        actor.thread.join(5)
    assert isinstance(failure, MapItemsError) and sorted(failure.errors) == [0, 1, 2]
    assert calls == []
