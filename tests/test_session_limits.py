"""Limits that hold for agents: ``Session.run(timeout=)``, ``Session.cancel()``, an agent
node's ``timeout`` and a run's cancel return within 0.1 s while a tool is stuck or a
provider request hangs; the stuck tool call is abandoned, the request closed (seen closed
by the loopback server that never answered it)."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.loopback import LoopbackServer, Reply
from tests.support.sched import cpu_wait
from wingman_actors import Agent, Formation, Session, tool
from wingman_actors.core import InferenceResponse, StreamEvent, StreamEventType
from wingman_actors.errors import AgentError, ErrorKind, FormationRuntimeError
from wingman_actors.providers import InferenceStream
from wingman_actors.providers._anthropic import build_anthropic
from wingman_actors.providers._base import BaseProvider
from wingman_actors.providers._ollama import build_ollama
from wingman_actors.providers._openai import build_openai
from wingman_actors.testing import ScriptedProvider

# The promise is 0.1 s; a shared CI machine gets some slack, but a run that waits for the
# stuck tool or the hung request (10 s) fails every bound.
LIMIT = 0.1
SLACK = 0.4


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """Set when the test ends: the stuck tools return then, so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def stuck(release: threading.Event) -> Any:
    @tool
    def wait_forever() -> str:
        """Never returns (within the test)."""
        release.wait(10)
        return "too late"

    return wait_forever


def tool_calls(count: int) -> InferenceResponse:
    return InferenceResponse.of_tool_calls([(f"c{i}", "wait_forever", {}) for i in range(count)])


def cancel_once_requested(session: Session, loopback: LoopbackServer) -> tuple[threading.Thread, list[float]]:
    """Cancel ``session`` once the server has read its request (so there is one to close)."""
    at: list[float] = []

    def cancel() -> None:
        deadline = time.monotonic() + 5
        while not loopback.requests and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)
        at.append(time.perf_counter())
        session.cancel("stop")

    thread = threading.Thread(target=cancel)
    thread.start()
    return thread, at


def cancel_later(session: Session, after: float) -> tuple[threading.Timer, list[float]]:
    at: list[float] = []

    def cancel() -> None:
        at.append(time.perf_counter())
        session.cancel("stop")

    timer = threading.Timer(after, cancel)
    timer.start()
    return timer, at


# --- stuck tools -------------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 2])
def test_cancel_returns_at_once_while_tools_are_stuck(stuck: Any, count: int) -> None:
    session = Session(Agent("a", provider=ScriptedProvider([tool_calls(count), "never"]), tools=[stuck]))
    timer, at = cancel_later(session, 0.2)
    with pytest.raises(AgentError) as info:
        session.run("go")
    returned = time.perf_counter()
    timer.join()
    assert info.value.kind is ErrorKind.CANCELLED
    assert returned - at[0] < LIMIT + SLACK


@pytest.mark.parametrize("count", [1, 2])
def test_a_run_timeout_holds_while_tools_are_stuck(stuck: Any, count: int) -> None:
    session = Session(Agent("a", provider=ScriptedProvider([tool_calls(count), "never"]), tools=[stuck]))
    t0 = time.perf_counter()
    with pytest.raises(AgentError) as info:
        session.run("go", timeout=0.3)
    assert info.value.kind is ErrorKind.TIMEOUT
    assert time.perf_counter() - t0 < 0.3 + LIMIT + SLACK


def test_the_timeout_error_says_how_long_the_run_really_took(stuck: Any) -> None:
    session = Session(Agent("a", provider=ScriptedProvider([tool_calls(1), "never"]), tools=[stuck]))
    with pytest.raises(AgentError, match=r"timed out after 0\.2s \(it ran \d+\.\d\ds\)"):
        session.run("go", timeout=0.2)


def test_an_abandoned_tool_call_is_logged_once(stuck: Any, caplog: pytest.LogCaptureFixture) -> None:
    session = Session(Agent("a", provider=ScriptedProvider([tool_calls(1), "never"]), tools=[stuck]))
    with caplog.at_level(logging.WARNING, logger="wingman_actors.agents"), pytest.raises(AgentError):
        session.run("go", timeout=0.2)
    abandoned = [r for r in caplog.records if "abandoned" in r.getMessage()]
    assert len(abandoned) == 1
    assert "wait_forever" in abandoned[0].getMessage()


def test_the_session_runs_again_at_once_after_abandoning_a_stuck_tool(stuck: Any) -> None:
    session = Session(Agent("a", provider=ScriptedProvider([tool_calls(1), "again"]), tools=[stuck]))
    with pytest.raises(AgentError):
        session.run("go", timeout=0.2)
    t0 = time.perf_counter()
    assert session.run("once more").response == "again"
    assert time.perf_counter() - t0 < 1


# --- hanging providers -------------------------------------------------------------------

Build = Callable[[str], BaseProvider]
PROVIDERS: dict[str, Build] = {
    "openai": lambda url: build_openai({"model": "m", "base_url": f"{url}/v1", "api_key": "k"}),
    "ollama": lambda url: build_ollama({"model": "m", "base_url": url}),
    "anthropic": lambda url: build_anthropic({"model": "claude-test-model", "base_url": url, "api_key": "k"}),
}


@pytest.fixture(params=sorted(PROVIDERS))
def hanging(request: pytest.FixtureRequest, loopback: LoopbackServer) -> Iterator[BaseProvider]:
    """A provider whose every request the loopback server reads and never answers."""
    loopback.handler = lambda _req: Reply.never()
    provider = PROVIDERS[request.param](loopback.url)
    yield provider
    provider.close()


@pytest.mark.parametrize("stream", [False, True])
def test_a_run_timeout_closes_a_provider_request_that_never_answers(
    hanging: BaseProvider, loopback: LoopbackServer, stream: bool
) -> None:
    session = Session(Agent("a", provider=hanging))
    t0, waited = time.perf_counter(), cpu_wait()
    with pytest.raises(AgentError) as info:
        if stream:
            list(session.run_stream("hi", timeout=0.3))
        else:
            session.run("hi", timeout=0.3)
    # less the time a loaded machine kept this process's threads waiting for a CPU
    assert time.perf_counter() - t0 - (cpu_wait() - waited) < 0.3 + LIMIT + SLACK
    assert info.value.kind is ErrorKind.TIMEOUT
    assert loopback.wait_request_closed(timeout=2)


@pytest.mark.parametrize("stream", [False, True])
def test_cancel_closes_a_provider_request_that_never_answers(
    hanging: BaseProvider, loopback: LoopbackServer, stream: bool
) -> None:
    session = Session(Agent("a", provider=hanging))
    timer, at = cancel_once_requested(session, loopback)
    with pytest.raises(AgentError) as info:
        if stream:
            list(session.run_stream("hi"))
        else:
            session.run("hi")
    returned = time.perf_counter()
    timer.join()
    assert info.value.kind is ErrorKind.CANCELLED
    assert returned - at[0] < LIMIT + SLACK
    assert loopback.wait_request_closed(timeout=2)
    assert loopback.closed_at[0] - at[0] < 1  # closed by the cancel, not by a timeout


def _first_chunk_then_hang(wire: str) -> Reply:
    """A stream that sends its first piece, then nothing more (the connection held open)."""
    if wire == "openai":
        first = {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}
        body = [f"data: {json.dumps(first)}\n\n".encode()]
        return Reply(200, iter(body), {"content-type": "text/event-stream"}, hang=True)
    if wire == "ollama":
        line = {"model": "m", "message": {"role": "assistant", "content": "Hel"}, "done": False}
        return Reply(200, iter([json.dumps(line).encode() + b"\n"]), {"content-type": "application/x-ndjson"}, hang=True)
    start = {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-model", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 0}}}
    body = [f"event: message_start\ndata: {json.dumps(start)}\n\n".encode()]
    return Reply(200, iter(body), {"content-type": "text/event-stream"}, hang=True)


@pytest.mark.parametrize("wire", sorted(PROVIDERS))
def test_cancel_closes_a_stream_that_stops_midway(loopback: LoopbackServer, wire: str) -> None:
    loopback.handler = lambda _req: _first_chunk_then_hang(wire)
    provider = PROVIDERS[wire](loopback.url)
    try:
        session = Session(Agent("a", provider=provider))
        timer, at = cancel_once_requested(session, loopback)
        with pytest.raises(AgentError) as info:
            list(session.run_stream("hi"))
        returned = time.perf_counter()
        timer.join()
    finally:
        provider.close()
    assert info.value.kind is ErrorKind.CANCELLED
    assert returned - at[0] < LIMIT + SLACK
    assert loopback.wait_request_closed(timeout=2)


def _trickling_answer() -> Reply:
    """An answer whose body never ends: a byte every 50 ms (so no read ever times out)."""

    def body() -> Iterator[bytes]:
        yield b"{"
        for _ in range(400):
            time.sleep(0.05)
            yield b" "

    return Reply(200, body(), {"content-type": "application/json"})


@pytest.mark.parametrize("wire", sorted(PROVIDERS))
def test_a_run_timeout_closes_a_provider_answer_that_trickles(loopback: LoopbackServer, wire: str) -> None:
    # Each read gets a byte before the request's timeout: the deadline itself must end it.
    loopback.handler = lambda _req: _trickling_answer()
    provider = PROVIDERS[wire](loopback.url)
    try:
        t0 = time.perf_counter()
        with pytest.raises(AgentError) as info:
            Session(Agent("a", provider=provider)).run("hi", timeout=0.3)
        took = time.perf_counter() - t0
    finally:
        provider.close()
    assert info.value.kind is ErrorKind.TIMEOUT
    assert took < 0.3 + LIMIT + SLACK


# --- formations -------------------------------------------------------------------------


def test_an_agent_node_timeout_closes_a_request_that_never_answers(loopback: LoopbackServer) -> None:
    loopback.handler = lambda _req: Reply.never()
    provider = PROVIDERS["openai"](loopback.url)
    try:
        formation = Formation("f").add_agent("ask", Agent("a", provider=provider), timeout=0.3, retries=0)
        t0 = time.perf_counter()
        with pytest.raises(FormationRuntimeError):
            formation.run("hi")
        assert time.perf_counter() - t0 < 0.3 + LIMIT + SLACK
        assert loopback.wait_request_closed(timeout=2)
    finally:
        provider.close()


def test_a_cancelled_run_closes_its_agent_nodes_request(loopback: LoopbackServer) -> None:
    loopback.handler = lambda _req: Reply.never()
    provider = PROVIDERS["anthropic"](loopback.url)
    try:
        with Formation("f").add_agent("ask", Agent("a", provider=provider)).start() as running:
            future = running.submit("hi")
            assert _wait_for(lambda: bool(loopback.requests))
            assert future.cancel()
            assert loopback.wait_request_closed(timeout=2)
    finally:
        provider.close()


def test_a_fleet_node_timeout_closes_every_request_that_never_answers(loopback: LoopbackServer) -> None:
    loopback.handler = lambda _req: Reply.never()
    provider = PROVIDERS["ollama"](loopback.url)
    try:
        formation = Formation("f").add_fleet("each", Agent("a", provider=provider), timeout=1.0, retries=0)
        t0 = time.perf_counter()
        with pytest.raises(FormationRuntimeError):
            formation.run(["x", "y", "z"])
        assert time.perf_counter() - t0 < 1.0 + LIMIT + SLACK
        assert loopback.requests  # (under load, not every session may have sent its request by then)
        assert loopback.wait_closed(len(loopback.requests), timeout=2)
    finally:
        provider.close()


def _wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_a_cancelled_run_frees_its_agent_node_stuck_in_a_tool(stuck: Any) -> None:
    provider = ScriptedProvider([tool_calls(1), "first", "second"])
    formation = Formation("f").add_agent("ask", Agent("a", provider=provider, tools=[stuck]))
    with formation.start() as running:
        first = running.submit("one")
        time.sleep(0.2)  # the node is in the stuck tool
        assert first.cancel()
        t0 = time.perf_counter()
        assert running.submit("two").result(timeout=5).output == "first"
        assert time.perf_counter() - t0 < LIMIT + SLACK


@pytest.fixture
def awaiting() -> tuple[Any, threading.Event, threading.Event]:
    """An ``async def`` tool stuck in an await, and the events it sets when it starts and
    when its ``finally`` runs (its coroutine cancelled)."""
    started, unwound = threading.Event(), threading.Event()

    @tool
    async def wait_forever() -> str:
        """Never returns (within the test)."""
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            unwound.set()
        return "too late"

    return wait_forever, started, unwound


def test_session_cancel_cancels_the_async_tool_a_blocking_run_awaits(awaiting: Any) -> None:
    wait_forever, started, unwound = awaiting
    with Session(Agent("a", provider=ScriptedProvider([tool_calls(1), "never"]), tools=[wait_forever])) as session:
        canceller = threading.Thread(target=lambda: started.wait(5) and session.cancel("stop"))
        canceller.start()
        try:
            with pytest.raises(AgentError) as info:
                session.run("go")
        finally:
            canceller.join(5)

        assert info.value.kind is ErrorKind.CANCELLED
        assert unwound.wait(LIMIT + SLACK)  # the coroutine was cancelled, not left to run on


def test_a_cancelled_run_cancels_the_async_tool_its_agent_node_awaits(awaiting: Any) -> None:
    wait_forever, started, unwound = awaiting
    provider = ScriptedProvider([tool_calls(1), "never"])
    formation = Formation("f").add_agent("ask", Agent("a", provider=provider, tools=[wait_forever]))
    with formation.start() as running:
        run = running.submit("one")
        assert started.wait(5)
        assert run.cancel()

        assert unwound.wait(LIMIT + SLACK)


def test_a_fleet_node_timeout_holds_while_its_tools_are_stuck(stuck: Any) -> None:
    provider = ScriptedProvider([tool_calls(1)] * 2)
    agent = Agent("a", provider=provider, tools=[stuck])
    formation = Formation("f").add_fleet("each", agent, timeout=0.3, retries=0)
    t0 = time.perf_counter()
    with pytest.raises(FormationRuntimeError):
        formation.run(["x", "y"])
    assert time.perf_counter() - t0 < 0.3 + LIMIT + SLACK


# A fresh interpreter whose agent's one tool call sleeps 30 s; the script then runs the
# session (the code given to _exit_after) and prints the error it ends with.
_STUCK_AGENT = """
import asyncio, time
from wingman_actors import Agent, Session, tool
from wingman_actors.core import InferenceResponse
from wingman_actors.testing import ScriptedProvider

@tool
def stuck() -> str:
    '''Sleeps.'''
    time.sleep(30)
    return "late"

agent = Agent("a", provider=ScriptedProvider([InferenceResponse.of_tool_calls([("c", "stuck", {})])]), tools=[stuck])
"""


def _exit_after(session_code: str, limit: float) -> None:
    """Run ``session_code`` (statements ending the session with an error, which they print)
    after :data:`_STUCK_AGENT` in a fresh interpreter: it must print AgentError and exit
    within 10 s, not wait for the 30 s tool (``limit``: the subprocess's own time limit)."""
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _STUCK_AGENT + session_code], capture_output=True, text=True,
                          timeout=limit)
    assert done.stdout.strip() == "AgentError", done.stderr
    assert time.perf_counter() - t0 < 10


def test_an_abandoned_tool_call_does_not_delay_interpreter_exit() -> None:
    _exit_after("""
try:
    Session(agent).run("go", timeout=0.2)
except Exception as exc:
    print(type(exc).__name__)
""", 20)


def test_an_abandoned_tool_call_does_not_delay_stop(stuck: Any) -> None:
    provider = ScriptedProvider([tool_calls(1)])
    running = Formation("f").add_agent("ask", Agent("a", provider=provider, tools=[stuck]), timeout=0.3, retries=0).start()
    try:
        with pytest.raises(FormationRuntimeError):
            running.submit("go").result(timeout=5)
    finally:
        t0 = time.perf_counter()
        running.stop()
        stopped_in = time.perf_counter() - t0
    assert stopped_in < 1


# --- awaited sessions ------------------------------------------------------------------


def test_asyncio_run_of_an_awaited_session_stuck_in_a_blocking_tool_returns_at_its_timeout(stuck: Any) -> None:
    # The blocking tool's thread is abandoned as the blocking run abandons it: not one of the
    # caller's loop's default executor, which asyncio.run (and interpreter exit) waits for.
    session = Session(Agent("a", provider=ScriptedProvider([tool_calls(1), "never"]), tools=[stuck]))
    t0 = time.perf_counter()
    with pytest.raises(AgentError) as info:
        asyncio.run(session.arun("go", timeout=0.3))
    assert info.value.kind is ErrorKind.TIMEOUT
    assert time.perf_counter() - t0 < 0.3 + LIMIT + SLACK


def test_asyncio_run_of_a_cancelled_awaited_session_stuck_in_a_blocking_tool_returns_at_once(stuck: Any) -> None:
    session = Session(Agent("a", provider=ScriptedProvider([tool_calls(2), "never"]), tools=[stuck]))
    timer, at = cancel_later(session, 0.2)
    with pytest.raises(AgentError) as info:
        asyncio.run(session.arun("go"))
    returned = time.perf_counter()
    timer.join()
    assert info.value.kind is ErrorKind.CANCELLED
    assert returned - at[0] < LIMIT + SLACK


def test_an_abandoned_tool_call_of_an_awaited_session_does_not_delay_interpreter_exit() -> None:
    _exit_after("""
loop = asyncio.new_event_loop()
try:
    loop.run_until_complete(Session(agent).arun("go", timeout=0.2))
except Exception as exc:
    print(type(exc).__name__)
""", 40)


class _StuckStreams:
    """A provider of its own with blocking calls only (no ``arun_inference``): its stream
    gives its first event, then blocks until ``release`` is set."""

    id = "stuck-streams"

    def __init__(self, release: threading.Event) -> None:
        self.release = release

    def run_inference(self, request: Any) -> InferenceResponse:
        self.release.wait(10)
        return InferenceResponse.of_text("late")

    def stream_inference(self, request: Any) -> Any:
        def events() -> Iterator[StreamEvent]:
            yield StreamEvent(type=StreamEventType.TEXT_DELTA, text="Hel", index=0)
            self.release.wait(10)

        return InferenceStream(events())


def test_asyncio_run_of_an_awaited_stream_stuck_in_a_blocking_provider_returns_at_its_timeout(
    release: threading.Event,
) -> None:
    session = Session(Agent("a", provider=_StuckStreams(release)))  # type: ignore[arg-type]

    async def consume() -> None:
        async for _ in session.astream("go", timeout=0.3):
            pass

    t0 = time.perf_counter()
    with pytest.raises(AgentError) as info:
        asyncio.run(consume())
    assert info.value.kind is ErrorKind.TIMEOUT
    assert time.perf_counter() - t0 < 0.3 + LIMIT + SLACK


def test_an_abandoned_tool_call_of_an_awaited_session_is_logged_once(
    stuck: Any, caplog: pytest.LogCaptureFixture
) -> None:
    session = Session(Agent("a", provider=ScriptedProvider([tool_calls(1), "never"]), tools=[stuck]))
    with caplog.at_level(logging.WARNING, logger="wingman_actors.agents"), pytest.raises(AgentError):
        asyncio.run(session.arun("go", timeout=0.2))
    abandoned = [r for r in caplog.records if "abandoned" in r.getMessage()]
    assert len(abandoned) == 1
    assert "wait_forever" in abandoned[0].getMessage()
