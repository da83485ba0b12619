"""More behaviours ported from CPython's ``concurrent.futures`` tests (python/cpython
``Lib/test/test_concurrent_futures/``): shutdown (``stop()``) with runs pending, done
callbacks that call back into the running formation, a future resolved by hand, and
``backend="ray"``. (Split from ``test_peer_futures.py``, whose docstring maps the peer.)

Deliberately different: ``shutdown(cancel_futures=True)`` cancels queued futures and
``shutdown(wait=True)`` waits for the running ones; ``stop()`` fails every run not yet
finished with ``FormationRuntimeError`` at once (DESIGN: "no future is left unresolved"),
leaving node code still running at most its grace.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError, wait
from typing import Any

import pytest

from tests.support.peers import Gate, local_ray, until  # noqa: F401  (local_ray: a fixture)
from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError


def inc(x: int) -> int:
    return x + 1


# --- test_shutdown.py ----------------------------------------------------------------------


def test_submit_after_stop_raises_naming_start() -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_shutdown.py::test_run_after_shutdown."""
    running = Formation("f").add_function("inc", inc).start()
    running.stop()
    with pytest.raises(RuntimeError, match=r"formation 'f' is not running: it was stopped; start it again with "
                                           r"`formation.start\(\)`"):
        running.submit(1)


def test_stop_fails_every_pending_run_at_once_and_leaves_no_future_unresolved(held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_shutdown.py::test_cancel_futures.
    CPython cancels the queued futures; stop() fails every unfinished run, in flight or queued."""
    running = Formation("g").add_function("wait", held).start()
    futures = [running.submit(i) for i in range(5)]
    assert held.reached.wait(3)
    held.opened.set()  # the attempt in flight returns within stop()'s grace
    running.stop()
    done, not_done = wait(futures, timeout=0)
    assert done == set(futures) and not not_done
    for future in futures:
        if not future.cancelled() and future.exception() is not None:
            assert isinstance(future.exception(), FormationRuntimeError)
            assert f"formation 'g' stopped before run {future.run_id} finished" in str(future.exception())


def test_stop_with_a_run_stuck_in_node_code_returns_within_its_grace(held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_shutdown.py::test_shutdown_no_wait
    (the caller is not held by work that does not end)."""
    running = Formation("s").add_function("wait", held).start()
    future = running.submit(1)
    assert held.reached.wait(3)
    started = time.monotonic()
    running.stop(timeout=0.1)
    assert time.monotonic() - started < 1.5
    assert isinstance(future.exception(timeout=0), FormationRuntimeError)
    held.opened.set()


def test_leaving_the_with_block_resolves_the_runs_submitted_in_it(held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_shutdown.py::test_context_manager_shutdown."""
    with Formation("c").add_function("inc", inc).start() as running:
        futures = [running.submit(i) for i in range(20)]
    assert all(f.done() for f in futures)
    finished = [f.result().output for f in futures if f.exception() is None]
    assert finished == [i + 1 for i in range(20) if futures[i].exception() is None]


def test_stop_twice_is_harmless_and_cancel_after_stop_returns_false(held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_shutdown.py::test_hang_issue12364
    (shutdown after shutdown; nothing hangs)."""
    running = Formation("t").add_function("wait", held).start()
    future = running.submit(1)
    held.opened.set()
    running.stop()
    running.stop()
    assert not future.cancel() and not running.cancel(future.run_id) and future.done()


def test_a_done_callback_may_stop_the_formation_and_the_other_runs_end_failed(held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_shutdown.py::test_hang_gh94440
    (shutdown called from a callback of the executor's own future)."""
    f = Formation("cb").add_function("wait", held, concurrency=2)
    running = f.start()
    stopped = threading.Event()
    try:
        other = running.submit("held")
        assert held.reached.wait(3)
        first = running.submit("quick")
        first.add_done_callback(lambda _: (running.stop(timeout=0.1), stopped.set()))
        held.opened.set()  # both finish; the first one's callback stops the formation
        assert stopped.wait(3)
        assert first.result(timeout=0).output == "quick" and other.done()
    finally:
        held.opened.set()
        running.stop()


# --- done callbacks that call back into the formation ------------------------------------


def test_a_done_callback_may_cancel_another_run_of_the_formation(held: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_done_callback_with_cancel
    (the cancel made from another future's callback)."""
    f = Formation("x").add_function("wait", held, concurrency=2)
    with f.start() as running:
        stuck = running.submit("held")
        assert held.reached.wait(3)
        answers: list[bool] = []
        quick = running.submit("quick", timeout=0.02)  # fails by its timeout while the gate is shut
        quick.add_done_callback(lambda _: answers.append(stuck.cancel()))
        with pytest.raises(CancelledError):
            stuck.result(timeout=3)
        assert until(lambda: answers == [True])
        held.opened.set()


def test_a_result_set_by_hand_on_a_runs_future_wins_and_the_run_still_ends_quietly(
        caplog: pytest.LogCaptureFixture) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_multiple_set_result
    (the second set_result is refused): a result set by hand on a run's future is kept, and
    the run ending later does not make the runtime log that it failed."""
    held = Gate()
    with Formation("byhand").add_function("wait", held).start() as running:
        future = running.submit(1)
        assert held.reached.wait(3)
        future.set_result("mine")
        held.opened.set()
        assert until(lambda: running.in_flight == 0)
        assert running.submit(2).result(timeout=3).output == 2
    assert future.result() == "mine"
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


# --- backend="ray" -------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_on_ray_wait_first_exception_and_as_completed_see_every_run() -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_wait.py::test_first_exception on backend="ray"."""
    from concurrent.futures import FIRST_EXCEPTION, as_completed

    def fails_on_bad(x: Any) -> Any:
        if x == "bad":
            raise ValueError("bad input")
        return x

    with Formation("ray_wait").add_function("n", fails_on_bad).start(backend="ray") as running:
        futures = [running.submit(i) for i in range(3)] + [running.submit("bad")]
        done, _ = wait(futures, timeout=60, return_when=FIRST_EXCEPTION)
        assert futures[3] in done and isinstance(futures[3].exception(), FormationRuntimeError)
        assert sorted(f.result().output for f in as_completed(futures[:3], timeout=60)) == [0, 1, 2]


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_on_ray_cancel_of_an_in_flight_run_returns_true_and_stop_resolves_the_rest() -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_shutdown.py::test_cancel_futures on backend="ray"."""

    def sleepy(x: Any) -> Any:
        time.sleep(30)
        return x

    running = Formation("ray_cancel").add_function("n", sleepy).start(backend="ray")
    try:
        first, second = running.submit(1), running.submit(2)
        assert first.cancel() and first.cancelled()
    finally:
        running.stop(timeout=0.1)
    assert isinstance(second.exception(timeout=0), FormationRuntimeError)
