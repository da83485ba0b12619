"""Context-budget compaction in an awaited session (``Session.arun``): the compactor's
model call is awaited (its ``arun_inference``), never made as a blocking call on the
caller's event loop; the compaction logic is the blocking run's own."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, ClassVar

from tests.providers import test_openai as oai
from tests.support.loopback import LoopbackServer, Reply, Request
from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Result
from wingman_actors.core import InferenceRequest, InferenceResponse, Message
from wingman_actors.providers._openai import build_openai
from wingman_actors.testing import ScriptedProvider

BUDGET = 2_000


@tool
def fetch(page: int) -> str:
    """Fetch a page of a long document."""
    return f"page {page}: " + "lorem ipsum dolor sit amet " * 60  # ~1,600 characters


def _reader_script(steps: int) -> list[InferenceResponse | str]:
    script: list[InferenceResponse | str] = [
        InferenceResponse.of_tool_calls([(f"call-{i}", "fetch", {"page": i})]) for i in range(1, steps)
    ]
    script.append("all pages read")
    return script


class AsyncOnlySummariser:
    """A compactor with only async inference (its blocking call refuses)."""

    id: ClassVar[str] = "async-only"
    model = "summariser"

    def __init__(self) -> None:
        self.threads: list[str] = []

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        raise AssertionError("an async session must await the compactor's arun_inference")

    def stream_inference(self, request: InferenceRequest) -> Any:
        raise AssertionError("a compaction is not streamed")

    async def arun_inference(self, request: InferenceRequest) -> InferenceResponse:
        self.threads.append(threading.current_thread().name)
        await asyncio.sleep(0)
        return InferenceResponse.of_text(f"summary {len(self.threads)}")


def _compactions(result: Result) -> list[str]:
    return [t.name for t in result.trace if t.name.startswith("compact")]


def test_an_awaited_session_awaits_the_compactors_arun_inference_on_its_loop() -> None:
    compactor = AsyncOnlySummariser()
    provider = ScriptedProvider(_reader_script(8))
    agent = Agent("reader", provider=provider, tools=[fetch], context_budget=BUDGET, compactor=compactor, max_steps=20)

    result = asyncio.run(Session(agent).arun("Read pages 1 to 7."))

    assert result.response == "all pages read"
    assert _compactions(result) and "compact failed" not in _compactions(result)
    assert set(compactor.threads) == {threading.current_thread().name}
    assert any(m.text.endswith(f"summary {len(compactor.threads)}") for m in provider.requests[-1].messages)


def test_an_awaited_session_falls_back_to_trimming_when_the_compactor_fails() -> None:
    class Failing(AsyncOnlySummariser):
        async def arun_inference(self, request: InferenceRequest) -> InferenceResponse:
            raise RuntimeError("compactor down")

    provider = ScriptedProvider(_reader_script(8))
    agent = Agent("reader", provider=provider, tools=[fetch], context_budget=BUDGET, compactor=Failing(), max_steps=20)

    result = asyncio.run(Session(agent).arun("Read pages 1 to 7."))

    assert result.response == "all pages read"
    failed = [t for t in result.trace if t.name == "compact failed"]
    assert failed and "compactor down" in str(failed[0].output) and "without a summary" in str(failed[0].output)
    assert [name for name in _compactions(result) if name != "compact failed"] == []
    assert not any("Summarise the conversation" in m.text for r in provider.requests for m in r.messages)


def test_a_slow_compactor_does_not_stall_the_awaiting_event_loop(loopback: LoopbackServer) -> None:
    def slow_summary(request: Request) -> Reply:
        time.sleep(0.3)  # the compactor's server takes its time
        return Reply.json(oai.completion("the pages so far"))

    loopback.handler = slow_summary
    compactor = build_openai({"model": "m", "base_url": f"{loopback.url}/v1", "api_key": "k"})
    agent = Agent("reader", provider=ScriptedProvider(_reader_script(8)), tools=[fetch], context_budget=BUDGET,
                  compactor=compactor, max_steps=20)
    stalls: list[float] = []

    async def heartbeat() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            stalls.append(now - last - 0.01)
            last = now

    async def main() -> Result:
        # the first call makes the provider's async client (an SSL context...): not what is measured
        await compactor.arun_inference(InferenceRequest(messages=[Message.user("warm up")]))
        beat = asyncio.ensure_future(heartbeat())
        try:
            return await Session(agent).arun("Read pages 1 to 7.")
        finally:
            beat.cancel()
            await compactor.aclose()

    try:
        result = asyncio.run(main())
    finally:
        compactor.close()

    assert len(loopback.requests) - 1 == len(_compactions(result)) >= 1
    assert "compact failed" not in _compactions(result)
    # a compaction blocking the loop would stall it the compactor's 300 ms; under a loaded
    # CI machine a healthy loop has stalled 50-80 ms (the collector, other processes)
    assert max(stalls) < 0.15, f"the loop stalled {max(stalls) * 1000:.0f} ms"
