"""Replicas of a node share one queue: idle replicas pull work, a stuck one holds only its own."""

from __future__ import annotations

import threading
import time

from wingman_actors import Formation


def test_with_one_replica_stuck_the_other_serves_every_later_run() -> None:
    release = threading.Event()
    entered = threading.Event()

    def work(x: int) -> int:
        if x == 0:
            entered.set()
            release.wait(10)
        return x

    try:
        with Formation("r").add_function("work", work, concurrency=2).start() as running:
            stuck = running.submit(0)
            assert entered.wait(3)
            futures = [running.submit(i) for i in range(1, 101)]
            assert [f.result(timeout=5).output for f in futures] == list(range(1, 101))
            assert not stuck.done()
            release.set()
            assert stuck.result(timeout=3).output == 0
    finally:
        release.set()


def test_three_slow_inputs_on_three_replicas_run_concurrently() -> None:
    def slow(x: int) -> int:
        time.sleep(0.3)
        return x

    with Formation("r").add_function("slow", slow, concurrency=3).start() as running:
        started = time.perf_counter()
        futures = [running.submit(i) for i in range(3)]
        assert [f.result(timeout=5).output for f in futures] == [0, 1, 2]
        assert time.perf_counter() - started < 0.8  # not 0.9 s: they overlapped


def test_a_failing_replica_is_replaced_and_the_node_keeps_all_its_replicas() -> None:
    calls: list[int] = []

    def flaky(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            raise RuntimeError("first call fails")
        return x

    with Formation("r").add_function("flaky", flaky, concurrency=2, retries=1).start() as running:
        assert running.submit(5).result(timeout=3).output == 5
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            actors = list(running.actors())
            if len(actors) == 2 and all(a.actor_ref.is_alive() for a in actors):
                break
            time.sleep(0.01)
        actors = list(running.actors())
        assert len(actors) == 2 and all(a.actor_ref.is_alive() for a in actors)
        assert [running.submit(i).result(timeout=3).output for i in range(10)] == list(range(10))
