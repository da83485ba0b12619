"""Behaviours of Thespian's own suite (thespianpy/Thespian ``thespian/test/``: test_createActor.py,
test_actors.py, test_poisonMessage.py, test_actorAddressPassing.py, test_bigmessages.py,
test_actorFailures.py) ported to the testkit: node actors started with ``node_actor``, told
``work`` and watched through an ``ActorProbe``, and ``run_node`` for a node alone. Thespian's
actors are classes with ``receiveMessage``; ours are a formation's nodes, a function or an agent
each. Formation-level supervision (restarts, poison inputs, stop) is in
tests/formation/test_peer_thespian*.py."""

from __future__ import annotations

import threading
from typing import Any

import pykka
import pytest

from tests.support.peers import until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.testing import ActorProbe, Envelope, ReplyKind, node_actor, run_node, work


def node_actors() -> list[pykka.ActorRef[Any]]:
    """The live actors of the registry that are not a test's probe."""
    return [ref for ref in pykka.ActorRegistry.get_all() if not ref.actor_class.__name__.startswith("_Probe")]


def replies(probe: ActorProbe, n: int) -> list[Envelope]:
    """The first ``n`` replies the probe got (waiting for them, generously)."""
    assert until(lambda: len(probe.messages) >= n, within=10), f"{len(probe.messages)} of {n} replies"
    return list(probe.messages[:n])


def double(x: int) -> int:
    return x * 2


def test_a_node_actor_started_without_a_name_replies_under_its_function_s_name(actor_probe: ActorProbe) -> None:
    """From thespian test/test_createActor.py (an actor created from a class is addressed as
    that class): a node actor made from a function, given no name, is that function's node."""
    ref = node_actor(double, reply_to=actor_probe)
    try:
        ref.tell(work(21))
        reply = actor_probe.expect_message(ReplyKind.RESULT)
    finally:
        ref.stop()
    assert (reply.sender, reply.payload) == ("double", 42)


def test_a_node_actor_given_a_name_replies_under_that_name_not_its_function_s(actor_probe: ActorProbe) -> None:
    """From thespian test/test_globalName.py (an actor created with a global name answers as it)."""
    ref = node_actor(double, name="twice", reply_to=actor_probe)
    try:
        ref.tell(work(4))
        assert actor_probe.expect_message(ReplyKind.RESULT).sender == "twice"
    finally:
        ref.stop()


def test_replies_to_many_works_from_one_sender_come_back_in_the_order_told(actor_probe: ActorProbe) -> None:
    """From thespian test/test_actors.py (messages from one sender are delivered in the order sent)."""
    ref = node_actor(double, reply_to=actor_probe)
    try:
        for i in range(200):
            ref.tell(work(i, run_id=f"r{i}"))
        got = replies(actor_probe, 200)
    finally:
        ref.stop()
    assert [r.payload for r in got] == [2 * i for i in range(200)]
    assert [r.run_id for r in got] == [f"r{i}" for i in range(200)]


def test_works_told_from_two_threads_keep_each_sender_s_order(actor_probe: ActorProbe) -> None:
    """From thespian test/test_actors.py: ordering is per sender; two senders interleave, each
    in its own order."""
    ref = node_actor(lambda x: x, name="echo", reply_to=actor_probe)

    def sender(tag: str) -> None:
        for i in range(100):
            ref.tell(work(i, run_id=tag))

    try:
        threads = [threading.Thread(target=sender, args=(tag,)) for tag in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        got = replies(actor_probe, 200)
    finally:
        ref.stop()
    for tag in ("a", "b"):
        assert [r.payload for r in got if r.run_id == tag] == list(range(100))


def test_a_poison_message_is_answered_with_a_failure_tagged_as_that_message_and_the_next_is_served(
    actor_probe: ActorProbe,
) -> None:
    """From thespian test/test_poisonMessage.py::testLevel3tell: a message the actor fails on comes
    back to its sender as poison (``PoisonMessage.poisonMessage`` is the message), and the actor
    then answers ``Hello``. Ours: the failure reply carries the work's ``run_id`` and the
    exception; a node actor alone is not restarted nor retried (the supervisor does that)."""
    def yucky(x: Any) -> str:
        if x == 3:
            raise ValueError("Yucky number 3")
        return "hi"

    ref = node_actor(yucky, reply_to=actor_probe)
    try:
        ref.tell(work("Hello", run_id="hello-1"))
        ref.tell(work(3, run_id="poison-1"))
        ref.tell(work(3, run_id="poison-2"))
        ref.tell(work("Hello", run_id="hello-2"))
        got = replies(actor_probe, 4)
    finally:
        ref.stop()
    assert len(actor_probe.messages) == 4  # one reply per message, nothing more
    assert [(r.run_id, r.type) for r in got] == [
        ("hello-1", ReplyKind.RESULT), ("poison-1", ReplyKind.FAILURE), ("poison-2", ReplyKind.FAILURE),
        ("hello-2", ReplyKind.RESULT),
    ]
    assert all(isinstance(r.payload, ValueError) and "Yucky number 3" in str(r.payload) for r in got[1:3])


def test_waiting_for_a_result_from_a_node_that_failed_shows_the_failure_s_exception(actor_probe: ActorProbe) -> None:
    """From thespian test/test_poisonMessage.py::testLevel3ask (the ``ask`` is answered with the
    ``PoisonMessage``, so the test sees what failed). ``expect_message(ReplyKind.RESULT)`` skips
    the failure reply; when no result comes, its error shows the failure's exception, not only
    that a failure arrived."""
    def yucky(x: int) -> int:
        raise ValueError(f"Yucky number {x}")

    ref = node_actor(yucky, reply_to=actor_probe)
    try:
        ref.tell(work(3))
        with pytest.raises(AssertionError, match=r"received no .*result.* within 0.3s .*ValueError\('Yucky number 3'\)"):
            actor_probe.expect_message(ReplyKind.RESULT, timeout=0.3)
    finally:
        ref.stop()


def test_node_actors_chained_by_passing_one_s_address_as_the_other_s_reply_to_deliver_to_the_end(
    actor_probe: ActorProbe,
) -> None:
    """From thespian test/test_actorAddressPassing.py (an actor's address passed in a message is
    used to reach it): a reply callable that tells the next node actor chains them as a
    formation's edge would."""
    last = node_actor(lambda x: x + 1, name="inc", reply_to=actor_probe)
    first = node_actor(double, reply_to=lambda reply: last.tell(work(reply.payload, run_id=reply.run_id, sender="double")))
    try:
        for i in range(5):
            first.tell(work(i, run_id=f"r{i}"))
        got = replies(actor_probe, 5)
    finally:
        first.stop()
        last.stop()
    assert [(r.sender, r.run_id, r.payload) for r in got] == [("inc", f"r{i}", 2 * i + 1) for i in range(5)]


def test_a_large_message_passes_through_a_node_actor_whole(actor_probe: ActorProbe) -> None:
    """From thespian test/test_bigmessages.py (a message of several megabytes arrives intact)."""
    big = {"text": "x" * 4_000_000, "rows": list(range(100_000))}
    ref = node_actor(lambda m: (len(m["text"]), sum(m["rows"])), name="size", reply_to=actor_probe)
    try:
        ref.tell(work(big))
        assert actor_probe.expect_message(ReplyKind.RESULT, timeout=10).payload == (4_000_000, sum(range(100_000)))
    finally:
        ref.stop()


def test_a_large_message_passes_through_a_formation_s_nodes_whole() -> None:
    """From thespian test/test_bigmessages.py, through a formation: the value a node gets is the
    value its predecessor returned, whatever its size."""
    f = (Formation("big").add_function("make", lambda n: "y" * n).add_function("measure", len)
         .connect("make", "measure"))
    assert f.run(5_000_000, timeout=30).output == 5_000_000


def test_run_node_of_a_node_that_fails_is_not_restarted_even_with_retries(actor_probe: ActorProbe) -> None:
    """From thespian test/test_actorFailures.py::test01_NonStartingSystemLevelActor: an actor owned
    by the system itself (no parent) is not restarted after it fails. ``run_node`` runs a node
    without its supervisor: one attempt, whatever its ``retries`` says."""
    calls: list[int] = []

    def fails(x: int) -> int:
        calls.append(x)
        raise RuntimeError("cannot start")

    f = Formation("f").add_function("fails", fails, retries=3, backoff=0)
    with pytest.raises(FormationRuntimeError, match="node 'fails' failed: RuntimeError: cannot start"):
        run_node(f, "fails", 1)
    assert calls == [1]
    assert node_actors() == []


def test_run_node_of_a_nested_formation_node_stops_every_inner_actor_after(actor_probe: ActorProbe) -> None:
    """From thespian test/test_actorFailures.py::test06_ActorStackShutdown: an actor's exit shuts
    its children down. A formation node's inner actors are its children: none outlives the
    node's run."""
    inner = (Formation("inner").add_function("a", lambda x: x + 1).add_function("b", double)
             .connect("a", "b"))
    outer = Formation("outer").add_formation("sub", inner)
    assert run_node(outer, "sub", 1).output == 4
    assert until(lambda: node_actors() == [], within=5)


def test_run_node_of_a_nested_formation_whose_deepest_node_fails_names_the_path_and_leaves_no_actor(
    actor_probe: ActorProbe,
) -> None:
    """From thespian test/test_actorFailures.py::test08_DeepActorInvoluntaryTermination (a
    great-grandchild killed by a message passed down the tree): the failure names where it
    happened, and the whole tree is gone after."""
    deepest = Formation("deepest").add_function("c", lambda x: 1 // (x - 3))
    middle = Formation("middle").add_formation("deep", deepest)
    outer = Formation("outer").add_formation("mid", middle)
    with pytest.raises(FormationRuntimeError, match=r"mid/deep/c") as info:
        run_node(outer, "mid", 3)
    assert info.value.node == "mid"
    assert until(lambda: node_actors() == [], within=5)


def test_run_node_of_a_formation_node_restarts_its_inner_nodes_but_makes_one_attempt_itself() -> None:
    """From thespian test/test_actorFailures.py::test01 against test04: a top-level actor is not
    restarted, a child is restarted by its parent. ``run_node`` makes one attempt of the node
    (its own ``retries`` unused); inside, the inner formation supervises its nodes, whose
    ``retries`` apply."""
    calls: list[int] = []

    def flaky(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            raise ConnectionError("child died once")
        return x + 1

    inner = Formation("inner").add_function("flaky", flaky, retries=1, backoff=0)
    outer = Formation("outer").add_formation("sub", inner, retries=2, backoff=0)
    run = run_node(outer, "sub", 1)
    assert (run.output, run.trace.attempts, calls) == (2, 1, [1, 1])
    assert until(lambda: node_actors() == [], within=5)
