"""A provider option that forces tool use (``tool_choice``; OpenAI's ``parallel_tool_calls``)
goes only on requests that offer tools: the agent's final call past ``max_steps`` (sent
without tools, by design) and a call whose ``prepare`` offers none leave it out. OpenAI and
Anthropic refuse it on a request without tools with a 400, which the loopback servers here
answer as they do (the bodies their APIs send), on the blocking, streamed and awaited paths;
Ollama's provider leaves it out the same way."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.providers import test_anthropic as anth
from tests.providers import test_ollama as olla
from tests.providers.test_openai import _no_openai_env, chunk, completion, sse, usage_chunk
from tests.support.drivers import DRIVERS, run_with
from tests.support.loopback import LoopbackServer, Reply, Request
from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Prepared
from wingman_actors.providers._anthropic import build_anthropic
from wingman_actors.providers._base import BaseProvider
from wingman_actors.providers._ollama import build_ollama
from wingman_actors.providers._openai import build_openai

__all__ = ["_no_openai_env"]  # fixture

FINAL = "It is sunny in Paris."


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def openai_server(request: Request) -> Reply:
    """/v1/chat/completions as OpenAI answers it: a forced tool call while tools are offered,
    a 400 for ``tool_choice`` or ``parallel_tool_calls`` on a request without tools (the
    error OpenAI sends), else a text answer."""
    body = request.json()
    stream = bool(body.get("stream"))
    if not body.get("tools"):
        for key in ("tool_choice", "parallel_tool_calls"):
            if key in body:
                message = f"Invalid value for '{key}': '{key}' is only allowed when 'tools' are specified."
                error = {"message": message, "type": "invalid_request_error", "param": key, "code": None}
                return Reply.json({"error": error}, status=400)
        if stream:
            return sse(chunk({"role": "assistant", "content": FINAL}), chunk({}, "stop"), usage_chunk())
        return Reply.json(completion(FINAL))
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
    if stream:
        return sse(chunk({"role": "assistant", "tool_calls": [{"index": 0, **call}]}), chunk({}, "tool_calls"),
                   usage_chunk())
    return Reply.json(completion(None, tool_calls=[call], finish_reason="tool_calls"))


def anthropic_server(request: Request) -> Reply:
    """/v1/messages as Anthropic answers it: a forced tool_use while tools are offered, a 400
    for ``tool_choice`` on a request without tools (the error Anthropic sends), else text."""
    body = request.json()
    stream = bool(body.get("stream"))
    if not body.get("tools"):
        if "tool_choice" in body:
            return anth.error_reply(400, "invalid_request_error", "tool_choice may only be specified while providing tools.")
        if stream:
            return anth.text_stream(FINAL)
        return Reply.json(anth.message_json([{"type": "text", "text": FINAL}]))
    use = {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {}}
    if stream:
        return Reply.sse([
            anth.message_start(), anth.block_start(0, use),
            anth.delta(0, {"type": "input_json_delta", "partial_json": json.dumps({"city": "Paris"})}),
            anth.block_stop(0), *anth.message_end("tool_use"),
        ])
    return Reply.json(anth.message_json([{**use, "input": {"city": "Paris"}}], stop_reason="tool_use"))


def ollama_server(request: Request) -> Reply:
    """/api/chat: a tool call while tools are offered, else text. (Ollama's own API has no
    ``tool_choice`` and does not refuse one; the provider leaves it out all the same.)"""
    body = request.json()
    stream = bool(body.get("stream"))
    if not body.get("tools"):
        if stream:
            return Reply.ndjson([olla.line(FINAL), olla.final_line()])
        return Reply.json(olla.chat_reply(FINAL))
    calls = [{"function": {"name": "weather", "arguments": {"city": "Paris"}}}]
    if stream:
        return Reply.ndjson([olla.line("", message={"role": "assistant", "content": "", "tool_calls": calls}),
                             olla.final_line()])
    return Reply.json(olla.chat_reply("", message={"role": "assistant", "content": "", "tool_calls": calls}))


PROVIDERS: dict[str, tuple[Callable[[Request], Reply], Callable[[str], BaseProvider]]] = {
    "openai": (openai_server, lambda url: build_openai({
        "model": "gpt-4o-mini", "base_url": f"{url}/v1", "api_key": "k", "max_retries": 0,
        "tool_choice": "required", "parallel_tool_calls": False,
    })),
    "anthropic": (anthropic_server, lambda url: build_anthropic({
        "model": anth.MODEL, "base_url": url, "api_key": "k", "max_retries": 0,
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
    })),
    "ollama": (ollama_server, lambda url: build_ollama({
        "model": olla.MODEL, "base_url": url, "max_retries": 0, "tool_choice": "required",
    })),
}


@pytest.fixture(params=sorted(PROVIDERS))
def forced(request: pytest.FixtureRequest, loopback: LoopbackServer) -> Iterator[BaseProvider]:
    """A provider over ``loopback`` with options that force tool use."""
    server, build = PROVIDERS[request.param]
    loopback.handler = server
    provider = build(loopback.url)
    yield provider
    provider.close()


def forcing_keys(body: dict[str, Any]) -> set[str]:
    return {"tool_choice", "parallel_tool_calls"} & set(body)


@pytest.mark.parametrize("driver", DRIVERS)
def test_the_final_call_past_max_steps_leaves_out_a_forced_tool_choice(
    loopback: LoopbackServer, forced: BaseProvider, driver: str
) -> None:
    agent = Agent("forecaster", provider=forced, tools=[weather], max_steps=1)

    result = run_with(driver, Session(agent), "Weather in Paris?")

    assert (result.response, result.max_steps_reached, result.steps) == (FINAL, True, 2)
    assert [c.output for c in result.tool_calls] == ["sunny in Paris"]
    first, last = (r.json() for r in loopback.requests)
    assert first["tools"] and forcing_keys(first)  # the option still goes where tools are offered
    assert "tools" not in last and forcing_keys(last) == set()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_call_whose_prepare_offers_no_tools_leaves_out_a_forced_tool_choice(
    loopback: LoopbackServer, forced: BaseProvider, driver: str
) -> None:
    agent = Agent("forecaster", provider=forced, tools=[weather], prepare=lambda ctx: Prepared(tools=[]))

    result = run_with(driver, Session(agent), "Weather in Paris?")

    assert (result.response, result.steps, result.tool_calls) == (FINAL, 1, [])
    [only] = (r.json() for r in loopback.requests)
    assert "tools" not in only and forcing_keys(only) == set()
