"""More of instructor's tests (instructor-ai/instructor tests/llm/test_openai/test_parallel.py,
test_multitask.py, test_stream.py, test_hooks.py, tests/core/test_async_validation.py),
ported to our structured output in streams, async sessions, fleets (instructor's batches
and parallel calls), hooks and multi-turn sessions. Models are played by the scripted
provider; see test_peer_instructor.py for the mapping and the differences.

Deliberately different (each test that touches one says so):
- instructor's ``Partial[Model]`` stream yields growing partial objects; our stream yields
  the text deltas and ``result().output`` is the validated object, once.
- instructor's ``parse:error`` hook has no event of ours; a rejected answer shows as a
  second ``model_start``/``model_end`` pair and in the run's trace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from typing import Annotated, Any

import pytest
from pydantic import AfterValidator, BaseModel

from wingman_actors import Agent, Fleet, Session, Task
from wingman_actors.core import InferenceRequest, InferenceResponse, Usage
from wingman_actors.errors import AgentError, ErrorKind
from wingman_actors.events import Event, EventBus
from wingman_actors.testing import ScriptedProvider

PEER = "instructor-ai/instructor"


def uppercase(v: str) -> str:
    if v.islower():
        raise ValueError("name must be uppercase")
    return v


class User(BaseModel):
    name: Annotated[str, AfterValidator(uppercase)]
    age: int


def per_task(request: InferenceRequest) -> str:
    """Answers the task's own user: lower case the first time, corrected when told."""
    first = request.messages[0].text
    name, age = first.split()
    told = any("uppercase" in m.text for m in request.messages[1:] if m.role == "user")
    return f'{{"name": "{name.upper() if told else name}", "age": {age}}}'


def text(answer: str, output_tokens: int = 5) -> InferenceResponse:
    return InferenceResponse.of_text(answer, usage=Usage(input_tokens=10, output_tokens=output_tokens))


@pytest.fixture
def bus() -> Iterator[EventBus]:
    with EventBus() as events:
        yield events


# --- fleets: instructor's parallel and batched extraction -------------------------------------


def test_a_fleet_gives_each_task_its_own_validated_object_in_task_order() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_parallel.py::test_sync_parallel_tools_or."""
    agent = Agent("users", provider=ScriptedProvider([per_task], cycle=True), output_schema=User)
    results = Fleet(agent, [Task("JASON 20"), Task("SARAH 30"), Task("AMY 41")], max_workers=2).run()
    assert [r.result.output for r in results if r.result] == [
        User(name="JASON", age=20), User(name="SARAH", age=30), User(name="AMY", age=41)]


def test_a_fleet_task_that_needs_a_correction_gets_it_without_touching_the_others() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_retries.py::test_upper_case (in a batch)."""
    agent = Agent("users", provider=ScriptedProvider([per_task], cycle=True), output_schema=User)
    results = Fleet(agent, [Task("JASON 20"), Task("sarah 30")]).run()
    assert [r.result.steps for r in results if r.result] == [1, 2]
    assert results[1].result is not None and results[1].result.output == User(name="SARAH", age=30)


def test_a_fleet_task_whose_answer_never_validates_fails_alone_with_an_invalid_error() -> None:
    """Ported from instructor-ai/instructor tests/core/test_retry_json_mode.py::test_validation_error_caught_by_retry (in a batch)."""

    def answer(request: InferenceRequest) -> str:
        return "no json here" if request.messages[0].text == "bad" else '{"name": "OK", "age": 1}'

    agent = Agent("users", provider=ScriptedProvider([answer], cycle=True), output_schema=User)
    good, bad = Fleet(agent, [Task("good"), Task("bad")]).run()
    assert good.result is not None and good.result.output == User(name="OK", age=1)
    assert isinstance(bad.error, AgentError) and bad.error.kind is ErrorKind.INVALID
    assert bad.usage.output_tokens > 0  # both calls were paid for


def test_an_async_fleet_validates_every_task() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_parallel.py::test_async_parallel_tools_or."""
    agent = Agent("users", provider=ScriptedProvider([per_task], cycle=True), output_schema=User)
    results = asyncio.run(Fleet(agent, [Task("ADA 36"), Task("bob 7")]).arun())
    assert [r.result.output for r in results if r.result] == [User(name="ADA", age=36), User(name="BOB", age=7)]


def test_a_fleet_with_an_iterable_schema_gives_each_task_a_list() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_multitask.py::test_multi_user_tools_mode_async."""

    def answer(request: InferenceRequest) -> str:
        names = request.messages[0].text.split()
        return "[" + ", ".join(f'{{"name": "{n}", "age": 1}}' for n in names) + "]"

    agent = Agent("users", provider=ScriptedProvider([answer], cycle=True), output_schema=Iterable[User])
    results = Fleet(agent, [Task("JASON SARAH"), Task("AMY")]).run()
    assert [[u.name for u in r.result.output] for r in results if r.result] == [["JASON", "SARAH"], ["AMY"]]


# --- streams and async sessions -------------------------------------------------------------------


def test_a_streamed_answer_that_needs_a_correction_streams_both_answers_and_ends_validated() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_stream.py::test_partial_model (with a reask).

    instructor's Partial yields partial objects; ours yields text deltas, then result()."""
    agent = Agent("u", provider=ScriptedProvider(['{"name": "jason", "age": 20}', '{"name": "JASON", "age": 20}']),
                  output_schema=User)
    stream = Session(agent).run_stream("Extract")
    events = list(stream)
    assert [e.type for e in events].count("message_start") == 2
    result = stream.result()
    assert result.output == User(name="JASON", age=20) and result.steps == 2


def test_a_stream_whose_answer_never_validates_raises_from_result() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_stream.py (a stream that fails validation)."""
    agent = Agent("u", provider=ScriptedProvider(["nope", "still nope"]), output_schema=User)
    stream = Session(agent).run_stream("Extract")
    with pytest.raises(AgentError, match="does not match the output schema") as info:
        for _ in stream:
            pass
        stream.result()
    assert info.value.kind is ErrorKind.INVALID


def test_an_async_session_validates_and_corrects_like_a_blocking_one() -> None:
    """Ported from instructor-ai/instructor tests/core/test_async_validation.py (async validators reask)."""
    provider = ScriptedProvider(['{"name": "ada", "age": 36}', '{"name": "ADA", "age": 36}'])
    result = asyncio.run(Session(Agent("u", provider=provider, output_schema=User)).arun("Extract"))
    assert result.output == User(name="ADA", age=36)
    assert "name: Value error, name must be uppercase" in provider.requests[1].messages[-1].text


def test_an_async_stream_ends_with_the_validated_object() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_stream.py::test_partial_model_async (assembled)."""
    session = Session(Agent("u", provider=ScriptedProvider(['{"name": "ADA", "age": 36}']), output_schema=User))

    async def main() -> Any:
        stream = session.astream("Extract")
        async for _ in stream:
            pass
        return stream.result()

    assert asyncio.run(main()).output == User(name="ADA", age=36)


# --- hooks, traces and multi-turn --------------------------------------------------------------------


def test_hooks_see_the_rejected_answer_and_the_corrected_one_as_two_model_calls(bus: EventBus) -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_hooks.py (completion:response per attempt, parse:error).

    We have no parse-error event: the rejected answer is the first model_end's response."""
    seen: list[Event] = []
    bus.subscribe(["model_start", "model_end"], seen.append)
    agent = Agent("u", provider=ScriptedProvider(['{"name": "ada", "age": 1}', '{"name": "ADA", "age": 1}']),
                  output_schema=User, events=bus)
    Session(agent).run("Extract")
    assert bus.flush(5)
    assert [(e.kind, e.step) for e in seen] == [("model_start", 1), ("model_end", 1), ("model_start", 2),
                                                ("model_end", 2)]
    assert seen[1].response is not None and seen[1].response.text == '{"name": "ada", "age": 1}'


def test_the_trace_records_the_rejected_answer_and_the_accepted_one() -> None:
    """Ported from instructor-ai/instructor tests/core/test_exceptions.py (failed_attempts keep each completion)."""
    provider = ScriptedProvider([text('{"name": "ada", "age": 1}', 4), text('{"name": "ADA", "age": 1}', 6)])
    result = Session(Agent("u", provider=provider, output_schema=User)).run("Extract")
    assert [(s.output, s.usage.output_tokens if s.usage else None) for s in result.trace] == [
        ('{"name": "ada", "age": 1}', 4), ('{"name": "ADA", "age": 1}', 6)]


def test_a_second_turn_is_validated_again_and_sees_the_first_turns_answer() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_patch.py (a second create on the same messages)."""
    provider = ScriptedProvider(['{"name": "ADA", "age": 36}', '{"name": "ada", "age": 37}',
                                 '{"name": "ADA", "age": 37}'])
    session = Session(Agent("u", provider=provider, output_schema=User))
    assert session.run("Extract").output == User(name="ADA", age=36)
    assert session.run("A year later?").output == User(name="ADA", age=37)
    assert [m.text for m in provider.requests[1].messages] == ["Extract", '{"name": "ADA", "age": 36}', "A year later?"]
    assert len(provider.requests) == 3


def test_a_corrected_run_does_not_leave_its_correction_budget_spent_for_the_next_turn() -> None:
    """Ported from instructor-ai/instructor tests/core/test_retry_n_attempts.py (each create has its own attempts)."""
    provider = ScriptedProvider(['{"name": "ada", "age": 1}', '{"name": "ADA", "age": 1}',
                                 '{"name": "bob", "age": 2}', '{"name": "BOB", "age": 2}'])
    session = Session(Agent("u", provider=provider, output_schema=User))
    assert session.run("first").output == User(name="ADA", age=1)
    assert session.run("second").output == User(name="BOB", age=2)
