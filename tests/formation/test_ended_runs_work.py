"""Work still going for a run that has ended (a ``join="any"`` loser, the sibling branch of a
failed run) is wanted by no one: it never delays ``run()`` or ``stop()``, and is left to
finish on its own thread (DESIGN: "an abandoned attempt never delays run()")."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from wingman_actors import Formation
from wingman_actors.errors import FormationRuntimeError
from wingman_actors.formation._runtime import STOP_GRACE_S


@pytest.fixture
def held() -> Iterator[threading.Event]:
    """Holds the slow branch until the test ends (so its thread ends before the leak check)."""
    event = threading.Event()
    yield event
    event.set()


def _slow(held: threading.Event, started: threading.Event | None = None) -> Any:
    def slow(x: Any) -> str:
        if started is not None:
            started.set()
        held.wait(30)
        return "slow"

    return slow


def test_a_join_any_loser_still_working_does_not_delay_run(held: threading.Event) -> None:
    started = threading.Event()

    def quick(x: int) -> str:
        started.wait(10)  # wins once the loser is working
        return "quick"

    formation = (
        Formation("race").add_function("s", lambda x: x).add_function("quick", quick)
        .add_function("slow", _slow(held, started)).add_function("j", lambda d: d, join="any")
        .connect("s", "quick").connect("s", "slow").connect("quick", "j").connect("slow", "j")
    )
    t0 = time.monotonic()
    result = formation.run(1)
    elapsed = time.monotonic() - t0
    assert result.output == {"quick": "quick"}
    assert started.is_set() and not held.is_set()  # the loser is still working
    assert elapsed < STOP_GRACE_S, f"run() waited {elapsed:.2f}s for the losing branch"


def test_a_failed_runs_sibling_still_working_does_not_delay_run_raising(held: threading.Event) -> None:
    started = threading.Event()

    def bad(x: int) -> int:
        started.wait(10)  # fails once the other branch is working
        raise ValueError("bad input")

    formation = (
        Formation("f").add_function("s", lambda x: x).add_function("bad", bad)
        .add_function("slow", _slow(held, started))
        .connect("s", "bad").connect("s", "slow")
    )
    t0 = time.monotonic()
    with pytest.raises(FormationRuntimeError, match="bad input"):
        formation.run(1)
    elapsed = time.monotonic() - t0
    assert started.is_set() and not held.is_set()  # the other branch is still working
    assert elapsed < STOP_GRACE_S, f"run() waited {elapsed:.2f}s for the failed run's other branch"


def test_stop_still_gives_work_of_a_run_in_flight_its_grace(held: threading.Event) -> None:
    finished = threading.Event()

    def brief(x: int) -> int:
        time.sleep(0.2)
        finished.set()
        return x

    running = Formation("g").add_function("brief", brief).start()
    future = running.submit(1)
    time.sleep(0.05)  # brief is working
    running.stop()
    assert finished.is_set()  # stop waited for it (up to its grace)
    with pytest.raises(FormationRuntimeError, match="stopped before run"):
        future.result(1)


def test_breaking_out_of_run_stream_cancels_a_run_not_journalled_and_does_not_wait_for_its_node(held: threading.Event) -> None:
    started = threading.Event()
    formation = Formation("f").add_function("slow", _slow(held, started)).add_function("after", lambda x: x)
    formation.connect("slow", "after")
    seen = []
    t0 = time.monotonic()
    stream = formation.run_stream(1)
    for event in stream:
        seen.append(event.type.value)
        if event.type.value == "node_started":
            assert started.wait(5)
            break
    stream.close()  # as a `for` loop left by `break` does once the generator is dropped
    elapsed = time.monotonic() - t0
    assert "run_cancelled" not in seen  # the consumer stopped before any end
    assert not held.is_set()  # the node was still working when the stream closed
    assert elapsed < STOP_GRACE_S, f"closing the stream waited {elapsed:.2f}s for the node"
