"""A provider's own timeout (its ``timeout`` option) that runs out says so and names the
option to raise, on every path of the httpx providers, as the Anthropic provider's does."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.loopback import LoopbackServer, Reply
from wingman_actors.core import InferenceRequest, Message
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.providers import new_provider


@pytest.mark.parametrize("provider", ["openai", "ollama", "anthropic"])
@pytest.mark.parametrize("mode", ["run", "stream", "arun", "astream"])
def test_a_providers_own_timeout_names_the_option_to_raise(loopback: LoopbackServer, provider: str, mode: str) -> None:
    loopback.handler = lambda req: Reply.never()
    made = new_provider(provider, {"model": "m", "api_key": "k", "base_url": loopback.url, "max_retries": 0,
                                   "timeout": 0.2})
    request = InferenceRequest(messages=[Message.user("hi")])

    async def astream() -> None:
        async for _ in made.astream_inference(request):  # type: ignore[attr-defined]
            pass

    try:
        with pytest.raises(AgentError, match=r"timed out.*raise the timeout option") as info:
            if mode == "run":
                made.run_inference(request)
            elif mode == "stream":
                list(made.stream_inference(request))
            elif mode == "arun":
                asyncio.run(made.arun_inference(request))  # type: ignore[attr-defined]
            else:
                asyncio.run(astream())
    finally:
        made.close()  # type: ignore[attr-defined]

    assert info.value.kind is ErrorKind.TIMEOUT
