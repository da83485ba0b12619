"""More of Thespian's own suite (thespianpy/Thespian ``thespian/test/``: test_poisonMessage.py's
chains of actors, test_troupe.py, test_msg_ExitRequest.py, test_actorSystemRestart.py) ported to
formations: poison inputs deep in a loop and to agent nodes, a troupe (a node's replicas) that
keeps its size through failures, and ``stop()`` racing submits and agents in flight."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future, wait
from typing import Any

import pykka
import pytest

from tests.support.peers import Counter, until
from wingman_actors import Agent, Formation
from wingman_actors.core import InferenceRequest
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.testing import ScriptedProvider


def replicas(node: str) -> int:
    """Live actors in Pykka's registry that serve ``node`` (one retiring meanwhile is not counted)."""
    count = 0
    for ref in pykka.ActorRegistry.get_all():
        try:
            count += ref.actor_class.__name__ == "FunctionActor" and ref.proxy().name.get(timeout=5) == node
        except pykka.ActorDeadError:
            pass
    return count


def test_a_loop_that_reaches_a_poison_value_fails_after_its_retries_keeping_the_visits_before() -> None:
    """From thespian test/test_poisonMessage.py::testLevel2 (each actor creates the next with
    ``msg + 1``; the one given 3 fails and its message comes back as poison): a node that
    feeds itself fails on its third visit after its retries; the trace keeps the outputs of
    the visits that succeeded."""
    calls = Counter()

    def step(x: int) -> int:
        calls.hit(x)
        if x == 3:
            raise ValueError("Yucky number 3")
        return x + 1

    f = Formation("chain").add_function("step", step, retries=1, backoff=0).add_function("done", lambda x: x)
    f.connect("step", "step", when=lambda x: x < 10).connect("step", "done", otherwise=True)
    with pytest.raises(FormationRuntimeError, match=r"node 'step' failed after 2 attempt") as info:
        f.run(1, timeout=20)
    trace = info.value.nodes["step"]
    assert (trace.visits, trace.outputs) == (3, [2, 3])
    assert (calls.count(1), calls.count(2), calls.count(3)) == (1, 1, 2)
    assert info.value.nodes["done"].attempts == 0


def test_an_agent_node_whose_model_fails_on_one_input_fails_that_run_and_answers_the_next() -> None:
    """From thespian test/test_poisonMessage.py::testLevel3ask with an agent as the actor: the
    model call that fails on one input is tried ``retries + 1`` times, the run fails naming the
    node and the model's error, and the agent answers the next input."""
    def reply(request: InferenceRequest) -> str:
        text = request.messages[-1].text
        if "3" in text:
            raise ConnectionError("Yucky number 3")
        return f"hi {text}"

    model = ScriptedProvider([reply], cycle=True)
    f = Formation("agent").add_agent("actor", Agent("actor", provider=model), retries=1, backoff=0)
    with f.start() as running:
        with pytest.raises(FormationRuntimeError, match=r"node 'actor' failed after 2 attempt.*Yucky number 3"):
            running.submit("3").result(20)
        calls_for_poison = model.calls
        assert running.submit("Hello").result(20).output == "hi Hello"
    assert calls_for_poison == 2


def test_a_troupe_keeps_its_size_through_failed_attempts_and_failed_runs() -> None:
    """From thespian test/test_troupe.py (a troupe of workers shares the messages; a worker that
    fails is replaced and the troupe goes on): three replicas, runs that fail once, runs that
    fail for good; afterwards the node still has exactly three live replicas."""
    tries = Counter()

    def work(x: int) -> int:
        n = tries.hit(x)
        if x % 4 == 1 and n == 1:
            raise ConnectionError("replaced once")
        if x % 4 == 2:
            raise ValueError("always")
        return x

    f = Formation("troupe").add_function("work", work, concurrency=3, retries=1, backoff=0)
    with f.start() as running:
        assert replicas("work") == 3
        futures = [running.submit(i) for i in range(40)]
        assert not wait(futures, timeout=30).not_done
        assert until(lambda: replicas("work") == 3, within=5), replicas("work")
        assert [running.submit(i).result(10).output for i in (0, 4, 8)] == [0, 4, 8]
    assert sum(1 for fut in futures if fut.exception(0) is not None) == 10


def test_a_troupe_keeps_its_size_after_attempts_abandoned_at_their_time_limit(
    gate: tuple[threading.Event, threading.Event],
) -> None:
    """From thespian test/test_troupe.py with workers that hang: each attempt cut by its time
    limit is abandoned and its replica replaced, so the node keeps its two live replicas and
    serves on."""
    entered, release = gate

    def work(x: int) -> int:
        if x < 0:
            entered.set()
            release.wait(10)
        return x

    f = Formation("troupe").add_function("work", work, concurrency=2, timeout=0.3)
    with f.start() as running:
        stuck = [running.submit(-1), running.submit(-2)]
        assert not wait(stuck, timeout=20).not_done
        assert all(isinstance(fut.exception(0), FormationRuntimeError) for fut in stuck)
        assert until(lambda: replicas("work") == 2, within=5), replicas("work")
        assert [running.submit(i).result(10).output for i in range(4)] == [0, 1, 2, 3]


def test_stop_racing_a_thread_that_submits_leaves_no_submitted_run_unanswered() -> None:
    """From thespian test/test_actorSystemRestart.py and test_msg_ExitRequest.py (an exit request
    arriving while messages still come in): every ``submit`` either raises at once (the
    formation stopped) or returns a future that is answered, result or error."""
    f = Formation("race").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2).connect("a", "b")
    running = f.start()
    futures: list[Future[Any]] = []
    refused: list[BaseException] = []
    twenty = threading.Event()

    def submitter() -> None:
        for i in range(2000):
            try:
                futures.append(running.submit(i))
            except RuntimeError as err:
                refused.append(err)
                return
            if i == 20:
                twenty.set()

    thread = threading.Thread(target=submitter)
    thread.start()
    assert twenty.wait(10)
    running.stop()
    thread.join(10)
    assert not wait(futures, timeout=10).not_done
    for i, future in enumerate(futures):
        err = future.exception(0)
        if err is None:
            assert future.result(0).output == (i + 1) * 2
        else:
            assert isinstance(err, FormationRuntimeError) and "stopped" in str(err), repr(err)
    assert len(refused) <= 1 and all("stopped" in str(err) for err in refused)


class StopsWhenCopied:
    """An input whose copy (``submit`` copies its input before the run starts) stops the
    formation: the window between ``submit``'s check that the formation runs and the run's
    start, made deterministic."""

    def __init__(self, running: Any) -> None:
        self.running = running

    def __deepcopy__(self, memo: dict[int, Any]) -> StopsWhenCopied:
        self.running.stop()
        return StopsWhenCopied(None)


def test_a_run_submitted_as_the_formation_stops_is_answered_not_left_pending() -> None:
    """From thespian test/test_actorSystemRestart.py (a message sent while the system shuts down
    is dead-lettered, never left waiting): a stop that lands while ``submit`` starts its run
    fails that run as it fails the others, instead of leaving its future pending forever."""
    running = Formation("race").add_function("a", lambda x: x).start()
    future = running.submit(StopsWhenCopied(running))
    with pytest.raises(FormationRuntimeError, match=r"formation 'race' stopped before run .* finished"):
        future.result(5)


def test_a_run_asubmitted_as_the_formation_stops_is_answered_not_left_pending() -> None:
    """As above, through ``asubmit`` (the awaitable a coroutine gets)."""
    async def main() -> None:
        running = Formation("race").add_function("a", lambda x: x).start()
        with pytest.raises(FormationRuntimeError, match=r"formation 'race' stopped before run .* finished"):
            await asyncio.wait_for(running.asubmit(StopsWhenCopied(running)), 5)

    asyncio.run(main())


def test_a_second_stop_returns_only_once_the_first_has_stopped_everything(
    gate: tuple[threading.Event, threading.Event],
) -> None:
    """From thespian test/test_actors.py::test01_1_ActorSystemMultipleShutdown (``shutdown()``
    twice is fine) and CPython's ``Executor.shutdown(wait=True)``, which waits in every caller:
    a ``stop()`` called while another thread's stop is still at work waits for it, so when it
    returns the formation has stopped, as after the first."""
    entered, release = gate
    running = Formation("twice").add_function("stuck", lambda x: (entered.set(), release.wait(10))).start()
    future = running.submit(1)
    assert entered.wait(10)
    first = threading.Thread(target=running.stop, kwargs={"timeout": 0.3})  # waits out its grace
    first.start()
    assert until(future.done, within=5)  # the first stop is at work
    running.stop()
    stopped_with_it = not first.is_alive()
    first.join(10)
    assert stopped_with_it


def test_a_node_that_stops_its_own_formation_answers_its_run_and_leaves_no_actor() -> None:
    """From thespian test/test_actorFailures.py (``KillReq``: an actor sends ``ActorExitRequest`` to
    its own address): ``stop()`` called from the node's own code returns at once, the run it
    was working on fails saying the formation stopped, and every actor ends."""
    holder: dict[str, Any] = {}

    def kill(x: int) -> int:
        holder["running"].stop()
        return x

    f = Formation("self").add_function("a", lambda x: x).add_function("kill", kill).connect("a", "kill")
    with f.start() as running:
        holder["running"] = running
        future = running.submit(1)
        with pytest.raises(FormationRuntimeError, match=r"formation 'self' stopped before run"):
            future.result(10)
    assert until(lambda: pykka.ActorRegistry.get_all() == [], within=5)


def test_a_listener_that_stops_the_formation_on_a_failure_answers_every_run(
    gate: tuple[threading.Event, threading.Event],
) -> None:
    """From thespian test/test_actorFailures.py (a parent told of its child's failure exits,
    taking its children with it): an ``on_event`` listener that stops the formation when a run
    fails (it runs on the runtime's own thread) ends every run, the one in flight included."""
    entered, release = gate
    holder: dict[str, Any] = {}

    def work(x: int) -> int:
        if x == 0:
            raise ValueError("fatal")
        entered.set()
        release.wait(10)
        return x

    def on_event(event: Any) -> None:
        if event.type.value == "run_failed" and "fatal" in event.data["error"]:
            holder["running"].stop()

    f = Formation("listen").add_function("work", work, concurrency=2)
    running = f.start(on_event=on_event)
    holder["running"] = running
    try:
        busy = running.submit(1)
        assert entered.wait(10)
        failing = running.submit(0)
        assert not wait([busy, failing], timeout=10).not_done
    finally:
        release.set()
        running.stop()
    assert "fatal" in str(failing.exception(0))
    assert "stopped" in str(busy.exception(0))
    assert until(lambda: pykka.ActorRegistry.get_all() == [], within=5)


def test_stop_with_agents_fleets_and_maps_in_flight_answers_every_run_and_leaves_no_actor() -> None:
    """From thespian test/test_msg_ExitRequest.py (every actor of the system gets its exit request,
    whatever it is doing): an agent waiting on its model, a fleet with items in flight and a
    map over a slow function are cut by ``stop()``; every run is answered and no actor is left."""
    started = threading.Event()
    release = threading.Event()

    def slow(x: int) -> int:
        started.set()
        release.wait(10)
        return x

    model = ScriptedProvider(["never"], latency_s=20, cycle=True)
    f = (Formation("busy").add_function("start", lambda x: x)
         .add_agent("agent", Agent("agent", provider=model))
         .add_fleet("fleet", Agent("worker", provider=model), max_workers=2)
         .add_map("map", slow, max_workers=2)
         .add_function("listed", lambda x: [x, x + 1, x + 2])
         .connect("start", "agent").connect("start", "listed").connect("listed", "fleet").connect("listed", "map"))
    running = f.start()
    try:
        futures = [running.submit(i) for i in range(3)]
        assert started.wait(10) and until(lambda: model.calls >= 2, within=10)
        running.stop(timeout=0.2)  # (the held map items: a short grace)
        assert not wait(futures, timeout=5).not_done
    finally:
        release.set()
    assert all(isinstance(fut.exception(0), FormationRuntimeError) for fut in futures)
    assert until(lambda: pykka.ActorRegistry.get_all() == [], within=5)
