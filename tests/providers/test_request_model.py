"""A request's own model (``Prepared(model="name")``) on the wire of each HTTP provider,
against the loopback servers; a request without one keeps the provider's model and its
replay key."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.providers.test_anthropic import message_json
from tests.providers.test_ollama import chat_reply
from tests.providers.test_openai import completion, text_stream
from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.core import InferenceRequest, Message
from wingman_actors.providers import Provider, new_provider


@pytest.fixture
def providers() -> Iterator[Callable[..., Provider]]:
    made: list[Provider] = []

    def make(id: str, options: dict[str, Any]) -> Provider:
        provider = new_provider(id, {"max_retries": 0, **options})
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.close()  # type: ignore[attr-defined]


def ask(model: str | None = None) -> InferenceRequest:
    return InferenceRequest(messages=[Message.user("hi")], model=model)


def _openai_reply_without_model() -> dict[str, Any]:
    body = completion("ok")
    del body["model"]  # some compatible servers leave it out: the response names the request's
    return body


@pytest.mark.parametrize(
    ("id", "options", "reply"),
    [
        ("openai", {"model": "small"}, lambda: Reply.json(_openai_reply_without_model())),
        ("ollama", {"model": "small"}, lambda: Reply.json({**chat_reply("ok"), "model": ""})),
        ("anthropic", {"model": "small", "api_key": "k"}, lambda: Reply.json(message_json())),
    ],
)
def test_a_requests_model_is_the_model_of_the_request_body(
    providers: Callable[..., Provider], loopback: LoopbackServer, id: str, options: dict[str, Any],
    reply: Callable[[], Reply],
) -> None:
    loopback.queue(reply(), reply())
    provider = providers(id, {"base_url": loopback.url, **options})

    provider.run_inference(ask("big"))
    provider.run_inference(ask())

    assert [r.json()["model"] for r in loopback.requests] == ["big", "small"]


def test_a_response_without_a_model_names_the_requests_model(
    providers: Callable[..., Provider], loopback: LoopbackServer
) -> None:
    loopback.queue(Reply.json(_openai_reply_without_model()))

    response = providers("openai", {"base_url": loopback.url, "model": "small"}).run_inference(ask("big"))

    assert response.model == "big"


def test_a_streamed_request_sends_its_model(providers: Callable[..., Provider], loopback: LoopbackServer) -> None:
    loopback.queue(text_stream("o", "k"))

    stream = providers("openai", {"base_url": loopback.url, "model": "small"}).stream_inference(ask("big"))
    stream.consume()

    assert loopback.requests[0].json()["model"] == "big"


def test_a_request_without_a_model_keeps_the_replay_key_it_had_before_requests_named_one() -> None:
    request = ask()
    data = request.model_dump(
        mode="json", exclude={"model": True, "messages": {"__all__": {"sender": True, "content": {"__all__": {"signature"}}}}}
    )
    before = hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

    assert request.fingerprint() == before
    assert ask("big").fingerprint() != before
