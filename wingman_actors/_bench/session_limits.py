"""Benchmark scenarios for sessions that must stop on time while a tool is stuck or a
provider request hangs (issue 26).

* ``session_cancel_latency``: from ``Session.cancel()`` to ``Session.run`` returning, with
  the run in a stuck tool, and with it waiting on an OpenAI-compatible server (loopback)
  that reads the request and never answers (p99 over every run of both cases).
* ``session_timeout_overshoot``: how far past its ``timeout=`` ``Session.run`` returns in
  the same two cases (the worst run).

Both also count the requests the hanging server saw closed by the client: every one
should be.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..agents._agent import Agent
from ..agents._session import Session
from ..core import InferenceResponse
from ..errors import AgentError
from ..providers._openai import build_openai
from ..providers._scripted import ScriptedProvider
from ..tools import tool
from ._measurement import Measurement
from .cancellation import _percentile

__all__ = ["session_cancel_latency", "session_timeout_overshoot"]


class _HangingServer:
    """Accepts connections on 127.0.0.1, reads what they send, never answers; counts the
    connections that sent something (``requests``) and those the client then closed."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.setblocking(False)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.requests = 0
        self.closed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="bench-hanging-server", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self._listener, selectors.EVENT_READ)
        talked: set[socket.socket] = set()
        try:
            while not self._stop.is_set():
                for key, _ in sel.select(0.01):
                    sock: Any = key.fileobj
                    if sock is self._listener:
                        conn, _ = self._listener.accept()
                        conn.setblocking(False)
                        sel.register(conn, selectors.EVENT_READ)
                        continue
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        data = b""
                    if data:
                        if sock not in talked:
                            talked.add(sock)
                            self.requests += 1
                        continue
                    if sock in talked:
                        self.closed += 1
                        talked.discard(sock)
                    sel.unregister(sock)
                    sock.close()
        finally:
            for key in list(sel.get_map().values()):
                sock = key.fileobj
                if isinstance(sock, socket.socket):
                    sock.close()
            sel.close()

    def wait_requests(self, count: int, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while self.requests < count and time.monotonic() < deadline:
            time.sleep(0.001)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


@contextmanager
def _cases() -> Iterator[dict[str, tuple[Callable[[], Session], Callable[[int], None], _HangingServer | None]]]:
    """The two cases: (make a session, wait until its run number n is stuck, the server)."""
    release = threading.Event()
    entered = threading.Semaphore(0)

    @tool
    def stuck() -> str:
        """Never returns while the benchmark runs."""
        entered.release()
        release.wait(60)
        return "late"

    server = _HangingServer()
    provider = build_openai({"model": "m", "base_url": server.url, "api_key": "k", "max_retries": 0})
    calls = InferenceResponse.of_tool_calls([("c1", "stuck", {})])

    def stuck_session() -> Session:
        return Session(Agent("bench", provider=ScriptedProvider([calls]), tools=[stuck]))

    def hanging_session() -> Session:
        return Session(Agent("bench", provider=provider))

    def in_tool(_n: int) -> None:
        entered.acquire(timeout=5)

    try:
        yield {
            "stuck_tool": (stuck_session, in_tool, None),
            "hanging_provider": (hanging_session, lambda n: server.wait_requests(n), server),
        }
    finally:
        release.set()
        provider.close()
        server.stop()


def _run_in_thread(session: Session, timeout: float | None) -> tuple[threading.Thread, list[float]]:
    ended: list[float] = []

    def body() -> None:
        try:
            session.run("go", timeout=timeout)
        except AgentError:
            pass
        ended.append(time.perf_counter())

    thread = threading.Thread(target=body, name="bench-session")
    thread.start()
    return thread, ended


def session_cancel_latency(quick: bool) -> Measurement:
    runs = 10 if quick else 50
    samples: dict[str, list[float]] = {}
    closed: dict[str, int] = {}
    with _cases() as cases:
        for name, (make, stuck, server) in cases.items():
            samples[name] = []
            for n in range(1, runs + 1):
                session = make()
                thread, ended = _run_in_thread(session, None)
                stuck(n)
                time.sleep(0.005)  # well inside the tool or the request
                t0 = time.perf_counter()
                session.cancel()
                thread.join(10)
                samples[name].append((ended[0] if ended else float("inf")) - t0)
            if server is not None:
                time.sleep(0.05)
                closed[name] = server.closed
    every = [s for case in samples.values() for s in case]
    p99 = _percentile(every, 0.99) * 1e3
    details: dict[str, Any] = {"runs": len(every), "requests_closed": closed.get("hanging_provider")}
    for name, case in samples.items():
        details[f"{name}_p50_ms"] = round(_percentile(case, 0.5) * 1e3, 3)
        details[f"{name}_p99_ms"] = round(_percentile(case, 0.99) * 1e3, 3)
    return Measurement(
        "session_cancel_latency", round(p99, 2), "ms p99",
        "p99 <= 50 ms from cancel() to Session.run returning (a stuck tool; a provider that never answers)",
        p99 <= 50, None, details,
    )


def session_timeout_overshoot(quick: bool) -> Measurement:
    runs = 3 if quick else 10
    limit = 0.3
    overshoot: dict[str, list[float]] = {}
    closed: dict[str, int] = {}
    with _cases() as cases:
        for name, (make, _, server) in cases.items():
            overshoot[name] = []
            for _ in range(runs):
                session = make()
                t0 = time.perf_counter()
                thread, ended = _run_in_thread(session, limit)
                thread.join(10)
                overshoot[name].append((ended[0] if ended else float("inf")) - t0 - limit)
            if server is not None:
                time.sleep(0.05)
                closed[name] = server.closed
    worst = max(x for case in overshoot.values() for x in case)
    details: dict[str, Any] = {f"{name}_s": [round(x, 3) for x in case] for name, case in overshoot.items()}
    details["requests_closed"] = closed.get("hanging_provider")
    return Measurement(
        "session_timeout_overshoot", round(worst, 3), "s worst",
        "Session.run(timeout=0.3) returns <= 0.1 s past it (a stuck tool; a provider that never answers)",
        worst <= 0.1, None, details,
    )
