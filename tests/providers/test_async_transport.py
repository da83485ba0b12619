"""The async providers' transport failures, on each async transport (httpx's own, and
aiohttp's from the ``aiohttp`` extra): a refused connection, a connection the server
drops, and a read timeout map onto the error kinds the sync path gives; and the
``async_transport`` option's choice and its errors."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from tests.providers.test_async import TRANSPORTS, WIRES, Wire, ask, run
from tests.support.loopback import LoopbackServer, Reply, Request, free_port
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import RetryPolicy, new_provider
from wingman_actors.providers._abort import ClientPool
from wingman_actors.providers._aiohttp import aiohttp_installed
from wingman_actors.providers._base import BaseProvider


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    server = LoopbackServer().start()
    yield server
    server.stop()


@pytest.fixture(params=sorted(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def _call(provider: BaseProvider, stream: bool) -> None:
    provider.retry = RetryPolicy(max_retries=0)

    async def body() -> object:
        if stream:
            return await provider.astream_inference(ask()).consume()
        return await provider.arun_inference(ask())

    try:
        run(provider, body)
    finally:
        provider.close()


@pytest.mark.parametrize("stream", [False, True])
def test_a_refused_connection_is_a_network_error(wire: Wire, transport: str, stream: bool) -> None:
    provider = wire.build(f"http://127.0.0.1:{free_port()}", async_transport=transport)
    with pytest.raises(AgentError) as info:
        _call(provider, stream)
    assert info.value.kind is ErrorKind.NETWORK


@pytest.mark.parametrize("stream", [False, True])
def test_a_connection_the_server_drops_unanswered_is_a_network_error(
    wire: Wire, transport: str, stream: bool, loopback: LoopbackServer
) -> None:
    def drop(_req: Request) -> Reply:
        raise ConnectionResetError("the server hangs up")

    loopback.handler = drop
    provider = wire.build(loopback.url, async_transport=transport)
    with pytest.raises(AgentError) as info:
        _call(provider, stream)
    assert info.value.kind is ErrorKind.NETWORK


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_slower_than_the_providers_timeout_is_a_timeout_error(
    wire: Wire, transport: str, stream: bool, loopback: LoopbackServer
) -> None:
    loopback.handler = lambda _req: Reply.never()
    provider = wire.build(loopback.url, async_transport=transport, timeout=0.2)
    with pytest.raises(AgentError) as info:
        _call(provider, stream)
    assert info.value.kind is ErrorKind.TIMEOUT
    assert loopback.wait_closed(1, timeout=2)


@pytest.mark.skipif(not aiohttp_installed(), reason='the aiohttp extra is not installed')
def test_the_async_transport_is_aiohttp_by_default_when_the_extra_is_installed() -> None:
    assert ClientPool("http://127.0.0.1:1", 5.0).async_transport == "aiohttp"


# Run in a Python of its own where aiohttp cannot be imported, as without the extra.
_WITHOUT_AIOHTTP = """
import importlib.abc, sys
class _Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in ("aiohttp", "httpx_aiohttp"):
            raise ModuleNotFoundError(name)
        return None
sys.meta_path.insert(0, _Hide())
"""


def _without_aiohttp(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", _WITHOUT_AIOHTTP + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=30, check=True)
    return done.stdout.strip()


def test_the_async_transport_is_httpx_by_default_without_the_extra() -> None:
    assert _without_aiohttp("""
        from wingman_actors.providers import new_provider
        print(new_provider("openai", {"model": "m", "base_url": "http://127.0.0.1:1/v1"})._http.async_transport)
    """) == "httpx"


def test_asking_for_aiohttp_without_the_extra_names_the_extra_to_install() -> None:
    out = _without_aiohttp("""
        from wingman_actors.errors import AgentError
        from wingman_actors.providers import new_provider
        try:
            new_provider("openai", {"model": "m", "base_url": "http://127.0.0.1:1/v1", "async_transport": "aiohttp"})
        except AgentError as exc:
            print(exc.kind.value, exc.message)
    """)
    assert out.startswith("invalid")
    assert 'pip install "wingman-actors[aiohttp]"' in out


def test_an_unknown_async_transport_is_refused_naming_the_choices() -> None:
    with pytest.raises(AgentError, match="async_transport") as info:
        new_provider("ollama", {"model": "m", "async_transport": "curl"})
    assert "httpx" in info.value.message and "aiohttp" in info.value.message


def test_the_chosen_transport_serves_requests_from_many_loops_in_turn(
    wire: Wire, transport: str, loopback: LoopbackServer
) -> None:
    loopback.handler = lambda _req: wire.reply()
    provider = wire.build(loopback.url, async_transport=transport)
    try:
        texts = [asyncio.run(provider.arun_inference(ask())).text for _ in range(2)]
    finally:
        provider.close()
    assert texts == ["Hello there!", "Hello there!"]
