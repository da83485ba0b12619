"""Agent configuration: validation, immutability, overrides."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel

from wingman_actors import Agent, tool
from wingman_actors.agents._agent import DEFAULT_MAX_STEPS
from wingman_actors.testing import ScriptedProvider


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def test_agent_is_immutable() -> None:
    agent = Agent("a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        agent.name = "b"  # type: ignore[misc]


def test_with_overrides_copies_and_keeps_the_rest() -> None:
    provider = ScriptedProvider([])
    agent = Agent("a", instructions="one", provider=provider, tools=[ping])
    other = agent.with_overrides(instructions="two")
    assert (agent.instructions, other.instructions) == ("one", "two")
    assert other.provider is provider and other.tools == agent.tools


def test_with_overrides_refuses_unknown_fields() -> None:
    with pytest.raises(TypeError, match="no field"):
        Agent("a").with_overrides(colour="blue")


def test_empty_name_is_refused() -> None:
    with pytest.raises(ValueError, match="non-empty name"):
        Agent(" ")


def test_duplicate_tool_names_are_refused() -> None:
    with pytest.raises(ValueError, match="duplicate tool name 'ping'"):
        Agent("a", tools=[ping, ping])


def test_non_tools_are_refused_with_a_hint() -> None:
    with pytest.raises(TypeError, match="@tool"):
        Agent("a", tools=[print])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [("max_steps", 0, "max_steps"), ("temperature", 3.0, "temperature"), ("tool_concurrency", 11, "tool_concurrency"),
     ("max_tokens", 0, "max_tokens")],
)
def test_bad_limits_are_refused(field: str, value: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Agent("a", **{field: value})  # type: ignore[arg-type]


def test_default_step_limit_applies_when_max_steps_is_unset() -> None:
    assert Agent("a").steps_limit == DEFAULT_MAX_STEPS
    assert Agent("a", max_steps=3).steps_limit == 3


def test_output_schema_that_pydantic_cannot_handle_is_refused_at_construction() -> None:
    with pytest.raises(TypeError, match="output_schema"):
        Agent("a", output_schema=object())


def test_output_schema_accepts_a_model_class() -> None:
    class Out(BaseModel):
        x: int

    assert Agent("a", output_schema=Out).output_schema is Out
