"""Fixtures of the provider tests."""

from __future__ import annotations

import pytest

from wingman_actors.providers._aiohttp import aiohttp_installed

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
