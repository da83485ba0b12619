"""The async HTTP providers' connections: each request in flight has one of its own, and
every one is kept alive for the next requests of the same loop (up to httpx's keep-alive
expiry), so a burst of concurrent calls after another opens no new connection."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from tests.providers.test_async import TRANSPORTS, WIRES
from tests.support.loopback import LoopbackServer, Reply, Request
from wingman_actors.core import InferenceRequest, Message

_BURST = 12


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    server = LoopbackServer().start()
    yield server
    server.stop()


@pytest.mark.parametrize("name", ["ollama", "openai"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_second_burst_of_concurrent_calls_reuses_every_connection_of_the_first(
    name: str, transport: str, loopback: LoopbackServer
) -> None:
    wire = WIRES[name]

    def slow(req: Request) -> Reply:
        time.sleep(0.1)  # the calls of a burst overlap
        return wire.reply()

    loopback.handler = slow
    provider = wire.build(loopback.url, async_transport=transport)
    request = InferenceRequest(messages=[Message.user("hello")])

    async def bursts() -> None:
        try:
            for _ in range(2):
                answers = await asyncio.gather(*(provider.arun_inference(request) for _ in range(_BURST)))
                assert {a.text for a in answers} == {"Hello there!"}
        finally:
            await provider.aclose()

    try:
        asyncio.run(bursts())
    finally:
        provider.close()
    ports = [r.peer[1] for r in loopback.requests]
    first, second = set(ports[:_BURST]), set(ports[_BURST:])
    assert len(first) == _BURST  # a connection per call in flight
    assert second == first  # none opened again
