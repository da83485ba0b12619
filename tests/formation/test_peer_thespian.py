"""Behaviours of Thespian's own suite (thespianpy/Thespian ``thespian/test/``: test_poisonMessage.py,
test_actorFailures.py, test_wakeup.py, test_deadLettering.py, test_msg_ExitRequest.py) ported to
formations: every node is an actor whose supervisor restarts it by ``retries``; Thespian restarts
an actor that failed in its handler and, after a second failure, returns the message to its
sender as a ``PoisonMessage`` — ours fails that run (or hands the input to an error edge) and
the node serves on. Child actors are a formation node's inner formation; wakeups are the
supervisor's retry timers."""

from __future__ import annotations

import threading
from concurrent.futures import wait
from typing import Any

import pykka
import pytest

from tests.support.peers import Counter, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation import NodeFailure
from wingman_actors.formation.events import FormationEvent


def node_actors() -> list[pykka.ActorRef[Any]]:
    return list(pykka.ActorRegistry.get_all())


def yucky(counter: Counter) -> Any:
    """Thespian's TestActor: fails on 3 (every time), answers ``"hi"`` to ``"Hello"``, else its input."""
    def node(x: Any) -> Any:
        counter.hit(x)
        if x == 3:
            raise ValueError("Yucky number 3")
        return "hi" if x == "Hello" else x

    return node


def poisoned(counter: Counter, downstream: Counter) -> Formation:
    return (Formation("poison").add_function("actor", yucky(counter), retries=1, backoff=0)
            .add_function("recorder", lambda x: downstream.hit(x) and x).connect("actor", "recorder"))


def test_a_node_that_fails_twice_on_an_input_fails_that_run_naming_it_and_serves_the_next() -> None:
    """From thespian test/test_poisonMessage.py::testLevel3ask: the actor is restarted and the
    message redelivered; on the second failure it comes back as poison, and ``Hello`` is still
    answered. Ours: ``retries=1`` tries the input twice, then the run fails naming the node,
    its attempts and the cause; the next run is served."""
    counter, downstream = Counter(), Counter()
    with poisoned(counter, downstream).start() as running:
        with pytest.raises(FormationRuntimeError) as info:
            running.submit(3).result(10)
        assert running.submit("Hello").result(10).output == "hi"
    err = info.value
    assert (err.node, err.attempts) == ("actor", 2)
    assert isinstance(err.__cause__, ValueError) and "Yucky number 3" in str(err)
    assert counter.count(3) == 2
    assert downstream.count(3) == 0  # the poison never reached the next actor (Thespian's Count? == 0)


def test_poison_inputs_told_back_to_back_each_fail_their_own_run_and_the_good_ones_between_succeed() -> None:
    """From thespian test/test_poisonMessage.py::testLevel3tell (two poison messages told in a row,
    then ``Hello``)."""
    counter, downstream = Counter(), Counter()
    inputs: list[Any] = ["Hello", 3, 3, "Hello", 7, 3]
    with poisoned(counter, downstream).start() as running:
        futures = [running.submit(x) for x in inputs]
        wait(futures, timeout=20)
    for x, future in zip(inputs, futures, strict=True):
        if x == 3:
            err = future.exception(0)
            assert isinstance(err, FormationRuntimeError) and err.run_id == future.run_id and err.node == "actor"
        else:
            assert future.result(0).output == ("hi" if x == "Hello" else x)
    assert counter.count(3) == 6 and downstream.count(3) == 0


def test_a_poison_input_reaches_the_error_edge_as_it_was_sent_after_the_restart_failed_too() -> None:
    """From thespian test/test_poisonMessage.py::testLevel3ask (``rsp.poisonMessage == 3``: the
    message that failed comes back as it was): the error edge's ``NodeFailure`` carries the
    input of the failing visit and its attempts, per run."""
    counter = Counter()

    def poison(failure: NodeFailure) -> tuple[str, Any, int]:
        return ("poison", failure.input, failure.attempts)

    f = (Formation("poison").add_function("actor", yucky(counter), retries=1, backoff=0)
         .add_function("ok", lambda x: ("ok", x)).add_function("poison", poison)
         .connect("actor", "ok").connect("actor", "poison", on_error=True))
    with f.start() as running:
        results = [running.submit(x).result(10).outputs for x in (1, 3, "Hello")]
    assert results == [{"ok": ("ok", 1)}, {"poison": ("poison", 3, 2)}, {"ok": ("ok", "hi")}]


def test_a_failing_inner_node_is_restarted_inside_its_formation_node_without_restarting_the_outer_one() -> None:
    """From thespian test/test_actorFailures.py::test04_RestartedSubActorWithRestarts: a child that
    fails is replaced by its parent, which goes on. The inner formation's node retries; the
    formation node around it succeeds on its first attempt."""
    calls = Counter()

    def flaky(x: int) -> int:
        if calls.hit("flaky") == 1:
            raise ConnectionError("child died")
        return x + 1

    inner = Formation("inner").add_function("flaky", flaky, retries=1, backoff=0)
    outer = Formation("outer").add_formation("parent", inner)
    result = outer.run(1, timeout=20)
    assert result.output == 2 and calls.count("flaky") == 2
    assert result.nodes["parent"].attempts == 1


def test_an_inner_node_without_retries_fails_its_formation_node_whose_own_retries_rerun_the_inner_run() -> None:
    """From thespian test/test_actorFailures.py::test05_RestartedSubActorWithoutRestarts (a parent
    that does not replace its child) and test02 (restarts above it): the inner node gives up
    at once; the formation node's ``retries`` run the inner formation again, as a whole."""
    calls = Counter()

    def fragile(x: int) -> int:
        if calls.hit("fragile") == 1:
            raise ConnectionError("child died")
        return x * 10

    inner = Formation("inner").add_function("fragile", fragile)
    outer = Formation("outer").add_formation("parent", inner, retries=1, backoff=0)
    result = outer.run(2, timeout=20)
    assert result.output == 20 and calls.count("fragile") == 2
    assert result.nodes["parent"].attempts == 2


def test_inner_and_outer_retries_multiply_for_a_child_that_never_starts() -> None:
    """From thespian test/test_actorFailures.py::test02_NonStartingSubActorWithRestarts (a child
    that can never start is replaced again and again, up to the parent's limit): every outer
    attempt spends the inner node's retries, then the run fails naming the path."""
    calls = Counter()

    def never(x: int) -> int:
        calls.hit("never")
        raise RuntimeError("This actor can never start")

    inner = Formation("inner").add_function("never", never, retries=2, backoff=0)
    outer = Formation("outer").add_formation("parent", inner, retries=1, backoff=0)
    with pytest.raises(FormationRuntimeError, match=r"parent/never") as info:
        outer.run(1, timeout=20)
    assert calls.count("never") == 6
    assert (info.value.node, info.value.attempts) == ("parent", 2)


def test_a_deep_failure_is_retried_at_its_own_level_and_the_levels_above_run_once() -> None:
    """From thespian test/test_actorFailures.py::test08_DeepActorInvoluntaryTermination
    (``Deadly(3)`` kills the great-grandchild, which is replaced; its ancestors are not)."""
    calls = Counter()

    def step(name: str) -> Any:
        def node(x: int) -> int:
            if calls.hit(name) == 1 and name == "great":
                raise ConnectionError("Deadly value received!")
            return x + 1
        return node

    great = Formation("l3").add_function("great", step("great"), retries=1, backoff=0)
    grand = Formation("l2").add_function("grand", step("grand")).add_formation("l3", great).connect("grand", "l3")
    kid = Formation("l1").add_function("kid", step("kid")).add_formation("l2", grand).connect("kid", "l2")
    result = Formation("top").add_formation("l1", kid).run(0, timeout=20)
    assert result.output == 3
    assert (calls.count("kid"), calls.count("grand"), calls.count("great")) == (1, 1, 2)
    assert result.nodes["l1"].attempts == 1


def test_stopping_a_formation_while_a_nested_formation_node_works_stops_every_inner_actor(
    gate: tuple[threading.Event, threading.Event],
) -> None:
    """From thespian test/test_actorFailures.py::test07_DeepActorShutdown (an exit request to the
    top actor shuts the whole tree down): three levels deep, the run is answered and no actor
    is left."""
    entered, release = gate

    def held(x: int) -> int:
        entered.set()
        release.wait(10)
        return x

    l3 = Formation("l3").add_function("held", held)
    l2 = Formation("l2").add_formation("l3", l3)
    top = Formation("top").add_formation("l2", l2)
    running = top.start()
    future = running.submit(1)
    assert entered.wait(10)
    assert node_actors() != []  # the innermost formation's actor is up (a formation node has none of its own)
    running.stop()
    with pytest.raises(FormationRuntimeError, match="stopped before run"):
        future.result(5)
    release.set()
    assert until(lambda: node_actors() == [], within=5)


def test_many_runs_waiting_out_their_retry_timers_at_once_are_each_retried_once() -> None:
    """From thespian test/test_wakeup.py::test_multipleWakeupsPending (several wakeups pending at
    once each arrive): five runs fail their first attempt together and each retry fires."""
    attempts = Counter()

    def first_fails(x: int) -> int:
        if attempts.hit(x) == 1:
            raise ConnectionError("later")
        return x * x

    f = Formation("wake").add_function("node", first_fails, retries=1, backoff=0.05, jitter=False, concurrency=5)
    retries: list[FormationEvent] = []
    with f.start(on_event=lambda e: retries.append(e) if e.type.value == "node_retry" else None) as running:
        futures = [running.submit(i) for i in range(5)]
        outputs = [fut.result(10).output for fut in futures]
    assert outputs == [i * i for i in range(5)]
    assert all(attempts.count(i) == 2 for i in range(5))
    assert sorted(e.run_id for e in retries) == sorted(fut.run_id for fut in futures)


def test_stopping_a_formation_while_a_retry_timer_is_pending_fails_the_run_and_makes_no_further_attempt() -> None:
    """From thespian test/test_wakeup.py::test_exitWithWakeupsPending (an actor told to exit with
    a wakeup pending exits cleanly; the wakeup is dropped)."""
    attempts = Counter()
    retrying = threading.Event()

    def fails(x: int) -> int:
        attempts.hit("fails")
        raise ConnectionError("down")

    def on_event(event: FormationEvent) -> None:
        if event.type.value == "node_retry":
            retrying.set()

    f = Formation("wake").add_function("fails", fails, retries=3, backoff=2.0, jitter=False)
    running = f.start(on_event=on_event)
    future = running.submit(1)
    assert retrying.wait(10)
    running.stop()
    with pytest.raises(FormationRuntimeError):
        future.result(5)
    assert attempts.count("fails") == 1
    assert until(lambda: node_actors() == [], within=5)


def test_stop_with_work_everywhere_in_flight_answers_every_submitted_run() -> None:
    """From thespian test/test_msg_ExitRequest.py and test_deadLettering.py (messages to an actor
    that exits are dead letters, not lost silently): stopping a formation with one run in a
    node, one waiting out a retry timer and more queued answers every future, each with a
    result or an error saying the formation stopped."""
    entered, release = threading.Event(), threading.Event()
    attempts = Counter()

    def held(x: int) -> int:
        if x == 0:
            entered.set()
            release.wait(10)
        return x

    def retried(x: int) -> int:
        if attempts.hit(x) == 1 and x == 1:
            raise ConnectionError("wait for me")
        return x

    f = (Formation("busy").add_function("held", held).add_function("retried", retried, retries=2, backoff=2.0)
         .connect("held", "retried"))
    running = f.start()
    try:
        futures = [running.submit(0)]
        assert entered.wait(10)
        futures += [running.submit(i) for i in range(1, 8)]
        running.stop(timeout=0.2)  # (the held node: a short grace)
    finally:
        release.set()
    assert not wait(futures, timeout=10).not_done
    for future in futures:
        err = future.exception(0)
        if err is not None:
            assert isinstance(err, FormationRuntimeError) and "stopped" in str(err), repr(err)
    assert until(lambda: node_actors() == [], within=5)


def test_a_run_submitted_to_a_stopped_formation_is_refused_saying_it_was_stopped() -> None:
    """From thespian test/test_deadLettering.py::test02_GetDeadLetter (a message to an actor that
    has exited is not delivered): the formation refuses it at once, saying it was stopped (not
    only that it should be used inside ``with formation.start()``, which the caller may well
    have done)."""
    running = Formation("f").add_function("a", lambda x: x).start()
    running.stop()
    with pytest.raises(RuntimeError, match=r"formation 'f' is not running: it was stopped; start it again"):
        running.submit(1)


def test_a_cancelled_run_s_late_output_is_a_dead_letter_that_never_reaches_the_next_node(
    gate: tuple[threading.Event, threading.Event],
) -> None:
    """From thespian test/test_deadLettering.py (messages to an actor that exited go to the dead
    letter handler, not to a live actor): a run cancelled while its first node works never
    calls the next node, even when the first returns later, and the node serves the next run."""
    entered, release = gate
    downstream = Counter()

    def first(x: int) -> int:
        if x == 0:
            entered.set()
            release.wait(10)
        return x

    f = (Formation("dl").add_function("first", first).add_function("second", lambda x: downstream.hit(x) and x)
         .connect("first", "second"))
    with f.start() as running:
        future = running.submit(0)
        assert entered.wait(10)
        assert future.cancel()
        release.set()
        assert running.submit(5).result(10).output == 5
    assert downstream.count(0) == 0 and downstream.count(5) == 1


class PassedMessage:
    """Thespian's PassedMessage: a message that refuses to be compared (``__eq__`` raises)."""

    def __init__(self, msg: Any) -> None:
        self.msg = msg

    def __eq__(self, other: object) -> bool:
        raise ValueError("Can't compare these messages to anything")

    def __ne__(self, other: object) -> bool:
        raise ValueError("Can't compare these messages to anything")

    __hash__ = object.__hash__


def test_a_value_that_refuses_comparison_passes_through_a_fan_out_a_join_and_a_retry() -> None:
    """From thespian test/test_actorFailures.py (``PassedMessage`` raises on ``==`` and ``!=``, "make
    sure this doesn't break Thespian internals"): the runtime never compares payloads."""
    calls = Counter()

    def flaky(m: PassedMessage) -> PassedMessage:
        if calls.hit("flaky") == 1:
            raise ConnectionError("once")
        return m

    f = (Formation("cmp").add_function("start", PassedMessage).add_function("flaky", flaky, retries=1, backoff=0)
         .add_function("other", lambda m: m).add_function("join", lambda flaky, other: (flaky.msg, other.msg))
         .connect("start", "flaky").connect("start", "other").connect("flaky", "join").connect("other", "join"))
    result = f.run("hello", timeout=20)
    assert result.output == ("hello", "hello") and result.nodes["flaky"].attempts == 2
