"""The compactor's summarising call (``context_budget`` with ``compactor=``) is a model call
like any other on the event bus: ``model_start`` / ``model_end`` (marked ``compaction=True``)
in blocking, streamed and awaited runs, so a subscriber counting calls or tokens sees what
the run's usage counts. Over the OpenAI-compatible wire format (a loopback server)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from tests.providers.test_openai import _no_openai_env, chunk, completion, sse, usage_chunk
from tests.support.drivers import DRIVERS, run_with
from tests.support.loopback import LoopbackServer, Reply, Request
from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Result
from wingman_actors.core import Usage
from wingman_actors.events import Event, EventBus
from wingman_actors.providers._openai import build_openai

__all__ = ["_no_openai_env"]  # fixture

BUDGET = 2_000
PAGES = 12


@tool
def fetch(page: int) -> str:
    """Fetch a page of a long document."""
    return f"page {page}: " + "lorem ipsum dolor sit amet " * 60  # ~1,600 characters


class ReaderServer:
    """Answers the agent with a call of ``fetch`` per page, then a text; answers the
    compactor (its request's system message asks for a summary) with a summary. Every
    answer has usage of its own, so sums can be checked."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.agent_calls = 0
        self.compactions = 0

    def __call__(self, request: Request) -> Reply:
        body = request.json()
        system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
        with self.lock:
            if "You summarise" in system:
                self.compactions += 1
                usage = {"prompt_tokens": 300 + self.compactions, "completion_tokens": 40, "total_tokens": 0}
                return Reply.json(completion(f"summary {self.compactions}", usage=usage))
            self.agent_calls += 1
            n = self.agent_calls
        prompt, output = 100 + n, 10 + n
        call = {"id": f"call-{n}", "type": "function", "function": {"name": "fetch", "arguments": json.dumps({"page": n})}}
        if body.get("stream"):
            if n <= PAGES:
                return sse(chunk({"role": "assistant", "tool_calls": [{"index": 0, **call}]}), chunk({}, "tool_calls"),
                           usage_chunk(prompt, output))
            return sse(chunk({"role": "assistant", "content": "all pages read"}), chunk({}, "stop"),
                       usage_chunk(prompt, output))
        usage = {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}
        if n <= PAGES:
            return Reply.json(completion(None, tool_calls=[call], finish_reason="tool_calls", usage=usage))
        return Reply.json(completion("all pages read", usage=usage))


def read_with_events(loopback: LoopbackServer, handler: Callable[[Request], Reply], driver: str) -> tuple[Result, list[Event]]:
    """The reader agent (its compactor another provider over the same server) run by
    ``driver`` against ``handler`` on ``loopback``: its result and the ``model_start`` and
    ``model_end`` events it sent, in order."""
    loopback.handler = handler
    options = {"model": "m", "base_url": f"{loopback.url}/v1", "api_key": "k", "max_retries": 0}
    model, compactor = build_openai(options), build_openai(options)
    seen: list[Event] = []
    try:
        with EventBus() as bus:
            bus.subscribe(["model_start", "model_end"], seen.append)
            agent = Agent("reader", provider=model, tools=[fetch], context_budget=BUDGET, compactor=compactor,
                          max_steps=20, events=bus)
            result = run_with(driver, Session(agent), "Read every page.")
    finally:
        model.close()
        compactor.close()
    return result, seen


@pytest.mark.parametrize("driver", DRIVERS)
def test_the_compactors_summarising_call_is_on_the_bus_and_the_model_events_usage_adds_up_to_the_runs(
    loopback: LoopbackServer, driver: str
) -> None:
    server = ReaderServer()
    result, seen = read_with_events(loopback, server, driver)

    assert result.response == "all pages read"
    assert server.compactions >= 1
    assert "compact failed" not in [t.name for t in result.trace]
    starts = [e for e in seen if e.kind == "model_start"]
    ends = [e for e in seen if e.kind == "model_end"]
    # one start and one end per call the server answered, each start followed by its end
    assert len(starts) == len(ends) == server.agent_calls + server.compactions
    assert [e.kind for e in seen] == ["model_start", "model_end"] * len(starts)
    compacting = [e for e in ends if e.compaction]
    assert len(compacting) == len([e for e in starts if e.compaction]) == server.compactions
    assert all(e.request is not None and not e.request.tools and "summary" in e.request.instructions
               for e in starts if e.compaction)
    assert [e.response.text for e in compacting if e.response is not None] == [
        f"summary {i}" for i in range(1, server.compactions + 1)]
    assert not any(e.journalled for e in seen)
    # a compaction fits the request of the step it comes before: that step's number
    for i, event in enumerate(seen):
        if event.kind == "model_end" and event.compaction:
            following = next(e for e in seen[i + 1:] if not e.compaction)
            assert event.step == following.step
    spent: Any = sum((e.usage for e in ends if e.usage is not None), Usage())
    assert spent == result.usage
    assert sum((e.usage for e in compacting if e.usage is not None), Usage()).output_tokens == 40 * server.compactions


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_a_failing_compactors_call_is_a_model_start_without_a_model_end_and_the_run_goes_on(
    loopback: LoopbackServer, driver: str
) -> None:
    """As for the agent's own calls, a call that fails has no ``model_end``; the run goes on
    trimming (the trace's "compact failed" entries say so) and spent nothing on it."""
    server = ReaderServer()

    def handler(request: Request) -> Reply:
        if "You summarise" in request.json()["messages"][0]["content"]:
            return Reply.json({"error": {"message": "overloaded", "type": "server_error", "param": None,
                                         "code": None}}, status=500)
        return server(request)

    result, seen = read_with_events(loopback, handler, driver)

    failed = [t for t in result.trace if t.name == "compact failed"]
    assert result.response == "all pages read" and failed
    assert len([e for e in seen if e.kind == "model_start" and e.compaction]) == len(failed)
    assert [e for e in seen if e.kind == "model_end" and e.compaction] == []
    assert [e.step for e in seen if e.kind == "model_start" and e.compaction] == [t.step for t in failed]
    assert sum((e.usage for e in seen if e.usage is not None), Usage()) == result.usage
