"""Sessions and fleets awaited from asyncio: ``await session.arun(message)``,
``session.astream(message)``, ``await fleet.arun()``. The loop is the blocking run's own
(middleware, tools, structured output); a provider's ``arun_inference`` /
``astream_inference`` are awaited on the caller's loop when it has them; ``async def``
tools on an event loop of the runtime's. Also: async tools in the blocking run, inside a running loop."""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import re
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Fleet
from wingman_actors.agents._middleware import Middleware, RunContext
from wingman_actors.core import InferenceRequest, InferenceResponse, StreamEvent, StreamEventType
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext


class AsyncScripted:
    """A provider with only async inference: scripted replies after ``delay`` seconds,
    awaited (its blocking methods refuse, so a test fails if the driver calls them)."""

    id: ClassVar[str] = "async-scripted"

    def __init__(self, replies: list[Any], delay: float = 0.0, *, cycle: bool = False) -> None:
        self.script = ScriptedProvider(replies, cycle=cycle)
        self.delay = delay
        self.threads: list[str] = []
        self.unwound = threading.Event()

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        raise AssertionError("the async driver must await arun_inference")

    def stream_inference(self, request: InferenceRequest) -> Any:
        raise AssertionError("the async driver must iterate astream_inference")

    async def arun_inference(self, request: InferenceRequest) -> InferenceResponse:
        self.threads.append(threading.current_thread().name)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.unwound.set()
        return self.script.run_inference(request)

    async def astream_inference(self, request: InferenceRequest) -> AsyncIterator[StreamEvent]:
        await asyncio.sleep(self.delay)
        for event in self.script.stream_inference(request):
            yield event


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def calls(*specs: tuple[str, str, dict[str, object]]) -> InferenceResponse:
    return InferenceResponse.of_tool_calls(list(specs))


def test_arun_awaits_the_providers_arun_inference_on_the_callers_thread() -> None:
    provider = AsyncScripted(["Paris."])
    result = asyncio.run(Session(Agent("a", provider=provider)).arun("Capital of France?"))

    assert (result.response, result.steps) == ("Paris.", 1)
    assert provider.threads == [threading.current_thread().name]


def test_arun_calls_a_blocking_provider_on_a_worker_thread() -> None:
    result = asyncio.run(Session(Agent("a", provider=ScriptedProvider(["Paris."]))).arun("hi"))

    assert result.response == "Paris."


def test_arun_runs_the_models_tool_calls_and_sends_back_their_results() -> None:
    provider = AsyncScripted([calls(("c1", "add", {"a": 2, "b": 3})), "5"])
    result = asyncio.run(Session(Agent("a", provider=provider, tools=[add])).arun("2+3?"))

    assert result.response == "5"
    assert [(c.name, c.output) for c in result.tool_calls] == [("add", "5")]
    [block] = provider.script.requests[1].messages[-1].content
    assert (block.tool_use_id, block.content) == ("c1", "5")


def test_arun_awaits_an_async_tool_on_an_event_loop_of_the_runtimes_with_the_callers_context() -> None:
    seen: list[tuple[asyncio.AbstractEventLoop, str, str]] = []
    who = contextvars.ContextVar("who", default="nobody")

    @tool
    async def lookup(key: str) -> str:
        """Looks a key up."""
        seen.append((asyncio.get_running_loop(), threading.current_thread().name, who.get()))
        return key.upper()

    async def main() -> tuple[str, asyncio.AbstractEventLoop]:
        who.set("caller")
        provider = AsyncScripted([calls(("c1", "lookup", {"key": "k"})), "done"])
        result = await Session(Agent("a", provider=provider, tools=[lookup])).arun("go")
        return result.tool_calls[0].output, asyncio.get_running_loop()

    output, caller_loop = asyncio.run(main())

    [(loop, thread, context)] = seen
    assert output == "K" and loop is not caller_loop and thread == "wingman-async-tools" and context == "caller"
    # the loop's thread stops once no async tool call is in flight (the leak check sees it too)
    deadline = time.monotonic() + 2
    while any(t.name == "wingman-async-tools" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.name == "wingman-async-tools" for t in threading.enumerate())


def test_an_async_tool_stuck_in_blocking_code_holds_neither_the_callers_loop_nor_the_arun_timeout() -> None:
    release = threading.Event()

    @tool
    async def stuck() -> str:
        """Blocks its event loop (a bug: blocking code in an async def)."""
        release.wait(5)
        return "late"

    async def main() -> tuple[float, float]:
        ticks: list[float] = []

        async def heartbeat() -> None:
            while True:
                ticks.append(time.perf_counter())
                await asyncio.sleep(0.01)

        beat = asyncio.ensure_future(heartbeat())
        session = Session(Agent("a", provider=ScriptedProvider([calls(("s1", "stuck", {})), "unused"]),
                                tools=[stuck]))
        t0 = time.perf_counter()
        try:
            with pytest.raises(AgentError) as info:
                await session.arun("go", timeout=0.3)
            assert info.value.kind is ErrorKind.TIMEOUT
            return time.perf_counter() - t0, max(b - a for a, b in itertools.pairwise(ticks))
        finally:
            beat.cancel()
            release.set()

    elapsed, longest_gap = asyncio.run(main())

    assert elapsed < 0.3 + 0.1 + 0.2  # DESIGN's 0.1 s, and slack for a busy machine
    assert longest_gap < 0.1  # the caller's loop kept ticking while the tool blocked its own


def test_arun_applies_the_agents_middleware() -> None:
    class Shout(Middleware):
        def after_model(self, ctx: RunContext, response: InferenceResponse) -> InferenceResponse | None:
            return InferenceResponse.of_text(response.text.upper())

    provider = AsyncScripted(["quiet"])
    result = asyncio.run(Session(Agent("a", provider=provider, middleware=[Shout()])).arun("hi"))

    assert result.response == "QUIET"


def test_arun_retries_an_answer_that_does_not_match_the_output_schema_once() -> None:
    class City(BaseModel):
        name: str

    provider = AsyncScripted(["not json", '{"name": "Paris"}'])
    result = asyncio.run(Session(Agent("a", provider=provider, output_schema=City)).arun("city?"))

    assert result.output == City(name="Paris") and result.steps == 2


def test_astream_yields_text_and_tool_events_then_gives_the_result() -> None:
    provider = AsyncScripted([calls(("c1", "add", {"a": 1, "b": 1})), "two"])

    async def main() -> tuple[list[StreamEventType], str]:
        stream = Session(Agent("a", provider=provider, tools=[add])).astream("1+1?")
        types = [event.type async for event in stream]
        return types, stream.result().response

    types, response = asyncio.run(main())

    assert response == "two"
    assert types.index(StreamEventType.TOOL_START) < types.index(StreamEventType.TOOL_END)
    assert types.index(StreamEventType.TOOL_END) < types.index(StreamEventType.TEXT_DELTA)
    assert types[-1] is StreamEventType.MESSAGE_STOP


def test_astream_takes_an_astream_inference_that_is_a_coroutine_returning_the_iterator() -> None:
    class Returns(AsyncScripted):
        async def astream_inference(self, request: InferenceRequest) -> AsyncIterator[StreamEvent]:  # type: ignore[override]
            return super().astream_inference(request)

    async def main() -> str:
        stream = Session(Agent("a", provider=Returns(["hi there"]))).astream("hi")
        [event async for event in stream]
        return stream.result().response

    assert asyncio.run(main()) == "hi there"


def test_astream_of_a_blocking_provider_streams_its_events_from_a_worker_thread() -> None:
    async def main() -> str:
        stream = Session(Agent("a", provider=ScriptedProvider(["hello there"]))).astream("hi")
        text = "".join([event.text or "" async for event in stream if event.type is StreamEventType.TEXT_DELTA])
        assert stream.result().response == "hello there"
        return text

    assert asyncio.run(main()) == "hello there"


class _BlockingOnly:
    """A provider of one's own with the blocking calls only (no async twins)."""

    id = "blocking-only"

    def __init__(self, replies: list[Any]) -> None:
        self.script = ScriptedProvider(replies)

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        return self.script.run_inference(request)

    def stream_inference(self, request: InferenceRequest) -> Any:
        return self.script.stream_inference(request)


def test_astream_of_a_provider_with_blocking_calls_only_streams_its_events_and_result() -> None:
    async def main() -> str:
        stream = Session(Agent("a", provider=_BlockingOnly(["hello there"]))).astream("hi")  # type: ignore[arg-type]
        text = "".join([event.text or "" async for event in stream if event.type is StreamEventType.TEXT_DELTA])
        assert stream.result().response == "hello there"
        return text

    assert asyncio.run(main()) == "hello there"


def test_astream_yields_an_error_event_then_raises_when_the_provider_fails() -> None:
    provider = AsyncScripted([AgentError("overloaded", kind=ErrorKind.AGENT)])

    async def main() -> list[StreamEventType]:
        seen: list[StreamEventType] = []
        with pytest.raises(AgentError, match="overloaded"):
            async for event in Session(Agent("a", provider=provider)).astream("hi"):
                seen.append(event.type)
        return seen

    assert asyncio.run(main()) == [StreamEventType.ERROR]


def test_cancelling_the_task_awaiting_arun_cancels_the_model_call_and_frees_the_session() -> None:
    provider = AsyncScripted(["again"], delay=30)  # the cancelled call takes no reply
    session = Session(Agent("a", provider=provider))

    async def main() -> None:
        task = asyncio.ensure_future(session.arun("hi"))
        while not provider.threads:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())

    assert provider.unwound.is_set()  # the awaited call's finally ran
    provider.delay = 0
    assert asyncio.run(session.arun("again")).response == "again"  # the session is free


def test_an_arun_timeout_stops_an_awaited_model_call() -> None:
    provider = AsyncScripted(["late"], delay=30)

    with pytest.raises(AgentError) as raised:
        asyncio.run(Session(Agent("a", provider=provider)).arun("hi", timeout=0.1))

    assert raised.value.kind is ErrorKind.TIMEOUT and provider.unwound.is_set()


def test_session_cancel_from_another_thread_cancels_an_awaited_async_tool_at_once() -> None:
    started, unwound = threading.Event(), threading.Event()

    @tool
    async def wait_long(ctx: ToolContext) -> str:
        """Wait a long time."""
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            unwound.set()
        return "late"

    session = Session(Agent("a", provider=ScriptedProvider([calls(("w1", "wait_long", {})), "unused"]),
                            tools=[wait_long]))
    canceller = threading.Thread(target=lambda: started.wait(5) and session.cancel("stop"))
    canceller.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(AgentError) as info:
            asyncio.run(session.arun("go"))
    finally:
        canceller.join(5)

    assert info.value.kind is ErrorKind.CANCELLED
    assert unwound.is_set() and time.perf_counter() - t0 < 5  # the tool's coroutine was cancelled: its finally ran


def test_an_arun_timeout_cancels_an_awaited_async_tool() -> None:
    unwound = threading.Event()

    @tool
    async def wait_long(ctx: ToolContext) -> str:
        """Wait a long time."""
        try:
            await asyncio.sleep(30)
        finally:
            unwound.set()
        return "late"

    session = Session(Agent("a", provider=ScriptedProvider([calls(("w1", "wait_long", {})), "unused"]),
                            tools=[wait_long]))

    with pytest.raises(AgentError) as info:
        asyncio.run(session.arun("go", timeout=0.2))

    assert info.value.kind is ErrorKind.TIMEOUT and unwound.is_set()


def test_fleet_arun_returns_one_result_per_task_in_order_running_them_concurrently() -> None:
    provider = AsyncScripted(["ok"], delay=0.2, cycle=True)
    fleet = Fleet(Agent("a", provider=provider), [f"task {i}" for i in range(10)], max_workers=10)
    threads_before = threading.active_count()

    async def main() -> tuple[list[Any], float, int]:
        t0 = time.perf_counter()
        results = await fleet.arun()
        return results, time.perf_counter() - t0, threading.active_count()

    results, elapsed, threads_during = asyncio.run(main())

    assert [(r.task_index, r.response) for r in results] == [(i, "ok") for i in range(10)]
    assert elapsed < 1.5  # one after the other: 2 s
    assert threads_during == threads_before  # no thread per session


def test_fleet_arun_reports_a_failing_task_in_its_result() -> None:
    provider = AsyncScripted(["ok", AgentError("bad", kind=ErrorKind.AGENT)])
    results = asyncio.run(Fleet(Agent("a", provider=provider), ["one", "two"], max_workers=1).arun())

    assert results[0].ok and not results[1].ok and "bad" in str(results[1].error)


def test_cancelling_the_task_awaiting_fleet_arun_cancels_its_sessions_model_calls() -> None:
    provider = AsyncScripted(["never"], delay=30, cycle=True)
    fleet = Fleet(Agent("a", provider=provider), ["one", "two"], max_workers=2)

    async def main() -> None:
        task = asyncio.ensure_future(fleet.arun())
        while len(provider.threads) < 2:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())

    assert provider.unwound.is_set()


def test_the_blocking_fleet_run_works_inside_a_running_event_loop() -> None:
    async def main() -> list[str]:
        fleet = Fleet(Agent("a", provider=ScriptedProvider(["ok"], cycle=True)), ["one", "two"])
        return [r.response for r in fleet.run()]

    assert asyncio.run(main()) == ["ok", "ok"]


def test_the_blocking_run_awaits_an_async_tool_inside_a_running_event_loop() -> None:
    @tool
    async def later(n: int) -> int:
        """Async."""
        await asyncio.sleep(0)
        return n * 2

    async def main() -> str:
        provider = ScriptedProvider([calls(("c1", "later", {"n": 4})), "done"])
        with Session(Agent("a", provider=provider, tools=[later])) as session:
            return session.run("go").tool_calls[0].output  # blocks this loop, by design

    assert asyncio.run(main()) == "8"


def test_a_sessions_async_tools_share_one_event_loop_across_calls() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    @tool
    async def where() -> str:
        """Where it runs."""
        loops.append(asyncio.get_running_loop())
        return "here"

    ctx = ToolContext()
    try:
        where.execute({}, ctx)
        where.execute({}, ctx)
    finally:
        ctx.close()

    assert len(loops) == 2 and loops[0] is loops[1]


def test_the_blocking_session_run_works_inside_a_running_event_loop() -> None:
    async def main() -> str:
        return Session(Agent("a", provider=ScriptedProvider(["Paris."]))).run("hi").response

    assert asyncio.run(main()) == "Paris."


@pytest.mark.parametrize(("owner", "method", "twin"), [
    (Session, "run", "arun"), (Session, "run_stream", "astream"),
    (Session, "resume", "aresume"), (Fleet, "run", "arun"), (Fleet, "run_stream", "arun"),
])
def test_the_docs_of_each_blocking_session_and_fleet_call_say_it_blocks_and_name_its_awaitable_twin(
    owner: type, method: str, twin: str
) -> None:
    # DESIGN, Async Python: the sync API works inside a running loop, "and its docs say it blocks"
    doc = " ".join((owner.__dict__[method].__doc__ or "").split())

    assert "blocks the calling thread" in doc.lower()
    assert re.search(rf"\b{twin}\b", doc)


def test_a_cancel_after_an_async_stream_is_made_and_before_it_is_iterated_cancels_that_stream() -> None:
    provider = ScriptedProvider(["answer"])
    session = Session(Agent("a", provider=provider))

    async def read() -> list[StreamEventType]:
        stream = session.astream("hi")
        session.cancel("changed my mind")
        kinds: list[StreamEventType] = []
        with pytest.raises(AgentError) as info:
            async for event in stream:
                kinds.append(event.type)
        assert info.value.kind is ErrorKind.CANCELLED and "changed my mind" in str(info.value)
        return kinds

    assert asyncio.run(read()) == [StreamEventType.ERROR] and provider.calls == 0
    assert asyncio.run(session.arun("again")).response == "answer"
