"""LeasingTransport: each request in flight is sent through a transport of its own, lent
from the idle ones and taken back when its answer is closed (the built-in async
providers' way around httpcore's pool, whose cost grows with the square of the requests
in flight). The transports lent here are httpx's ``MockTransport``s, recording what they
served."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from wingman_actors.providers._lease import LeasingTransport


class _Inner(httpx.MockTransport):
    """A transport of one "connection": answers after ``gate`` opens, records its requests."""

    def __init__(self, made: list[_Inner], gate: asyncio.Event) -> None:
        self.served = 0
        self.closed = False
        self._gate = gate

        async def answer(request: httpx.Request) -> httpx.Response:
            self.served += 1
            if request.url.path == "/fail":
                raise httpx.ConnectError("refused", request=request)
            await self._gate.wait()
            return httpx.Response(200, json={"ok": True})

        super().__init__(answer)
        made.append(self)

    async def aclose(self) -> None:
        self.closed = True


def _client(made: list[_Inner], gate: asyncio.Event, **kwargs: Any) -> httpx.AsyncClient:
    transport = LeasingTransport(lambda: _Inner(made, gate), **{"most": 10, **kwargs})
    return httpx.AsyncClient(base_url="http://model.test", transport=transport)


def _open() -> asyncio.Event:
    gate = asyncio.Event()
    gate.set()
    return gate


def test_requests_in_flight_together_each_get_a_transport_of_their_own() -> None:
    async def main() -> list[_Inner]:
        made: list[_Inner] = []
        gate = asyncio.Event()
        async with _client(made, gate) as client:
            calls = asyncio.gather(*(client.post("/chat", json={}) for _ in range(3)))
            await asyncio.sleep(0.01)
            gate.set()
            assert [r.json() for r in await calls] == [{"ok": True}] * 3
        return made

    made = asyncio.run(main())
    assert [inner.served for inner in made] == [1, 1, 1]


def test_a_transport_is_lent_again_once_its_answer_is_closed() -> None:
    async def main() -> list[_Inner]:
        made: list[_Inner] = []
        async with _client(made, _open()) as client:
            for _ in range(3):
                (await client.post("/chat", json={})).raise_for_status()
        return made

    made = asyncio.run(main())
    assert [inner.served for inner in made] == [3]


def test_a_streamed_answer_holds_its_transport_until_the_stream_closes() -> None:
    async def main() -> list[_Inner]:
        made: list[_Inner] = []
        async with _client(made, _open()) as client:
            async with client.stream("POST", "/chat", json={}) as streamed:
                (await client.post("/chat", json={})).raise_for_status()  # the first is still lent
                await streamed.aread()
            (await client.post("/chat", json={})).raise_for_status()
        return made

    made = asyncio.run(main())
    assert sorted(inner.served for inner in made) == [1, 2]


def test_an_idle_transport_past_its_keep_alive_is_closed_before_the_next_request() -> None:
    async def main() -> list[_Inner]:
        made: list[_Inner] = []
        async with _client(made, _open(), expiry=0.0) as client:
            (await client.post("/chat", json={})).raise_for_status()
            await asyncio.sleep(0.01)
            (await client.post("/chat", json={})).raise_for_status()
            assert made[0].closed and not made[1].closed
        return made

    assert len(asyncio.run(main())) == 2


def test_a_request_past_the_most_in_flight_waits_up_to_its_pool_timeout() -> None:
    async def main() -> None:
        made: list[_Inner] = []
        gate = asyncio.Event()
        async with _client(made, gate, most=1) as client:
            first = asyncio.ensure_future(client.post("/chat", json={}))
            await asyncio.sleep(0.01)
            with pytest.raises(httpx.PoolTimeout, match="pool timeout"):
                await client.post("/chat", json={}, timeout=httpx.Timeout(5.0, pool=0.05))
            gate.set()
            (await first).raise_for_status()
            (await client.post("/chat", json={})).raise_for_status()  # its place is free again
        assert len(made) == 1

    asyncio.run(main())


def test_closing_the_client_closes_the_idle_transports_and_refuses_new_requests() -> None:
    async def main() -> None:
        made: list[_Inner] = []
        client = _client(made, _open())
        (await client.post("/chat", json={})).raise_for_status()
        await client.aclose()
        assert made[0].closed
        with pytest.raises(RuntimeError, match="closed"):
            await client.post("/chat", json={})

    asyncio.run(main())


def test_a_request_that_fails_gives_its_transport_and_its_place_back() -> None:
    async def main() -> list[_Inner]:
        made: list[_Inner] = []
        async with _client(made, _open(), most=1) as client:
            with pytest.raises(httpx.ConnectError):
                await client.post("/fail", json={})
            (await client.post("/chat", json={}, timeout=httpx.Timeout(5.0, pool=0.05))).raise_for_status()
        return made

    assert [inner.served for inner in asyncio.run(main())] == [2]


def test_a_cancelled_request_gives_its_place_back() -> None:
    async def main() -> None:
        made: list[_Inner] = []
        gate = asyncio.Event()
        async with _client(made, gate, most=1) as client:
            for _ in range(3):  # each cancel frees the only place
                hanging = asyncio.ensure_future(client.post("/chat", json={}))
                await asyncio.sleep(0.01)
                hanging.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await hanging
            gate.set()
            (await client.post("/chat", json={}, timeout=httpx.Timeout(5.0, pool=0.05))).raise_for_status()

    asyncio.run(main())


def test_a_stream_cancelled_midway_gives_its_place_back() -> None:
    async def main() -> None:
        made: list[_Inner] = []
        async with _client(made, _open(), most=1) as client:

            async def read_forever() -> None:
                async with client.stream("POST", "/chat", json={}):
                    await asyncio.Event().wait()  # holds the answer open until cancelled

            reader = asyncio.ensure_future(read_forever())
            await asyncio.sleep(0.01)
            reader.cancel()
            with pytest.raises(asyncio.CancelledError):
                await reader
            (await client.post("/chat", json={}, timeout=httpx.Timeout(5.0, pool=0.05))).raise_for_status()

    asyncio.run(main())
