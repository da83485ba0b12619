"""CancelToken: cancelling wakes every sleeper, deadlines end sleeps, children follow parents."""

from __future__ import annotations

import threading
import time

import pytest

from wingman_actors._cancel import CancelToken, cancel_scope, current_token
from wingman_actors.errors import AgentError, ErrorKind


def _sleep_in_thread(token: CancelToken, seconds: float) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def body() -> None:
        try:
            token.sleep(seconds)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    return thread, errors


def test_cancel_wakes_every_sleeper_at_once() -> None:
    token = CancelToken()
    sleepers = [_sleep_in_thread(token, 30) for _ in range(4)]
    time.sleep(0.05)  # let them all block
    t0 = time.monotonic()
    token.cancel("stop now")
    for thread, _ in sleepers:
        thread.join(5)
    assert time.monotonic() - t0 < 5
    for thread, errors in sleepers:
        assert not thread.is_alive()
        assert len(errors) == 1 and isinstance(errors[0], AgentError)
        assert errors[0].kind is ErrorKind.CANCELLED
        assert "stop now" in errors[0].message


def test_sleeping_on_a_cancelled_token_raises_at_once_every_time() -> None:
    token = CancelToken()
    token.cancel()
    for _ in range(3):
        t0 = time.monotonic()
        with pytest.raises(AgentError) as info:
            token.sleep(30)
        assert info.value.kind is ErrorKind.CANCELLED
        assert time.monotonic() - t0 < 1


def test_cancel_after_a_sleep_has_ended_still_wakes_the_next_sleeper() -> None:
    token = CancelToken()
    token.sleep(0.01)  # the latch now exists, and is closed
    thread, errors = _sleep_in_thread(token, 30)
    time.sleep(0.05)
    token.cancel()
    thread.join(5)
    assert not thread.is_alive()
    assert [e.kind for e in errors if isinstance(e, AgentError)] == [ErrorKind.CANCELLED]


def test_concurrent_cancels_are_harmless() -> None:
    token = CancelToken()
    token.sleep(0.001)
    barrier = threading.Barrier(8)
    failures: list[BaseException] = []

    def cancel() -> None:
        barrier.wait()
        try:
            token.cancel("race")
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=cancel) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert failures == []
    assert token.cancelled
    with pytest.raises(AgentError):
        token.sleep(1)


def test_a_sleep_that_is_not_interrupted_returns_after_its_time() -> None:
    token = CancelToken()
    t0 = time.monotonic()
    token.sleep(0.05)
    assert time.monotonic() - t0 >= 0.045
    token.sleep(0)  # returns at once, nothing raised


def test_the_deadline_ends_a_long_sleep_with_kind_timeout() -> None:
    token = CancelToken(timeout=0.05)
    t0 = time.monotonic()
    with pytest.raises(AgentError) as info:
        token.sleep(30)
    assert info.value.kind is ErrorKind.TIMEOUT
    assert time.monotonic() - t0 < 5
    assert "0.05s" in info.value.message


@pytest.mark.parametrize("levels", [1, 2], ids=["parent", "grandparent"])
def test_cancelling_an_ancestor_wakes_a_sleeper_below_it(levels: int) -> None:
    top = CancelToken()
    child = top
    for _ in range(levels):
        child = CancelToken(parent=child)
    thread, errors = _sleep_in_thread(child, 30)
    time.sleep(0.05)
    top.cancel("top stopped")
    thread.join(5)
    assert not thread.is_alive()
    assert isinstance(errors[0], AgentError) and "top stopped" in errors[0].message


def test_a_child_of_a_cancelled_parent_starts_cancelled_and_inherits_the_deadline() -> None:
    parent = CancelToken(timeout=10)
    parent.cancel("early")
    child = CancelToken(timeout=60, parent=parent)
    assert child.cancelled
    assert child.deadline == parent.deadline


def test_cancel_scope_sets_and_restores_the_current_token() -> None:
    outer, inner = CancelToken(), CancelToken()
    assert current_token() is None
    with cancel_scope(outer):
        with cancel_scope(inner):
            assert current_token() is inner
        assert current_token() is outer
    assert current_token() is None


def test_a_released_child_is_no_longer_kept_or_cancelled_by_its_parent() -> None:
    parent = CancelToken()
    children = [CancelToken(parent=parent) for _ in range(3)]
    children[0].release()
    children[1].release()
    parent.cancel("stop")
    assert [c.cancelled for c in children] == [False, False, True]
    assert not parent._children  # none of them sleeps: the parent keeps none


def test_a_parent_keeps_only_the_children_with_a_sleeper_and_lets_them_go_on_release() -> None:
    grandparent = CancelToken()
    parent = CancelToken(parent=grandparent)
    idle, sleeper = CancelToken(parent=parent), CancelToken(parent=parent)
    assert not grandparent._children and not parent._children
    sleeper.sleep(0)  # a sleeper registers its token, and the chain above it
    assert list(parent._children or ()) == [sleeper] and list(grandparent._children or ()) == [parent]
    sleeper.release()
    idle.release()
    assert not parent._children


def test_a_child_sees_its_grandparents_cancellation_and_keeps_it_once_released() -> None:
    grandparent = CancelToken()
    parent = CancelToken(parent=grandparent)
    child = CancelToken(parent=parent)
    assert not child.cancelled
    grandparent.cancel("stopped above")
    assert parent.cancelled and child.cancelled
    with pytest.raises(AgentError, match="stopped above") as info:
        child.check()
    assert info.value.kind is ErrorKind.CANCELLED
    child.release()
    assert child.cancelled  # what it saw before it was let go stays
    with pytest.raises(AgentError, match="stopped above"):
        child.sleep(30)


def test_sessions_run_under_a_parent_token_let_go_of_it_when_they_end() -> None:
    from wingman_actors import Agent, Session
    from wingman_actors.testing import ScriptedProvider

    parent = CancelToken()
    agent = Agent("a", provider=ScriptedProvider(["ok"], cycle=True))
    for _ in range(5):
        Session(agent).run("hi", parent_token=parent)
    assert not parent._children  # a long-lived parent (a fleet's run) keeps no finished run


def test_on_cancel_calls_back_once_when_an_ancestor_is_cancelled() -> None:
    parent = CancelToken()
    child = CancelToken(parent=CancelToken(parent=parent))
    calls: list[str] = []
    child.on_cancel(lambda: calls.append("aborted"))
    parent.cancel()
    child.cancel()
    assert calls == ["aborted"]


def test_on_cancel_of_a_cancelled_token_calls_back_at_once() -> None:
    token = CancelToken()
    token.cancel()
    calls: list[str] = []
    token.on_cancel(lambda: calls.append("aborted"))
    assert calls == ["aborted"]


def test_an_unregistered_callback_is_not_called() -> None:
    token = CancelToken()
    calls: list[str] = []
    unregister = token.on_cancel(lambda: calls.append("aborted"))
    unregister()
    token.cancel()
    assert calls == []


def test_a_timeout_error_says_how_long_the_run_really_took() -> None:
    token = CancelToken(timeout=0.01)
    time.sleep(0.05)
    with pytest.raises(AgentError, match=r"timed out after 0\.01s \(it ran \d+\.\d\ds\)") as info:
        token.check()
    ran = float(info.value.message.split("it ran ")[1].rstrip("s)"))
    assert ran >= 0.05
