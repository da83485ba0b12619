"""The built-in providers' async methods (``arun_inference``, ``astream_inference``) against
loopback servers speaking each wire format: the same responses and events as the sync
path, the same error mapping and retries, and cancellation (of the awaiting task, or of
the run's token) closing the request."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.providers import test_anthropic as anth
from tests.providers import test_ollama as oll
from tests.providers import test_openai as oai
from tests.support.loopback import LoopbackServer, Reply
from tests.support.sched import cpu_wait
from wingman_actors._cancel import CancelToken, cancel_scope
from wingman_actors.core import InferenceRequest, InferenceResponse, Message, StreamEvent
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import RetryPolicy
from wingman_actors.providers._aiohttp import aiohttp_installed
from wingman_actors.providers._anthropic import build_anthropic
from wingman_actors.providers._base import BaseProvider
from wingman_actors.providers._ollama import build_ollama
from wingman_actors.providers._openai import build_openai


@dataclass
class Wire:
    """One provider's wire format: how to build it, a reply, a stream, an error, a stream
    that fails midway."""

    build: Callable[..., BaseProvider]  # (base URL, **options)
    reply: Callable[[], Reply]
    stream: Callable[[], Reply]
    bad_request: Callable[[], Reply]
    broken_stream: Callable[[], Reply]


WIRES: dict[str, Wire] = {
    "openai": Wire(
        build=lambda url, **o: build_openai({"model": "m", "base_url": f"{url}/v1", "api_key": "k", **o}),
        reply=lambda: Reply.json(oai.completion("Hello there!")),
        stream=lambda: oai.text_stream("The ", "sky ", "is blue."),
        bad_request=lambda: Reply.json({"error": {"message": "bad model"}}, status=400),
        broken_stream=lambda: oai.sse(oai.chunk({"content": "Hi"}), {"error": {"message": "boom"}}),
    ),
    "ollama": Wire(
        build=lambda url, **o: build_ollama({"model": oll.MODEL, "base_url": url, **o}),
        reply=lambda: Reply.json(oll.chat_reply("Hello there!")),
        stream=lambda: Reply.ndjson([oll.line("The "), oll.line("sky "), oll.line("is blue."), oll.final_line()]),
        bad_request=lambda: Reply.json({"error": "bad model"}, status=400),
        broken_stream=lambda: Reply.ndjson([oll.line("Hi"), {"error": "boom"}]),
    ),
    "anthropic": Wire(
        build=lambda url, **o: build_anthropic({"model": anth.MODEL, "base_url": url, "api_key": "k", **o}),
        reply=lambda: Reply.json(anth.message_json([{"type": "text", "text": "Hello there!"}])),
        stream=lambda: anth.text_stream("The ", "sky ", "is blue."),
        bad_request=lambda: anth.error_reply(400, "invalid_request_error", "bad model"),
        broken_stream=lambda: Reply.sse(
            [anth.message_start(), ("error", {"type": "error", "error": {"type": "api_error", "message": "boom"}})]
        ),
    ),
}


# The async transports every async test runs on: httpx's own, and aiohttp's (the extra).
TRANSPORTS = [
    "httpx",
    pytest.param("aiohttp", marks=pytest.mark.skipif(
        not aiohttp_installed(), reason='the aiohttp extra is not installed (pip install "wingman-actors[aiohttp]")',
    )),
]


@pytest.fixture(params=sorted(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def provider(wire: Wire, transport: str, loopback: LoopbackServer) -> Iterator[BaseProvider]:
    made = wire.build(loopback.url, async_transport=transport)
    made.retry = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.002)
    yield made
    made.close()


def ask() -> InferenceRequest:
    return InferenceRequest(messages=[Message.user("Hi")])


def run(provider: BaseProvider, body: Callable[[], Any]) -> Any:
    """Run ``body()`` (a coroutine) on a fresh loop, closing the provider's async client."""

    async def main() -> Any:
        try:
            return await body()
        finally:
            await provider.aclose()

    return asyncio.run(main())


async def requested(loopback: LoopbackServer, count: int = 1) -> None:
    """Wait until the server has read ``count`` requests (so there is one to close)."""
    for _ in range(500):
        if len(loopback.requests) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the request never reached the server")


def shape(events: list[StreamEvent]) -> list[tuple[str, str | None]]:
    return [(e.type.value, e.text) for e in events]


def test_arun_inference_gives_the_response_the_sync_call_gives(
    provider: BaseProvider, wire: Wire, loopback: LoopbackServer
) -> None:
    loopback.queue(wire.reply(), wire.reply())
    sync = provider.run_inference(ask())
    got: InferenceResponse = run(provider, lambda: provider.arun_inference(ask()))
    assert got == sync
    assert got.text == "Hello there!"
    assert loopback.requests[0].json() == loopback.requests[1].json()


def test_astream_inference_yields_the_events_the_sync_stream_yields(
    provider: BaseProvider, wire: Wire, loopback: LoopbackServer
) -> None:
    loopback.queue(wire.stream(), wire.stream())
    sync_stream = provider.stream_inference(ask())
    sync_events = list(sync_stream)

    async def body() -> tuple[list[StreamEvent], InferenceResponse]:
        stream = provider.astream_inference(ask())
        events = [event async for event in stream]
        return events, stream.response

    events, response = run(provider, body)
    assert shape(events) == shape(sync_events)
    assert response == sync_stream.response
    assert response.text == "The sky is blue."


def test_an_error_answer_maps_as_in_the_sync_path(provider: BaseProvider, wire: Wire, loopback: LoopbackServer) -> None:
    loopback.queue(wire.bad_request())
    with pytest.raises(AgentError) as info:
        run(provider, lambda: provider.arun_inference(ask()))
    assert info.value.kind is ErrorKind.INVALID
    assert info.value.status == 400
    assert "bad model" in info.value.message
    assert len(loopback.requests) == 1  # never retried


def test_an_error_answer_to_a_stream_maps_as_in_the_sync_path(
    provider: BaseProvider, wire: Wire, loopback: LoopbackServer
) -> None:
    loopback.queue(wire.bad_request())
    with pytest.raises(AgentError) as info:
        run(provider, lambda: provider.astream_inference(ask()).consume())
    assert info.value.kind is ErrorKind.INVALID
    assert info.value.status == 400


def test_a_server_error_is_retried_then_succeeds(provider: BaseProvider, wire: Wire, loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json({"error": {"message": "overloaded"}}, status=503), wire.reply())
    got = run(provider, lambda: provider.arun_inference(ask()))
    assert got.text == "Hello there!"
    assert len(loopback.requests) == 2


def test_a_stream_is_retried_after_a_server_error_before_any_event(
    provider: BaseProvider, wire: Wire, loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json({"error": {"message": "overloaded"}}, status=503), wire.stream())
    got = run(provider, lambda: provider.astream_inference(ask()).consume())
    assert got.text == "The sky is blue."
    assert len(loopback.requests) == 2


def test_close_from_another_thread_closes_the_client_of_a_running_loop(
    provider: BaseProvider, wire: Wire, loopback: LoopbackServer
) -> None:
    loopback.handler = lambda _req: wire.reply()

    async def body() -> str:
        first = await provider.arun_inference(ask())
        await asyncio.to_thread(provider.close)  # sync close() while this loop runs
        second = await provider.arun_inference(ask())  # a new client
        return first.text + " / " + second.text

    assert run(provider, body) == "Hello there! / Hello there!"


def test_an_error_inside_a_stream_raises_an_agent_error(
    provider: BaseProvider, wire: Wire, loopback: LoopbackServer
) -> None:
    loopback.queue(wire.broken_stream())
    with pytest.raises(AgentError, match="boom"):
        run(provider, lambda: provider.astream_inference(ask()).consume())


# --- cancellation ---------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_cancelling_the_awaiting_task_closes_the_request(
    provider: BaseProvider, loopback: LoopbackServer, stream: bool
) -> None:
    loopback.handler = lambda _req: Reply.never()

    async def body() -> None:
        call = provider.astream_inference(ask()).consume() if stream else provider.arun_inference(ask())
        task = asyncio.ensure_future(call)
        await requested(loopback)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(provider, body)
    assert loopback.wait_closed(1, timeout=2)


@pytest.mark.parametrize("stream", [False, True])
def test_a_cancel_of_the_runs_token_from_another_thread_closes_the_request(
    provider: BaseProvider, loopback: LoopbackServer, stream: bool
) -> None:
    loopback.handler = lambda _req: Reply.never()
    token = CancelToken()

    def cancel_once_requested() -> None:
        for _ in range(500):
            if loopback.requests:
                break
            time.sleep(0.01)
        token.cancel("stop")

    canceller = threading.Thread(target=cancel_once_requested)

    async def body() -> None:
        with cancel_scope(token):
            canceller.start()
            with pytest.raises(AgentError) as info:
                if stream:
                    await provider.astream_inference(ask()).consume()
                else:
                    await provider.arun_inference(ask())
        assert info.value.kind is ErrorKind.CANCELLED

    try:
        run(provider, body)
    finally:
        canceller.join()
    assert loopback.wait_closed(1, timeout=2)


@pytest.mark.parametrize("stream", [False, True])
def test_the_runs_deadline_cuts_the_providers_timeout(
    provider: BaseProvider, loopback: LoopbackServer, stream: bool
) -> None:
    loopback.handler = lambda _req: Reply.never()

    async def body() -> None:
        with cancel_scope(CancelToken(timeout=0.3)):
            with pytest.raises(AgentError) as info:
                if stream:
                    await provider.astream_inference(ask()).consume()
                else:
                    await provider.arun_inference(ask())
        assert info.value.kind is ErrorKind.TIMEOUT
        assert "it ran" in info.value.message

    t0, waited = time.perf_counter(), cpu_wait()
    run(provider, body)
    # less the time a loaded machine kept this process's threads waiting for a CPU
    assert time.perf_counter() - t0 - (cpu_wait() - waited) < 0.3 + 0.5
    # On a loaded machine the deadline can fire before the request has left (or before the
    # connection is made), so the server may never hold a request to see closed; what holds
    # either way is that no connection the provider opened stays open. (The close of a
    # request in flight is checked, without a race, by the cancel test above.)
    assert loopback.wait_all_closed(timeout=5)


def test_concurrent_calls_wait_on_no_thread_of_their_own(
    provider: BaseProvider, wire: Wire, loopback: LoopbackServer
) -> None:
    def slow_reply(_req: Any) -> Reply:
        time.sleep(0.2)
        return wire.reply()

    loopback.handler = slow_reply

    async def body() -> tuple[int, int]:
        await provider.arun_inference(ask())  # warm: the client exists
        before = threading.active_count()
        tasks = [asyncio.ensure_future(provider.arun_inference(ask())) for _ in range(10)]
        await asyncio.sleep(0.1)
        during = threading.active_count()
        await asyncio.gather(*tasks)
        return before, during

    before, during = run(provider, body)
    # The loopback server runs a thread per connection (10); the calls add none.
    server_threads = sum(t.name.startswith("loopback-http") for t in threading.enumerate())
    assert during - before <= 10 + 1, (before, during, server_threads)


def test_a_provider_without_async_code_streams_its_sync_stream(loopback: LoopbackServer) -> None:
    class SyncOnly(BaseProvider):
        id = "sync-only"

        def _stream(self, request: InferenceRequest) -> Iterator[StreamEvent]:
            from wingman_actors.providers import ResponseBuilder

            b = ResponseBuilder(self.id, "m")
            yield b.message_start()
            yield b.start_text(0)
            yield b.text(0, json.dumps({"echo": request.messages[-1].text}))
            yield from b.finish()

    from wingman_actors.providers import ProviderOptions

    provider = SyncOnly(ProviderOptions(model="m"))
    got = asyncio.run(provider.arun_inference(ask()))
    assert json.loads(got.text) == {"echo": "Hi"}
