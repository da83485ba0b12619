"""The aiohttp transport of the async providers (``providers/_aiohttp.py``) keeps httpx's
pool semantics: at most ``most`` requests in flight, the others waiting up to their pool
timeout; a place is given back when an answer is closed, a request fails or its task is
cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from tests.support.loopback import LoopbackServer, Reply, Request
from wingman_actors.providers._aiohttp import AiohttpPool, Target, aiohttp_installed

pytestmark = pytest.mark.skipif(
    not aiohttp_installed(), reason='the aiohttp extra is not installed (pip install "wingman-actors[aiohttp]")'
)

_WAIT_LITTLE = httpx.Timeout(5.0, pool=0.05)


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    server = LoopbackServer().start()
    server.handler = lambda req: Reply.never() if req.path == "/hang" else Reply.json({"ok": True})
    yield server
    server.stop()


def _client(loopback: LoopbackServer, most: int = 1) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=loopback.url, transport=AiohttpPool(httpx.create_ssl_context(), most))


async def _reached(loopback: LoopbackServer, count: int) -> None:
    while len(loopback.requests) < count:
        await asyncio.sleep(0.005)


def test_a_request_past_the_most_in_flight_waits_up_to_its_pool_timeout(loopback: LoopbackServer) -> None:
    async def main() -> None:
        async with _client(loopback) as client:
            hung = asyncio.ensure_future(client.post("/hang", json={}))
            await _reached(loopback, 1)
            with pytest.raises(httpx.PoolTimeout, match="pool timeout"):
                await client.post("/chat", json={}, timeout=_WAIT_LITTLE)
            hung.cancel()
            with pytest.raises(asyncio.CancelledError):
                await hung

    asyncio.run(main())


def test_a_cancelled_request_gives_its_place_back(loopback: LoopbackServer) -> None:
    async def main() -> int:
        async with _client(loopback) as client:
            hung = asyncio.ensure_future(client.post("/hang", json={}))
            await _reached(loopback, 1)
            hung.cancel()
            with pytest.raises(asyncio.CancelledError):
                await hung
            return (await client.post("/chat", json={}, timeout=_WAIT_LITTLE)).status_code

    assert asyncio.run(main()) == 200
    assert loopback.wait_closed(1, timeout=2)  # the cancelled request's connection was closed


def test_a_streamed_answer_holds_its_place_until_it_is_closed(loopback: LoopbackServer) -> None:
    async def main() -> int:
        async with _client(loopback) as client:
            async with client.stream("POST", "/chat", json={}) as streamed:
                with pytest.raises(httpx.PoolTimeout):
                    await client.post("/chat", json={}, timeout=_WAIT_LITTLE)
                await streamed.aread()
            return (await client.post("/chat", json={}, timeout=_WAIT_LITTLE)).status_code

    assert asyncio.run(main()) == 200


def test_a_request_that_fails_gives_its_place_back(loopback: LoopbackServer) -> None:
    def drop_first(req: Request) -> Reply:
        if len(loopback.requests) == 1:
            raise ConnectionResetError("the server hangs up")
        return Reply.json({"ok": True})

    loopback.handler = drop_first

    async def main() -> int:
        async with _client(loopback) as client:
            with pytest.raises(httpx.RemoteProtocolError):
                await client.post("/chat", json={})
            return (await client.post("/chat", json={}, timeout=_WAIT_LITTLE)).status_code

    assert asyncio.run(main()) == 200



# --- a whole answer read straight through aiohttp (read_whole) ----------------------------


def _target(pool: AiohttpPool, loopback: LoopbackServer, path: str) -> Target:
    url = httpx.URL(f"{loopback.url}{path}")
    return pool.target(url, [(b"Content-Type", b"application/json"), (b"Host", url.netloc)])


def test_a_whole_read_past_the_most_in_flight_waits_up_to_its_timeout(loopback: LoopbackServer) -> None:
    async def main() -> None:
        pool = AiohttpPool(httpx.create_ssl_context(), 1)
        try:
            hung = asyncio.ensure_future(pool.read_whole(_target(pool, loopback, "/hang"), b"{}", 5.0, 5.0))
            await _reached(loopback, 1)
            with pytest.raises(httpx.PoolTimeout, match="pool timeout"):
                await pool.read_whole(_target(pool, loopback, "/chat"), b"{}", 0.05, 0.05)
            hung.cancel()
            with pytest.raises(asyncio.CancelledError):
                await hung
        finally:
            await pool.aclose()

    asyncio.run(main())


def test_a_cancelled_whole_read_gives_its_place_back_and_closes_its_connection(loopback: LoopbackServer) -> None:
    async def main() -> tuple[int, bytes]:
        pool = AiohttpPool(httpx.create_ssl_context(), 1)
        try:
            hung = asyncio.ensure_future(pool.read_whole(_target(pool, loopback, "/hang"), b"{}", 5.0, 5.0))
            await _reached(loopback, 1)
            hung.cancel()
            with pytest.raises(asyncio.CancelledError):
                await hung
            answer = await pool.read_whole(_target(pool, loopback, "/chat"), b"{}", 0.5, 0.5)
            return answer.status_code, answer.content
        finally:
            await pool.aclose()

    assert asyncio.run(main()) == (200, b'{"ok": true}')
    assert loopback.wait_closed(1, timeout=2)


def test_a_whole_read_the_server_drops_is_httpx_remote_protocol_error_and_gives_its_place_back(
    loopback: LoopbackServer,
) -> None:
    def drop_first(req: Request) -> Reply:
        if len(loopback.requests) == 1:
            raise ConnectionResetError("the server hangs up")
        return Reply.json({"ok": True})

    loopback.handler = drop_first

    async def main() -> int:
        pool = AiohttpPool(httpx.create_ssl_context(), 1)
        try:
            with pytest.raises(httpx.RemoteProtocolError):
                await pool.read_whole(_target(pool, loopback, "/chat"), b"{}", 5.0, 5.0)
            return (await pool.read_whole(_target(pool, loopback, "/chat"), b"{}", 0.5, 0.5)).status_code
        finally:
            await pool.aclose()

    assert asyncio.run(main()) == 200
