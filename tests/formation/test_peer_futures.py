"""Behaviours ported from CPython's own tests of ``concurrent.futures``
(python/cpython ``Lib/test/test_concurrent_futures/``: ``test_future.py``,
``test_wait.py``, ``test_as_completed.py``, ``test_shutdown.py``, ``executor.py``),
mapped onto the future ``RunningFormation.submit`` returns (a ``RunFuture``, a
``concurrent.futures.Future`` subclass). ``test_peer_futures_more.py`` takes shutdown,
callbacks that call back into the formation and ``backend="ray"``;
``test_peer_futures_async.py`` the asyncio bridging.

A formation started with ``start()`` is the executor: ``submit(input)`` its ``submit(fn,
*args)``, ``stop()`` its ``shutdown()``. Deliberately different (each test that touches
one says so):
- CPython's executor marks a future running when a worker takes it, and ``cancel()`` of a
  running future returns False. A run's future stays pending until the run ends
  (``running()`` is False), and ``cancel()`` cancels the run in flight too (DESIGN: "it
  returns True unless the run already finished").
- ``shutdown(cancel_futures=True)`` cancels the queued futures; ``stop()`` fails every
  run not yet finished with ``FormationRuntimeError`` (DESIGN: no future is left
  unresolved), and a journalled one can be resumed.
- A run's future is resolved by its formation: ``set_running_or_notify_cancel`` (an
  executor's hook) is refused on it, naming ``cancel()``.
"""

from __future__ import annotations

import logging
import pickle
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import (
    ALL_COMPLETED,
    FIRST_COMPLETED,
    FIRST_EXCEPTION,
    CancelledError,
    Future,
    as_completed,
    wait,
)
from typing import Any

import pytest

from tests.support.peers import Gate, until
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation._runtime import RunningFormation
from wingman_actors.formation.events import FormationEvent, FormationEventType


def doubles_or_fails(x: Any) -> Any:
    """Doubles a number; raises on the input ``"bad"``."""
    if x == "bad":
        raise ValueError("bad input")
    return x * 2


@pytest.fixture
def running() -> Iterator[RunningFormation]:
    """A started one-node formation that doubles numbers and fails on ``"bad"``."""
    with Formation("double").add_function("double", doubles_or_fails).start() as r:
        yield r


@pytest.fixture
def gated(held: Gate) -> Iterator[RunningFormation]:
    """A started formation whose one node waits on ``held`` (concurrency 4)."""
    with Formation("gated").add_function("wait", held, concurrency=4).start() as r:
        yield r
        held.opened.set()  # before stop(): no attempt left for its grace


# --- test_future.py: states, result, exception, repr ----------------------------------


def test_a_finished_runs_future_is_done_not_running_not_cancelled(running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_done."""
    future = running.submit(3)
    assert future.result(timeout=3).output == 6
    assert future.done() and not future.running() and not future.cancelled()


def test_an_in_flight_runs_future_is_pending_not_running(gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_running.
    CPython's executor marks a taken future running; a run's future stays pending until the
    run ends, so that cancel() can still cancel it in flight."""
    future = gated.submit(1)
    assert held.reached.wait(3)
    assert not future.running() and not future.done() and not future.cancelled()
    held.opened.set()
    assert future.result(timeout=3).output == 1


def test_result_with_a_timeout_raises_timeout_error_while_the_run_is_in_flight(
        gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_result_with_timeout."""
    future = gated.submit(1)
    with pytest.raises(TimeoutError):
        future.result(timeout=0)
    with pytest.raises(TimeoutError):
        future.exception(timeout=0.01)
    held.opened.set()
    assert future.result(timeout=3).output == 1 and future.exception(timeout=0) is None


def test_result_waits_for_a_run_finished_on_another_thread(gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_result_with_success."""
    future = gated.submit("late")
    threading.Timer(0.05, held.opened.set).start()
    assert future.result(timeout=3).output == "late"


def test_a_failed_runs_future_raises_formation_runtime_error_from_result_and_returns_it_from_exception(
        running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_exception_with_success."""
    future = running.submit("bad")
    error = future.exception(timeout=3)
    assert isinstance(error, FormationRuntimeError) and error.node == "double"
    assert isinstance(error.__cause__, ValueError) and error.run_id == future.run_id
    with pytest.raises(FormationRuntimeError, match=r"node 'double' failed .*ValueError: bad input"):
        future.result(timeout=0)


def test_result_of_a_run_cancelled_from_another_thread_raises_cancelled_error(
        gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_result_with_cancel."""
    future = gated.submit(1)
    assert held.reached.wait(3)
    threading.Timer(0.02, future.cancel).start()
    with pytest.raises(CancelledError):
        future.result(timeout=3)
    with pytest.raises(CancelledError):
        future.exception(timeout=0)


def test_the_repr_shows_the_state_and_what_the_run_returned_or_raised(running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_repr."""
    ok, failed = running.submit(1), running.submit("bad")
    wait([ok, failed], timeout=3)
    assert re.fullmatch(r"<RunFuture at 0x[0-9a-f]+ state=finished returned FormationResult>", repr(ok))
    assert re.fullmatch(r"<RunFuture at 0x[0-9a-f]+ state=finished raised FormationRuntimeError>", repr(failed))


def test_the_repr_of_a_pending_and_a_cancelled_runs_future(gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_repr (pending, cancelled)."""
    future = gated.submit(1)
    assert re.fullmatch(r"<RunFuture at 0x[0-9a-f]+ state=pending>", repr(future))
    assert future.cancel()
    assert re.fullmatch(r"<RunFuture at 0x[0-9a-f]+ state=cancelled>", repr(future))


def test_a_runs_future_cannot_be_pickled(running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/executor.py (futures stay in
    their process): a future holds a lock, so pickling it fails as a Future's does; the result
    it resolves to travels instead."""
    future = running.submit(2)
    future.result(timeout=3)
    with pytest.raises(TypeError, match=r"pickle"):
        pickle.dumps(future)
    assert pickle.loads(pickle.dumps(future.result().output)) == 4


# --- test_future.py: cancel ---------------------------------------------------------------


def test_cancel_of_a_finished_run_returns_false_and_keeps_its_result(running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_cancel (FINISHED)."""
    ok, failed = running.submit(4), running.submit("bad")
    wait([ok, failed], timeout=3)
    assert not ok.cancel() and not failed.cancel()
    assert not ok.cancelled() and ok.result().output == 8
    assert isinstance(failed.exception(), FormationRuntimeError)


def test_cancel_of_an_in_flight_run_returns_true_and_the_run_ends_cancelled(
        gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_cancel (PENDING).
    CPython cannot cancel a running future; a run's future cancels the run in flight."""
    events: list[FormationEvent] = []
    future = gated.submit(1, on_event=events.append)
    assert held.reached.wait(3)
    assert future.cancel()
    assert future.cancelled() and future.done() and not future.running()
    assert until(lambda: gated.in_flight == 0)
    assert [e.type for e in events if e.type is FormationEventType.RUN_CANCELLED] == [FormationEventType.RUN_CANCELLED]


def test_cancelling_a_cancelled_runs_future_again_returns_true_and_changes_nothing(
        gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_cancel (CANCELLED)."""
    events: list[FormationEvent] = []
    future = gated.submit(1, on_event=events.append)
    assert future.cancel()
    assert future.cancel() and future.cancelled()
    assert sum(e.type is FormationEventType.RUN_CANCELLED for e in events) == 1


def test_a_cancelled_run_leaves_the_other_runs_to_finish(gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/executor.py::test_submit (with
    test_future.py::test_cancel): cancelling one future touches no other."""
    first, second = gated.submit("a"), gated.submit("b")
    assert first.cancel()
    held.opened.set()
    assert second.result(timeout=3).output == "b" and first.cancelled()


def test_cancels_from_many_threads_at_once_all_return_true_and_cancel_the_run_once(
        gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_cancel,
    raced from eight threads."""
    events: list[FormationEvent] = []
    future = gated.submit(1, on_event=events.append)
    assert held.reached.wait(3)
    answers: list[bool] = []
    threads = [threading.Thread(target=lambda: answers.append(future.cancel())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(3)
    assert answers == [True] * 8 and future.cancelled()
    assert sum(e.type is FormationEventType.RUN_CANCELLED for e in events) == 1


def test_set_running_or_notify_cancel_is_refused_on_a_runs_future_naming_cancel(
        gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_running
    (an executor's set_running_or_notify_cancel). A run's future is its formation's to
    resolve: marked running by hand, a later cancel() cancelled the run but left the future
    pending for ever, so the hook is refused, naming cancel()."""
    future = gated.submit(1)
    with pytest.raises(RuntimeError, match=r"set_running_or_notify_cancel.*cancel\(\)"):
        future.set_running_or_notify_cancel()
    assert not future.running()
    assert future.cancel()
    with pytest.raises(CancelledError):
        future.result(timeout=3)


# --- test_wait.py ----------------------------------------------------------------------------


def test_wait_first_completed_returns_the_finished_run_and_leaves_the_stuck_one(
        gated: RunningFormation, held: Gate, running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_wait.py::test_first_completed."""
    stuck, quick = gated.submit(1), running.submit(1)
    done, not_done = wait([stuck, quick], timeout=3, return_when=FIRST_COMPLETED)
    assert done == {quick} and not_done == {stuck}


def test_wait_first_completed_returns_at_once_with_runs_already_finished(
        gated: RunningFormation, held: Gate, running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_wait.py::test_first_completed_some_already_completed."""
    finished = running.submit(1)
    finished.result(timeout=3)
    stuck = gated.submit(1)
    started = time.monotonic()
    done, not_done = wait([finished, stuck], timeout=5, return_when=FIRST_COMPLETED)
    assert done == {finished} and not_done == {stuck} and time.monotonic() - started < 2


def test_wait_first_exception_returns_at_the_failed_run(
        gated: RunningFormation, held: Gate, running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_wait.py::test_first_exception."""
    ok = running.submit(1)
    ok.result(timeout=3)
    stuck, failed = gated.submit(1), running.submit("bad")
    done, not_done = wait([ok, stuck, failed], timeout=3, return_when=FIRST_EXCEPTION)
    assert done == {ok, failed} and not_done == {stuck}


def test_wait_first_exception_counts_a_run_timeout_as_the_exception(gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_wait.py::test_first_exception_some_already_complete
    (the exception a run timeout)."""
    timed, stuck = gated.submit(1, timeout=0.05), gated.submit(2)
    done, not_done = wait([timed, stuck], timeout=3, return_when=FIRST_EXCEPTION)
    assert done == {timed} and not_done == {stuck}
    assert re.search(r"timed out after 0.05s", str(timed.exception()))


def test_wait_first_exception_returns_at_once_with_a_run_already_failed(
        gated: RunningFormation, held: Gate, running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_wait.py::test_first_exception_one_already_failed."""
    failed = running.submit("bad")
    failed.exception(timeout=3)
    stuck = gated.submit(1)
    done, not_done = wait([failed, stuck], timeout=5, return_when=FIRST_EXCEPTION)
    assert done == {failed} and not_done == {stuck}


def test_wait_first_exception_returns_at_a_cancelled_run(gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_wait.py::test_first_exception
    (a cancelled future counts as done, as CPython's wait() sees it once notified)."""
    cancelled, stuck = gated.submit(1), gated.submit(2)
    threading.Timer(0.02, cancelled.cancel).start()
    done, not_done = wait([cancelled, stuck], timeout=3, return_when=FIRST_EXCEPTION)
    assert done == {cancelled} and not_done == {stuck}


def test_wait_all_completed_returns_every_run_finished_failed_or_cancelled(
        gated: RunningFormation, held: Gate, running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_wait.py::test_all_completed."""
    futures = [running.submit(1), running.submit("bad"), gated.submit(3)]
    futures[2].cancel()
    done, not_done = wait(futures, timeout=3, return_when=ALL_COMPLETED)
    assert done == set(futures) and not not_done


def test_wait_with_a_timeout_returns_the_runs_not_finished(
        gated: RunningFormation, held: Gate, running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_wait.py::test_timeout."""
    quick, stuck = running.submit(1), gated.submit(1)
    started = time.monotonic()
    done, not_done = wait([quick, stuck], timeout=0.1, return_when=ALL_COMPLETED)
    assert done == {quick} and not_done == {stuck} and time.monotonic() - started >= 0.09


def test_wait_mixes_runs_futures_with_an_executors_futures(running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_wait.py::test_all_completed
    (futures of two executors in one wait)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        theirs, ours = pool.submit(lambda: 5), running.submit(5)
        done, _ = wait([theirs, ours], timeout=3)
    assert done == {theirs, ours} and theirs.result() == 5 and ours.result().output == 10


# --- test_as_completed.py ----------------------------------------------------------------


def test_as_completed_yields_each_run_once_as_it_finishes(running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_as_completed.py::test_no_timeout."""
    futures = [running.submit(i) for i in range(20)]
    seen = list(as_completed(futures, timeout=5))
    assert sorted(f.result().output for f in seen) == [2 * i for i in range(20)] and len(set(seen)) == 20


def test_as_completed_times_out_naming_how_many_runs_are_unfinished(
        gated: RunningFormation, held: Gate, running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_as_completed.py::test_future_times_out
    (and ::test_correct_timeout_exception_msg)."""
    quick, stuck = running.submit(1), gated.submit(1)
    quick.result(timeout=3)
    yielded: list[Future[Any]] = []
    with pytest.raises(TimeoutError, match=r"1 \(of 2\) futures unfinished"):
        for f in as_completed([quick, stuck], timeout=0.1):
            yielded.append(f)
    assert yielded == [quick]


def test_as_completed_yields_a_future_given_twice_once(running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_as_completed.py::test_duplicate_futures."""
    future = running.submit(1)
    assert list(as_completed([future, future], timeout=3)) == [future]


def test_as_completed_yields_a_run_cancelled_while_waited_on(gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_as_completed.py::test_no_timeout
    (one future cancelled while as_completed waits)."""
    cancelled, other = gated.submit(1), gated.submit(2)
    threading.Timer(0.02, cancelled.cancel).start()
    assert next(as_completed([cancelled, other], timeout=3)) is cancelled
    assert cancelled.cancelled()


# --- test_future.py: done callbacks ------------------------------------------------------


def test_a_done_callback_sees_the_runs_result_its_error_or_its_cancellation(
        gated: RunningFormation, held: Gate, running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_done_callback_with_result
    (and ::test_done_callback_with_exception, ::test_done_callback_with_cancel)."""
    seen: list[Any] = []
    ok, failed, cancelled = running.submit(2), running.submit("bad"), gated.submit(3)
    ok.add_done_callback(lambda f: seen.append(f.result().output))
    failed.add_done_callback(lambda f: seen.append(type(f.exception())))
    cancelled.add_done_callback(lambda f: seen.append(f.cancelled()))
    assert cancelled.cancel()
    assert until(lambda: len(seen) == 3), seen
    assert sorted(map(str, seen)) == sorted(map(str, [4, FormationRuntimeError, True]))


def test_a_done_callback_added_after_the_run_finished_runs_at_once_on_the_caller(
        running: RunningFormation) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_done_callback_already_successful
    (and ::test_done_callback_already_failed)."""
    ok, failed = running.submit(2), running.submit("bad")
    wait([ok, failed], timeout=3)
    seen: list[Any] = []
    ok.add_done_callback(lambda f: seen.append((threading.current_thread(), f.result().output)))
    failed.add_done_callback(lambda f: seen.append((threading.current_thread(), type(f.exception()))))
    assert seen == [(threading.current_thread(), 4), (threading.current_thread(), FormationRuntimeError)]


def test_a_done_callback_runs_at_once_inside_the_cancel_that_cancels_its_run(
        gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_done_callback_with_cancel:
    CPython runs the callback before cancel() returns; so does a run's future."""
    seen: list[bool] = []
    future = gated.submit(1)
    future.add_done_callback(lambda f: seen.append(f.cancelled()))
    assert held.reached.wait(3)
    assert future.cancel() and seen == [True]


def test_a_done_callback_added_after_cancel_runs_at_once(gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_done_callback_already_cancelled."""
    future = gated.submit(1)
    assert future.cancel()
    seen: list[bool] = []
    future.add_done_callback(lambda f: seen.append(f.cancelled()))
    assert seen == [True]


def test_a_raising_done_callback_is_logged_and_the_next_one_still_runs_once(
        gated: RunningFormation, held: Gate, caplog: pytest.LogCaptureFixture) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_done_callback_raises."""
    calls: list[str] = []

    def raising(_: Future[Any]) -> None:
        calls.append("raising")
        raise RuntimeError("doh!")

    with caplog.at_level(logging.ERROR, logger="concurrent.futures"):
        future = gated.submit(1)
        future.add_done_callback(raising)
        future.add_done_callback(lambda _: calls.append("next"))
        held.opened.set()
        future.result(timeout=3)
        assert until(lambda: len(calls) == 2)
        future.add_done_callback(raising)  # already done: at once, logged too
    assert calls == ["raising", "next", "raising"]
    logged = [r for r in caplog.records if "exception calling callback for" in r.getMessage()]
    assert len(logged) == 2 and all("doh!" in str(r.exc_info[1]) for r in logged if r.exc_info)


def test_done_callbacks_run_once_each_in_the_order_they_were_added(gated: RunningFormation, held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_done_callback_with_result
    (many callbacks, added while the runs are unfinished: each called once, in order)."""
    calls: list[tuple[int, int]] = []
    futures = [gated.submit(n) for n in range(10)]
    for n, future in enumerate(futures):
        for i in range(3):
            future.add_done_callback(lambda f, n=n, i=i: calls.append((n, i)))
    held.opened.set()
    wait(futures, timeout=3)
    assert until(lambda: len(calls) == 30)
    time.sleep(0.02)  # nothing more comes
    assert len(calls) == 30
    assert all([i for m, i in calls if m == n] == [0, 1, 2] for n in range(10))
