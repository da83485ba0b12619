"""Streamed calls give their connection back: after a stream's last event (``data:
[DONE]`` for OpenAI-compatible servers, the ``done`` line for Ollama) the rest of the body
(the chunked encoding's end) is read, so the connection goes back to the pool and the next
call reuses it, sync and async, as the Anthropic provider's SDK does. What is read after
the end is bounded: a server that keeps sending, or sends nothing and never ends the body,
does not hold the call."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx
import pytest

from tests.providers import test_ollama as oll
from tests.providers import test_openai as oai
from tests.providers.test_async import TRANSPORTS, WIRES
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.core import InferenceRequest, InferenceResponse, Message
from wingman_actors.providers._base import BaseProvider
from wingman_actors.providers._ollama import build_ollama
from wingman_actors.providers._openai import build_openai

_CALLS = 4
MODES = ["sync", *TRANSPORTS]


def ask() -> InferenceRequest:
    return InferenceRequest(messages=[Message.user("hello")])


def stream_calls(provider: BaseProvider, mode: str, count: int) -> list[InferenceResponse]:
    """``count`` streamed calls one after the other: on the sync path, or on one event loop."""
    if mode == "sync":
        responses = []
        for _ in range(count):
            stream = provider.stream_inference(ask())
            list(stream)
            responses.append(stream.response)
        return responses

    async def main() -> list[InferenceResponse]:
        try:
            answers = []
            for _ in range(count):
                astream = provider.astream_inference(ask())
                [event async for event in astream]
                answers.append(astream.response)
            return answers
        finally:
            await provider.aclose()

    return asyncio.run(main())


def transport_options(mode: str) -> dict[str, Any]:
    return {} if mode == "sync" else {"async_transport": mode}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(WIRES))
def test_streamed_calls_over_one_provider_reuse_one_connection(
    name: str, mode: str, loopback: LoopbackServer
) -> None:
    wire = WIRES[name]
    loopback.handler = lambda _req: wire.stream()
    provider = wire.build(loopback.url, **transport_options(mode))
    try:
        answers = stream_calls(provider, mode, _CALLS)
    finally:
        provider.close()
    assert [a.text for a in answers] == ["The sky is blue."] * _CALLS
    assert len(loopback.requests) == _CALLS
    assert len({r.peer for r in loopback.requests}) == 1  # one connection, reused
    assert loopback.accepted == 1


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_streamed_calls_through_a_client_of_the_users_reuse_its_connection(
    mode: str, loopback: LoopbackServer
) -> None:
    loopback.handler = lambda _req: oai.text_stream("The ", "sky ", "is blue.")

    async def through_async_client() -> list[InferenceResponse]:
        async with httpx.AsyncClient() as client:
            provider = WIRES["openai"].build(loopback.url, async_http_client=client)
            try:
                return [await _one_async(provider) for _ in range(_CALLS)]
            finally:
                provider.close()

    if mode == "sync":
        with httpx.Client() as client:
            provider = WIRES["openai"].build(loopback.url, http_client=client)
            try:
                answers = stream_calls(provider, mode, _CALLS)
            finally:
                provider.close()
    else:
        answers = asyncio.run(through_async_client())
    assert [a.text for a in answers] == ["The sky is blue."] * _CALLS
    assert len({r.peer for r in loopback.requests}) == 1
    assert loopback.accepted == 1


async def _one_async(provider: BaseProvider) -> InferenceResponse:
    astream = provider.astream_inference(ask())
    [event async for event in astream]
    return astream.response


# --- a body that does not end after the stream's last event ---------------------------------


@pytest.fixture
def ended() -> Iterator[threading.Event]:
    """Set at teardown: ends the junk a server sends after the stream's end."""
    event = threading.Event()
    yield event
    event.set()


def keeps_sending(start: Iterable[bytes], ended: threading.Event, junk: bytes) -> Iterator[bytes]:
    """``start``, then ``junk`` every 20 ms until the client hangs up (or the test ends)."""
    yield from start
    while not ended.wait(0.02):
        yield junk


def openai_body() -> Iterable[bytes]:
    body = oai.text_stream("The ", "sky ", "is blue.").body
    assert not isinstance(body, bytes)
    return body


def ollama_body() -> Iterable[bytes]:
    body = Reply.ndjson([oll.line("The "), oll.line("sky "), oll.line("is blue."), oll.final_line()]).body
    assert not isinstance(body, bytes)
    return body


SERVERS: dict[str, tuple[Callable[..., BaseProvider], Callable[[], Iterable[bytes]], str, bytes]] = {
    "openai": (
        lambda url, **o: build_openai({"model": "m", "base_url": f"{url}/v1", "api_key": "k", **o}),
        openai_body, "text/event-stream", b": keep-alive\n\ndata: junk after [DONE]\n\n",
    ),
    "ollama": (
        lambda url, **o: build_ollama({"model": oll.MODEL, "base_url": url, **o}),
        ollama_body, "application/x-ndjson", b'{"junk": "after the done line"}\n',
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(SERVERS))
def test_a_server_that_keeps_sending_after_the_end_does_not_hold_the_call(
    name: str, mode: str, loopback: LoopbackServer, ended: threading.Event
) -> None:
    build, body, ctype, junk = SERVERS[name]
    loopback.queue(Reply(200, keeps_sending(body(), ended, junk), {"content-type": ctype}))
    provider = build(loopback.url, timeout=30, **transport_options(mode))
    began = time.monotonic()
    try:
        [answer] = stream_calls(provider, mode, 1)
        took = time.monotonic() - began
        # the connection could not go back to the pool (its body never ended): it was closed
        assert loopback.wait_all_closed(timeout=10)
    finally:
        provider.close()
    assert answer.text == "The sky is blue."
    assert took < 15  # far below the provider's timeout: a junk byte every 20 ms resets each read's


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(SERVERS))
def test_a_server_that_goes_silent_after_the_end_without_ending_the_body_does_not_hold_the_call(
    name: str, mode: str, loopback: LoopbackServer
) -> None:
    build, body, ctype, _ = SERVERS[name]
    loopback.queue(Reply(200, body(), {"content-type": ctype}, hang=True))
    provider = build(loopback.url, timeout=30, **transport_options(mode))
    began = time.monotonic()
    try:
        [answer] = stream_calls(provider, mode, 1)
        took = time.monotonic() - began
        assert loopback.wait_closed(timeout=10)  # the client hung up
    finally:
        provider.close()
    assert answer.text == "The sky is blue."
    assert took < 15  # not the provider's 30 s read timeout
