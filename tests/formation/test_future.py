"""The future submit() returns behaves as a concurrent.futures.Future in every use, and
knows its run."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError, Future, as_completed, wait
from concurrent.futures import TimeoutError as FutureTimeout

import pytest

from wingman_actors import Formation
from wingman_actors.formation._future import RunFuture


def new_run_future() -> RunFuture:
    return RunFuture("run-1")


def _later(fut: Future[object], value: object, delay: float = 0.05) -> threading.Thread:
    def body() -> None:
        time.sleep(delay)
        if isinstance(value, BaseException):
            fut.set_exception(value)
        else:
            fut.set_result(value)

    thread = threading.Thread(target=body)
    thread.start()
    return thread


def test_it_is_a_future_with_a_run_id() -> None:
    fut = new_run_future()
    assert isinstance(fut, Future) and fut.run_id == "run-1"
    assert not fut.done() and not fut.running() and not fut.cancelled()


def test_a_result_or_an_error_set_before_anyone_looks_is_kept() -> None:
    ok, failed = new_run_future(), new_run_future()
    ok.set_result(5)
    failed.set_exception(ValueError("no"))
    assert ok.done() and ok.result() == 5 and failed.done()
    with pytest.raises(ValueError, match="no"):
        failed.result()
    assert isinstance(failed.exception(), ValueError)


def test_resolving_twice_raises_as_a_standard_future_does() -> None:
    from concurrent.futures import InvalidStateError

    fut = new_run_future()
    fut.set_result(1)
    with pytest.raises(InvalidStateError):
        fut.set_result(2)
    with pytest.raises(InvalidStateError):
        fut.set_exception(ValueError("late"))
    assert fut.result() == 1


def test_a_waiter_racing_the_result_always_wakes() -> None:
    # a lost wake-up would hang here
    for i in range(300):
        fut = new_run_future()
        got: list[object] = []
        waiter = threading.Thread(target=lambda f=fut, out=got: out.append(f.result(5)))
        waiter.start()
        if i % 2:
            time.sleep(0)
        fut.set_result(i)
        waiter.join(5)
        assert got == [i]


def test_result_waits_for_a_value_set_by_another_thread() -> None:
    fut = new_run_future()
    thread = _later(fut, 42)
    assert fut.result(timeout=5) == 42
    thread.join()
    assert fut.done() and fut.exception() is None


def test_every_waiting_thread_wakes() -> None:
    fut = new_run_future()
    got: list[object] = []
    waiters = [threading.Thread(target=lambda: got.append(fut.result(5))) for _ in range(8)]
    for t in waiters:
        t.start()
    time.sleep(0.05)
    fut.set_result("ok")
    for t in waiters:
        t.join(5)
    assert got == ["ok"] * 8


def test_result_times_out_and_exceptions_are_raised() -> None:
    fut = new_run_future()
    with pytest.raises(FutureTimeout):
        fut.result(timeout=0.02)
    thread = _later(fut, ValueError("bad input"))
    with pytest.raises(ValueError, match="bad input"):
        fut.result(timeout=5)
    thread.join()
    assert isinstance(fut.exception(), ValueError)


def test_done_callbacks_run_once_before_and_after_completion() -> None:
    fut = new_run_future()
    seen: list[str] = []
    fut.add_done_callback(lambda f: seen.append(f"early {f.result()}"))
    fut.set_result(1)
    fut.add_done_callback(lambda f: seen.append(f"late {f.result()}"))
    assert seen == ["early 1", "late 1"]


def test_cancel_a_pending_future() -> None:
    fut = new_run_future()
    assert fut.cancel()
    assert fut.cancelled()
    with pytest.raises(CancelledError):
        fut.result()


def test_wait_and_as_completed_mix_it_with_standard_futures() -> None:
    lean, plain = new_run_future(), Future[object]()
    threads = [_later(lean, "lean", 0.02), _later(plain, "plain", 0.06)]
    done, not_done = wait([lean, plain], timeout=5)
    assert {f.result() for f in done} == {"lean", "plain"} and not not_done
    for t in threads:
        t.join()
    lean2, plain2 = new_run_future(), Future[object]()
    threads = [_later(lean2, 1, 0.02), _later(plain2, 2, 0.04)]
    assert sorted(f.result() for f in as_completed([lean2, plain2], timeout=5)) == [1, 2]
    for t in threads:
        t.join()


def test_asyncio_can_await_it() -> None:
    async def main() -> object:
        fut = new_run_future()
        thread = _later(fut, "awaited", 0.02)
        try:
            return await asyncio.wrap_future(fut)
        finally:
            thread.join()

    assert asyncio.run(main()) == "awaited"


def test_cancel_asks_the_runtime_and_returns_its_answer() -> None:
    asked: list[str] = []

    class Refusing:
        def cancel(self, run_id: str) -> bool:
            asked.append(run_id)
            return False

    fut = RunFuture("r7", Refusing())
    assert fut.cancel() is False
    assert asked == ["r7"] and not fut.cancelled()
    assert fut.settle_cancelled() and fut.cancelled()


def test_setting_a_result_on_a_cancelled_future_does_not_hang() -> None:
    fut = new_run_future()
    assert fut.settle_cancelled()
    done = threading.Event()

    def late() -> None:
        try:
            fut.set_result(1)
        except Exception:
            pass  # InvalidStateError: the run was cancelled first
        done.set()

    thread = threading.Thread(target=late, daemon=True)
    thread.start()
    assert done.wait(3)
    assert fut.cancelled()


def test_submit_returns_it_and_many_runs_resolve() -> None:
    f = Formation("many").add_function("a", lambda x: x + 1).add_function("b", lambda x: x * 2).connect("a", "b")
    with f.start() as running:
        futures = [running.submit(i) for i in range(500)]
        assert all(isinstance(fut, Future) for fut in futures)
        assert len({fut.run_id for fut in futures}) == 500
        assert [fut.result(10).output for fut in futures] == [(i + 1) * 2 for i in range(500)]
