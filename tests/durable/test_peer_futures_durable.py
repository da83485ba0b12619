"""Behaviours ported from CPython's ``concurrent.futures`` tests (python/cpython
``Lib/test/test_concurrent_futures/``) for a formation started with a store, on SQLite
and PostgreSQL: what a run's future says is what the store records.

Deliberately different: an executor's cancelled or shut-down work is gone; a journalled
run cancelled by ``future.cancel()`` or cut short by ``stop()`` is recorded so, and can be
resumed by its id (``future.run_id``) without running its finished visits again.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import CancelledError, wait

import pytest

from tests.support.peers import Counter, Gate, until
from wingman_actors import Formation, interrupt
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.store import RunStore


@pytest.fixture
def gate() -> Iterator[Gate]:
    """A :class:`Gate` that appends ``!``, opened when the test ends."""
    g = Gate(suffix="!")
    yield g
    g.opened.set()


def gated(counter: Counter, gate: Gate) -> Formation:
    """``first -> wait``: ``first`` counts its calls, ``wait`` blocks on ``gate``."""

    def first(x: str) -> str:
        counter.hit("first")
        return x.upper()

    return Formation("gated").add_function("first", first).add_function("wait", gate).connect("first", "wait")


def test_a_journalled_runs_future_cancelled_in_flight_is_recorded_cancelled_and_resumes(
        location: str, gate: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_cancel (with a store)."""
    counter = Counter()
    f = gated(counter, gate)
    with RunStore(location) as store, f.start(store=store) as running:
        future = running.submit("x")
        assert gate.reached.wait(5)
        assert future.cancel()
        with pytest.raises(CancelledError):
            future.result(timeout=5)
        assert store.get(future.run_id).status == "cancelled"
        gate.opened.set()
        assert running.resume(future.run_id).result(timeout=10).output == "X!"
        assert store.get(future.run_id).status == "succeeded"
    assert counter.count("first") == 1  # journalled: not run again


def test_stop_with_a_journalled_run_pending_records_it_interrupted_and_a_new_start_resumes_it(
        location: str, gate: Gate) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_shutdown.py::test_cancel_futures (with a store)."""
    counter = Counter()
    f = gated(counter, gate)
    with RunStore(location) as store:
        running = f.start(store=store)
        future = running.submit("y")
        assert gate.reached.wait(5)
        running.stop(timeout=0.1)  # the attempt at the gate is left to finish on its own
        gate.opened.set()
        assert isinstance(future.exception(), FormationRuntimeError)
        assert store.get(future.run_id).status == "interrupted"
        with f.start(store=store) as again:
            assert again.resume(future.run_id).result(timeout=10).output == "Y!"
    assert counter.count("first") == 1


def test_wait_all_completed_over_journalled_runs_matches_what_the_store_records(location: str) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_wait.py::test_all_completed (with a store)."""

    def check(x: int) -> int:
        if x == 2:
            raise ValueError("two")
        return x

    with RunStore(location) as store, Formation("w").add_function("check", check).start(store=store) as running:
        futures = [running.submit(i) for i in range(4)]
        done, not_done = wait(futures, timeout=10)
        assert done == set(futures) and not not_done
        statuses = [store.get(fut.run_id).status for fut in futures]
    assert statuses == ["succeeded", "succeeded", "failed", "succeeded"]
    assert isinstance(futures[2].exception(), FormationRuntimeError)


def test_a_result_set_by_hand_before_a_journalled_run_suspends_stands_and_the_suspension_is_recorded(
        location: str, gate: Gate, caplog: pytest.LogCaptureFixture) -> None:
    """Ported from python/cpython Lib/test/test_concurrent_futures/test_future.py::test_multiple_set_result
    (with a store): a run's future resolved by hand keeps its value when the run then suspends at an
    ``interrupt()``; the suspension is still recorded and announced, and the run resumes."""
    events: list[str] = []

    def ask(x: str) -> str:
        return f"{x}:{interrupt('ok?')}"

    f = Formation("byhand").add_function("wait", gate).add_function("ask", ask).connect("wait", "ask")
    with RunStore(location) as store, f.start(store=store, on_event=lambda e: events.append(e.type.value)) as running:
        future = running.submit("x")
        assert gate.reached.wait(5)
        future.set_result("mine")
        gate.opened.set()
        assert until(lambda: store.get(future.run_id).status == "suspended")
        assert until(lambda: "run_finished" in events)
        assert running.resume(future.run_id, answer="yes").result(timeout=10).output == "x!:yes"
    assert future.result() == "mine"
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
