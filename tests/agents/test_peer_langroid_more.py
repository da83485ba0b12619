"""More of Langroid's tests (langroid/langroid tests/main/test_context_truncation.py, test_batch.py,
test_structured_output.py, test_task.py, test_llm.py, test_tool_messages.py), ported: a long history
fitted to the context window (our ``context_budget``), a history that can never fit, a batch whose
input map fails on one item, typed tasks under a step limit and inside a formation's retries,
sub-tasks given no work, cached answers (our recorded cassettes), and tool calls with nested,
optional or no arguments. Models are played by the scripted provider."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel

from wingman_actors import Agent, Fleet, Formation, Session, tool
from wingman_actors.agents import estimate_request
from wingman_actors.core import InferenceRequest, InferenceResponse, Message
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.orchestration import AgentRegistry
from wingman_actors.testing import ScriptedProvider


def calls(*triples: tuple[str, str, dict[str, object]]) -> InferenceResponse:
    """One model answer calling these tools: ``(id, name, input)`` each."""
    return InferenceResponse.of_tool_calls(list(triples))


def words(n: int) -> str:
    """Langroid's ``("word " * n).strip()``."""
    return ("word " * n).strip()


def long_history(turns: int, words_each: int) -> list[Message]:
    """Langroid's ``_fill_history``: alternating user and assistant messages of ``words_each`` words."""
    return [Message.user(words(words_each)) if i % 2 == 0 else Message.assistant(words(words_each)) for i in range(turns)]


# -- context windows -----------------------------------------------------------------------------


def test_a_history_over_the_context_budget_is_fitted_under_it_before_the_model_call() -> None:
    """From langroid tests/main/test_context_truncation.py::test_truncation_fits_within_context (after
    truncation the history fits the context budget)."""
    model = ScriptedProvider(["ok"])
    session = Session(Agent("TruncAgent", instructions="You are a helpful assistant.", provider=model, context_budget=1_500),
                      history=long_history(6, 300))
    session.run("Final question")

    assert estimate_request(model.requests[0]) <= 1_500
    assert len(session.history) == 8  # the session keeps everything; only the request is fitted


def test_fitting_keeps_the_instructions_the_first_and_the_last_user_message_unchanged() -> None:
    """From langroid tests/main/test_context_truncation.py::test_truncation_preserves_system_and_last_message
    (the system message and the final user message are never modified). Ours also keeps the first
    user message, and leaves older turns out whole instead of truncating them."""
    model = ScriptedProvider(["ok"])
    history = long_history(6, 300)
    agent = Agent("TruncAgent", instructions="You are a helpful assistant.", provider=model, context_budget=1_500)
    Session(agent, history=history).run("FINAL distinct user question")

    request = model.requests[0]
    assert request.instructions == "You are a helpful assistant."
    assert request.messages[0].text == history[0].text
    assert request.messages[-1].text == "FINAL distinct user question"
    kept = {m.text for m in history}
    assert all(m.text in kept for m in request.messages[:-1])  # nothing cut inside a message


def test_small_turns_between_large_ones_survive_the_fitting_intact() -> None:
    """From langroid tests/main/test_context_truncation.py::test_truncation_with_tiny_interleaved_messages
    (tiny messages are left intact while the large ones absorb the excess; no error)."""
    model = ScriptedProvider(["ok"])
    history = [Message.user(words(400)), Message.assistant("ok"), Message.user(words(400)), Message.assistant("ok")]
    Session(Agent("TruncAgent", provider=model, context_budget=700), history=history).run("Final question")

    request = model.requests[0]
    assert estimate_request(request) <= 700
    assert request.messages[-1].text == "Final question"
    assert all(m.text == "ok" for m in request.messages if m.role == "assistant")


def test_a_history_that_can_never_fit_fails_before_any_model_call() -> None:
    """From langroid tests/main/test_context_truncation.py::test_truncation_raises_when_impossible
    (a context that cannot be made to fit raises). Ours: ``AgentError(kind=invalid)``, no call made."""
    model = ScriptedProvider(["never"])
    with pytest.raises(AgentError) as caught:
        Session(Agent("TruncAgent", provider=model, context_budget=300)).run(words(2_000))

    assert caught.value.kind is ErrorKind.INVALID and model.calls == 0


# -- batches and typed tasks ---------------------------------------------------------------------


def test_a_batch_whose_input_map_fails_on_one_item_fails_only_that_item() -> None:
    """From langroid tests/main/test_batch.py::test_process_batch_async_basic (one task of the batch
    raises; with exceptions handled, the others' results are kept). Here the failing part is the
    ``input_map`` (our ``render``)."""

    def render(item: int) -> str:
        if item == 1:
            raise ValueError("bad item 1")
        return str(item)

    model = ScriptedProvider(["ok"], cycle=True)
    results = Fleet(Agent("Test", provider=model), [0, 1, 2], render=render).run()

    assert [r.ok for r in results] == [True, False, True]
    assert "bad item 1" in str(results[1].error) and model.calls == 2


def test_an_awaited_batch_keeps_each_tasks_exception_beside_the_others_results() -> None:
    """From langroid tests/main/test_batch.py::test_process_batch_async_basic
    (``ExceptionHandling.RETURN_EXCEPTION`` on the async path)."""

    def answer(request: InferenceRequest) -> str:
        if request.messages[-1].text == "b":
            raise RuntimeError("Task failed")
        return f"Processed {request.messages[-1].text}"

    agent = Agent("Test", provider=ScriptedProvider([answer], cycle=True))
    results = asyncio.run(Fleet(agent, ["a", "b", "c"]).arun())

    assert [r.response for r in results] == ["Processed a", "", "Processed c"]
    assert isinstance(results[1].error, RuntimeError) and str(results[1].error) == "Task failed"
    assert type(results[1].error) is type(Fleet(agent, ["b"]).run()[0].error)  # as the blocking run gives it


class Number(BaseModel):
    n: int


@tool
def look(x: int) -> int:
    """Look a number up."""
    return x


def test_a_typed_task_that_reaches_its_turn_limit_still_returns_its_type() -> None:
    """From langroid tests/main/test_task.py::test_task_tool_num with ``default_return_type`` (a task
    bounded by ``turns`` still converts its last answer to the typed result)."""
    model = ScriptedProvider([calls(("c", "look", {"x": 1}))] * 2 + ['{"n": 5}'])
    result = Session(Agent("Test", provider=model, tools=[look], max_steps=2, output_schema=Number)).run("go")

    assert result.max_steps_reached and result.output == Number(n=5)


def test_a_typed_agent_node_that_answers_badly_twice_gets_a_fresh_session_from_its_retry() -> None:
    """From langroid tests/main/test_structured_output.py::test_llm_strict_json with
    test_task.py::test_task_tool_responses (``processor_task[int]``: a typed task inside a larger
    one). Ours: the ``invalid`` error is retryable, so the node's ``retries`` give the agent a fresh
    session, whose answer is used."""
    model = ScriptedProvider(["bad", "bad", '{"n": 3}'])
    graph = Formation("typed").add_agent("ask", Agent("Test", provider=model, output_schema=Number), retries=1, backoff=0)
    result = graph.run("x")

    assert result.output == Number(n=3) and result.nodes["ask"].attempts == 2
    assert [m.text for m in model.requests[2].messages] == ["x"]  # the retry starts over


def test_a_sub_task_list_that_is_empty_is_a_tool_error_the_model_can_fix() -> None:
    """From langroid tests/main/test_batch.py::test_run_batch_function (an empty input list gives an
    empty result), for sub-tasks. Ours differs: ``delegate`` with no tasks is refused as invalid
    arguments, which the model can fix."""
    registry = AgentRegistry()
    registry.register(Agent("Sub", provider=ScriptedProvider(["x"])), description="Sub.")
    model = ScriptedProvider([calls(("d", "delegate", {"tasks": []})), "done"])
    result = Session(Agent("Lead", provider=model, delegates=registry)).run("go")

    assert result.tool_calls[0].is_error and "tasks" in result.tool_calls[0].output
    assert result.response == "done"


def test_a_sub_task_may_not_be_the_task_itself() -> None:
    """From langroid tests/main/test_task.py::test_task_2_agent_tool (the requestor hands its tool on
    to another agent's sub-task). Ours: an agent that delegates to itself gets a tool error saying so."""
    registry = AgentRegistry()
    registry.register(Agent("Lead", provider=ScriptedProvider(["x"])), description="Lead.")
    model = ScriptedProvider([calls(("d", "delegate", {"tasks": [{"agent": "Lead", "task": "t"}]})), "done"])
    result = Session(Agent("Lead", provider=model, delegates=registry)).run("go")

    assert result.tool_calls[0].is_error and "itself" in result.tool_calls[0].output


# -- caching: recorded answers -------------------------------------------------------------------


def test_a_recorded_conversation_is_answered_again_from_the_cassette_without_the_model(tmp_path: Path) -> None:
    """From langroid tests/main/test_llm.py::test_openai_gpt (``use_cache``: the repeated chat is
    served from the cache, ``response.cached``). Ours: a ``RecordingProvider``'s cassette, replayed by
    the ``replay`` provider, tool loop included; the model is not called again."""
    from wingman_actors.providers import RecordingProvider, new_provider

    cassette = str(tmp_path / "cassette.jsonl")
    model = ScriptedProvider([calls(("c", "look", {"x": 41})), lambda r: f"looked up {r.messages[-1].content[0].content}"])
    first = Session(Agent("Test", provider=RecordingProvider(model, cassette), tools=[look])).run("look 41 up")
    replayed = Session(Agent("Test", provider=new_provider("replay", {"cassette": cassette}), tools=[look])).run("look 41 up")

    assert replayed.response == first.response == "looked up 41"
    assert model.calls == 2  # the recording's calls only


def test_a_request_the_cassette_never_saw_is_an_error_saying_how_to_record_it(tmp_path: Path) -> None:
    """From langroid tests/main/test_llm.py::test_openai_gpt (a request not seen before is not served
    from the cache). Ours fails the replayed run instead of calling a model, naming the cassette and
    the fix."""
    from wingman_actors.providers import RecordingProvider, new_provider

    cassette = str(tmp_path / "cassette.jsonl")
    Session(Agent("Test", provider=RecordingProvider(ScriptedProvider(["4"]), cassette))).run("2 + 2?")
    with pytest.raises(AgentError) as caught:
        Session(Agent("Test", provider=new_provider("replay", {"cassette": cassette}))).run("3 + 3?")

    assert caught.value.kind is ErrorKind.INVALID
    assert "cassette.jsonl" in str(caught.value) and "RecordingProvider" in str(caught.value)


# -- tool messages: nested arguments, defaults, no arguments, tools in text --------------------------


class NumPair(BaseModel):
    xval: int
    yval: int


@tool
def nabroski(num_pair: NumPair) -> int:
    """Compute the Nabroski transform of a number pair."""
    return 3 * num_pair.xval + num_pair.yval


@tool
def coriolis(cats: int, cows: int = 5) -> int:
    """Compute the Coriolis transform of cats and cows."""
    return 3 * cats + cows


def test_a_nested_argument_missing_a_field_is_an_error_naming_the_argument_and_the_field() -> None:
    """From langroid tests/main/test_tool_messages.py::test_agent_malformed_tool (``num_pair`` without
    ``yval``: the error to the LLM names both)."""
    model = ScriptedProvider([calls(("c1", "nabroski", {"num_pair": {"xval": 1}})), "fixing"])
    result = Session(Agent("Test", provider=model, tools=[nabroski])).run("Nabroski of (1, 2)?")

    call = result.tool_calls[0]
    assert call.is_error and "num_pair" in call.output and "yval" in call.output


def test_a_nested_argument_reaches_the_tool_as_its_model() -> None:
    """From langroid tests/main/test_tool_messages.py::test_tool_no_task (the Nabroski tool of 1 and 2
    is handled: ``3 * num_pair.xval + num_pair.yval`` is 5)."""
    model = ScriptedProvider([calls(("c1", "nabroski", {"num_pair": {"xval": 1, "yval": 2}})), "5"])
    result = Session(Agent("Test", provider=model, tools=[nabroski])).run("Nabroski of (1, 2)?")

    assert result.tool_calls[0].output == "5" and not result.tool_calls[0].is_error


@pytest.mark.parametrize(("args", "expected"), [({"cats": 1}, "8"), ({"cats": 1, "cows": 2}, "5")])
def test_an_optional_tool_argument_left_out_takes_its_default(args: dict[str, object], expected: str) -> None:
    """From langroid tests/main/test_tool_messages.py::test_tool_optional_args and test_llm_tool_task
    (CoriolisTool: ``cows: int = 5`` is optional)."""
    model = ScriptedProvider([calls(("c1", "coriolis", args)), "done"])
    result = Session(Agent("Test", provider=model, tools=[coriolis])).run("Coriolis?")

    assert result.tool_calls[0].output == expected
    schema = model.requests[0].tools[0].input_schema
    assert schema["required"] == ["cats"]


def test_a_tool_without_arguments_is_called_with_an_empty_input_and_answers() -> None:
    """From langroid tests/main/test_tool_messages.py::test_llm_tool_message (PythonVersionMessage has
    no fields; its handler answers 3.9)."""

    @tool
    def python_version() -> str:
        """Check which version of Python is needed."""
        return "3.9"

    model = ScriptedProvider([calls(("c1", "python_version", {})), "3.9 it is"])
    result = Session(Agent("Test", provider=model, tools=[python_version])).run("Which Python?")

    assert result.tool_calls[0].output == "3.9" and result.response == "3.9 it is"


def test_a_tool_call_written_as_json_in_the_answer_text_is_not_run() -> None:
    """From langroid tests/main/test_tool_messages.py::test_agent_handle_message (Langroid finds a
    ``{"request": "file_exists", ...}`` JSON in plain text and handles it as a tool). Ours differs on
    purpose: only the provider's tool calls run; JSON in the answer's text is the answer."""
    ran: list[str] = []

    @tool
    def file_exists(filename: str, recurse: bool) -> str:
        """Check whether a file is in the repo."""
        ran.append(filename)
        return "no"

    text = 'Ok, thank you.\n{"request": "file_exists", "filename": "test.txt", "recurse": true}\nHope you can tell me!'
    model = ScriptedProvider([text])
    result = Session(Agent("Test", provider=model, tools=[file_exists])).run("Is test.txt there?")

    assert result.response == text and result.tool_calls == [] and ran == [] and model.calls == 1
