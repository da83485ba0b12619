"""``Agent(...)`` refuses arguments of the wrong type when it is made, naming the field and the fix
(before, some were taken and failed at the first run, others failed with Python's own comparison error)."""

from __future__ import annotations

from typing import Any

import pytest

from wingman_actors import Agent, Session
from wingman_actors.agents import Middleware
from wingman_actors.testing import ScriptedProvider


@pytest.mark.parametrize("provider", ["openai", 3, object()])
def test_a_provider_that_is_not_one_is_refused_with_the_fix(provider: Any) -> None:
    with pytest.raises(TypeError, match=r"agent 'a': provider must be a provider .*new_provider"):
        Agent("a", provider=provider)


def test_a_compactor_that_is_not_a_provider_is_refused() -> None:
    with pytest.raises(TypeError, match=r"agent 'a': compactor must be a provider"):
        Agent("a", provider=ScriptedProvider(["ok"]), context_budget=1_000, compactor="summariser")  # type: ignore[arg-type]


@pytest.mark.parametrize("instructions", [None, 3, ["be brief"]])
def test_instructions_that_are_not_text_are_refused(instructions: Any) -> None:
    with pytest.raises(TypeError, match=r"agent 'a': instructions must be a str"):
        Agent("a", instructions=instructions)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_steps", "3"), ("max_steps", 2.5), ("max_steps", True),
        ("max_tokens", "5"), ("max_tokens", 1.5),
        ("tool_concurrency", "3"), ("max_tool_result_chars", "500"),
        ("max_delegation_depth", "2"), ("max_delegation_depth", None),
    ],
)
def test_a_count_that_is_not_an_int_is_a_type_error_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(TypeError, match=rf"agent 'a': {field} must be an int, got {value!r}"):
        Agent("a", **{field: value})


@pytest.mark.parametrize("value", ["hot", True])
def test_a_temperature_that_is_not_a_number_is_a_type_error(value: Any) -> None:
    with pytest.raises(TypeError, match=rf"agent 'a': temperature must be a number, got {value!r}"):
        Agent("a", temperature=value)


def test_a_negative_delegation_depth_is_refused_without_a_registry_too() -> None:
    # A registry-less agent reached through delegate inherits the delegating agent's registry.
    with pytest.raises(ValueError, match=r"agent 'a': max_delegation_depth must be an int >= 0"):
        Agent("a", max_delegation_depth=-1)


@pytest.mark.parametrize("middleware", [[3], ["logging"], "LoggingMiddleware"])
def test_middleware_without_the_hooks_is_refused(middleware: Any) -> None:
    with pytest.raises(TypeError, match=r"agent 'a': middleware"):
        Agent("a", middleware=middleware)


def test_middleware_that_subclasses_middleware_or_has_every_hook_is_taken() -> None:
    class Quiet(Middleware):
        pass

    class Duck:
        def before_agent(self, ctx: Any, message: Any) -> None: ...
        def before_model(self, ctx: Any, request: Any) -> None: ...
        def after_model(self, ctx: Any, response: Any) -> None: ...
        def before_tool(self, ctx: Any, call: Any) -> None: ...
        def after_tool(self, ctx: Any, call: Any, result: Any) -> None: ...
        def after_agent(self, ctx: Any, result: Any) -> None: ...

    agent = Agent("a", provider=ScriptedProvider(["ok"]), middleware=[Quiet(), Duck()])  # type: ignore[list-item]
    assert Session(agent).run("hi").response == "ok"


def test_middleware_given_as_an_iterator_is_kept_whole() -> None:
    class Quiet(Middleware):
        pass

    hooks = [Quiet(), Quiet()]
    agent = Agent("a", middleware=iter(hooks))
    assert list(agent.middleware) == hooks


@pytest.mark.parametrize("skills", [[3], ["ok", None]])
def test_a_skill_that_is_not_a_folder_path_is_refused_naming_it(skills: Any) -> None:
    with pytest.raises(TypeError, match=r"agent 'a': skills\[\d\] must be a folder's path \(a str or Path\), got"):
        Agent("a", skills=skills)


@pytest.mark.parametrize("reason", [3, None])
def test_cancel_refuses_a_reason_that_is_not_text(reason: Any) -> None:
    session = Session(Agent("a", provider=ScriptedProvider(["ok"])))
    with pytest.raises(TypeError, match=r"cancel: reason must be a str"):
        session.cancel(reason)


@pytest.mark.parametrize("reason", [3, None])
def test_fleet_cancel_refuses_a_reason_that_is_not_text(reason: Any) -> None:
    from wingman_actors import Fleet

    fleet = Fleet(Agent("a", provider=ScriptedProvider(["ok"])), ["x"])
    with pytest.raises(TypeError, match=r"cancel: reason must be a str"):
        fleet.cancel(reason)
    assert not fleet.cancelled
