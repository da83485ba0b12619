"""Helpers shared by the tests ported from peers' suites (tests/formation/test_peer_*.py):
a call counter, the order nodes started in, calls in flight at once, a node held until the test opens it,
a node busy with its first input until the test releases it, async steps that report their cancellation,
Haystack's Accumulate sample component, a module-scoped local Ray, calls noted in a file (made in a Ray
actor's process), and polling until a check holds (``until``; ``a_until`` inside a coroutine)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from wingman_actors.formation.events import FormationEvent


def sleeps_until_cancelled(cancelled: threading.Event, seconds: float = 5) -> Callable[[Any], Awaitable[str]]:
    """An ``async def`` step that awaits ``seconds`` and returns ``"Done"``; when its await is
    cancelled (a timeout, a cancel) it sets ``cancelled`` and lets the cancellation go on."""

    async def step(_: Any) -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "Done"

    return step


def cancellable(cancelled: threading.Event, entered: threading.Event) -> Callable[[Any], Awaitable[str]]:
    """Hatchet's CancelWorkflow step: an ``async def`` step that sets ``entered``, then awaits
    (20 s) until cancelled, setting ``cancelled`` and letting the cancellation go on."""

    async def step1(x: Any) -> str:
        entered.set()
        try:
            await asyncio.sleep(20)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "not cancelled"

    return step1


class Counter:
    """Calls per key (thread-safe): which nodes or items ran, and how often."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[Any, int] = {}

    def hit(self, key: Any) -> int:
        with self.lock:
            self.calls[key] = self.calls.get(key, 0) + 1
            return self.calls[key]

    def count(self, key: Any) -> int:
        with self.lock:
            return self.calls.get(key, 0)


class Order:
    """The order nodes started in (the ``node_started`` events of a run): pass it as
    ``on_event``."""

    def __init__(self) -> None:
        self.nodes: list[str] = []

    def __call__(self, event: FormationEvent) -> None:
        if event.type == "node_started" and event.node is not None:
            self.nodes.append(event.node)


class InFlight:
    """How many calls are inside ``with flight:`` now, and the most at once (``peak``), thread-safe:
    what a concurrency limit (``max_workers``, ``concurrency``) is checked with."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def __enter__(self) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1


def busy_with(first: str, gate: tuple[threading.Event, threading.Event], counter: Counter) -> Callable[[str], str]:
    """A function node that counts each input in ``counter`` and returns it; given ``first``,
    it sets the gate's ``entered`` and waits for its ``release`` (at most 10 s) before: a node
    of one replica is busy with ``first`` until the test releases it (``gate``: the formation
    tests' fixture, ``(entered, release)``)."""
    entered, release = gate

    def busy(x: str) -> str:
        counter.hit(x)
        if x == first:
            entered.set()
            release.wait(10)
        return x

    return busy


class Gate:
    """A function node that says it was reached (``reached``), then waits until ``opened`` (at
    most 5 s) and returns its input, with ``suffix`` appended when one is given; with a
    ``counter``, it counts its calls under ``"wait"``."""

    def __init__(self, counter: Counter | None = None, suffix: str | None = None) -> None:
        self.counter, self.suffix = counter, suffix
        self.reached, self.opened = threading.Event(), threading.Event()

    def __call__(self, x: Any) -> Any:
        if self.counter is not None:
            self.counter.hit("wait")
        self.reached.set()
        self.opened.wait(5)
        return x if self.suffix is None else f"{x}{self.suffix}"


class Accumulate:
    """Haystack's Accumulate sample component: the running sum of what it received (per
    instance, so per formation)."""

    def __init__(self) -> None:
        self.total = 0
        self.lock = threading.Lock()

    def __call__(self, x: int) -> int:
        with self.lock:
            self.total += x
            return self.total


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """A local Ray for a module's Ray tests (tests/backends/conftest.py's session Ray, when
    it is already up: Ray's processes die with the thread that started them, so one per
    session and module is what the suite can afford)."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def log_call(log: Path, name: str) -> None:
    """Note a call of ``name`` in the file ``log``: node functions that run in other processes
    (Ray actors') count their calls so, and the test reads them with :func:`logged_calls`."""
    with log.open("a") as out:
        out.write(name + "\n")


def logged_calls(log: Path, name: str) -> int:
    """How many calls of ``name`` :func:`log_call` noted in ``log`` (0 before the first)."""
    return log.read_text().split().count(name) if log.exists() else 0


def until(check: Callable[[], bool], within: float = 3.0) -> bool:
    """Poll ``check`` until it holds (True) or ``within`` seconds pass (False)."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


async def a_until(check: Callable[[], bool], within: float = 5.0) -> bool:
    """:func:`until` inside a coroutine: polls with ``await asyncio.sleep`` so the test's event
    loop goes on meanwhile."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.005)
    return True


class NodeThreads:
    """The node threads a test started that are still alive, once stopped ones have had the
    moment they take to exit. Threads alive when the test began are not counted: other tests
    in the process may leave some running (an attempt abandoned in blocking code runs on until
    its code returns). A module calls :meth:`mark` before each test (an autouse fixture)."""

    def __init__(self) -> None:
        self.before: set[threading.Thread] = set()

    def mark(self) -> None:
        self.before = set(threading.enumerate())

    def _alive(self) -> list[str]:
        return [t.name for t in threading.enumerate() if t.name.startswith("wingman-node-") and t not in self.before]

    def __call__(self) -> list[str]:
        until(lambda: not self._alive(), within=2.0)
        return self._alive()


node_threads = NodeThreads()
