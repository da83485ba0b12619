"""Provider options on the wire, against the loopback OpenAI, Ollama and Anthropic servers:
``top_p``, ``top_k`` and ``stop`` where each API has them, ``headers``, keys passed into the
body as they are, and a client of the user's (``http_client``, ``async_http_client``)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.providers.test_anthropic import MODEL as ANTHROPIC_MODEL
from tests.providers.test_anthropic import message_json
from tests.providers.test_openai import WEATHER, completion, sse, text_stream
from tests.support.loopback import LoopbackServer, Reply
from tests.support.peers import until
from wingman_actors._cancel import CancelToken, cancel_scope
from wingman_actors.core import InferenceRequest, Message
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import Provider, new_provider

Make = Callable[..., Provider]


@pytest.fixture
def make(loopback: LoopbackServer) -> Iterator[Make]:
    """``make(id, **options)``: a provider of ``id`` at the loopback server, closed after the test."""
    made: list[Provider] = []
    base = {
        "openai": {"model": "m", "base_url": loopback.url},
        "ollama": {"model": "llama3.2", "base_url": loopback.url},
        "anthropic": {"model": ANTHROPIC_MODEL, "base_url": loopback.url, "api_key": "k"},
    }

    def build(id: str, **options: Any) -> Provider:
        provider = new_provider(id, {"max_retries": 0, **base[id], **options})
        made.append(provider)
        return provider

    yield build
    for provider in made:
        provider.close()  # type: ignore[attr-defined]


def ask() -> InferenceRequest:
    return InferenceRequest(messages=[Message.user("hi")])


def ollama_answer() -> Reply:
    return Reply.json({"model": "llama3.2", "message": {"role": "assistant", "content": "hi"}, "done": True})


def sent(loopback: LoopbackServer, index: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = loopback.requests[index].json()
    return body


# --- sampling keys ------------------------------------------------------------------------


def test_openai_takes_top_p_and_stop_where_it_refused_them_before(make: Make, loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(completion()))

    make("openai", top_p=0.9, stop="END").run_inference(ask())

    assert sent(loopback)["top_p"] == 0.9
    assert sent(loopback)["stop"] == ["END"]


def test_ollama_sends_top_p_top_k_and_stop_in_its_run_options(make: Make, loopback: LoopbackServer) -> None:
    loopback.queue(ollama_answer())

    make("ollama", top_p=0.5, top_k=40, stop=["END", "STOP"]).run_inference(ask())

    options = sent(loopback)["options"]
    assert (options["top_p"], options["top_k"], options["stop"]) == (0.5, 40, ["END", "STOP"])


def test_anthropic_sends_top_p_top_k_and_stop_as_stop_sequences(make: Make, loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(message_json()))

    make("anthropic", top_p=0.5, top_k=40, stop=["END"]).run_inference(ask())

    body = sent(loopback)
    assert (body["top_p"], body["top_k"], body["stop_sequences"]) == (0.5, 40, ["END"])


def test_a_top_p_out_of_range_is_refused_naming_the_key(make: Make) -> None:
    with pytest.raises(AgentError, match="top_p") as info:
        make("openai", top_p=1.5)

    assert info.value.kind is ErrorKind.INVALID


@pytest.mark.parametrize("id", ["openai", "ollama", "anthropic", "scripted"])
@pytest.mark.parametrize("key", ["max_tokens", "temperature", "timeout", "max_retries"])
def test_a_boolean_for_a_numeric_option_is_refused_naming_the_key(id: str, key: str) -> None:
    # A boolean is not a number (as the HTTP API's JSON types are strict): true is not 1.
    base: dict[str, Any] = {"openai": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}, "ollama": {"model": "m"},
                            "anthropic": {"model": "m", "api_key": "k"}, "scripted": {"replies": ["hi"]}}[id]
    with pytest.raises(AgentError, match=key) as info:
        new_provider(id, {**base, key: True})

    assert info.value.kind is ErrorKind.INVALID


@pytest.mark.parametrize(("id", "key"), [
    ("openai", "temperature"), ("openai", "top_p"), ("openai", "max_tokens"), ("ollama", "max_retries"),
    ("ollama", "num_ctx"), ("anthropic", "top_k"), ("anthropic", "timeout"), ("scripted", "latency_s"),
])
def test_a_string_for_a_numeric_option_is_refused_naming_the_key(id: str, key: str) -> None:
    # "2" is not 2 (as the HTTP API's JSON types are strict): pydantic's lax mode would read it.
    base: dict[str, Any] = {"openai": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}, "ollama": {"model": "m"},
                            "anthropic": {"model": "m", "api_key": "k"}, "scripted": {"replies": ["hi"]}}[id]
    with pytest.raises(AgentError, match=f"{key}: a string is not a number") as info:
        new_provider(id, {**base, key: "1"})

    assert info.value.kind is ErrorKind.INVALID


@pytest.mark.parametrize(("id", "key"), [("openai", "structured_output"), ("scripted", "cycle")])
def test_a_number_or_a_string_for_a_boolean_option_is_refused_naming_the_key(id: str, key: str) -> None:
    base: dict[str, Any] = {"openai": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}, "scripted": {"replies": ["hi"]}}[id]
    for value in (1, "true"):
        with pytest.raises(AgentError, match=f"{key}: .* is not a boolean") as info:
            new_provider(id, {**base, key: value})

        assert info.value.kind is ErrorKind.INVALID


def test_ollama_keep_alive_takes_a_duration_string_or_seconds() -> None:
    for value in ("5m", 300, -1):
        assert new_provider("ollama", {"model": "m", "keep_alive": value}) is not None


# --- pass-through keys ------------------------------------------------------------------------


def test_openai_sends_keys_it_does_not_know_in_the_body_as_they_are(make: Make, loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(completion()))

    make("openai", seed=7, top_k=20, reasoning_effort="low", logit_bias={"50256": -100}).run_inference(ask())

    body = sent(loopback)
    assert (body["seed"], body["top_k"], body["reasoning_effort"]) == (7, 20, "low")
    assert body["logit_bias"] == {"50256": -100}


def test_openai_sends_pass_through_keys_in_a_streamed_request_too(make: Make, loopback: LoopbackServer) -> None:
    loopback.queue(text_stream("hi"))

    make("openai", seed=7).stream_inference(ask()).consume()

    assert sent(loopback)["seed"] == 7
    assert sent(loopback)["stream"] is True


def test_openai_takes_top_k_as_a_pass_through_key_without_a_typo_warning(
    make: Make, loopback: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    loopback.queue(Reply.json(completion()))

    with caplog.at_level(logging.WARNING, logger="wingman_actors"):
        make("openai", top_k=20).run_inference(ask())

    assert sent(loopback)["top_k"] == 20
    assert not [r for r in caplog.records if "top_k" in r.getMessage()]


def test_ollama_sends_unknown_keys_at_the_top_and_merges_an_options_dict(make: Make, loopback: LoopbackServer) -> None:
    loopback.queue(ollama_answer())

    make("ollama", think=True, num_ctx=8192, options={"seed": 7, "min_p": 0.05}).run_inference(ask())

    body = sent(loopback)
    assert body["think"] is True
    assert body["options"] == {"num_predict": 4096, "num_ctx": 8192, "seed": 7, "min_p": 0.05}


def test_ollama_refuses_an_options_key_that_is_not_a_dict(make: Make) -> None:
    with pytest.raises(AgentError, match="'options' must be a dict") as info:
        make("ollama", options=["seed"])

    assert info.value.kind is ErrorKind.INVALID


def test_anthropic_sends_keys_it_does_not_know_in_the_body_as_they_are(make: Make, loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(message_json()))

    # tool_choice goes only with tools (Anthropic refuses it without: tests/agents/test_tool_choice_without_tools.py)
    request = ask().model_copy(update={"tools": [WEATHER]})
    make("anthropic", metadata={"user_id": "u-1"}, tool_choice={"type": "auto"}).run_inference(request)

    body = sent(loopback)
    assert body["metadata"] == {"user_id": "u-1"}
    assert body["tool_choice"] == {"type": "auto"}


# --- headers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("id", "answer"),
    [("openai", lambda: Reply.json(completion())), ("ollama", ollama_answer), ("anthropic", lambda: Reply.json(message_json()))],
)
def test_the_headers_option_adds_http_headers(
    make: Make, loopback: LoopbackServer, id: str, answer: Callable[[], Reply]
) -> None:
    loopback.queue(answer())

    make(id, headers={"X-Tenant": "acme", "anthropic-beta": "beta-1"}).run_inference(ask())

    headers = loopback.requests[0].headers
    assert (headers["x-tenant"], headers["anthropic-beta"]) == ("acme", "beta-1")


def test_openai_headers_may_replace_the_authorization_header(make: Make, loopback: LoopbackServer) -> None:
    loopback.queue(Reply.json(completion()))

    make("openai", api_key="sk-1", headers={"Authorization": "Token other"}).run_inference(ask())

    assert loopback.requests[0].headers["authorization"] == "Token other"


# --- a client of the user's -------------------------------------------------------------------


@pytest.fixture
def user_client() -> Iterator[httpx.Client]:
    client = httpx.Client(headers={"X-Client": "mine"})
    yield client
    client.close()


def test_openai_sends_through_the_users_client_with_the_providers_url_and_key(
    make: Make, loopback: LoopbackServer, user_client: httpx.Client
) -> None:
    loopback.queue(Reply.json(completion()), text_stream("hi"))
    provider = make("openai", api_key="sk-1", http_client=user_client)

    assert provider.run_inference(ask()).text == "Hello!"
    assert provider.stream_inference(ask()).consume().text == "hi"

    for request in loopback.requests:
        assert request.path == "/chat/completions"
        assert (request.headers["x-client"], request.headers["authorization"]) == ("mine", "Bearer sk-1")


def test_closing_the_provider_leaves_the_users_client_open(
    make: Make, loopback: LoopbackServer, user_client: httpx.Client
) -> None:
    loopback.queue(ollama_answer())
    provider = make("ollama", http_client=user_client)
    provider.run_inference(ask())
    provider.close()  # type: ignore[attr-defined]

    assert not user_client.is_closed


def test_the_async_path_sends_through_the_users_async_client(make: Make, loopback: LoopbackServer) -> None:
    loopback.queue(ollama_answer())

    async def run() -> tuple[str, bool]:
        async with httpx.AsyncClient(headers={"X-Client": "async"}) as client:
            provider = make("ollama", async_http_client=client)
            text = (await provider.arun_inference(ask())).text  # type: ignore[attr-defined]
            await provider.aclose()  # type: ignore[attr-defined]
            return text, client.is_closed

    assert asyncio.run(run()) == ("hi", False)
    assert loopback.requests[0].headers["x-client"] == "async"


def test_a_client_of_the_wrong_type_is_refused_naming_the_key(make: Make) -> None:
    with pytest.raises(AgentError, match=r"http_client must be an httpx\.Client \(got AsyncClient\)") as info:
        make("openai", http_client=httpx.AsyncClient())

    assert info.value.kind is ErrorKind.INVALID


def test_a_cancel_closes_a_new_connection_of_the_users_client(
    make: Make, loopback: LoopbackServer, user_client: httpx.Client
) -> None:
    asked = threading.Event()

    def never(_req: Any) -> Reply:
        asked.set()
        return Reply.never()

    loopback.handler = never
    provider = make("openai", http_client=user_client)
    token = CancelToken()
    # once the request is in (cancelled earlier, on a loaded machine, it might never connect)
    timer = threading.Thread(target=lambda: asked.wait(10) and token.cancel())
    timer.start()
    try:
        with cancel_scope(token), pytest.raises(AgentError) as info:
            provider.run_inference(ask())
    finally:
        timer.join()
    assert info.value.kind is ErrorKind.CANCELLED
    assert loopback.wait_closed(1, timeout=2)


def test_a_cancel_closes_a_stream_on_a_reused_connection_of_the_users_client(
    make: Make, loopback: LoopbackServer, user_client: httpx.Client
) -> None:
    hanging = sse({"choices": [{"index": 0, "delta": {"content": "h"}}]}, done=False)
    hanging.hang = True
    loopback.queue(Reply.json(completion()), hanging)
    provider = make("openai", http_client=user_client)
    provider.run_inference(ask())  # leaves a keep-alive connection in the user's pool
    token = CancelToken()
    # once the streamed request is in (cancelled before it, the connection would not be used)
    timer = threading.Thread(target=lambda: until(lambda: len(loopback.requests) == 2) and token.cancel())
    timer.start()
    try:
        with cancel_scope(token), pytest.raises(AgentError) as info:
            provider.stream_inference(ask()).consume()
    finally:
        timer.join()
    assert info.value.kind is ErrorKind.CANCELLED
    assert loopback.wait_closed(1, timeout=2)
    assert loopback.requests[0].peer == loopback.requests[1].peer  # it was the reused connection


def test_anthropic_sends_through_a_users_httpx_client(
    make: Make, loopback: LoopbackServer, user_client: httpx.Client
) -> None:
    loopback.queue(Reply.json(message_json()))

    response = make("anthropic", http_client=user_client).run_inference(ask())

    assert response.text == "Hello!"
    assert loopback.requests[0].headers["x-client"] == "mine"
    headers = loopback.requests[0].headers
    assert headers.get("authorization") == "Bearer k" or headers.get("x-api-key") == "k"  # SDK 2.x / 1.x


def test_anthropic_takes_a_client_of_its_sdks_http_library(make: Make, loopback: LoopbackServer) -> None:
    from wingman_actors.providers._anthropic_client import HTTP

    loopback.queue(Reply.json(message_json()))
    with HTTP.Client(headers={"X-Client": "sdk"}) as client:
        make("anthropic", http_client=client).run_inference(ask())

    assert loopback.requests[0].headers["x-client"] == "sdk"


def test_anthropic_streams_through_a_users_async_httpx_client(make: Make, loopback: LoopbackServer) -> None:
    from tests.providers.test_anthropic import text_stream as anthropic_stream

    loopback.queue(anthropic_stream("He", "llo"))

    async def run() -> str:
        async with httpx.AsyncClient(headers={"X-Client": "async"}) as client:
            provider = make("anthropic", async_http_client=client)
            response = await provider.astream_inference(ask()).consume()  # type: ignore[attr-defined]
            await provider.aclose()  # type: ignore[attr-defined]
            assert not client.is_closed
            return str(response.text)

    assert asyncio.run(run()) == "Hello"
    assert loopback.requests[0].headers["x-client"] == "async"
