"""LangChain's tool tests (libs/core/tests/unit_tests/test_tools.py) where the tool runs in
an agent node of a formation: typed arguments (an enum, a model, a partial, names pydantic
keeps for itself) reach the tool as on their own, and a model's wrong arguments come back
to it as an error result the node's run survives; on the threads backend and on Ray. The
models are played by the scripted provider."""

from __future__ import annotations

import enum
import functools
from typing import Any

import pytest
from pydantic import BaseModel

from tests.support.peers import local_ray  # noqa: F401  (a fixture)
from wingman_actors import Agent, Fleet, Formation, Task, tool
from wingman_actors.core import InferenceRequest, InferenceResponse
from wingman_actors.testing import ScriptedProvider


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Box(BaseModel):
    label: str
    size: int


@tool
def paint(colour: Colour, box: Box, json: bool = False) -> str:
    """Paint a box.

    Args:
        colour: the paint.
        box: the box to paint.
        json: answer as JSON.
    """
    return f'{{"{box.label}": "{colour.value}"}}' if json else f"{box.label}x{box.size} is {colour.value}"


def stamp(text: str, mark: str) -> str:
    """Stamp a text with a mark.

    Args:
        text: what to stamp.
    """
    return f"{mark}{text}"


def last_results(request: InferenceRequest) -> str:
    """The model's answer: the texts of the tool results it was just sent."""
    return " | ".join(b.content or "" for b in request.messages[-1].content if b.type == "tool_result")


def painter() -> Agent:
    provider = ScriptedProvider([
        InferenceResponse.of_tool_calls([
            ("c1", "paint", {"colour": "red", "box": {"label": "a", "size": 2}}),
            ("c2", "paint", {"colour": "blue", "box": {"label": "b", "size": 1}, "json": True}),
            ("c3", "stamp", {"text": "ok"}),
        ]),
        last_results,
    ])
    return Agent("painter", provider=provider, tools=[paint, tool(functools.partial(stamp, mark="#"))])


@pytest.mark.parametrize("backend", ["threads", pytest.param("ray", marks=pytest.mark.ray)])
def test_an_agent_nodes_tools_get_typed_arguments_through_partials_and_names_pydantic_keeps(
    backend: str, request: pytest.FixtureRequest,
) -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_structured_tool_types_parsed
    (and ::test_tool_partial_function_args_schema), in an agent node: on Ray the tools travel
    to the node's process, the arguments model built from their signatures included."""
    if backend == "ray":
        request.getfixturevalue("local_ray")
    formation = Formation("paint").add_agent("painter", painter())
    result = formation.run("paint them", backend=backend, timeout=120 if backend == "ray" else 10)
    assert result.output == 'ax2 is red | {"b": "blue"} | #ok'


RAN: list[str] = []


@tool
def search_api(query: str) -> str:
    """Search the API for the query."""
    RAN.append(query)
    return f"results for {query}"


def test_an_agent_node_whose_model_sent_wrong_arguments_gets_the_error_and_its_corrected_call_runs() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_validation_error_handling_str
    (the validation error goes back instead of failing the run), in an agent node whose trace
    keeps the failed call."""
    RAN.clear()
    provider = ScriptedProvider([
        InferenceResponse.of_tool_calls([("c1", "search_api", {"q": "ants"})]),
        InferenceResponse.of_tool_calls([("c2", "search_api", {"query": "ants"})]),
        last_results,
    ])
    result = Formation("s").add_agent("searcher", Agent("searcher", provider=provider, tools=[search_api])).run("go")
    assert result.output == "results for ants" and RAN == ["ants"]
    told = provider.requests[1].messages[-1].content[0]
    assert told.is_error and "q: Extra inputs are not permitted" in (told.content or "")
    assert "query: Field required" in (told.content or "")
    assert result.nodes["searcher"].status == "succeeded"


@tool
async def shout(text: str) -> str:
    """Shout a text."""
    return text.upper()


def test_a_fleets_sessions_each_await_the_async_tool_for_their_item() -> None:
    """Ported from langchain-ai/langchain libs/core/tests/unit_tests/test_tools.py::test_create_async_tool
    (an async tool in a blocking run), for every item of a fleet."""

    def script(request: InferenceRequest) -> Any:
        last = request.messages[-1]
        if last.content[0].type == "tool_result":
            return last.content[0].content or ""
        return InferenceResponse.of_tool_calls([("c1", "shout", {"text": last.text})])

    fleet = Fleet(Agent("loud", provider=ScriptedProvider([script], cycle=True), tools=[shout]),
                  [Task("ab"), Task("cd"), Task("ef")], max_workers=2)
    assert [r.result.response if r.result else r.error for r in fleet.run()] == ["AB", "CD", "EF"]
