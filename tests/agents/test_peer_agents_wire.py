"""Sessions over the OpenAI-compatible wire format (a loopback server, never the
internet): error answers, retries, streams cut by an error, streamed tool calls, usage
and concurrency, as pydantic-ai's tests/models/test_openai.py and the OpenAI Agents SDK's
runner tests check them. Each test names the peer test it comes from."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.providers.test_openai import (  # make, _no_openai_env: the providers' fixtures, shared
    _no_openai_env,
    chunk,
    completion,
    make,
    sse,
    text_stream,
    tool_call,
    usage_chunk,
)
from tests.support.loopback import LoopbackServer, Reply, Request
from wingman_actors import Agent, Session, tool
from wingman_actors.core import StreamEventType
from wingman_actors.errors import AgentError, ErrorKind, ToolError
from wingman_actors.providers._openai import OpenAIProvider

__all__ = ["_no_openai_env", "make"]  # fixtures

DRIVERS = ["run", "arun"]
STREAMS = ["run_stream", "astream"]


def run_with(driver: str, session: Session, message: str = "go", **kwargs: Any) -> Any:
    """``session``'s run of ``message`` through ``driver`` (blocking or awaited)."""
    if driver == "arun":
        return asyncio.run(session.arun(message, **kwargs))
    return session.run(message, **kwargs)


def stream_with(driver: str, session: Session, message: str = "go") -> tuple[list[Any], Any]:
    """The events of ``session``'s streamed run (``run_stream`` or ``astream``) and its
    result, or the error the iteration raised in place of the result."""
    events: list[Any] = []
    try:
        if driver == "astream":
            async def main() -> Any:
                stream = session.astream(message)
                async for event in stream:
                    events.append(event)
                return stream.result()

            return events, asyncio.run(main())
        stream = session.run_stream(message)
        for event in stream:
            events.append(event)
        return events, stream.result()
    except AgentError as exc:
        return events, exc


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    if city == "Atlantis":
        raise ToolError("no such city: Atlantis")
    return f"sunny in {city}"


def error_body(message: str, type: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": None, "code": None}}


# -- error answers and retries --------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_rate_limited_request_is_retried_after_its_retry_after_and_the_session_answers(
    driver: str, loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # pydantic-ai tests/models/test_openai.py (429 from the API) / openai-agents retries of the client
    loopback.queue(Reply.json(error_body("Rate limit reached", "rate_limit"), status=429, headers={"retry-after": "0.2"}),
                   Reply.json(completion("Fine now.")))
    started = time.perf_counter()
    result = run_with(driver, Session(Agent("a", provider=make())))

    assert result.response == "Fine now."
    assert len(loopback.requests) == 2
    assert time.perf_counter() - started >= 0.18  # retry-after was honoured


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_bad_request_fails_the_run_at_once_with_kind_invalid_and_the_servers_message(
    driver: str, loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # pydantic-ai tests/models/test_openai.py::test_request_error (ModelHTTPError carries status and body)
    loopback.queue(Reply.json(error_body("Unrecognized request argument: foo"), status=400),
                   Reply.json(completion("never sent")))
    with pytest.raises(AgentError) as caught:
        run_with(driver, Session(Agent("a", provider=make())))

    assert caught.value.kind is ErrorKind.INVALID and caught.value.status == 400
    assert "Unrecognized request argument: foo" in str(caught.value)
    assert len(loopback.requests) == 1  # never retried


@pytest.mark.parametrize("driver", DRIVERS)
def test_server_errors_are_retried_max_retries_times_then_fail_the_run_with_their_status(
    driver: str, loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # pydantic-ai tests/models/test_openai.py (5xx raises ModelHTTPError after the client's retries)
    loopback.handler = lambda _: Reply.json(error_body("The server had an error", "server_error"), status=503)
    with pytest.raises(AgentError) as caught:
        run_with(driver, Session(Agent("a", provider=make(max_retries=2))))

    assert caught.value.status == 503 and "The server had an error" in str(caught.value)
    assert len(loopback.requests) == 3


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_retry_after_longer_than_the_runs_deadline_ends_the_run_at_its_timeout(
    driver: str, loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # pydantic-ai tests/test_agent.py (the run's limits hold over the model's retries)
    loopback.queue(Reply.json(error_body("slow down", "rate_limit"), status=429, headers={"retry-after": "20"}),
                   Reply.json(completion("too late")))
    started = time.perf_counter()
    with pytest.raises(AgentError) as caught:
        run_with(driver, Session(Agent("a", provider=make())), timeout=0.4)

    assert caught.value.kind is ErrorKind.TIMEOUT
    assert time.perf_counter() - started < 1.2


@pytest.mark.parametrize("driver", STREAMS)
def test_an_error_mid_stream_gives_the_text_so_far_then_an_error_event_and_the_session_goes_on(
    driver: str, loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # pydantic-ai tests/models/test_openai.py::test_stream_error (an error chunk ends the stream)
    loopback.queue(sse(chunk({"role": "assistant", "content": ""}), chunk({"content": "Half an "}),
                       error_body("The server overloaded mid-answer", "server_error"), done=False),
                   Reply.json(completion("A whole answer.")))
    session = Session(Agent("a", provider=make()))
    events, outcome = stream_with(driver, session)

    assert isinstance(outcome, AgentError) and "overloaded mid-answer" in str(outcome)
    assert [e.text for e in events if e.type is StreamEventType.TEXT_DELTA] == ["Half an "]
    assert events[-1].type is StreamEventType.ERROR and "overloaded mid-answer" in (events[-1].error or "")
    assert len(loopback.requests) == 1  # a stream that had begun is not sent again
    assert session.run("again").response == "A whole answer."


def test_a_malformed_tool_arguments_answer_runs_no_tool_and_the_run_recovers(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # pydantic-ai tests/test_agent.py (invalid JSON tool args are retried) / openai-agents
    # tests/test_agent_runner.py (ModelBehaviorError on invalid tool JSON)
    ran: list[str] = []

    @tool
    def lookup(city: str) -> str:
        """Look a city up."""
        ran.append(city)
        return city

    loopback.queue(Reply.json(completion(None, tool_calls=[tool_call("call_1", "lookup", '{"city": ')],
                                         finish_reason="tool_calls")),
                   Reply.json(completion("Answered without the tool.")))
    result = Session(Agent("a", provider=make(), tools=[lookup])).run("go")

    assert result.response == "Answered without the tool."
    assert ran == []


# -- tool loops on the wire ----------------------------------------------------------


@pytest.mark.parametrize("driver", DRIVERS)
def test_parallel_tool_results_go_back_paired_by_id_in_call_order_and_usage_is_summed(
    driver: str, loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # openai-agents tests/test_agent_runner.py::test_multiple_tool_calls / pydantic-ai
    # tests/models/test_openai.py::test_request_tool_call (usage summed over the requests)
    loopback.queue(
        Reply.json(completion(None, tool_calls=[tool_call("call_a", "weather", '{"city": "Oslo"}'),
                                                tool_call("call_b", "weather", '{"city": "Lima"}')],
                              finish_reason="tool_calls",
                              usage={"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62})),
        Reply.json(completion("Sunny in both.", usage={"prompt_tokens": 80, "completion_tokens": 5,
                                                       "total_tokens": 85})),
    )
    result = run_with(driver, Session(Agent("a", provider=make(), tools=[weather])))

    tool_messages = [m for m in loopback.requests[1].json()["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [
        ("call_a", "sunny in Oslo"), ("call_b", "sunny in Lima")]
    assert (result.usage.input_tokens, result.usage.output_tokens, result.steps) == (130, 17, 2)


def test_a_tool_error_reaches_an_openai_compatible_model_with_one_error_prefix(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # pydantic-ai tests/models/test_openai.py (a retry prompt is sent as the tool message's content as it is)
    loopback.queue(Reply.json(completion(None, tool_calls=[tool_call("call_1", "weather", '{"city": "Atlantis"}')],
                                         finish_reason="tool_calls")),
                   Reply.json(completion("No such city.")))
    Session(Agent("a", provider=make(), tools=[weather])).run("go")

    [sent] = [m for m in loopback.requests[1].json()["messages"] if m["role"] == "tool"]
    assert sent["content"] == "Error: no such city: Atlantis"


def _tool_call_in_pieces() -> Reply:
    head = {"role": "assistant", "content": None,
            "tool_calls": [{"index": 0, "id": "call_9", "type": "function",
                            "function": {"name": "weather", "arguments": ""}}]}
    pieces = ['{"ci', 'ty": "Li', 'ma"}']
    return sse(chunk(head), *(chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces),
               chunk({}, "tool_calls"), usage_chunk(21, 4))


@pytest.mark.parametrize("driver", STREAMS)
def test_a_tool_call_streamed_in_pieces_runs_with_its_joined_arguments(
    driver: str, loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # pydantic-ai tests/models/test_openai.py::test_stream_tool_call_with_empty_text
    loopback.queue(_tool_call_in_pieces(), text_stream("It is ", "sunny ", "in Lima."))
    events, result = stream_with(driver, Session(Agent("a", provider=make(), tools=[weather])))

    assert [(c.id, c.input, c.output) for c in result.tool_calls] == [("call_9", {"city": "Lima"}, "sunny in Lima")]
    assert "".join(e.text or "" for e in events if e.type is StreamEventType.TEXT_DELTA) == "It is sunny in Lima."
    assert result.response == "It is sunny in Lima."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (21 + 12, 4 + 5)  # both streams' usage chunks


def test_parallel_tool_calls_streamed_interleaved_are_each_joined_by_their_index(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # pydantic-ai tests/models/test_openai.py::test_stream_structured (tool call deltas by index)
    def start(index: int, id: str) -> dict[str, Any]:
        return {"index": index, "id": id, "type": "function", "function": {"name": "weather", "arguments": ""}}

    def piece(index: int, text: str) -> dict[str, Any]:
        return chunk({"tool_calls": [{"index": index, "function": {"arguments": text}}]})

    loopback.queue(sse(chunk({"role": "assistant", "content": None, "tool_calls": [start(0, "a"), start(1, "b")]}),
                       piece(1, '{"city": '), piece(0, '{"city": '), piece(0, '"Oslo"}'), piece(1, '"Lima"}'),
                       chunk({}, "tool_calls"), usage_chunk()),
                   text_stream("Sunny in both."))
    _, result = stream_with("run_stream", Session(Agent("a", provider=make(), tools=[weather])))

    assert [(c.id, c.input, c.output) for c in result.tool_calls] == [
        ("a", {"city": "Oslo"}, "sunny in Oslo"), ("b", {"city": "Lima"}, "sunny in Lima")]


def test_tool_calls_sent_without_ids_get_ids_that_pair_their_results(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # pydantic-ai tests/models/test_openai.py (a tool call without an id gets a generated one)
    calls = [{"type": "function", "function": {"name": "weather", "arguments": f'{{"city": "{city}"}}'}}
             for city in ("Oslo", "Lima")]
    loopback.queue(Reply.json(completion(None, tool_calls=calls, finish_reason="tool_calls")),
                   Reply.json(completion("Sunny in both.")))
    result = Session(Agent("a", provider=make(), tools=[weather])).run("go")

    ids = [c.id for c in result.tool_calls]
    assert len(set(ids)) == 2 and all(ids)
    sent = loopback.requests[1].json()["messages"]
    assert [c["id"] for c in sent[1]["tool_calls"]] == ids
    assert [(m["tool_call_id"], m["content"]) for m in sent[2:]] == [(ids[0], "sunny in Oslo"), (ids[1], "sunny in Lima")]


def test_streamed_and_whole_answers_over_the_wire_give_the_same_text_and_usage(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # pydantic-ai tests/models/test_openai.py::test_stream_text (the streamed text and usage match the whole)
    loopback.queue(Reply.json(completion("It is sunny in Lima.", usage={"prompt_tokens": 12, "completion_tokens": 5,
                                                                         "total_tokens": 17})),
                   text_stream("It is ", "sunny ", "in Lima."))
    provider = make()
    whole = Session(Agent("a", provider=provider)).run("weather?")
    _, streamed = stream_with("astream", Session(Agent("a", provider=provider)), "weather?")

    assert (streamed.response, streamed.usage) == (whole.response, whole.usage)


def test_the_call_after_max_steps_sends_no_tools_over_the_wire(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # openai-agents tests/test_max_turns.py::test_max_turns_resume_runs_final_turn (the final turn offers no tools)
    loopback.queue(Reply.json(completion(None, tool_calls=[tool_call("call_1", "weather", '{"city": "Oslo"}')],
                                         finish_reason="tool_calls")),
                   Reply.json(completion("Sunny in Oslo.")))
    result = Session(Agent("a", provider=make(), tools=[weather], max_steps=1)).run("go")

    first, final = (r.json() for r in loopback.requests)
    assert [t["function"]["name"] for t in first["tools"]] == ["weather"]
    assert "tools" not in final or final["tools"] == []
    assert (result.response, result.max_steps_reached) == ("Sunny in Oslo.", True)


# -- concurrency and cancellation on one provider ---------------------------------------


def _echo_after(seconds: float) -> Callable[[Request], Reply]:
    def answer(request: Request) -> Reply:
        text = request.json()["messages"][-1]["content"]
        if text == "hang":
            return Reply.never()
        time.sleep(seconds)
        return Reply.json(completion(f"echo {text}"))

    return answer


def test_concurrent_awaited_sessions_over_one_provider_overlap_their_requests(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # pydantic-ai tests/test_concurrency.py (concurrent runs over one model)
    loopback.handler = _echo_after(0.4)
    agent = Agent("a", provider=make())

    async def main() -> list[str]:
        results = await asyncio.gather(*(Session(agent).arun(f"m{i}") for i in range(4)))
        return [r.response for r in results]

    started = time.perf_counter()
    assert asyncio.run(main()) == [f"echo m{i}" for i in range(4)]
    assert time.perf_counter() - started < 1.4  # together: 0.4 s, not 1.6 s


def test_cancelling_one_of_several_awaited_sessions_closes_only_its_request_and_the_provider_stays_usable(
    loopback: LoopbackServer, make: Callable[..., OpenAIProvider]
) -> None:
    # openai-agents tests/test_cancel_streaming.py::test_cancel_cleans_up_resources, with concurrent runs
    loopback.handler = _echo_after(0.3)
    agent = Agent("a", provider=make())

    async def main() -> list[Any]:
        tasks = [asyncio.ensure_future(Session(agent).arun(m)) for m in ("a", "hang", "b")]
        while not any(r.json()["messages"][-1]["content"] == "hang" for r in list(loopback.requests)):
            await asyncio.sleep(0.01)
        tasks[1].cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        closed = await asyncio.to_thread(loopback.wait_closed, 1, 3)  # while the loop lives
        again = await Session(agent).arun("c")
        return [*outcomes, closed, again.response]

    first, cancelled, second, closed, again = asyncio.run(main())
    assert (first.response, second.response) == ("echo a", "echo b")
    assert isinstance(cancelled, asyncio.CancelledError)
    assert closed
    assert again == "echo c"
