"""An async provider's connections belong to the event loop that opened them: each loop's
client is closed when that loop's ``asyncio.run`` ends, so calling ``asyncio.run`` again
and again leaves no connection open and no ``ResourceWarning`` behind."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
import warnings
from collections.abc import Iterator

import pytest

from tests.providers.test_async import TRANSPORTS, WIRES
from tests.support.loopback import LoopbackServer
from wingman_actors.core import InferenceRequest, Message


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    server = LoopbackServer().start()
    yield server
    server.stop()


def _server_connections() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "loopback-http-conn")


@pytest.mark.parametrize("name", sorted(WIRES))
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_each_asyncio_run_closes_the_connections_its_loop_opened(
    name: str, transport: str, loopback: LoopbackServer
) -> None:
    wire = WIRES[name]
    provider = wire.build(loopback.url, async_transport=transport)
    request = InferenceRequest(messages=[Message.user("hello")])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(3):
                loopback.queue(wire.reply())
                response = asyncio.run(provider.arun_inference(request))
                assert response.text == "Hello there!"
                gc.collect()
        deadline = time.monotonic() + 5
        while _server_connections() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _server_connections() == 0  # the server saw every connection closed
    finally:
        provider.close()


class _Client:
    closed = False

    async def aclose(self) -> None:
        self.closed = True


def test_a_loop_finds_its_client_again_and_another_loop_gets_its_own() -> None:
    from wingman_actors.providers._aio import AsyncClients

    clients = AsyncClients(_Client)

    async def twice() -> tuple[_Client, _Client]:
        return clients.get(), clients.get()

    first, again = asyncio.run(twice())
    assert first is again
    other, _ = asyncio.run(twice())  # a new loop: the last loop's client is not reused
    assert other is not first and first.closed


def test_a_loop_whose_client_was_closed_gets_a_new_one() -> None:
    from wingman_actors.providers._aio import AsyncClients

    clients = AsyncClients(_Client)

    async def main() -> None:
        first = clients.get()
        await clients.aclose()
        assert first.closed
        second = clients.get()
        assert second is not first and clients.get() is second
        clients.close()  # from sync code on the loop itself: the next get makes another
        await asyncio.sleep(0)
        assert clients.get() is not second

    asyncio.run(main())
