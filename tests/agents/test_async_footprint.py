"""What an async session holds while its model call is in flight: every object the
collector tracks is walked by each collection while it lives, and a burst of sessions in
flight is what makes CPython's full collections (the event loop's longest stalls) come
often. A guard: the driver keeps no closure, generator or scope object per call it does
not need."""

from __future__ import annotations

import asyncio
import gc
from typing import Any, ClassVar

from wingman_actors import Agent, Session
from wingman_actors.core import InferenceRequest, InferenceResponse


class Held:
    """A provider whose async calls wait until released."""

    id: ClassVar[str] = "held"
    model = "m"

    def __init__(self) -> None:
        self.go: asyncio.Event | None = None

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        raise AssertionError("the async driver must await arun_inference")

    def stream_inference(self, request: InferenceRequest) -> Any:
        raise AssertionError("not streamed")

    async def arun_inference(self, request: InferenceRequest) -> InferenceResponse:
        assert self.go is not None
        await self.go.wait()
        return InferenceResponse.of_text("ok")


def test_an_async_session_awaiting_its_model_call_holds_few_tracked_objects() -> None:
    provider = Held()
    agent = Agent("a", provider=provider)
    count = 100

    async def main() -> float:
        provider.go = asyncio.Event()
        gc.collect()
        before = len(gc.get_objects())
        runs = [asyncio.ensure_future(Session(agent).arun("q")) for _ in range(count)]
        await asyncio.sleep(0.01)  # every run is awaiting its call now
        gc.collect()
        held = (len(gc.get_objects()) - before) / count
        provider.go.set()
        results = await asyncio.gather(*runs)
        assert [r.response for r in results] == ["ok"] * count
        return held

    # 29 on CPython 3.11 (34 before the driver awaited the call itself, without an _infer
    # coroutine, a contextvars.Token, the ModelCall and the run's empty trace and tool-call
    # lists; 41 before it kept none of _run's generator, the async generator of drive(), a
    # cancel scope per call): the task and its coroutine, the session, its run's token,
    # context, request, message and the loop's generator
    assert asyncio.run(main()) <= 31
