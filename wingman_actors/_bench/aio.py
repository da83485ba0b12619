"""Benchmark scenarios of the async API, each with an asyncio heartbeat every 10 ms whose
longest stall is reported (target: <= 50 ms), and the process's peak thread count.

The stall is judged as measured; beside it each scenario reports the collector's share:
its longest full collection during the runs (wall and CPU time) and the longest stall
less the full collections inside it. A full collection holds every thread (the GIL) for
as long as it walks the heap, most of which is the imported libraries' (in a formation's
process networkx's alone is about a third of it), so it stalls the loop whatever the
runtime does meanwhile. Each scenario's interpreter imports what it uses and no more: the
sessions scenario, like a service that only runs sessions, loads no formation (reported
as ``networkx_loaded``, with the collector's ``tracked_objects`` after the runs).

* ``async_concurrency``: 1,000 concurrent ``asubmit`` of a started 3-node formation of
  ``async def`` nodes, each awaiting 100 ms: makespan over the ideal 0.3 s (target
  <= 1.2x, fewer than 50 threads).
* ``async_sessions``: 200 concurrent ``Session.arun`` against a loopback OpenAI-compatible
  server (a process of its own) answering in 100 ms: makespan over the ideal 0.1 s
  (target <= 1.3x, fewer than 30 threads). The bursts run on one event loop, one after
  another, as in a service: the first opens the connections (reported apart, as
  ``first_burst_s``), the measured ones reuse them. Whether a session waits on a thread depends on
  the provider: with ``arun_inference`` it does not; without, each call runs on one of the
  loop's default executor threads, and the makespan shows it. The provider's async
  transport is its default (aiohttp when the ``aiohttp`` extra is installed), reported as
  ``async_transport``. Beside it, the floor: the same bursts as bare aiohttp POSTs in the
  same process, after the measured ones (``bare_aiohttp_x_ideal``; reported, not judged).
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..agents._agent import Agent
from ..agents._session import Session
from ..providers import new_provider
from ._measurement import Measurement

__all__ = ["async_concurrency", "async_sessions"]

_BEAT_S = 0.01


class _Watch:
    """A heartbeat task on the loop (the longest gap between its ticks beyond 10 ms), the
    peak thread count it sees, and the collector's full collections meanwhile (timed by a
    ``gc.callbacks`` hook, on whichever thread collects): how much of the longest stall
    was the collector's, not the runtime's. Measured only; the collector is not tuned."""

    def __init__(self) -> None:
        self.stall = 0.0
        self.peak_threads = threading.active_count()
        self._task: asyncio.Task[None] | None = None
        self._gaps: list[tuple[float, float]] = []  # (tick before, tick after)
        self.full: list[tuple[float, float]] = []  # full collections: (start, end)
        self.full_cpu = 0.0  # the longest one's CPU seconds (its thread's)
        self._began = self._began_cpu = 0.0

    async def _beat(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(_BEAT_S)
            now = time.perf_counter()
            self.stall = max(self.stall, now - last - _BEAT_S)
            self._gaps.append((last, now))
            self.peak_threads = max(self.peak_threads, threading.active_count())
            last = now

    def _collected(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._began, self._began_cpu = time.perf_counter(), time.thread_time()
        else:
            self.full_cpu = max(self.full_cpu, time.thread_time() - self._began_cpu)
            self.full.append((self._began, time.perf_counter()))

    def stall_besides_collector(self) -> float:
        """The longest gap beyond 10 ms less the full collections inside it."""
        longest = 0.0
        for last, now in self._gaps:
            collecting = sum(max(0.0, min(now, end) - max(last, start)) for start, end in self.full)
            longest = max(longest, now - last - _BEAT_S - collecting)
        return longest

    def __enter__(self) -> _Watch:
        gc.callbacks.append(self._collected)
        self._task = asyncio.ensure_future(self._beat())
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._collected)
        if self._task is not None:
            self._task.cancel()


# seconds, longest stall (s), peak threads, CPU s, longest full collection (s), the
# longest stall less the collections inside it (s), the longest collection's CPU s
_Run = tuple[float, float, int, float, float, float, float]


async def _timed(work: Callable[[], Awaitable[Any]]) -> _Run:
    """Seconds ``work()`` took, the heartbeat's longest stall (s), the peak threads, the
    process's CPU seconds meanwhile (every thread's: it tells a busy machine from a slow
    run), the longest full collection of the collector and the longest stall besides it."""
    with _Watch() as watch:
        c0, t0 = time.process_time(), time.perf_counter()
        await work()
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    longest_full = max((end - start for start, end in watch.full), default=0.0)
    return (elapsed, watch.stall, watch.peak_threads, cpu, longest_full, watch.stall_besides_collector(),
            watch.full_cpu)


def _judge(name: str, ideal: float, runs: list[_Run], ratio_target: float, thread_cap: int,
           details: dict[str, Any]) -> Measurement:
    ratio = statistics.median(r[0] / ideal for r in runs)
    stall_ms = max(r[1] for r in runs) * 1e3
    peak = max(r[2] for r in runs)
    meets = ratio <= ratio_target and peak < thread_cap and stall_ms <= 50
    return Measurement(
        name, round(ratio, 3), "x ideal",
        f"<= {ratio_target}x ideal {ideal:g} s, < {thread_cap} threads, heartbeat stall <= 50 ms", meets, ideal,
        {"ideal_s": ideal, "runs_s": [round(r[0], 3) for r in runs], "cpu_s": [round(r[3], 3) for r in runs],
         "max_stall_ms": round(stall_ms, 1),
         # the collector's share: its longest full collection (wall time, on any thread;
         # and CPU time: a loaded machine stretches the wall time), and the longest stall
         # less the full collections inside it
         "max_full_collection_ms": round(max(r[4] for r in runs) * 1e3, 1),
         "max_full_collection_cpu_ms": round(max(r[6] for r in runs) * 1e3, 1),
         "max_stall_besides_collector_ms": round(max(r[5] for r in runs) * 1e3, 1),
         "peak_threads": peak, **details},
    )


async def _bare_aiohttp(url: str, n: int) -> Callable[..., Awaitable[float]] | None:
    """A burst of ``n`` concurrent bare aiohttp POSTs of a one-message chat request to
    ``url``, each body read and parsed (what a session's model call is at the least); it
    returns the burst's seconds, and with ``close=True`` closes its client instead. Its
    connections are opened by a first burst here. None without aiohttp."""
    try:
        import aiohttp
    except ImportError:
        return None
    client = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    headers = {"content-type": "application/json", "authorization": "Bearer bench"}

    async def one(i: int) -> Any:
        body = json.dumps({"model": "bench", "messages": [{"role": "user", "content": f"q{i}"}]}).encode()
        async with client.post(url, data=body, headers=headers) as answer:
            return json.loads(await answer.read())

    async def burst(close: bool = False) -> float:
        if close:
            await client.close()
            return 0.0
        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - t0

    await burst()
    return burst


async def _step(x: int) -> int:
    await asyncio.sleep(0.1)
    return x + 1


def async_concurrency(quick: bool) -> Measurement:
    from ..formation import Formation  # here: the sessions scenario's process loads no formation

    # One replica per node: it has every visit in flight at once, each a task on its loop
    # (actors/_async_function.py), so the formation runs on 2 threads per node.
    n, conc = (200 if quick else 1_000), 1
    formation = (
        Formation("bench-async").add_function("a", _step, concurrency=conc).add_function("b", _step, concurrency=conc)
        .add_function("c", _step, concurrency=conc).connect("a", "b", "c")
    )

    async def once() -> _Run:
        async with formation.astart() as running:
            async def burst() -> None:
                await asyncio.gather(*(running.asubmit(i) for i in range(n)))

            return await _timed(burst)

    runs = [asyncio.run(once()) for _ in range(1 if quick else 3)]
    return _judge("async_concurrency", 0.3, runs, 1.2, 50, {"runs": n, "concurrency_per_node": conc})


def async_sessions(quick: bool) -> Measurement:
    n, delay = (50 if quick else 200), 0.1
    server = subprocess.Popen([sys.executable, "-m", "wingman_actors._bench.openai_loopback", str(delay)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    provider: Any = None
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        provider = new_provider("openai", {"model": "bench", "base_url": f"http://127.0.0.1:{port}/v1",
                                           "api_key": "bench", "max_retries": 0})
        agent = Agent("bench", provider=provider)
        has_async = callable(getattr(provider, "arun_inference", None))
        transport = provider._http.async_transport  # aiohttp when the extra is installed

        async def burst() -> None:
            await asyncio.gather(*(Session(agent).arun(f"q{i}") for i in range(n)))

        async def bursts() -> tuple[_Run, list[_Run], list[float]]:
            # One loop, as a service runs: the loop's client and its keep-alive connections
            # serve every burst (a new loop would open all of them again). The floor's
            # bursts come after the measured ones (when aiohttp is installed): alternating,
            # its client's objects made a full collection land in a measured burst.
            first = await _timed(burst)  # opens the connections
            runs = [await _timed(burst) for _ in range(1 if quick else 3)]
            floors: list[float] = []
            floor = await _bare_aiohttp(f"http://127.0.0.1:{port}/v1/chat/completions", n)
            if floor is not None:
                floors = [await floor() for _ in range(1 if quick else 3)]
                await floor(close=True)
            return first, runs, floors

        first, runs, floors = asyncio.run(bursts())
    finally:
        if provider is not None:
            provider.close()
        if server.stdin is not None:
            server.stdin.close()
        server.wait(10)
        if server.stdout is not None:
            server.stdout.close()
    return _judge("async_sessions", delay, runs, 1.3, 30, {
        "sessions": n, "provider_has_arun_inference": has_async, "async_transport": transport,
        "first_burst_s": round(first[0], 3),
        # the floor: the same bursts as bare aiohttp POSTs (no session, no provider), same
        # server, same loop, after the measured ones (None without aiohttp)
        "bare_aiohttp_x_ideal": round(statistics.median(floors) / delay, 3) if floors else None,
        "first_burst_max_stall_ms": round(first[1] * 1e3, 1),
        "networkx_loaded": "networkx" in sys.modules, "tracked_objects": len(gc.get_objects()),
    })
