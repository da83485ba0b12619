"""DESIGN.md's "Async Python" and "Limits that hold for agents", read bullet by bullet and
checked through public names only: the edges the other async tests leave open (an
``asubmit`` awaitable's ``run_id`` before it is awaited, ``finally`` blocks of async tools
when the awaiting task is cancelled, ``astream`` against ``run_stream``, the blocking
streams inside a running loop, an awaited session against a provider request that hangs)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from tests.support.loopback import LoopbackServer, Reply
from wingman_actors import Agent, Fleet, Formation, Session, Task, tool
from wingman_actors.core import InferenceResponse, StreamEvent
from wingman_actors.errors import AgentError, ErrorKind, FormationRuntimeError
from wingman_actors.providers import new_provider
from wingman_actors.testing import ScriptedProvider

LIMIT = 0.1  # DESIGN: a cut returns within 0.1 s
SLACK = 0.4  # a loaded 2-core machine


async def plus_one(x: int) -> int:
    await asyncio.sleep(0.01)
    return x + 1


def double(x: int) -> int:
    return x * 2


async def _when(event: threading.Event, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not event.is_set():
        if time.monotonic() > deadline:
            raise AssertionError("the event was never set")
        await asyncio.sleep(0.005)


class AsyncToolGate:
    """An ``async def`` tool that waits until cancelled, saying when it started and when its
    ``finally`` ran."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.unwound = threading.Event()
        gate = self

        @tool
        async def wait_for_data() -> str:
            """Wait for the data to arrive."""
            gate.started.set()
            try:
                await asyncio.sleep(30)
            finally:
                gate.unwound.set()
            return "late"

        self.tool = wait_for_data

    def agent(self, name: str = "waiter") -> Agent:
        asks = InferenceResponse.of_tool_calls([("w1", "wait_for_data", {})])
        return Agent(name, provider=ScriptedProvider([asks, "done"], cycle=True), tools=[self.tool])


@pytest.fixture
def gate() -> AsyncToolGate:
    return AsyncToolGate()


async def _until_requested(loopback: LoopbackServer, count: int = 1) -> None:
    deadline = time.monotonic() + 5
    while len(loopback.requests) < count and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.05)


def _hanging() -> tuple[Callable[[int], Awaitable[int]], threading.Event, threading.Event]:
    """An async node that hangs (30 s), and the events set when it starts and when its
    ``finally`` runs (it was cancelled)."""
    started, unwound = threading.Event(), threading.Event()

    async def hang(x: int) -> int:
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            unwound.set()
        return x

    return hang, started, unwound


async def _cancelled(task: asyncio.Future[Any]) -> float:
    """Cancel ``task`` and see it end cancelled; returns the seconds that took."""
    t0 = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return time.perf_counter() - t0


# -- formation.asubmit -------------------------------------------------------------------


def test_an_asubmit_awaitable_has_its_run_id_before_it_is_awaited_and_the_run_is_already_in_flight() -> None:
    started = threading.Event()

    async def wait_a_little(x: int) -> int:
        started.set()
        await asyncio.sleep(0.05)
        return x

    async def main() -> tuple[str, str, bool]:
        async with Formation("f").add_function("w", wait_a_little).astart() as running:
            pending = running.asubmit(1)
            run_id = pending.run_id  # before any await
            await _when(started)  # the run went on without being awaited
            result = await pending
            return run_id, result.run_id, started.is_set()

    run_id, result_id, ran = asyncio.run(main())
    assert isinstance(run_id, str) and run_id
    assert run_id == result_id and ran


def test_an_asubmit_awaitable_can_be_cancelled_by_its_run_id_before_it_is_awaited() -> None:
    hang, started, unwound = _hanging()

    async def main() -> bool:
        async with Formation("f").add_function("hang", hang).astart() as running:
            pending = running.asubmit(1)
            await _when(started)
            assert running.cancel(pending.run_id) is True
            with pytest.raises(asyncio.CancelledError):
                await pending
            await _when(unwound)
            return True

    assert asyncio.run(main())


# -- cancelling the awaiting task reaches async tools ------------------------------------------


def test_cancelling_the_task_awaiting_session_arun_runs_the_finally_of_its_async_tool(gate: AsyncToolGate) -> None:
    async def main() -> None:
        session = Session(gate.agent())
        task = asyncio.ensure_future(session.arun("go"))
        await _when(gate.started)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await _when(gate.unwound)
        again = await session.arun("again")  # the session is free again: a new run asks for the tool again
        assert again.response == "done"

    asyncio.run(main())
    assert gate.unwound.is_set()


def test_cancelling_the_task_awaiting_formation_arun_runs_the_finally_of_an_agent_nodes_async_tool(
    gate: AsyncToolGate,
) -> None:
    async def main() -> float:
        task = asyncio.ensure_future(Formation("f").add_agent("lead", gate.agent()).arun("go"))
        await _when(gate.started)
        t0 = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await _when(gate.unwound)
        return time.perf_counter() - t0

    assert asyncio.run(main()) < 1 + SLACK


def test_cancelling_the_task_awaiting_fleet_arun_runs_the_finally_of_its_sessions_async_tools() -> None:
    seen: list[int] = []

    @tool
    async def wait_for_data() -> str:
        """Wait for the data to arrive."""
        seen.append(1)
        try:
            await asyncio.sleep(30)
        finally:
            seen.append(-1)
        return "late"

    asks = InferenceResponse.of_tool_calls([("w1", "wait_for_data", {})])
    agent = Agent("w", provider=ScriptedProvider([asks], cycle=True), tools=[wait_for_data])

    async def main() -> None:
        task = asyncio.ensure_future(Fleet(agent, [Task("a"), Task("b")], max_workers=2).arun())
        deadline = time.monotonic() + 5
        while seen.count(1) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        deadline = time.monotonic() + 5
        while seen.count(-1) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.005)

    asyncio.run(main())
    assert seen.count(1) == 2 and seen.count(-1) == 2


def test_cancelling_the_task_awaiting_asubmit_runs_the_finally_of_an_agent_nodes_async_tool(
    gate: AsyncToolGate,
) -> None:
    async def main() -> int:
        async with Formation("f").add_agent("lead", gate.agent()).astart() as running:
            task = asyncio.ensure_future(running.asubmit("go"))
            await _when(gate.started)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await _when(gate.unwound)
            return running.in_flight

    assert asyncio.run(main()) == 0


# -- time limits cancel coroutines ----------------------------------------------------------


def test_a_node_timeout_cancels_an_async_map_function_and_its_finally_runs() -> None:
    unwound: list[int] = []

    async def slow(x: int) -> int:
        try:
            await asyncio.sleep(30 if x == 2 else 0)
        finally:
            unwound.append(x)
        return x

    formation = Formation("f").add_map("each", slow, timeout=0.3)
    t0 = time.perf_counter()
    with pytest.raises(FormationRuntimeError, match="timed out"):
        formation.run([1, 2, 3])
    assert time.perf_counter() - t0 < 0.3 + LIMIT + SLACK
    deadline = time.monotonic() + 5
    while 2 not in unwound and time.monotonic() < deadline:
        time.sleep(0.01)
    assert 2 in unwound


def test_an_agent_nodes_timeout_cancels_its_async_tool_and_the_tools_finally_runs(gate: AsyncToolGate) -> None:
    formation = Formation("f").add_agent("lead", gate.agent(), timeout=0.3)
    t0 = time.perf_counter()
    with pytest.raises(FormationRuntimeError, match="timed out"):
        formation.run("go")
    assert time.perf_counter() - t0 < 0.3 + LIMIT + SLACK
    assert gate.unwound.wait(5)


async def _awaited_map(items: list[int]) -> list[int]:
    result = await Formation("f").add_map("each", plus_one, max_workers=4).arun(items)
    return result.output  # type: ignore[no-any-return]


def test_an_async_def_map_function_is_awaited_through_arun() -> None:
    assert asyncio.run(_awaited_map([1, 2, 3])) == [2, 3, 4]


# -- astream is run_stream -------------------------------------------------------------------


def _events_of_a_blocking_stream(formation: Formation, value: Any) -> list[tuple[str, str | None]]:
    return [(e.type.value, e.node) for e in formation.run_stream(value)]


def test_formation_astream_yields_the_same_events_as_run_stream() -> None:
    def build() -> Formation:
        return (Formation("f").add_function("a", plus_one).add_function("b", double).add_function("c", plus_one)
                .connect("a", "b").connect("b", "c"))

    async def awaited() -> list[tuple[str, str | None]]:
        return [(e.type.value, e.node) async for e in build().astream(1)]

    blocking = _events_of_a_blocking_stream(build(), 1)
    assert asyncio.run(awaited()) == blocking
    assert blocking[-1] == ("run_finished", None)


def _stream_agent() -> Agent:
    asks = InferenceResponse.of_tool_calls([("t1", "shout", {"text": "hi"})])
    return Agent("a", provider=ScriptedProvider([asks, "all done"], cycle=True), tools=[shout])


@tool
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


def _shape(events: list[StreamEvent]) -> list[tuple[str, str | None]]:
    return [(e.type.value, e.text) for e in events]


def test_session_astream_yields_the_same_events_as_run_stream_then_the_sessions_result() -> None:
    blocking = Session(_stream_agent())
    stream = blocking.run_stream("go")
    sync_events = list(stream)
    sync_result = stream.result()

    async def main() -> tuple[list[StreamEvent], Any]:
        session = Session(_stream_agent())
        astream = session.astream("go")
        events = [e async for e in astream]
        return events, astream.result()

    async_events, async_result = asyncio.run(main())
    assert _shape(async_events) == _shape(sync_events)
    assert async_result.response == sync_result.response == "all done"
    assert [c.output for c in async_result.tool_calls] == [c.output for c in sync_result.tool_calls] == ["HI"]


# -- the blocking API inside a running loop -----------------------------------------------------


def test_formation_run_stream_works_inside_a_running_event_loop() -> None:
    async def main() -> list[tuple[str, str | None]]:
        formation = Formation("f").add_function("a", plus_one).add_function("b", double).connect("a", "b")
        return _events_of_a_blocking_stream(formation, 1)

    events = asyncio.run(main())
    assert events[0] == ("run_started", None) and events[-1] == ("run_finished", None)


def test_session_run_stream_works_inside_a_running_event_loop() -> None:
    async def main() -> str:
        stream = Session(_stream_agent()).run_stream("go")
        for _ in stream:
            pass
        return stream.result().response

    assert asyncio.run(main()) == "all done"


def test_a_started_formations_blocking_submit_with_an_agent_node_works_inside_a_running_event_loop() -> None:
    async def main() -> Any:
        with Formation("f").add_agent("lead", _stream_agent()).start() as running:
            return running.submit("go").result(timeout=10)

    assert asyncio.run(main()).output == "all done"


# -- an awaited session against a provider request that hangs ----------------------------------


@pytest.fixture
def hanging(loopback: LoopbackServer) -> Iterator[Any]:
    loopback.handler = lambda _req: Reply.never()
    provider = new_provider("openai", {"model": "m", "base_url": f"{loopback.url}/v1", "api_key": "k"})
    try:
        yield provider
    finally:
        provider.close()


def test_an_awaited_session_run_timeout_returns_in_time_and_closes_a_request_that_never_answers(
    hanging: Any, loopback: LoopbackServer
) -> None:
    async def main() -> tuple[float, AgentError]:
        session = Session(Agent("a", provider=hanging))
        t0 = time.perf_counter()
        try:
            await session.arun("hi", timeout=0.3)
        except AgentError as exc:
            return time.perf_counter() - t0, exc
        raise AssertionError("the run did not time out")

    took, error = asyncio.run(main())
    assert error.kind is ErrorKind.TIMEOUT
    assert took < 0.3 + LIMIT + SLACK
    assert loopback.wait_closed(1, timeout=2)


def test_session_cancel_returns_an_awaited_run_at_once_and_closes_a_request_that_never_answers(
    hanging: Any, loopback: LoopbackServer
) -> None:
    async def main() -> tuple[float, AgentError]:
        session = Session(Agent("a", provider=hanging))
        task = asyncio.ensure_future(session.arun("hi"))
        await _until_requested(loopback)
        t0 = time.perf_counter()
        threading.Thread(target=session.cancel, args=("stop",)).start()
        try:
            await task
        except AgentError as exc:
            return time.perf_counter() - t0, exc
        raise AssertionError("the run was not cancelled")

    took, error = asyncio.run(main())
    assert error.kind is ErrorKind.CANCELLED
    assert took < LIMIT + SLACK
    assert loopback.wait_closed(1, timeout=2)


def test_cancelling_the_task_awaiting_a_session_closes_a_request_that_never_answers(
    hanging: Any, loopback: LoopbackServer
) -> None:
    async def main() -> float:
        session = Session(Agent("a", provider=hanging))
        task = asyncio.ensure_future(session.arun("hi"))
        await _until_requested(loopback)
        return await _cancelled(task)

    assert asyncio.run(main()) < LIMIT + SLACK
    assert loopback.wait_closed(1, timeout=2)


def test_an_awaited_session_waiting_on_a_hanging_request_leaves_the_event_loop_ticking(
    hanging: Any, loopback: LoopbackServer
) -> None:
    async def main() -> int:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticking = asyncio.ensure_future(ticker())
        with pytest.raises(AgentError):
            await Session(Agent("a", provider=hanging)).arun("hi", timeout=0.5)
        ticking.cancel()
        return ticks

    assert asyncio.run(main()) >= 10


# -- none of them blocks the caller's event loop ------------------------------------------------


async def _ticks_while(awaitable: Any) -> tuple[int, Any]:
    """How many 10 ms ticks the loop made while ``awaitable`` ran, and its value."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticking = asyncio.ensure_future(ticker())
    try:
        value = await awaitable
    finally:
        ticking.cancel()
    return ticks, value


def sleepy(x: int) -> int:
    time.sleep(0.3)  # blocking code in a node: on the node's thread, never the caller's loop
    return x


def test_arun_of_blocking_function_nodes_leaves_the_event_loop_ticking() -> None:
    ticks, result = asyncio.run(_ticks_while(Formation("f").add_function("s", sleepy).arun(1)))
    assert result.output == 1 and ticks >= 10


def test_astream_of_blocking_function_nodes_leaves_the_event_loop_ticking() -> None:
    async def drain() -> list[str]:
        return [e.type.value async for e in Formation("f").add_function("s", sleepy).astream(1)]

    ticks, events = asyncio.run(_ticks_while(drain()))
    assert events[-1] == "run_finished" and ticks >= 10


def test_fleet_arun_over_a_blocking_provider_leaves_the_event_loop_ticking() -> None:
    agent = Agent("w", provider=ScriptedProvider(["ok"], cycle=True, latency_s=0.3))
    ticks, results = asyncio.run(_ticks_while(Fleet(agent, ["a", "b"], max_workers=2).arun()))
    assert [r.response for r in results] == ["ok", "ok"] and ticks >= 10


def test_session_arun_with_a_blocking_tool_leaves_the_event_loop_ticking() -> None:
    @tool
    def slow_lookup(q: str) -> str:
        """Look it up (slowly, blocking)."""
        time.sleep(0.3)
        return q

    asks = InferenceResponse.of_tool_calls([("t1", "slow_lookup", {"q": "x"})])
    agent = Agent("a", provider=ScriptedProvider([asks, "found"]), tools=[slow_lookup])
    ticks, result = asyncio.run(_ticks_while(Session(agent).arun("go")))
    assert result.response == "found" and ticks >= 10


# -- the asubmit awaitable, as asyncio uses awaitables ------------------------------------------


def test_an_asubmit_awaitable_awaited_twice_gives_the_same_result() -> None:
    async def main() -> tuple[Any, Any]:
        async with Formation("f").add_function("a", plus_one).astart() as running:
            pending = running.asubmit(1)
            return await pending, await pending

    first, second = asyncio.run(main())
    assert first.output == second.output == 2


def test_asyncio_wait_for_timing_out_on_asubmit_cancels_the_run() -> None:
    hang, _, unwound = _hanging()

    async def main() -> int:
        async with Formation("f").add_function("hang", hang).astart() as running:
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(running.asubmit(1), timeout=0.2)
            await _when(unwound)
            return running.in_flight

    assert asyncio.run(main()) == 0


def test_cancelling_the_task_iterating_session_astream_frees_the_session(gate: AsyncToolGate) -> None:
    async def main() -> str:
        session = Session(gate.agent())

        async def consume() -> None:
            async for _ in session.astream("go"):
                pass

        task = asyncio.ensure_future(consume())
        await _when(gate.started)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await _when(gate.unwound)
        return (await session.arun("again")).response

    assert asyncio.run(main()) == "done"


def test_an_agent_node_timeout_through_arun_closes_a_request_that_never_answers(
    hanging: Any, loopback: LoopbackServer
) -> None:
    async def main() -> float:
        formation = Formation("f").add_agent("lead", Agent("a", provider=hanging), timeout=0.3)
        t0 = time.perf_counter()
        with pytest.raises(FormationRuntimeError, match="timed out"):
            await formation.arun("hi")
        return time.perf_counter() - t0

    assert asyncio.run(main()) < 0.3 + LIMIT + SLACK
    assert loopback.wait_closed(1, timeout=2)


def test_session_run_timeout_inside_a_running_event_loop_closes_a_request_that_never_answers(
    hanging: Any, loopback: LoopbackServer
) -> None:
    async def main() -> float:
        t0 = time.perf_counter()
        with pytest.raises(AgentError) as caught:
            Session(Agent("a", provider=hanging)).run("hi", timeout=0.3)
        assert caught.value.kind is ErrorKind.TIMEOUT
        return time.perf_counter() - t0

    assert asyncio.run(main()) < 0.3 + LIMIT + SLACK
    assert loopback.wait_closed(1, timeout=2)


# -- the public contract of providers, sessions and fleets ----------------------------------------


def _openai_answer(text: str) -> Reply:
    return Reply.json({
        "id": "c1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    })


def test_new_provider_with_an_unknown_id_names_every_registered_id() -> None:
    with pytest.raises(Exception) as caught:
        new_provider("no-such-vendor", {})
    for known in ("anthropic", "ollama", "openai", "replay", "scripted"):
        assert known in str(caught.value)


def test_each_built_in_http_provider_has_async_inference_of_its_own() -> None:
    for pid, options in (("openai", {"model": "m", "api_key": "k", "base_url": "http://127.0.0.1:9/v1"}),
                         ("ollama", {"model": "m", "base_url": "http://127.0.0.1:9"}),
                         ("anthropic", {"model": "m", "api_key": "k", "base_url": "http://127.0.0.1:9"})):
        provider = new_provider(pid, options)
        try:
            assert asyncio.iscoroutinefunction(provider.arun_inference), pid
            assert callable(provider.astream_inference), pid
        finally:
            provider.close()


def test_an_awaited_session_over_an_openai_compatible_endpoint_gives_text_and_usage(loopback: LoopbackServer) -> None:
    loopback.handler = lambda _req: _openai_answer("hello")
    provider = new_provider("openai", {"model": "m", "base_url": f"{loopback.url}/v1", "api_key": "k",
                                       "timeout": 5, "max_retries": 0, "max_tokens": 10, "temperature": 0})
    try:
        result = asyncio.run(Session(Agent("a", provider=provider)).arun("hi"))
    finally:
        provider.close()
    assert result.response == "hello" and result.steps == 1
    assert (result.usage.input_tokens, result.usage.output_tokens) == (5, 2)


def test_cancelling_the_task_awaiting_asubmit_closes_its_agent_nodes_hanging_request(
    hanging: Any, loopback: LoopbackServer
) -> None:
    async def main() -> float:
        async with Formation("f").add_agent("lead", Agent("a", provider=hanging)).astart() as running:
            task = asyncio.ensure_future(running.asubmit("hi"))
            await _until_requested(loopback)
            return await _cancelled(task)

    assert asyncio.run(main()) < LIMIT + SLACK
    assert loopback.wait_closed(1, timeout=2)


def test_cancelling_the_task_awaiting_fleet_arun_closes_every_hanging_request(
    hanging: Any, loopback: LoopbackServer
) -> None:
    async def main() -> float:
        task = asyncio.ensure_future(Fleet(Agent("a", provider=hanging), ["x", "y"], max_workers=2).arun())
        await _until_requested(loopback, 2)
        return await _cancelled(task)

    assert asyncio.run(main()) < LIMIT + SLACK
    assert loopback.wait_closed(2, timeout=2)


def test_session_cancel_ends_an_awaited_stream_at_once_and_closes_its_hanging_request(
    hanging: Any, loopback: LoopbackServer
) -> None:
    async def main() -> tuple[float, list[str]]:
        session = Session(Agent("a", provider=hanging))
        kinds: list[str] = []

        async def consume() -> None:
            async for event in session.astream("hi"):
                kinds.append(event.type.value)

        task = asyncio.ensure_future(consume())
        await _until_requested(loopback)
        t0 = time.perf_counter()
        threading.Thread(target=session.cancel, args=("stop",)).start()
        with pytest.raises(AgentError) as caught:
            await task
        assert caught.value.kind is ErrorKind.CANCELLED
        return time.perf_counter() - t0, kinds

    took, kinds = asyncio.run(main())
    assert took < LIMIT + SLACK
    assert kinds[-1] == "error"
    assert loopback.wait_closed(1, timeout=2)


# -- a run's time limit holds through the async API ---------------------------------------------


def test_a_run_timeout_through_arun_holds_while_a_node_is_stuck_in_blocking_code() -> None:
    release = threading.Event()

    def stuck(x: int) -> int:
        release.wait(10)
        return x

    async def main() -> float:
        t0 = time.perf_counter()
        with pytest.raises(FormationRuntimeError):
            await Formation("f").add_function("stuck", stuck).arun(1, timeout=0.3)
        return time.perf_counter() - t0

    try:
        assert asyncio.run(main()) < 0.3 + LIMIT + SLACK
    finally:
        release.set()


def test_a_run_timeout_through_astream_ends_the_stream_with_the_runs_failure() -> None:
    release = threading.Event()

    def stuck(x: int) -> int:
        release.wait(10)
        return x

    async def main() -> tuple[float, list[str]]:
        t0 = time.perf_counter()
        kinds = [e.type.value async for e in Formation("f").add_function("stuck", stuck).astream(1, timeout=0.3)]
        return time.perf_counter() - t0, kinds

    try:
        took, kinds = asyncio.run(main())
    finally:
        release.set()
    assert took < 0.3 + LIMIT + SLACK
    assert kinds[-1] == "run_failed"


# -- the blocking API inside the runtime's own loop ------------------------------------------------


def test_an_async_node_may_call_the_blocking_run_of_a_formation_of_async_nodes() -> None:
    inner = Formation("inner").add_function("inc", plus_one)

    async def outer(x: int) -> int:
        return inner.run(x, timeout=5).output * 10  # type: ignore[no-any-return]

    assert Formation("outer").add_function("o", outer).run(1, timeout=10).output == 20


def test_an_async_tool_may_call_the_blocking_run_of_a_session_whose_tools_are_async() -> None:
    @tool
    async def inner_lookup() -> str:
        """Look it up."""
        await asyncio.sleep(0.01)
        return "found"

    @tool
    async def ask_a_colleague() -> str:
        """Ask another agent."""
        asks = InferenceResponse.of_tool_calls([("t", "inner_lookup", {})])
        colleague = Agent("colleague", provider=ScriptedProvider([asks, "colleague says hi"]), tools=[inner_lookup])
        return Session(colleague).run("help", timeout=5).response

    asks = InferenceResponse.of_tool_calls([("t", "ask_a_colleague", {})])
    agent = Agent("lead", provider=ScriptedProvider([asks, "ok"]), tools=[ask_a_colleague])
    result = Session(agent).run("go", timeout=10)
    assert result.response == "ok"
    assert [c.output for c in result.tool_calls] == ["colleague says hi"]
