"""Fixtures of the provider tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from wingman_actors.providers import RetryPolicy, new_provider
from wingman_actors.providers._aiohttp import aiohttp_installed
from wingman_actors.providers._base import BaseProvider

PROVIDER_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OLLAMA_HOST", "OLLAMA_API_KEY")


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider picks up a key, a base URL or a host from the environment the tests run in
    (a test that means to read one sets it)."""
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=[
    "sync",
    "httpx",
    pytest.param("aiohttp", marks=pytest.mark.skipif(not aiohttp_installed(), reason="aiohttp extra not installed")),
])
def mode(request: pytest.FixtureRequest) -> str:
    """How the provider is called: ``"sync"``, or async on the ``"httpx"`` or ``"aiohttp"``
    transport (its ``async_transport`` option). test_peer_wire_anthropic.py has its own: it
    asks whether the Anthropic SDK has an aiohttp client."""
    name: str = request.param
    return name


@pytest.fixture
def build_provider() -> Iterator[Callable[..., BaseProvider]]:
    """``build_provider(kind, options, max_retries=0)``: the provider ``kind`` made from
    ``options``, retrying ``max_retries`` times a millisecond apart; every one is closed when the
    test ends."""
    made: list[BaseProvider] = []

    def build(kind: str, options: dict[str, Any], max_retries: int = 0) -> BaseProvider:
        provider = new_provider(kind, options)
        assert isinstance(provider, BaseProvider)
        provider.retry = RetryPolicy(max_retries, base_delay=0.001, max_delay=0.002)
        made.append(provider)
        return provider

    yield build
    for provider in made:
        provider.close()


@pytest.fixture
def built(mode: str, build_provider: Callable[..., BaseProvider]) -> Callable[..., BaseProvider]:
    """``built(kind, options, max_retries=0)``: :func:`build_provider`'s provider, called in the
    test's ``mode``. A module's ``make`` fixture fills in the options its server needs."""

    def build(kind: str, options: dict[str, Any], max_retries: int = 0) -> BaseProvider:
        transport = {} if mode == "sync" else {"async_transport": mode}
        return build_provider(kind, {**transport, **options}, max_retries)

    return build
