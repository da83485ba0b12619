"""The fleet node actor: workers start at once and each renders its own item, on the
worker loops of ``Fleet``; per-item failures and ``interrupt()``. (That a retry reruns
only the failed items is tested through a formation, in tests/formation/test_runtime.py.)"""

from __future__ import annotations

import threading
import time
from typing import Any

from wingman_actors import Agent
from wingman_actors.actors._address import start_actor
from wingman_actors.actors._envelope import new_envelope
from wingman_actors.actors._nodes import FleetActor, FleetItemsError, PayloadError
from wingman_actors.core import InferenceRequest
from wingman_actors.errors import ErrorKind
from wingman_actors.testing import ActorProbe, ScriptedProvider


def last_text(request: InferenceRequest) -> str:
    return request.messages[-1].text


class Gate:
    """An item that is slow to render until another item has rendered."""

    def __init__(self, name: str, opened_by: threading.Event | None, opens: threading.Event | None) -> None:
        self.name, self.opened_by, self.opens = name, opened_by, opens
        self.rendered_on = ""
        self.waited: bool | None = None

    def __str__(self) -> str:  # how the node renders an object it cannot dump as JSON
        self.rendered_on = threading.current_thread().name
        if self.opened_by is not None:
            self.waited = self.opened_by.wait(5)
        if self.opens is not None:
            self.opens.set()
        return self.name


def run_fleet(actor_probe: ActorProbe, payload: list[Any], within: float = 10, **kwargs: Any) -> Any:
    provider = kwargs.pop("provider", None) or ScriptedProvider([last_text], cycle=True)
    actor = start_actor(FleetActor, Agent("r", provider=provider), name="many", reply_to=actor_probe, **kwargs)
    try:
        actor.actor_ref.tell(new_envelope("work", payload, sender="up"))
        return actor_probe.expect_message(timeout=within)
    finally:
        actor.actor_ref.stop()
        actor.thread.join(5)


def test_each_item_is_rendered_by_the_fleet_worker_that_runs_it(actor_probe: ActorProbe) -> None:
    second = threading.Event()
    slow, quick = Gate("slow", opened_by=second, opens=None), Gate("quick", opened_by=None, opens=second)

    reply = run_fleet(actor_probe, [slow, quick], max_workers=2)

    assert reply.type == "result" and reply.payload == ["slow", "quick"]
    assert slow.waited is True  # rendering every item up front, in order, would have timed out
    assert slow.rendered_on.startswith("wingman-fleet-") and quick.rendered_on.startswith("wingman-fleet-")
    assert slow.rendered_on != quick.rendered_on


def test_an_item_the_prompt_cannot_render_fails_alone_and_is_not_retryable(actor_probe: ActorProbe) -> None:
    reply = run_fleet(actor_probe, [{"topic": "a"}, {"other": 1}, {"topic": "c"}], prompt="About {topic}")

    assert reply.type == "failure"
    error = reply.payload
    assert isinstance(error, FleetItemsError) and list(error.errors) == [1]
    assert isinstance(error.errors[1], PayloadError) and "uses {topic}" in str(error.errors[1])
    assert error.retryable is False


def test_interrupt_cancels_every_item_in_flight(actor_probe: ActorProbe) -> None:
    provider = ScriptedProvider(["late"], cycle=True, latency_s=5.0)
    actor = start_actor(FleetActor, Agent("r", provider=provider), name="many", reply_to=actor_probe)
    try:
        actor.actor_ref.tell(new_envelope("work", ["a", "b", "c"], sender="up"))
        deadline = time.monotonic() + 5
        while provider.calls < 3 and time.monotonic() < deadline:  # every item in its model call
            time.sleep(0.01)
        t0 = time.monotonic()
        actor.interrupt()
        failure = actor_probe.expect_message(type="failure", timeout=4).payload
        assert time.monotonic() - t0 < 4  # well before the 5 s model calls would end
    finally:
        actor.actor_ref.stop()
        actor.thread.join(5)
    assert isinstance(failure, FleetItemsError) and sorted(failure.errors) == [0, 1, 2]
    assert all(getattr(e, "kind", None) is ErrorKind.CANCELLED for e in failure.errors.values())


def test_later_runs_reuse_the_workers_of_the_first_and_stopping_the_node_ends_them(actor_probe: ActorProbe) -> None:
    ran_on: set[int] = set()
    together = threading.Barrier(4, timeout=5)  # every run's 4 items run at once, on 4 workers

    def record_thread(request: InferenceRequest) -> str:
        ran_on.add(threading.get_ident())
        together.wait()
        return last_text(request)

    def workers() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("wingman-fleet-many-")]

    agent = Agent("r", provider=ScriptedProvider([record_thread], cycle=True))
    actor = start_actor(FleetActor, agent, name="many", reply_to=actor_probe, max_workers=4)
    try:
        actor.actor_ref.tell(new_envelope("work", [f"item {n}" for n in range(4)], sender="up"))
        assert actor_probe.expect_message(timeout=10).type == "result"
        first = workers()
        ran_on.clear()
        for _ in range(3):
            actor.actor_ref.tell(new_envelope("work", [f"item {n}" for n in range(4)], sender="up"))
            assert actor_probe.expect_message(timeout=10).type == "result"
        later = workers()
    finally:
        actor.actor_ref.stop()
        actor.thread.join(5)
    assert len(first) == 4 and later == first  # no thread started after the first run
    assert ran_on <= {t.ident for t in first}
    assert not any(t.is_alive() for t in first)  # stopped with the node, not left behind


def test_a_crashed_fleet_node_ends_its_workers_too() -> None:
    replied = threading.Event()

    def broken_reply(envelope: object) -> None:  # raising here crashes the actor (Pykka's path)
        replied.set()
        raise RuntimeError("reply target is gone")

    agent = Agent("r", provider=ScriptedProvider([last_text], cycle=True))
    actor = start_actor(FleetActor, agent, name="crashy", reply_to=broken_reply, max_workers=3)
    actor.actor_ref.tell(new_envelope("work", ["a", "b", "c"], sender="up"))
    assert replied.wait(10)
    actor.thread.join(5)
    deadline = time.monotonic() + 5
    while any(t.name.startswith("wingman-fleet-crashy-") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the crashed node left its fleet workers running"
        time.sleep(0.01)


def test_a_fleet_node_lets_go_of_each_items_result_as_the_item_finishes(actor_probe: ActorProbe) -> None:
    import gc

    from wingman_actors.agents._result import Result

    alive: list[int] = []

    def reply(request: InferenceRequest) -> str:
        gc.collect()
        alive.append(sum(1 for o in gc.get_objects() if type(o) is Result and o.response.startswith("kept-")))
        return f"kept-{last_text(request)}"

    # each reply walks the whole heap: a worker late in a loaded suite has a large one (10 s was not enough)
    reply_ = run_fleet(actor_probe, ["a", "b", "c"], within=40, max_workers=1,
                       provider=ScriptedProvider([reply], cycle=True))

    assert reply_.type == "result" and reply_.payload == ["kept-a", "kept-b", "kept-c"]
    assert alive == [0, 0, 0]  # the finished items' results were not kept until the run ended
