"""Behaviours of Langroid's own tests (langroid/langroid tests/main/: test_task.py, test_chat_agent.py,
test_tool_messages.py, test_structured_output.py, test_chat_agent_async.py, test_batch.py), ported to one agent's
session: a task's turns bound (our ``max_steps``), a restarted task (a fresh session) against a kept
history, tools handled and their results fed back to the model, malformed and failing tool calls fed
back as errors, a tool that ends the task (our middleware ``Halt``), structured output
(Langroid's ``default_return_type`` and ``output_format``), empty answers, killing a running task
(our ``Session.cancel``) and ``run_async``. Models are played by the scripted provider."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from wingman_actors import Agent, Session, tool
from wingman_actors.agents import Halt, Middleware, RunContext
from wingman_actors.core import ContentBlock, InferenceRequest, InferenceResponse
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.testing import ScriptedProvider


def calls(*triples: tuple[str, str, dict[str, Any]]) -> InferenceResponse:
    """One model answer calling these tools: ``(id, name, input)`` each."""
    return InferenceResponse.of_tool_calls(list(triples))


def last_text(request: InferenceRequest) -> str:
    """The text of the last message of a request (a tool result's content included)."""
    message = request.messages[-1]
    return message.text or " ".join(str(b.content) for b in message.content if b.type == "tool_result")


@tool
def next_num(number: int, successor: int) -> str:
    """Present a number with its successor; answers the successor."""
    return str(successor)


def incrementer(request: InferenceRequest) -> str:
    """Langroid's MockLM ``response_fn=lambda x: int(x) + 1``: the last user message plus one."""
    return str(int(request.messages[-1].text) + 1)


# -- task turns and history ---------------------------------------------------------------------


@pytest.mark.parametrize(("fresh", "messages"), [(True, 2), (False, 4)])
def test_a_restarted_task_forgets_its_history_and_a_kept_one_grows_by_each_turn(fresh: bool, messages: int) -> None:
    """From langroid tests/main/test_task.py::test_task_restart (``restart=True`` erases the agent's
    history between runs: 3 messages with the system one, else 5). Ours: a fresh ``Session`` per run
    restarts, one ``Session`` run twice keeps the history (the instructions are not a message)."""
    agent = Agent("Test", provider=ScriptedProvider([incrementer], cycle=True))
    session = Session(agent)
    assert session.run("4").response == "5"
    if fresh:
        session = Session(agent)
    assert session.run("10").response == "11"

    assert len(session.history) == messages
    assert session.history[-1].text == "11"


def test_a_second_run_of_a_kept_session_sends_the_first_exchange_to_the_model() -> None:
    """From langroid tests/main/test_chat_agent.py::test_responses (after the capital of France, "what
    about England?" is answered from the earlier turn)."""
    model = ScriptedProvider(["Noted.", "Your number is 7."])
    session = Session(Agent("Test", provider=model))
    session.run("Remember: my number is 7.")
    session.run("What is my number?")

    assert [m.text for m in model.requests[1].messages] == ["Remember: my number is 7.", "Noted.", "What is my number?"]


def test_the_instructions_reach_every_model_call_as_the_system_prompt_not_as_history() -> None:
    """From langroid tests/main/test_task.py::test_task_empty_response (the task's ``system_message``
    frames every LLM turn)."""
    model = ScriptedProvider(["4", ""])
    agent = Agent("Test", instructions="Repeat even numbers; answer nothing for odd ones.", provider=model)
    session = Session(agent)
    session.run("4")
    session.run("3")

    assert all(r.instructions == "Repeat even numbers; answer nothing for odd ones." for r in model.requests)
    assert all(m.role != "system" for m in session.history)


def test_an_empty_answer_ends_the_run_with_an_empty_response() -> None:
    """From langroid tests/main/test_task.py::test_task_empty_response (``done_if_no_response=[LLM]``:
    an empty LLM answer ends the task with empty content)."""
    model = ScriptedProvider(["4", ""])
    session = Session(Agent("Test", provider=model))

    assert session.run("4").response == "4"
    result = session.run("3")
    assert (result.response, result.steps, model.calls) == ("", 1, 2)


def test_a_model_that_keeps_calling_a_tool_is_stopped_at_max_steps_with_a_final_answer() -> None:
    """From langroid tests/main/test_task.py::test_task_tool_num (no done signal: the task is bounded
    by ``turns``, and the history grows past 7 messages). Ours: ``max_steps`` bounds the tool loop and
    one last call, offered no tools, gives the answer."""
    model = ScriptedProvider([calls(("c", "next_num", {"number": 100, "successor": 101}))] * 4 + ["101"])
    session = Session(Agent("Test", provider=model, tools=[next_num], max_steps=4))
    result = session.run("100")

    assert result.max_steps_reached and result.response == "101"
    assert len(result.tool_calls) == 4 and model.calls == 5
    assert model.requests[-1].tools == []
    assert len(session.history) > 7


# -- tools ---------------------------------------------------------------------------------------


def test_a_tool_result_goes_back_to_the_model_which_then_answers_with_it() -> None:
    """From langroid tests/main/test_task.py::test_task_tool_num (LLM -> tool -> agent handles it
    and answers the successor -> the LLM says it is done with 101)."""
    model = ScriptedProvider([calls(("c1", "next_num", {"number": 100, "successor": 101})), lambda r: f"DONE {last_text(r)}"])
    result = Session(Agent("Test", provider=model, tools=[next_num])).run("100")

    assert result.response == "DONE 101"
    assert [(c.name, c.input, c.output) for c in result.tool_calls] == [("next_num", {"number": 100, "successor": 101}, "101")]


def test_a_tool_call_missing_a_required_field_is_fed_back_naming_the_field_and_the_model_retries() -> None:
    """From langroid tests/main/test_tool_messages.py::test_handle_bad_tool_message (a correct tool
    name with a missing argument gets an error naming the field back to the LLM, so it can fix its
    call)."""
    model = ScriptedProvider([
        calls(("c1", "next_num", {"number": 100})),
        calls(("c2", "next_num", {"number": 100, "successor": 101})),
        "101",
    ])
    result = Session(Agent("Test", provider=model, tools=[next_num])).run("100")

    first, second = result.tool_calls
    assert first.is_error and "successor" in first.output
    assert not second.is_error and second.output == "101"
    assert result.response == "101"


def test_a_tool_call_with_a_wrongly_typed_field_is_an_error_result_and_the_tool_never_runs() -> None:
    """From langroid tests/main/test_tool_messages.py::test_agent_malformed_tool (a malformed tool call
    is answered with an error naming its field, and its handler is not called)."""
    ran: list[Any] = []

    @tool
    def square(number: int) -> int:
        """Square a number."""
        ran.append(number)
        return number * number

    model = ScriptedProvider([calls(("c1", "square", {"number": "many"})), "I could not."])
    result = Session(Agent("Test", provider=model, tools=[square])).run("square many")

    assert result.tool_calls[0].is_error and "number" in result.tool_calls[0].output
    assert ran == []


def test_a_call_of_a_tool_the_agent_does_not_have_is_an_error_naming_the_tools_it_has() -> None:
    """From langroid tests/main/test_tool_messages.py::test_agent_handle_message (a tool the agent does
    not handle is not run) and test_task.py::test_task_2_agent_2_tool's ``handle_message_fallback``
    (the LLM is told which tools to use)."""
    model = ScriptedProvider([calls(("c1", "polinsky", {"number": 3})), "Using next_num instead."])
    result = Session(Agent("Test", provider=model, tools=[next_num])).run("3")

    call = result.tool_calls[0]
    assert call.is_error and "polinsky" in call.output and "next_num" in call.output
    assert result.response == "Using next_num instead."


def test_a_tool_that_raises_gives_the_model_its_error_and_the_run_goes_on() -> None:
    """From langroid tests/main/test_batch.py::test_task_gen_batch_exceptions (a tool handler raises
    "disaster"; in Langroid the exception leaves the task, for the batch runner to handle). Ours
    differs on purpose (docs/agents.md, Tools): a raising tool is an error result the model sees,
    and the run goes on."""

    @tool
    def compute(value: int) -> int:
        """Compute an unknown function of the input."""
        raise RuntimeError("disaster at " + str(value))

    model = ScriptedProvider([calls(("c1", "compute", {"value": 3})), lambda r: f"saw: {last_text(r)}"])
    result = Session(Agent("Test", provider=model, tools=[compute])).run("3")

    assert result.tool_calls[0].is_error and "disaster at 3" in result.tool_calls[0].output
    assert result.response.startswith("saw:") and "disaster at 3" in result.response


def test_several_tool_calls_in_one_answer_all_run_and_return_in_call_order() -> None:
    """From langroid tests/main/test_tool_messages.py::test_multi_tool (Nabroski and Gauss tools in one
    LLM message: both are handled and both results come back)."""
    gate = threading.Event()

    @tool
    def slow_double(x: int) -> int:
        """Double x, slowly."""
        gate.wait(5)
        return 2 * x

    @tool
    def halve(x: int) -> int:
        """Halve x."""
        gate.set()
        return x // 2

    model = ScriptedProvider([calls(("a", "slow_double", {"x": 3}), ("b", "halve", {"x": 16})), "6 and 8"])
    result = Session(Agent("Test", provider=model, tools=[slow_double, halve])).run("3 and 16")

    assert [(c.id, c.output) for c in result.tool_calls] == [("a", "6"), ("b", "8")]
    results = [b for b in model.requests[1].messages[-1].content if b.type == "tool_result"]
    assert [b.tool_use_id for b in results] == ["a", "b"]


def test_a_tool_may_return_any_json_value_and_the_model_gets_it_as_json() -> None:
    """From langroid tests/main/test_tool_messages.py::test_tool_handlers_and_results (a handler may
    return an int, a list, a dict or a pydantic object) and test_task.py::test_task_tool_responses."""

    @tool
    def stats(x: int) -> dict[str, int]:
        """Half and double of x."""
        return {"half": x // 2, "double": 2 * x}

    model = ScriptedProvider([calls(("c1", "stats", {"x": 16})), lambda r: last_text(r)])
    result = Session(Agent("Test", provider=model, tools=[stats])).run("16")

    assert json.loads(result.tool_calls[0].output) == {"half": 8, "double": 32}
    assert json.loads(result.response) == {"half": 8, "double": 32}


class DoneAfter(Middleware):
    """Langroid's ``DoneTool`` returned by a handler: after the tool named ``name`` the run ends."""

    def __init__(self, name: str) -> None:
        self.name = name

    def after_tool(self, ctx: RunContext, call: ContentBlock, result: ContentBlock) -> ContentBlock | None:
        if call.name == self.name:
            raise Halt(f"done: {result.content}")
        return None


def test_a_tool_that_ends_the_task_stops_the_run_without_another_model_call() -> None:
    """From langroid tests/main/test_task.py::test_task_tool_agent_response (a handler returning
    ``DoneTool`` ends the task, no further LLM turn). Ours has no done tool: a middleware's
    ``after_tool`` raises ``Halt``, whose reason carries the tool's result."""
    model = ScriptedProvider([calls(("c1", "next_num", {"number": 100, "successor": 101})), "never asked"])
    agent = Agent("Test", provider=model, tools=[next_num], middleware=[DoneAfter("next_num")])
    with pytest.raises(Halt) as caught:
        Session(agent).run("100")

    assert caught.value.reason == "done: 101"
    assert model.calls == 1


def test_a_tool_that_ends_the_task_leaves_the_session_usable_for_the_next_run() -> None:
    """From langroid tests/main/test_task.py::test_task_tool_responses (the processor task is run
    again after a sub-tool ended it: ``processor_task.run(str(16))``)."""
    model = ScriptedProvider([calls(("c1", "next_num", {"number": 1, "successor": 2})), "again"])
    session = Session(Agent("Test", provider=model, tools=[next_num], middleware=[DoneAfter("next_num")]))
    with pytest.raises(Halt):
        session.run("1")

    assert session.run("2").response == "again"
    assert session.history[-2].text == "2" and model.calls == 2


# -- structured output ---------------------------------------------------------------------------


def test_a_task_with_an_int_return_type_gives_the_int() -> None:
    """From langroid tests/main/test_task.py::test_task_tool_responses (``processor_task[int].run(10)
    == 11``) and test_batch.py's ``task[str]``: a typed task returns its type."""
    agent = Agent("Test", provider=ScriptedProvider([incrementer]), output_schema=int)
    result = Session(agent).run("10")

    assert result.output == 11 and isinstance(result.output, int)


class Answer(BaseModel):
    answer: int


def test_a_structured_answer_that_does_not_validate_gets_one_corrective_retry_with_the_error() -> None:
    """From langroid tests/main/test_structured_output.py::test_llm_strict_json (``agent[Model]`` gives
    an object of that type; Langroid relies on the API's strict JSON mode). Ours validates the answer
    and sends a malformed one back once with the error; the retried answer is used."""
    model = ScriptedProvider(['{"answer": "many"}', '{"answer": 42}'])
    result = Session(Agent("Test", provider=model, output_schema=Answer)).run("the answer?")

    assert result.output == Answer(answer=42)
    assert model.calls == 2 and "answer" in last_text(model.requests[1])


def test_a_structured_answer_that_fails_twice_is_an_invalid_error_with_the_last_answer() -> None:
    """From langroid tests/main/test_structured_output.py::test_llm_strict_json (a typed response must
    be of its type). Ours gives up after one corrective retry: ``AgentError(kind=invalid)`` carrying
    the model's last answer."""
    model = ScriptedProvider(["not json", "still not json", "never asked"])
    with pytest.raises(AgentError) as caught:
        Session(Agent("Test", provider=model, output_schema=Answer)).run("the answer?")

    assert caught.value.kind is ErrorKind.INVALID and caught.value.answer == "still not json"
    assert model.calls == 2


def test_a_structured_answer_after_a_sequence_of_tool_calls_is_computed_from_their_results() -> None:
    """From langroid tests/main/test_task.py::test_task_output_format_sequence (multiply, increment,
    power tools in sequence compute (3x+1)**4, returned as an int)."""

    @tool
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        return a * b

    @tool
    def increment(x: int) -> int:
        """Increment an integer."""
        return x + 1

    @tool
    def power(x: int, y: int) -> int:
        """Compute x ** y."""
        return int(x**y)

    x = 4
    model = ScriptedProvider([
        calls(("m", "multiply", {"a": 3, "b": x})),
        lambda r: calls(("i", "increment", {"x": int(last_text(r))})),
        lambda r: calls(("p", "power", {"x": int(last_text(r)), "y": 4})),
        lambda r: last_text(r),
    ])
    result = Session(Agent("Test", provider=model, tools=[multiply, increment, power], output_schema=int)).run(str(x))

    assert result.output == (3 * x + 1) ** 4
    assert [c.name for c in result.tool_calls] == ["multiply", "increment", "power"]


# -- killing a task, async runs ------------------------------------------------------------------


def test_a_running_task_can_be_killed_from_another_thread_and_says_it_was_cancelled() -> None:
    """From langroid tests/main/test_task.py::test_task_kill (``task.kill()`` while ``run_async`` loops
    ends it with status KILL)."""
    entered, release = threading.Event(), threading.Event()

    @tool
    def wait() -> str:
        """Wait until released."""
        entered.set()
        release.wait(5)
        return "woke"

    session = Session(Agent("Test", provider=ScriptedProvider([calls(("w", "wait", {}))], cycle=True), tools=[wait]))
    def kill() -> None:
        if entered.wait(5):
            session.cancel()

    killer = threading.Thread(target=kill)
    killer.start()
    try:
        with pytest.raises(AgentError) as caught:
            session.run("hi")
    finally:
        killer.join()
        release.set()

    assert caught.value.kind is ErrorKind.CANCELLED


def test_a_killed_session_runs_again_on_the_next_message() -> None:
    """From langroid tests/main/test_task.py::test_task_kill (the same task is started again after
    its kill, and runs)."""
    entered, release = threading.Event(), threading.Event()

    @tool
    def wait() -> str:
        """Wait until released."""
        entered.set()
        release.wait(5)
        return "woke"

    model = ScriptedProvider([calls(("w", "wait", {})), "back again"])
    session = Session(Agent("Test", provider=model, tools=[wait]))
    def kill() -> None:
        if entered.wait(5):
            session.cancel()

    killer = threading.Thread(target=kill)
    killer.start()
    try:
        with pytest.raises(AgentError):
            session.run("hi")
    finally:
        killer.join()
        release.set()

    assert session.run("hi again").response == "back again"


def test_run_async_gives_the_same_answer_as_run() -> None:
    """From langroid tests/main/test_chat_agent_async.py::test_chat_agent_async (``llm_response_async``
    / ``task.run_async`` answer as the sync path does)."""
    model = ScriptedProvider([calls(("c1", "next_num", {"number": 1, "successor": 2})), lambda r: last_text(r)], cycle=True)
    agent = Agent("Test", provider=model, tools=[next_num])

    sync = Session(agent).run("1")
    awaited = asyncio.run(Session(agent).arun("1"))
    assert (awaited.response, awaited.steps, len(awaited.tool_calls)) == (sync.response, sync.steps, 1) == ("2", 2, 1)


def test_concurrent_async_runs_of_one_agent_keep_their_own_histories() -> None:
    """From langroid tests/main/test_chat_agent_async.py::test_chat_agent_async_concurrent and
    test_task_concurrent (several agents' ``run_async`` at once, each answering its own question)."""
    agent = Agent("Test", provider=ScriptedProvider([incrementer], cycle=True))

    async def main() -> list[tuple[str, int]]:
        sessions = [Session(agent) for _ in range(5)]
        results = await asyncio.gather(*(s.arun(str(i)) for i, s in enumerate(sessions)))
        return [(r.response, len(s.history)) for r, s in zip(results, sessions, strict=True)]

    assert asyncio.run(main()) == [(str(i + 1), 2) for i in range(5)]
