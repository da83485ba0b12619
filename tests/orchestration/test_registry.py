"""AgentRegistry: registered agents and factories by name."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from wingman_actors import Agent
from wingman_actors.orchestration import AgentInfo, AgentRegistry


def test_listing_is_sorted_by_name_and_can_leave_one_out() -> None:
    registry = AgentRegistry()
    for name in ("c", "a", "b"):
        registry.register(Agent(name), description=f"agent {name}")

    assert registry.list(exclude="b") == [AgentInfo("a", "agent a"), AgentInfo("c", "agent c")]


def test_the_description_defaults_to_the_first_line_of_the_instructions() -> None:
    registry = AgentRegistry()
    registry.register(Agent("a", instructions="\nFinds flaws.\nMore detail."))

    assert registry.list() == [AgentInfo("a", "Finds flaws.")]


def test_an_agent_without_description_or_instructions_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a description"):
        AgentRegistry().register(Agent("a"))


def test_a_duplicate_name_is_refused() -> None:
    registry = AgentRegistry()
    registry.register(Agent("a"), description="one")

    with pytest.raises(ValueError, match="'a' is already registered"):
        registry.register(Agent("a"), description="two")


def test_a_factory_is_registered_under_the_name_of_what_it_builds() -> None:
    registry = AgentRegistry()
    registry.register(lambda: Agent("made"), description="built per task")

    assert registry.names() == ["made"] and registry.create("made") is not registry.create("made")


def test_a_factory_that_returns_no_agent_is_refused() -> None:
    with pytest.raises(TypeError, match="returned int, not an Agent"):
        AgentRegistry().register(lambda: 3, description="bad")  # type: ignore[arg-type, return-value]


def test_something_that_is_no_agent_is_refused() -> None:
    with pytest.raises(TypeError, match="takes an Agent or a factory"):
        AgentRegistry().register("a", description="x")  # type: ignore[arg-type]


def test_creating_an_unknown_agent_names_the_registered_ones() -> None:
    registry = AgentRegistry()
    registry.register(Agent("a"), description="x")

    with pytest.raises(KeyError, match=r"no agent named 'b' is registered; registered: \['a'\]"):
        registry.create("b")


def test_concurrent_registrations_all_land() -> None:
    registry = AgentRegistry()

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda i: registry.register(Agent(f"a{i:03}"), description="x"), range(200)))

    assert len(registry) == 200 and registry.names() == sorted(registry.names())


def test_a_registry_and_a_delegating_agent_survive_pickling() -> None:
    import pickle

    registry = AgentRegistry()
    registry.register(Agent("a"), description="x")
    lead = Agent("lead", delegates=registry)

    copy = pickle.loads(pickle.dumps(lead))

    assert copy.delegates is not None and copy.delegates.names() == ["a"]
    assert "- a: x" in copy.system_prompt and copy.tool_registry.names == ["list_agents", "delegate"]
    copy.delegates.register(Agent("b"), description="y")  # the lock was rebuilt
    assert registry.names() == ["a"]
