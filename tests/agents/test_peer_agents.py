"""Behaviours of pydantic-ai's and the OpenAI Agents SDK's own test suites, ported to our
agent layer (Session.run/arun/run_stream/astream, Fleet.arun, tools, hooks) with the
scripted provider. Each test names the peer test it comes from; where a peer differs on
purpose (max turns raises there; here one last call without tools answers), the test
checks our documented behaviour. The wire-format twins are in test_peer_agents_wire.py."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from wingman_actors import Agent, Session, tool
from wingman_actors.core import InferenceRequest, InferenceResponse, Message, StreamEventType, Usage
from wingman_actors.errors import AgentError, ErrorKind, ToolError
from wingman_actors.testing import ScriptedProvider
from wingman_actors.tools import ToolContext


def calls(*specs: tuple[str, str, dict[str, Any]], usage: Usage | None = None) -> InferenceResponse:
    """One model answer calling the tools ``specs`` (id, name, input)."""
    response = InferenceResponse.of_tool_calls(list(specs))
    return response.model_copy(update={"usage": usage}) if usage is not None else response


def arun(session: Session, message: str, **kwargs: Any) -> Any:
    return asyncio.run(session.arun(message, **kwargs))


@tool
def ping(times: int = 1) -> str:
    """Answer pong ``times`` times."""
    return "pong" * times


@tool
async def explode(code: int) -> str:
    """Always fails."""
    await asyncio.sleep(0)
    raise ValueError(f"exploded with code {code}")


# -- tools that fail: the model sees an error result, the run goes on ------------------


def test_an_async_tool_that_raises_becomes_an_error_result_and_the_awaited_run_goes_on() -> None:
    # openai-agents tests/test_function_tool.py::test_function_tool_default_error_works
    provider = ScriptedProvider([calls(("c1", "explode", {"code": 7})), "Sorry, it failed."])
    result = arun(Session(Agent("a", provider=provider, tools=[explode])), "go")

    assert result.response == "Sorry, it failed."
    [call] = result.tool_calls
    assert call.is_error and "ValueError" in call.output and "exploded with code 7" in call.output
    sent = provider.requests[1].messages[-1].content[0]
    assert (sent.type, sent.tool_use_id, sent.is_error) == ("tool_result", "c1", True)
    assert "exploded with code 7" in (sent.content or "")


def test_an_awaited_run_tells_the_model_of_an_unknown_tool_with_the_available_ones_and_goes_on() -> None:
    # pydantic-ai tests/test_agent.py::test_unknown_tool
    provider = ScriptedProvider([calls(("c1", "fly", {})), "I cannot fly."])
    result = arun(Session(Agent("a", provider=provider, tools=[ping, explode])), "go")

    assert result.response == "I cannot fly."
    [call] = result.tool_calls
    assert call.is_error
    assert "'fly'" in call.output and "ping" in call.output and "explode" in call.output


def test_an_awaited_run_refuses_bad_arguments_before_calling_the_async_tool() -> None:
    # pydantic-ai tests/test_tools.py::test_tool_arg_validation (the retry prompt names the field)
    called: list[int] = []

    @tool
    async def square(n: int) -> int:
        """Square a number."""
        called.append(n)
        return n * n

    provider = ScriptedProvider([calls(("c1", "square", {"n": "many"})), calls(("c2", "square", {"n": 3})), "9"])
    result = arun(Session(Agent("a", provider=provider, tools=[square])), "go")

    first, second = result.tool_calls
    assert first.is_error and "invalid arguments for tool 'square'" in first.output and "n:" in first.output
    assert (second.is_error, second.output) == (False, "9")
    assert called == [3]  # the bad call never reached the function


def test_a_tool_errors_message_reaches_the_model_as_written() -> None:
    # pydantic-ai tests/test_tools.py::test_tool_raises_model_retry (ModelRetry's message is the retry prompt)
    @tool
    async def book(day: str) -> str:
        """Book a table."""
        raise ToolError(f"no table free on {day}; try another day")

    provider = ScriptedProvider([calls(("c1", "book", {"day": "Monday"})), "Tuesday then."])
    arun(Session(Agent("a", provider=provider, tools=[book])), "go")

    sent = provider.requests[1].messages[-1].content[0]
    assert sent.is_error and sent.content == "Error: no table free on Monday; try another day"


def test_an_async_tool_whose_own_code_raises_cancelled_error_is_an_error_result_not_a_cancel_of_the_run() -> None:
    # openai-agents tests/test_function_tool.py::test_function_tool_default_error_works (any failure of the
    # tool is the model's to see); the blocking run already treats it so
    @tool
    async def flaky() -> str:
        """Awaits something another party cancelled."""
        gone = asyncio.get_running_loop().create_future()
        gone.cancel()
        return str(await gone)

    outputs = []
    for run in (lambda s: s.run("go"), lambda s: arun(s, "go")):
        provider = ScriptedProvider([calls(("c1", "flaky", {})), "It failed."])
        result = run(Session(Agent("a", provider=provider, tools=[flaky])))
        assert result.response == "It failed."
        [call] = result.tool_calls
        assert call.is_error and "CancelledError" in call.output
        outputs.append(call.output)
    assert outputs[0] == outputs[1]


class Lookup:
    """Look a city up."""

    async def __call__(self, city: str) -> str:
        await asyncio.sleep(0)
        return f"found {city}"


def test_a_callable_object_with_an_async_call_is_awaited_as_a_tool() -> None:
    # pydantic-ai tests/test_tools.py (tools from any callable; async ones awaited)
    lookup = tool(Lookup(), name="lookup")
    assert lookup.definition.input_schema["properties"]["city"]["type"] == "string"
    for run in (lambda s: s.run("go"), lambda s: arun(s, "go")):
        provider = ScriptedProvider([calls(("c1", "lookup", {"city": "Oslo"})), "ok"])
        result = run(Session(Agent("a", provider=provider, tools=[lookup])))
        assert result.tool_calls[0].output == "found Oslo"


# -- max steps (the peers' max turns) --------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
def test_max_steps_in_an_awaited_run_ends_with_one_call_without_tools_after_the_limit_note(streamed: bool) -> None:
    # openai-agents tests/test_max_turns.py::test_non_streamed_max_turns / test_streamed_max_turns
    # (theirs raises MaxTurnsExceeded; ours asks for the answer without tools, as DESIGN's max_steps says)
    provider = ScriptedProvider([calls((f"c{i}", "ping", {})) for i in range(3)] + ["Best I can do."])
    session = Session(Agent("a", provider=provider, tools=[ping], max_steps=3))

    async def main() -> Any:
        if not streamed:
            return await session.arun("go")
        stream = session.astream("go")
        async for _ in stream:
            pass
        return stream.result()

    result = asyncio.run(main())
    assert (result.response, result.steps, result.max_steps_reached) == ("Best I can do.", 4, True)
    assert [len(r.tools) for r in provider.requests] == [1, 1, 1, 0]
    assert "maximum number of steps" in (provider.requests[-1].messages[-1].text or "")


# -- streaming, usage: every driver gives the same run ---------------------------------


def _two_step_script() -> ScriptedProvider:
    return ScriptedProvider([
        calls(("c1", "ping", {"times": 2}), ("c2", "ping", {"times": 3}), usage=Usage(input_tokens=40, output_tokens=9)),
        "Two pongs, then three pongs: that is what the tools said.",
    ])


def _all_drivers(make: Any) -> list[Any]:
    """The run of ``make()``'s session through run, run_stream, arun and astream."""
    results = [make().run("question")]
    stream = make().run_stream("question")
    for _ in stream:
        pass
    results.append(stream.result())
    results.append(arun(make(), "question"))

    async def astream() -> Any:
        async_stream = make().astream("question")
        async for _ in async_stream:
            pass
        return async_stream.result()

    results.append(asyncio.run(astream()))
    return results


def test_every_driver_gives_the_same_answer_usage_steps_tool_calls_and_trace() -> None:
    # pydantic-ai tests/test_streaming.py::test_streamed_text_response (a streamed run's result equals a run's)
    results = _all_drivers(lambda: Session(Agent("a", provider=_two_step_script(), tools=[ping])))

    first = results[0]
    assert first.usage.input_tokens > 40 and first.usage.output_tokens > 9  # both steps counted
    for other in results[1:]:
        assert (other.response, other.usage, other.steps) == (first.response, first.usage, first.steps)
        assert [(c.id, c.output, c.is_error) for c in other.tool_calls] == [
            (c.id, c.output, c.is_error) for c in first.tool_calls
        ]
        assert [(t.kind, t.name, t.step) for t in other.trace] == [(t.kind, t.name, t.step) for t in first.trace]


def test_astream_text_deltas_join_to_the_answer_of_a_run_not_streamed() -> None:
    # pydantic-ai tests/test_streaming.py::test_streamed_text_response (the deltas rebuild the text)
    answer = "A longer answer, streamed in many small pieces so that the deltas must be joined."

    async def main() -> tuple[list[str], str]:
        stream = Session(Agent("a", provider=ScriptedProvider([answer], stream_chunk=3))).astream("q")
        deltas = [e.text or "" async for e in stream if e.type is StreamEventType.TEXT_DELTA]
        return deltas, stream.result().response

    deltas, response = asyncio.run(main())
    assert len(deltas) > 10
    assert "".join(deltas) == response == Session(Agent("a", provider=ScriptedProvider([answer]))).run("q").response


def test_usage_of_an_awaited_run_is_summed_over_its_model_calls_and_tool_steps() -> None:
    # pydantic-ai tests/test_usage_limits.py::test_usage_so_far
    provider = ScriptedProvider([
        calls(("c1", "ping", {}), usage=Usage(input_tokens=100, output_tokens=10)),
        calls(("c2", "ping", {}), usage=Usage(input_tokens=150, output_tokens=20)),
        InferenceResponse.of_text("done", usage=Usage(input_tokens=200, output_tokens=5)),
    ])
    result = arun(Session(Agent("a", provider=provider, tools=[ping])), "go")

    assert (result.usage.input_tokens, result.usage.output_tokens, result.steps) == (450, 35, 3)
    assert [t.usage.input_tokens for t in result.trace if t.kind == "model"] == [100, 150, 200]


def test_a_failed_awaited_run_says_what_it_spent_before_failing() -> None:
    # openai-agents tests/test_run_error_details.py::test_run_error_includes_data
    provider = ScriptedProvider([
        calls(("c1", "ping", {}), usage=Usage(input_tokens=10, output_tokens=2)),
        calls(("c2", "ping", {}), usage=Usage(input_tokens=20, output_tokens=3)),
        AgentError("model overloaded", kind=ErrorKind.AGENT),
    ])
    with pytest.raises(AgentError, match="overloaded") as caught:
        arun(Session(Agent("a", provider=provider, tools=[ping])), "go")
    assert caught.value.usage is not None
    assert (caught.value.usage.input_tokens, caught.value.usage.output_tokens) == (30, 5)


# -- concurrency --------------------------------------------------------------------


@tool
async def nap(seconds: float, tag: str) -> str:
    """Sleep, then say the tag."""
    await asyncio.sleep(seconds)
    return tag


def test_async_tools_of_one_step_run_concurrently_and_come_back_in_call_order() -> None:
    # openai-agents tests/test_agent_runner.py::test_multiple_tool_calls (results in call order)
    provider = ScriptedProvider([
        calls(("c1", "nap", {"seconds": 0.4, "tag": "A"}), ("c2", "nap", {"seconds": 0.0, "tag": "B"}),
              ("c3", "nap", {"seconds": 0.4, "tag": "C"})),
        "ABC",
    ])
    started = time.perf_counter()
    result = arun(Session(Agent("a", provider=provider, tools=[nap])), "go")

    assert time.perf_counter() - started < 0.75  # 0.4 s together, not 0.8 s one after another
    assert [c.output for c in result.tool_calls] == ["A", "B", "C"]
    assert [(b.tool_use_id, b.content) for b in provider.requests[1].messages[-1].content] == [
        ("c1", "A"), ("c2", "B"), ("c3", "C")]


def test_tool_concurrency_one_runs_the_async_tools_of_a_step_one_after_another() -> None:
    # pydantic-ai tests/test_concurrency.py (a concurrency limit of one serialises the work)
    provider = ScriptedProvider([
        calls(("c1", "nap", {"seconds": 0.2, "tag": "A"}), ("c2", "nap", {"seconds": 0.2, "tag": "B"})), "AB"])
    started = time.perf_counter()
    result = arun(Session(Agent("a", provider=provider, tools=[nap], tool_concurrency=1)), "go")

    assert time.perf_counter() - started >= 0.38
    assert [c.output for c in result.tool_calls] == ["A", "B"]


def test_concurrent_awaited_sessions_sharing_one_provider_each_get_their_own_answer_at_once() -> None:
    # pydantic-ai tests/test_concurrency.py (one model shared by concurrent runs)
    provider = ScriptedProvider([lambda r: f"echo {r.messages[-1].text}"], cycle=True, latency_s=0.4)
    agent = Agent("a", provider=provider)

    async def main() -> list[str]:
        results = await asyncio.gather(*(Session(agent).arun(f"m{i}") for i in range(6)))
        return [r.response for r in results]

    started = time.perf_counter()
    assert asyncio.run(main()) == [f"echo m{i}" for i in range(6)]
    assert time.perf_counter() - started < 1.6  # together: 0.4 s, not 2.4 s
    assert provider.calls == 6


def test_a_second_awaited_message_on_a_busy_session_is_refused_and_the_first_finishes() -> None:
    # openai-agents tests/test_agent_runner.py (one conversation, one run at a time)
    session = Session(Agent("a", provider=ScriptedProvider(["first"], latency_s=0.3)))

    async def main() -> str:
        first = asyncio.ensure_future(session.arun("one"))
        await asyncio.sleep(0.05)
        with pytest.raises(RuntimeError, match="already running a message"):
            await session.arun("two")
        return (await first).response

    assert asyncio.run(main()) == "first"
    assert [m.text for m in session.history] == ["one", "first"]


def test_multi_turn_awaited_runs_send_the_earlier_turns() -> None:
    # openai-agents tests/test_agent_runner.py::test_subsequent_runs
    provider = ScriptedProvider(["Hi Ada.", "Your name is Ada."])
    session = Session(Agent("a", provider=provider))

    async def main() -> str:
        await session.arun("I am Ada.")
        return (await session.arun("What is my name?")).response

    assert asyncio.run(main()) == "Your name is Ada."
    assert [m.text for m in provider.requests[1].messages] == ["I am Ada.", "Hi Ada.", "What is my name?"]


def test_an_awaited_run_gives_its_metadata_to_async_tools() -> None:
    # pydantic-ai tests/test_tools.py::test_tool_ctx (deps reach the tool through RunContext)
    seen: list[Any] = []

    @tool
    async def whoami(ctx: ToolContext) -> str:
        """Who is asking."""
        seen.append((ctx.agent, dict(ctx.metadata)))
        return str(ctx.metadata["user"])

    provider = ScriptedProvider([calls(("c1", "whoami", {})), "You are u1."])
    arun(Session(Agent("helper", provider=provider, tools=[whoami])), "who am I?", metadata={"user": "u1"})
    assert seen == [("helper", {"user": "u1"})]


class AnswersOnly:
    """A provider of the user's own that implements run_inference only."""

    id = "answers-only"

    def run_inference(self, request: InferenceRequest) -> InferenceResponse:
        return InferenceResponse.of_text("an answer")


@pytest.mark.parametrize("driver", ["run_stream", "astream"])
def test_streaming_a_provider_without_stream_inference_fails_clearly_and_the_session_goes_on(driver: str) -> None:
    # pydantic-ai tests/models/test_model_function.py (a FunctionModel without stream_function refuses
    # a streamed request, saying what to give it)
    session = Session(Agent("a", provider=AnswersOnly()))

    async def astream() -> None:
        async for _ in session.astream("go"):
            pass

    with pytest.raises(AgentError, match=r"'answers-only'.*stream_inference") as caught:
        list(session.run_stream("go")) if driver == "run_stream" else asyncio.run(astream())
    assert caught.value.kind is ErrorKind.INVALID
    assert "run(" in str(caught.value)  # the way out: a run not streamed
    assert session.run("again").response == "an answer"


def test_a_history_ending_in_unanswered_tool_calls_is_closed_or_refused_before_any_request() -> None:
    # pydantic-ai tests/test_agent.py (a new prompt after unprocessed tool calls in message_history is refused)
    dangling = InferenceResponse.of_tool_calls([("c1", "ping", {})]).to_message(sender="a")
    provider = ScriptedProvider(["ok"])
    session = Session(Agent("a", provider=provider, tools=[ping]), history=[Message.user("hi"), dangling])
    try:
        session.run("next")
    except (ValueError, AgentError) as exc:  # refused clearly, naming the unanswered call
        assert "c1" in str(exc) and provider.calls == 0
        return
    sent = provider.requests[0].messages
    after = sent[sent.index(dangling) + 1] if dangling in sent else sent[2]
    assert [b.tool_use_id for b in after.content if b.type == "tool_result"] == ["c1"]


@pytest.mark.parametrize("driver", ["run", "arun"])
def test_unanswered_tool_calls_of_a_given_history_are_answered_as_unknown_before_the_new_message(driver: str) -> None:
    dangling = InferenceResponse.of_tool_calls([("c1", "ping", {}), ("c2", "ping", {"times": 2})]).to_message(sender="a")
    provider = ScriptedProvider(["ok"])
    session = Session(Agent("a", provider=provider, tools=[ping]), history=[Message.user("hi"), dangling])

    result = session.run("next") if driver == "run" else asyncio.run(session.arun("next"))

    assert result.response == "ok"
    sent = provider.requests[0].messages
    assert [m.role.value for m in sent] == ["user", "assistant", "user", "user"]
    closed = sent[2].tool_results_blocks
    assert [(b.tool_use_id, b.is_error) for b in closed] == [("c1", True), ("c2", True)]
    assert all("never answered (a new message came first)" in (b.content or "") for b in closed)
    assert sent[3].text == "next" and session.history[:4] == sent
