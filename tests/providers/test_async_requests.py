"""What the async path of the OpenAI-compatible and Ollama providers puts on the wire: a
provider's own client sends its requests straight to its transport (``_asend.py``), and
the server sees the request the sync path sends; an answer is decoded as httpx decodes
it (gzip), on either transport; a user's ``async_http_client`` is sent through as it is,
its event hooks included."""

from __future__ import annotations

import asyncio
import gzip
import json
import math

import httpx
import pytest

from tests.providers import test_openai as oai
from tests.providers.test_async import TRANSPORTS, WIRES, ask, run
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import new_provider

ON_EACH_TRANSPORT = pytest.mark.parametrize("transport", TRANSPORTS)

# headers a client sets as it likes (the connection's, the body's compression)
_THE_CLIENTS_OWN = {"connection", "accept-encoding"}


def _wire(loopback: LoopbackServer, index: int) -> tuple[str, str, dict[str, str], object]:
    request = loopback.requests[index]
    headers = {k: v for k, v in request.headers.items() if k not in _THE_CLIENTS_OWN}
    return request.method, request.path, headers, json.loads(request.body)


@ON_EACH_TRANSPORT
@pytest.mark.parametrize("name", ["openai", "ollama"])
def test_an_async_request_carries_the_method_path_headers_and_body_of_a_sync_one(
    name: str, transport: str, loopback: LoopbackServer
) -> None:
    wire = WIRES[name]
    provider = wire.build(loopback.url, async_transport=transport, headers={"X-Team": "blue"}, seed=7)
    try:
        for _ in range(2):
            loopback.queue(wire.reply())
        provider.run_inference(ask())
        run(provider, lambda: provider.arun_inference(ask()))
    finally:
        provider.close()

    sync, async_ = _wire(loopback, 0), _wire(loopback, 1)
    assert async_ == sync
    assert async_[2]["x-team"] == "blue"
    assert async_[2]["content-type"] == "application/json"


@ON_EACH_TRANSPORT
def test_an_async_streamed_request_carries_the_headers_of_a_sync_one_each_once(
    transport: str, loopback: LoopbackServer
) -> None:
    # on aiohttp the session sends the provider's headers itself (a request not streamed
    # passes none): a streamed request, which passes its own, must not get them twice
    wire = WIRES["openai"]
    provider = wire.build(loopback.url, async_transport=transport, headers={"X-Team": "blue"})
    for _ in range(2):
        loopback.queue(wire.stream())

    async def stream() -> None:
        async for _ in provider.astream_inference(ask()):
            pass

    try:
        for _ in provider.stream_inference(ask()):
            pass
        run(provider, stream)
    finally:
        provider.close()

    sync, async_ = _wire(loopback, 0), _wire(loopback, 1)
    assert async_[2] == sync[2]
    for request in loopback.requests:
        assert len(request.names) == len(set(request.names)), request.names


@ON_EACH_TRANSPORT
def test_requests_not_streamed_send_each_header_once(transport: str, loopback: LoopbackServer) -> None:
    wire = WIRES["openai"]
    provider = wire.build(loopback.url, async_transport=transport, headers={"X-Team": "blue"})
    for _ in range(2):
        loopback.queue(wire.reply())
    try:
        run(provider, lambda: provider.arun_inference(ask()))
        run(provider, lambda: provider.arun_inference(ask()))
    finally:
        provider.close()

    for request in loopback.requests:
        assert len(request.names) == len(set(request.names)), request.names
        assert request.headers["x-team"] == "blue"


@ON_EACH_TRANSPORT
def test_an_async_streamed_request_asks_for_server_sent_events(transport: str, loopback: LoopbackServer) -> None:
    wire = WIRES["openai"]
    provider = wire.build(loopback.url, async_transport=transport)
    loopback.queue(wire.stream())

    async def stream() -> str:
        return "".join([e.text or "" async for e in provider.astream_inference(ask())])

    try:
        assert run(provider, stream) == "The sky is blue."
    finally:
        provider.close()

    headers = loopback.requests[0].headers
    assert (headers["accept"], headers["content-type"]) == ("text/event-stream", "application/json")


@ON_EACH_TRANSPORT
def test_a_body_with_nan_is_refused_before_anything_is_sent(transport: str, loopback: LoopbackServer) -> None:
    provider = WIRES["openai"].build(loopback.url, async_transport=transport, temperature_bias=math.nan)
    try:
        with pytest.raises(ValueError, match="JSON"):
            run(provider, lambda: provider.arun_inference(ask()))
    finally:
        provider.close()

    assert loopback.requests == []


@ON_EACH_TRANSPORT
def test_a_users_async_client_sends_with_its_own_event_hooks(transport: str, loopback: LoopbackServer) -> None:
    loopback.queue(WIRES["openai"].reply())
    seen: list[str] = []

    async def hook(request: httpx.Request) -> None:
        seen.append(f"{request.method} {request.url.path}")

    async def main() -> str:
        async with httpx.AsyncClient(event_hooks={"request": [hook]}) as client:
            provider = new_provider("openai", {"model": "m", "base_url": f"{loopback.url}/v1", "api_key": "k",
                                               "max_retries": 0, "async_http_client": client,
                                               "async_transport": transport})
            try:
                return (await provider.arun_inference(ask())).text  # type: ignore[attr-defined, no-any-return]
            finally:
                provider.close()  # type: ignore[attr-defined]

    assert asyncio.run(main()) == "Hello there!"
    assert seen == ["POST /v1/chat/completions"]
    assert loopback.requests[0].headers["authorization"] == "Bearer k"


@ON_EACH_TRANSPORT
@pytest.mark.parametrize("chunked", [False, True])
def test_a_gzipped_answer_is_decoded(chunked: bool, transport: str, loopback: LoopbackServer) -> None:
    body = gzip.compress(json.dumps(oai.completion("Hello there!")).encode())
    parts: bytes | list[bytes] = [body[:5], body[5:]] if chunked else body
    loopback.queue(Reply(200, parts, {"content-type": "application/json", "content-encoding": "gzip"}))
    provider = WIRES["openai"].build(loopback.url, async_transport=transport)
    try:
        assert run(provider, lambda: provider.arun_inference(ask())).text == "Hello there!"
    finally:
        provider.close()


@ON_EACH_TRANSPORT
def test_a_gzipped_error_answer_is_decoded_into_the_error(transport: str, loopback: LoopbackServer) -> None:
    body = gzip.compress(json.dumps({"error": {"message": "no such model"}}).encode())
    loopback.queue(Reply(404, body, {"content-type": "application/json", "content-encoding": "gzip"}))
    provider = WIRES["openai"].build(loopback.url, async_transport=transport, max_retries=0)
    try:
        with pytest.raises(AgentError, match="HTTP 404: no such model") as caught:
            run(provider, lambda: provider.arun_inference(ask()))
    finally:
        provider.close()

    assert (caught.value.kind, caught.value.status) == (ErrorKind.INVALID, 404)


@ON_EACH_TRANSPORT
def test_a_content_type_in_the_headers_option_is_sent_as_it_is(transport: str, loopback: LoopbackServer) -> None:
    wire = WIRES["openai"]
    provider = wire.build(loopback.url, async_transport=transport, headers={"Content-Type": "application/json; v=2"})
    loopback.queue(wire.reply())
    try:
        run(provider, lambda: provider.arun_inference(ask()))
    finally:
        provider.close()

    assert loopback.requests[0].headers["content-type"] == "application/json; v=2"
