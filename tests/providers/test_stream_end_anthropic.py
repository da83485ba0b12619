"""The Anthropic stream's end is bounded as the other providers' are
(tests/providers/test_stream_connections.py): after ``message_stop`` the rest of the body
is read for at most ``DRAIN_S``, so a server (or a proxy) that goes silent after the last
event without ending its body does not hold the call until the read timeout."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.providers.test_anthropic import MODEL, block_start, block_stop, delta, message_end, message_start
from tests.providers.test_peer_wire_openai import streamed
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.providers._anthropic import _sdk_aiohttp
from wingman_actors.providers._base import BaseProvider

MODES = [
    "sync",
    "httpx",
    pytest.param("aiohttp", marks=pytest.mark.skipif(not _sdk_aiohttp(), reason="no aiohttp client in this SDK")),
]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def _answer(loopback: LoopbackServer, hang: bool) -> Reply:
    reply = Reply.sse([message_start(), block_start(0, {"type": "text", "text": ""}),
                       delta(0, {"type": "text_delta", "text": "The sky is blue."}), block_stop(0), *message_end()])
    reply.hang = hang
    return reply


def test_a_server_silent_after_message_stop_without_ending_the_body_does_not_hold_the_call(
        loopback: LoopbackServer, built: Callable[..., BaseProvider], mode: str) -> None:
    loopback.queue(_answer(loopback, hang=True))
    provider = built("anthropic", {"api_key": "k", "base_url": loopback.url, "model": MODEL, "timeout": 30})
    began = time.monotonic()
    try:
        _, response = streamed(provider, mode)
        took = time.monotonic() - began
        assert loopback.wait_closed(timeout=10)  # the client hung up
    finally:
        provider.close()
    assert response.text == "The sky is blue." and response.stop_reason == "end_turn"
    assert took < 10  # not the provider's 30 s read timeout


def test_a_stream_whose_body_ends_still_gives_every_event(
        loopback: LoopbackServer, built: Callable[..., BaseProvider], mode: str) -> None:
    loopback.queue(_answer(loopback, hang=False), _answer(loopback, hang=False))
    provider = built("anthropic", {"api_key": "k", "base_url": loopback.url, "model": MODEL})
    try:
        first: Any = streamed(provider, mode)
        second: Any = streamed(provider, mode)
    finally:
        provider.close()
    for events, response in (first, second):
        assert [e.type.value for e in events][-2:] == ["message_delta", "message_stop"]
        assert response.text == "The sky is blue."
