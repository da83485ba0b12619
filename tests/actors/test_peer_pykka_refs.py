"""Behaviours of Pykka's own suite (jodal/pykka tests/test_ref.py, test_actor.py,
test_registry.py, test_threading_actor.py) ported to the testkit's node actors: what a
user sees of a node actor through Pykka's public API (its ref, the registry, its thread)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pykka
import pytest

from tests.support.peers import until
from wingman_actors import Agent
from wingman_actors.testing import ActorProbe, ReplyKind, ScriptedProvider, node_actor, work


@pytest.fixture
def echo(actor_probe: ActorProbe) -> Iterator[pykka.ActorRef[Any]]:
    ref = node_actor(lambda x: x, name="echo", reply_to=actor_probe)
    yield ref
    ref.stop()


def test_a_node_actor_s_ref_repr_is_wrapped_in_angle_brackets_and_says_actor_ref(echo: pykka.ActorRef[Any]) -> None:
    """From pykka tests/test_ref.py::test_repr_is_wrapped_in_lt_and_gt and test_repr_reveals_that_this_is_a_ref."""
    text = repr(echo)
    assert text.startswith("<ActorRef for ") and text.endswith(">")


def test_a_node_actor_s_ref_names_its_urn_in_repr_and_str(echo: pykka.ActorRef[Any]) -> None:
    """From pykka tests/test_ref.py::test_repr_contains_actor_urn and test_str_contains_actor_urn."""
    assert echo.actor_urn in repr(echo) and echo.actor_urn in str(echo)


def test_node_actors_have_unique_uuid4_urns(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_actor.py::test_actor_has_an_uuid4_based_urn and test_actor_has_unique_uuid."""
    refs = [node_actor(lambda x: x, name=f"n{i}", reply_to=actor_probe) for i in range(3)]
    try:
        urns = [ref.actor_urn for ref in refs]
        assert len(set(urns)) == 3
        assert all(uuid.UUID(urn).version == 4 for urn in urns)
    finally:
        for ref in refs:
            ref.stop()


def test_a_running_node_actor_is_alive_and_a_stopped_one_is_not(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_ref.py::test_is_alive_returns_true_for_running_actor and ..._false_for_dead_actor."""
    ref = node_actor(lambda x: x, reply_to=actor_probe)
    assert ref.is_alive()
    ref.stop()
    assert not ref.is_alive()


def test_stopping_a_node_actor_returns_true_once_and_false_after(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_ref.py::test_stop_returns_true_if_actor_is_stopped and
    test_stop_does_not_stop_already_dead_actor."""
    ref = node_actor(lambda x: x, reply_to=actor_probe)
    assert ref.stop() is True
    assert ref.stop() is False


@pytest.mark.parametrize("payload", [123, 123.456, {"a": "dict"}, ("a", "tuple"), ["a", "list"], "text", None])
def test_a_node_actor_takes_any_object_as_the_payload_of_its_work(
    echo: pykka.ActorRef[Any], actor_probe: ActorProbe, payload: Any
) -> None:
    """From pykka tests/test_ref.py::test_tell_accepts_any_object_as_the_message."""
    echo.tell(work(payload))
    assert actor_probe.expect_message(ReplyKind.RESULT).payload == payload


def test_an_exception_as_payload_is_a_result_not_a_failure(echo: pykka.ActorRef[Any], actor_probe: ActorProbe) -> None:
    """From pykka tests/test_ref.py::test_tell_accepts_any_object_as_the_message (its Exception case): a
    node that returns an exception object succeeded; only a raised one is a FAILURE."""
    error = ValueError("a value")
    echo.tell(work(error))
    reply = actor_probe.expect_message()
    assert (reply.type, reply.payload) == (ReplyKind.RESULT, error)


def test_telling_a_stopped_node_actor_raises_actor_dead_error_naming_it(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_ref.py::test_tell_fails_if_actor_is_stopped."""
    ref = node_actor(lambda x: x, reply_to=actor_probe)
    ref.stop()
    with pytest.raises(pykka.ActorDeadError) as info:
        ref.tell(work(1))
    assert str(info.value) == f"{ref} not found"


def test_asking_a_stopped_node_actor_fails_its_future_with_actor_dead_error(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_ref.py::test_ask_fails_if_actor_is_stopped and
    test_ask_nonblocking_fails_future_if_actor_is_stopped."""
    ref = node_actor(lambda x: x, reply_to=actor_probe)
    ref.stop()
    with pytest.raises(pykka.ActorDeadError):
        ref.ask(work(1))
    future = ref.ask(work(1), block=False)
    with pytest.raises(pykka.ActorDeadError):
        future.get(timeout=1)


def test_asking_a_node_actor_answers_none_and_the_reply_goes_to_reply_to(
    echo: pykka.ActorRef[Any], actor_probe: ActorProbe
) -> None:
    """From pykka tests/test_ref.py::test_ask_blocks_until_response_arrives. Differs from Pykka's actors,
    whose ask answers on_receive's value: a node actor's outcome is an envelope sent to its reply_to
    (as inside a formation), so ask only waits until the work was handled and answers None."""
    assert echo.ask(work(7), timeout=5) is None
    assert actor_probe.expect_message(ReplyKind.RESULT).payload == 7


def test_asking_a_busy_node_actor_with_timeout_zero_raises_pykka_timeout(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_ref.py::test_ask_can_timeout_if_blocked_too_long."""
    release = threading.Event()
    ref = node_actor(lambda x: release.wait(5), name="slow", reply_to=actor_probe)
    try:
        ref.tell(work(1))
        with pytest.raises(pykka.Timeout):
            ref.ask(work(2), timeout=0)
    finally:
        release.set()
        ref.stop()


def test_a_node_actor_ignores_a_message_that_is_not_work_and_serves_on(
    echo: pykka.ActorRef[Any], actor_probe: ActorProbe, caplog: pytest.LogCaptureFixture
) -> None:
    """From pykka tests/test_actor.py's ActorA, whose on_receive hands unknown messages to the base
    class. A node actor logs a warning naming itself and the message, and takes the next work."""
    echo.tell({"command": "greetings"})
    echo.tell(work("after"))
    assert actor_probe.expect_message(ReplyKind.RESULT).payload == "after"
    assert "node 'echo' ignored a message it does not understand: {'command': 'greetings'}" in caplog.text


def test_work_told_before_stop_is_handled_before_the_node_actor_stops(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_actor.py::test_actor_processes_all_messages_before_stop_on_self_stops_it:
    a stop is queued behind the work already told."""
    ref = node_actor(lambda x: x * 10, name="tens", reply_to=actor_probe)
    for n in range(5):
        ref.tell(work(n))
    assert ref.stop() is True
    # the replies were told before the stop was handled; the probe records them on its own thread
    assert [actor_probe.expect_message(ReplyKind.RESULT).payload for _ in range(5)] == [0, 10, 20, 30, 40]


def test_stopping_a_node_actor_while_it_works_lets_the_work_finish_and_reply(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_actor.py::test_stop_requests_left_in_queue_after_actor_stops_are_handled:
    a second stop queued behind the first resolves too."""
    started, release = threading.Event(), threading.Event()

    def slow(x: int) -> int:
        started.set()
        release.wait(5)
        return x + 1

    ref = node_actor(slow, name="slow", reply_to=actor_probe)
    ref.tell(work(1))
    assert started.wait(5)
    first = ref.stop(block=False)
    second = ref.stop(block=False)
    release.set()
    assert actor_probe.expect_message(ReplyKind.RESULT).payload == 2
    assert first.get(timeout=5) is True
    second.get(timeout=5)  # resolves (Pykka answers a stop queued behind a stop)
    assert not ref.is_alive()


def test_work_told_after_a_pending_stop_is_dropped_without_a_reply(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_actor.py::test_messages_left_in_queue_after_actor_stops_receive_an_error:
    Pykka fails an *ask* left in the inbox with ActorDeadError; a told work message has no future to
    fail, so a standalone node actor drops it (no reply). Inside a formation the runtime owns stops."""
    started, release = threading.Event(), threading.Event()

    def slow(x: str) -> str:
        started.set()
        release.wait(5)
        return x

    ref = node_actor(slow, name="slow", reply_to=actor_probe)
    ref.tell(work("first"))
    assert started.wait(5)
    ref.stop(block=False)
    ref.tell(work("late"))
    asked = ref.ask(work("asked"), block=False)
    release.set()
    assert actor_probe.expect_message(ReplyKind.RESULT).payload == "first"
    with pytest.raises(pykka.ActorDeadError):
        asked.get(timeout=5)
    actor_probe.expect_no_message(0.1)


def test_a_node_actor_that_raises_replies_a_failure_and_stays_alive(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_actor.py::test_actor_is_stopped_when_unhandled_exceptions_are_raised. Differs
    from Pykka, whose actor stops (on_failure) on an exception it cannot return: a node's exception is
    its reply (FAILURE), and the actor takes the next work."""
    def picky(x: int) -> int:
        if x < 0:
            raise ValueError("negative")
        return x

    ref = node_actor(picky, reply_to=actor_probe)
    try:
        ref.tell(work(-1))
        assert isinstance(actor_probe.expect_message(ReplyKind.FAILURE).payload, ValueError)
        assert ref.is_alive()
        ref.tell(work(3))
        assert actor_probe.expect_message(ReplyKind.RESULT).payload == 3
    finally:
        ref.stop()


@pytest.mark.parametrize("error", [SystemExit(3), KeyboardInterrupt()])
def test_a_base_exception_in_a_node_is_its_failure_and_stops_no_other_actor(
    actor_probe: ActorProbe, error: BaseException
) -> None:
    """From pykka tests/test_actor.py::test_all_actors_are_stopped_on_base_exception. Differs from Pykka,
    which stops every actor in the registry on a BaseException: a node's SystemExit or KeyboardInterrupt
    fails that work only; the probe and the node itself live on."""
    def leave(_: Any) -> None:
        raise error

    ref = node_actor(leave, name="leave", reply_to=actor_probe)
    try:
        ref.tell(work(1))
        assert actor_probe.expect_message(ReplyKind.FAILURE).payload is error
        assert ref.is_alive() and actor_probe.ref.is_alive()
    finally:
        ref.stop()


def test_a_node_actor_whose_reply_to_is_stopped_stops_as_a_pykka_actor_does(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """From pykka tests/test_actor.py::test_on_failure_is_called_when_exception_cannot_be_returned: a
    reply the actor cannot deliver (its reply_to stopped: ActorDeadError) is an exception it cannot
    return, so it stops as Pykka's actors do, logged on the ``pykka`` logger."""
    probe = ActorProbe.start("gone")
    gone = probe.ref
    probe.stop()
    ref = node_actor(lambda x: x, name="orphan", reply_to=gone)
    ref.tell(work(1))
    assert until(lambda: not ref.is_alive(), within=5)
    assert "ActorDeadError" in caplog.text
    assert pykka.ActorRegistry.get_by_urn(ref.actor_urn) is None


def test_a_started_node_actor_is_in_the_registry_and_a_stopped_one_is_not(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_registry.py::test_actor_is_registered_when_started and
    test_actor_is_unregistered_when_stopped, and test_actors_may_be_looked_up_by_urn."""
    ref = node_actor(lambda x: x, reply_to=actor_probe)
    assert ref in pykka.ActorRegistry.get_all()
    assert pykka.ActorRegistry.get_by_urn(ref.actor_urn) == ref
    ref.stop()
    assert ref not in pykka.ActorRegistry.get_all()
    assert pykka.ActorRegistry.get_by_urn(ref.actor_urn) is None


def test_the_registry_tells_node_actors_apart_from_the_probe_by_class(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_registry.py::test_actors_may_be_looked_up_by_class."""
    refs = [node_actor(lambda x: x, name=f"n{i}", reply_to=actor_probe) for i in range(3)]
    try:
        function_actors = pykka.ActorRegistry.get_by_class_name(refs[0].actor_class.__name__)
        assert set(function_actors) == set(refs)
        assert actor_probe.ref not in function_actors
    finally:
        for ref in refs:
            ref.stop()


def test_a_registry_broadcast_of_work_reaches_every_node_actor(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_registry.py::test_broadcast_sends_message_to_all_actors_of_given_class."""
    refs = [node_actor(lambda x, i=i: x + i, name=f"add{i}", reply_to=actor_probe) for i in range(3)]
    try:
        pykka.ActorRegistry.broadcast(work(10), target_class=refs[0].actor_class)
        replies = [actor_probe.expect_message(ReplyKind.RESULT) for _ in refs]
        assert sorted((r.sender, r.payload) for r in replies) == [("add0", 10), ("add1", 11), ("add2", 12)]
    finally:
        for ref in refs:
            ref.stop()


def test_stop_all_through_the_registry_stops_every_node_actor(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_registry.py::test_all_actors_can_be_stopped_through_registry (the probe is
    one of the actors it stops; the fixture's stop is then a no-op)."""
    refs = [node_actor(lambda x: x, name=f"n{i}", reply_to=actor_probe) for i in range(4)]
    pykka.ActorRegistry.stop_all(block=True)
    assert pykka.ActorRegistry.get_all() == []
    assert not any(ref.is_alive() for ref in refs)


def test_a_node_actor_s_thread_is_named_after_the_node_and_is_a_daemon(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_threading_actor.py::test_actor_thread_is_named_after_pykka_actor_class and
    test_actor_thread_is_daemonic_if_use_daemon_thread_flag_is_set. Differs from Pykka (threads named
    after the class, not daemonic by default): a node actor's thread is named after the node, and is a
    daemon so an attempt stuck in user code never keeps the interpreter alive."""
    seen: list[threading.Thread] = []
    ref = node_actor(lambda x: seen.append(threading.current_thread()), name="where", reply_to=actor_probe)
    try:
        ref.tell(work(1))
        actor_probe.expect_message(ReplyKind.RESULT)
    finally:
        ref.stop()
    assert seen[0].name == "wingman-node-where-0" and seen[0].daemon


def test_the_probe_s_thread_is_not_a_daemon(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_threading_actor.py::test_actor_thread_is_not_daemonic_by_default: the probe
    keeps Pykka's default, so a test waits for it."""
    (thread,) = [t for t in threading.enumerate() if t.name == "wingman-probe-probe"]
    assert not thread.daemon


def test_node_actors_started_and_stopped_from_many_threads_all_reply_and_leave_none(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_registry.py (actors started in numbers, then all gone) and
    tests/performance.py (many actors at once): 8 threads each start a node actor, tell it work and
    stop it; every reply arrives and the registry is empty of node actors after."""
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            ref = node_actor(lambda x: x * x, name=f"sq{i}", reply_to=actor_probe)
            ref.tell(work(i, run_id=f"r{i}"))
            ref.tell(work(i + 100, run_id=f"r{i}"))
            ref.stop()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert errors == []
    assert sorted(actor_probe.expect_message(ReplyKind.RESULT).payload for _ in range(16)) == sorted([i * i for i in range(8)] +
                                                                    [(i + 100) ** 2 for i in range(8)])
    assert pykka.ActorRegistry.get_all() == [actor_probe.ref]


def test_telling_a_stopped_probe_says_it_is_stopped_not_that_it_was_never_started() -> None:
    """From pykka tests/test_ref.py::test_tell_fails_if_actor_is_stopped (the error names what is wrong):
    it said "the probe is not started: use ActorProbe.start()" for a probe that was started, then
    stopped."""
    probe = ActorProbe.start("late")
    probe.stop()
    with pytest.raises(RuntimeError, match=r"probe 'late' is stopped: start a new one with ActorProbe\.start\(\)"):
        probe.tell(work(1))


def test_a_probe_made_without_start_says_how_to_make_one() -> None:
    """From pykka tests/test_actor.py::test_str_on_raw_actor_contains_actor_class_name (an actor made but
    not started): a probe made with ``ActorProbe()`` has no actor yet, and says how to make one."""
    with pytest.raises(RuntimeError, match=r"probe 'raw' is not started: make probes with ActorProbe\.start\(\)"):
        ActorProbe("raw").ref  # noqa: B018


def test_a_stopped_probe_keeps_what_it_received_readable() -> None:
    """From pykka tests/test_actor.py::test_actor_processes_all_messages_before_stop_on_self_stops_it:
    what reached the probe before its stop is still there to assert on."""
    probe = ActorProbe.start("keeps")
    ref = node_actor(lambda x: x + 1, reply_to=probe)
    ref.tell(work(1))
    ref.stop()
    probe.stop()
    assert probe.expect_message(ReplyKind.RESULT, timeout=0).payload == 2


def test_a_node_actor_refuses_a_reply_to_that_is_neither_an_actor_nor_a_callable_and_leaves_no_actor() -> None:
    """From pykka tests/test_actor.py::test_init_can_be_called_with_arbitrary_arguments: a node actor's
    arguments are checked when it is made, in the caller's thread, before it is registered."""
    with pytest.raises(TypeError, match=r"reply_to must be an actor ref or a callable, got int"):
        node_actor(lambda x: x, reply_to=42)
    assert pykka.ActorRegistry.get_all() == []


def test_a_node_actor_whose_reply_callable_raises_stops_as_a_pykka_actor_does(caplog: pytest.LogCaptureFixture) -> None:
    """From pykka tests/test_actor.py::test_on_failure_is_called_when_exception_cannot_be_returned: a
    callable reply_to that raises is an exception the actor cannot return; it stops (logged on the
    ``pykka`` logger with the callable's error)."""
    def full(_: Any) -> None:
        raise OverflowError("the inbox is full")

    ref = node_actor(lambda x: x, name="pushy", reply_to=full)
    ref.tell(work(1))
    assert until(lambda: not ref.is_alive(), within=5)
    assert "the inbox is full" in caplog.text


def test_an_agent_node_actor_stopped_while_its_model_answers_replies_first(actor_probe: ActorProbe) -> None:
    """From pykka tests/test_actor.py::test_on_stop_is_called_when_actor_is_stopped: a stop waits for
    the message in progress, so the session under way finishes and replies."""
    model = ScriptedProvider(["done"], latency_s=0.3)
    ref = node_actor(Agent("slowpoke", provider=model), reply_to=actor_probe)
    ref.tell(work("go"))
    assert until(lambda: model.calls == 1 or bool(model.requests), within=5)
    assert ref.stop(timeout=10) is True
    assert actor_probe.expect_message(ReplyKind.RESULT).payload == "done"
