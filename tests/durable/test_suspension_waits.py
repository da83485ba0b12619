"""A run suspending (an ``interrupt()`` or a breakpoint) waits for its visits in flight,
begun or still queued for their node, as LangGraph lets a superstep's other tasks finish:
what they return is journalled and not run again on resume, and is not routed on before
the resume. Every kind of node that does work counts as begun once it takes its visit,
so a suspension waiting for one of them ends."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.suspension import until_asked
from wingman_actors import Formation, interrupt
from wingman_actors.store import RunStore

WAIT = 5.0


def ask(x: int) -> int:
    return int(interrupt({"go?": x}))


def sibling_of_kind(kind: str, store: RunStore, run_id: str, calls: list[Any]) -> Callable[[Formation], Formation]:
    def work(x: int) -> int:
        calls.append(x)
        until_asked(store, run_id)
        return x * 10

    async def awork(x: int) -> int:
        calls.append(x)
        while store.get(run_id).interrupt is None:
            await asyncio.sleep(0.005)
        return x * 10

    def add(f: Formation) -> Formation:
        if kind == "function":
            return f.add_function("sib", work).connect("src", "sib")
        if kind == "async function":
            return f.add_function("sib", awork).connect("src", "sib")
        if kind == "map":
            return f.add_map("sib", work).connect("src", "sib")
        inner = Formation("inner").add_function("in_work", work)
        return f.add_formation("sib", inner).connect("src", "sib")

    return add


@pytest.mark.parametrize("kind", ["function", "async function", "map", "formation"])
def test_a_suspension_waits_for_a_sibling_in_flight_and_a_resume_does_not_run_it_again(
    store: RunStore, kind: str
) -> None:
    calls: list[Any] = []
    run_id = f"waits-{kind.replace(' ', '-')}"
    src: Callable[[int], Any] = (lambda x: [x]) if kind == "map" else int
    f = (Formation("waits").add_function("src", src)
         .add_function("ask", lambda x: ask(x[0] if isinstance(x, list) else x)).connect("src", "ask"))
    f = sibling_of_kind(kind, store, run_id, calls)(f)
    f.add_function("after", lambda x: x).connect("sib", "after")
    first = f.run(1, store=store, run_id=run_id, timeout=30)
    assert first.status == "suspended"
    assert first.nodes["sib"].status == "succeeded"
    assert first.nodes["after"].status == "pending"  # not routed on before the resume
    resumed = f.resume(run_id, store=store, answer=7)
    expected = [10] if kind == "map" else 10
    assert resumed.outputs == {"ask": 7, "after": expected}
    assert calls == [1]


def test_a_breakpoint_waits_for_a_sibling_in_flight_too(store: RunStore) -> None:
    calls: list[Any] = []

    def work(x: int) -> int:
        calls.append(x)
        until_asked(store, "waits-break")  # the breakpoint is journalled as an interrupt
        return x * 10

    f = (Formation("break_waits").add_function("src", int).add_function("pre", lambda x: x)
         .add_function("gate", lambda x: x + 1).add_function("sib", work)
         .connect("src", "pre").connect("pre", "gate").connect("src", "sib"))
    first = f.run(1, store=store, run_id="waits-break", break_before=["gate"], timeout=30)
    assert first.status == "suspended"
    assert first.nodes["sib"].status == "succeeded"
    assert f.resume("waits-break", store=store).outputs == {"gate": 2, "sib": 10}
    assert calls == [1]


def test_the_run_timeout_ends_the_wait_the_run_suspends_and_the_sibling_runs_again_on_resume(store: RunStore) -> None:
    release = threading.Event()
    calls: list[int] = []

    def stuck_once(x: int) -> int:
        calls.append(x)
        if len(calls) == 1:
            assert release.wait(WAIT)  # still running when the run's timeout comes
        return x * 10

    f = (Formation("timeout_waits").add_function("src", int).add_function("ask", ask).add_function("sib", stuck_once)
         .connect("src", "ask").connect("src", "sib"))
    try:
        t0 = time.monotonic()
        first = f.run(1, store=store, run_id="waits-timeout", timeout=0.5)
        waited = time.monotonic() - t0
    finally:
        release.set()
    assert first.status == "suspended"  # not failed: the question stands
    assert first.interrupt == {"node": "ask", "payload": {"go?": 1}}
    assert 0.4 < waited < 3.0
    assert first.nodes["sib"].status != "succeeded"
    assert store.get("waits-timeout").status == "suspended"
    assert f.resume("waits-timeout", store=store, answer=3).outputs == {"ask": 3, "sib": 10}
    assert calls == [1, 1]
