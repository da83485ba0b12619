"""instructor's structured outputs inside formations (instructor-ai/instructor
tests/llm/test_openai/test_multitask.py, test_retries.py, tests/dsl/test_union_pipe.py,
tests/cache/ where a result is kept and not asked for again): an agent node's validated
object flows to the next node, is routed on by its type, is journalled and restored on
resume without a new model call (SQLite and PostgreSQL stores), and crosses to Ray nodes.
Models are played by the scripted provider.

Deliberately different: instructor's cache keys a response by the call's arguments and
response_model; our run store journals a node visit's validated object, and ``resume``
reuses it (a new run asks again).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

import pytest
from pydantic import AfterValidator, BaseModel

from tests.support.peers import Counter, local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Formation
from wingman_actors.errors import AgentError, ErrorKind, FormationRuntimeError, FormationSetupError
from wingman_actors.store import RunStore
from wingman_actors.testing import ScriptedProvider

PEER = "instructor-ai/instructor"


def uppercase(v: str) -> str:
    if v.islower():
        raise ValueError("name must be uppercase")
    return v


class User(BaseModel):
    name: Annotated[str, AfterValidator(uppercase)]
    age: int


class Refusal(BaseModel):
    reason: str


def greet(user: User) -> str:
    return f"hello {user.name} ({user.age})"


def count(users: list[User]) -> int:
    return len(users)


def extractor(*answers: str, schema: Any = User) -> Agent:
    return Agent("extract", provider=ScriptedProvider(list(answers)), output_schema=schema)


# --- threads ----------------------------------------------------------------------------------------


def test_an_agent_nodes_validated_object_is_the_next_nodes_typed_input() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_patch.py::test_runmodel (the object, downstream)."""
    f = Formation("f").add_agent("extract", extractor('{"name": "JASON", "age": 25}')).add_function("greet", greet)
    assert f.connect("extract", "greet").run("Jason is 25").output == "hello JASON (25)"


def test_an_agent_nodes_corrected_answer_flows_on_and_its_trace_counts_both_calls() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_retries.py::test_upper_case (in a formation)."""
    f = (Formation("f").add_agent("extract", extractor('{"name": "jason", "age": 25}', '{"name": "JASON", "age": 25}'))
         .add_function("greet", greet).connect("extract", "greet"))
    result = f.run("Jason is 25")
    assert result.output == "hello JASON (25)"
    assert result.nodes["extract"].attempts == 1 and result.nodes["extract"].usage.output_tokens > 0


def test_an_agent_node_whose_answers_never_validate_fails_the_run_naming_the_node_and_the_problem() -> None:
    """Ported from instructor-ai/instructor tests/core/test_retry_json_mode.py::test_validation_error_caught_by_retry (in a formation)."""
    f = Formation("f").add_agent("extract", extractor('{"name": "J"}', '{"name": "J"}')).add_function("greet", greet)
    with pytest.raises(FormationRuntimeError, match=r"extract") as info:
        f.connect("extract", "greet").run("x")
    cause = info.value.__cause__
    assert isinstance(cause, AgentError) and cause.kind is ErrorKind.INVALID
    assert "age: Field required" in str(cause)


def test_a_node_retry_gives_an_agent_whose_answers_never_validated_a_fresh_session() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_retries.py::test_upper_case_tenacity (an outer retry)."""
    provider = ScriptedProvider(['{"name": "J"}', '{"name": "J"}', '{"name": "JO", "age": 3}'])
    f = (Formation("f").add_agent("extract", Agent("extract", provider=provider, output_schema=User), retries=1)
         .add_function("greet", greet).connect("extract", "greet"))
    result = f.run("Jo is 3")
    assert result.output == "hello JO (3)" and result.nodes["extract"].attempts == 2
    assert [m.text for m in provider.requests[2].messages] == ["Jo is 3"]  # no earlier attempt's history


def test_a_union_output_routes_on_the_type_the_model_answered_with() -> None:
    """Ported from instructor-ai/instructor tests/dsl/test_union_pipe.py (User | Refusal, routed by type)."""

    def build(answer: str) -> Formation:
        return (Formation("u").add_agent("extract", extractor(answer, schema=User | Refusal))
                .add_function("greet", greet).add_function("refused", lambda r: f"refused: {r.reason}")
                .connect("extract", "greet", when=User).connect("extract", "refused", when=Refusal))

    assert build('{"reason": "no user in the text"}').run("x").outputs == {"refused": "refused: no user in the text"}
    assert build('{"name": "ADA", "age": 36}').run("x").outputs == {"greet": "hello ADA (36)"}


def test_an_agent_output_schema_that_does_not_fit_the_next_node_is_a_setup_error() -> None:
    """Ported from instructor-ai/instructor tests/core/test_schema.py (a response_model used where it does not fit)."""

    def square(x: int) -> int:
        return x * x

    f = Formation("f").add_agent("extract", extractor("{}")).add_function("square", square).connect("extract", "square")
    with pytest.raises(FormationSetupError, match=r"'extract' outputs User but parameter 'x' of 'square' expects int") as info:
        f.validate()
    assert "an agent's output_schema" in str(info.value)


def test_a_fleet_node_outputs_each_items_validated_object_in_item_order() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_parallel.py::test_sync_parallel_tools_one."""

    def answer(request: Any) -> str:
        name, age = request.messages[0].text.split()
        return f'{{"name": "{name}", "age": {age}}}'

    agent = Agent("each", provider=ScriptedProvider([answer], cycle=True), output_schema=User)
    f = Formation("f").add_fleet("each", agent, max_workers=2).add_function("count", count).connect("each", "count")
    result = f.run(["ADA 36", "BOB 7", "CY 9"])
    assert result.output == 3
    assert result.nodes["each"].output == [User(name="ADA", age=36), User(name="BOB", age=7), User(name="CY", age=9)]


def test_an_iterable_output_reaches_the_next_node_as_a_list() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_multitask.py::test_multi_user (downstream)."""
    agent = extractor('[{"name": "JASON", "age": 20}, {"name": "SARAH", "age": 30}]', schema=Iterable[User])
    f = Formation("f").add_agent("extract", agent).add_function("count", count).connect("extract", "count")
    assert f.run("Jason is 20, Sarah is 30").output == 2


# --- durable: journalled objects, resumed without a new model call -------------------------------


def test_a_resumed_run_restores_the_journalled_object_without_asking_the_model_again(location: str) -> None:
    """Ported from instructor-ai/instructor tests/cache/test_cache_integration.py (a kept response is not asked for again)."""
    provider = ScriptedProvider(['{"name": "JASON", "age": 25}'])
    seen = Counter()

    def flaky_greet(user: User) -> str:
        if seen.hit("greet") == 1:
            raise RuntimeError("greet is down")
        return f"{type(user).__name__} {user.name}"

    f = (Formation("f").add_agent("extract", Agent("extract", provider=provider, output_schema=User))
         .add_function("greet", flaky_greet).connect("extract", "greet"))
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError):
            f.run("Jason is 25", store=store, run_id="r1")
        assert f.resume("r1", store=store).output == "User JASON"
        assert store.history("r1")[0].output == User(name="JASON", age=25)
    assert len(provider.requests) == 1


def test_an_iterable_output_is_journalled_as_a_list_and_restored_on_resume(location: str) -> None:
    """Ported from instructor-ai/instructor tests/cache/test_cache_integration.py (an Iterable response kept)."""
    provider = ScriptedProvider(['[{"name": "JASON", "age": 20}, {"name": "SARAH", "age": 30}]'])
    seen = Counter()

    def flaky_count(users: list[User]) -> list[str]:
        if seen.hit("count") == 1:
            raise RuntimeError("count is down")
        return [u.name for u in users]

    f = (Formation("f").add_agent("extract", Agent("extract", provider=provider, output_schema=Iterable[User]))
         .add_function("count", flaky_count).connect("extract", "count"))
    with RunStore(location) as store:
        with pytest.raises(FormationRuntimeError):
            f.run("x", store=store, run_id="r2")
        assert f.resume("r2", store=store).output == ["JASON", "SARAH"]
    assert len(provider.requests) == 1


# --- backend="ray" ----------------------------------------------------------------------------------


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_agent_nodes_validated_object_on_ray_is_the_threads_one() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_retries.py::test_upper_case on backend="ray"."""

    def build() -> Formation:
        return (Formation("f").add_agent("extract", extractor('{"name": "jo", "age": 3}', '{"name": "JO", "age": 3}'))
                .add_function("greet", greet).connect("extract", "greet"))

    threads = build().run("Jo is 3")
    on_ray = build().run("Jo is 3", backend="ray", timeout=120)
    assert on_ray.output == threads.output == "hello JO (3)"
    assert on_ray.nodes["extract"].output == User(name="JO", age=3)


@pytest.mark.ray
@pytest.mark.usefixtures("local_ray")
def test_an_iterable_output_on_ray_crosses_to_the_next_node_as_a_list() -> None:
    """Ported from instructor-ai/instructor tests/llm/test_openai/test_multitask.py::test_multi_user on backend="ray"."""
    agent = extractor('[{"name": "JASON", "age": 20}, {"name": "SARAH", "age": 30}]', schema=Iterable[User])
    f = Formation("f").add_agent("extract", agent).add_function("count", count).connect("extract", "count")
    assert f.run("x", backend="ray", timeout=120).output == 2
