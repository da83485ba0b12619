"""Stored agents that cooperate: checking ``delegates`` and ``skills``, and building the
agent a message runs together with every agent it may delegate to.

``delegates`` are ids of other stored agents; the delegating model names them by their
names, so two delegates of one agent (or a delegate and the agent itself) may not share
a name. ``skills`` are folders under the work root, confined like every other path. A
delegation tree is built once per run: each agent reachable through ``delegates`` is built
once (so agents may delegate to each other) with its provider from the shared cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import TYPE_CHECKING

from ..agents._agent import Agent
from ..orchestration import AgentRegistry, SkillError, load_skills
from ._errors import ApiError, invalid
from ._schemas import AgentOut

if TYPE_CHECKING:
    from ._context import ServerContext

__all__ = ["build_team", "check_team", "skill_paths"]

OneAgent = Callable[[AgentOut, AgentRegistry | None], AbstractContextManager[Agent]]


def skill_paths(ctx: ServerContext, agent: AgentOut) -> list[str]:
    """The agent's skill folders resolved under the work root (400 naming ``skills[i]``)."""
    return [ctx.resolve_work_dir(path, field=f"skills[{i}]") for i, path in enumerate(agent.skills)]


def check_team(ctx: ServerContext, agent: AgentOut) -> None:
    """Refuse bad ``delegates`` (unknown ids, the agent itself, repeats, clashing names) and
    bad ``skills`` (outside the work root, not a folder, no valid SKILL.md), naming the field."""
    names: dict[str, str] = {agent.name: "the agent itself"}
    for i, delegate_id in enumerate(agent.delegates):
        field = f"delegates[{i}]"
        if delegate_id == agent.id:
            raise invalid(field, "an agent cannot delegate to itself; name other agents' ids")
        if delegate_id in agent.delegates[:i]:
            raise invalid(field, f"agent id {delegate_id!r} is listed twice; list each delegate once")
        try:
            record = ctx.store.get_agent(delegate_id)
        except ApiError:
            raise invalid(field, f"no agent has id {delegate_id!r}; create it first, or see GET /agents") from None
        if record.name in names:
            raise invalid(
                field,
                f"agent {delegate_id!r} is named {record.name!r}, like {names[record.name]}; the model picks "
                "delegates by name, so give them distinct names",
            )
        names[record.name] = f"agent {delegate_id!r}"
    if agent.skills:
        paths = skill_paths(ctx, agent)
        try:
            load_skills(paths)
        except SkillError as exc:
            raise invalid("skills", str(exc)) from None


@contextmanager
def build_team(ctx: ServerContext, record: AgentOut, one_agent: OneAgent) -> Iterator[Agent]:
    """``record`` as a runnable Agent whose ``delegates`` registry holds its delegates, built
    the same way (each stored agent once, so cycles are fine); every provider is released
    when the block ends.

    Raises:
        ApiError: 400 when a delegate no longer exists or cannot run (naming both agents).
    """
    with ExitStack() as stack:
        built: dict[str, Agent] = {}

        def build(rec: AgentOut) -> Agent:
            agent = built.get(rec.id)
            if agent is not None:
                return agent
            registry = AgentRegistry() if rec.delegates else None
            agent = built[rec.id] = stack.enter_context(one_agent(rec, registry))
            for delegate_id in rec.delegates:
                try:
                    child = ctx.store.get_agent(delegate_id)
                except ApiError:
                    raise ApiError(
                        400, f"agent {rec.name!r} ({rec.id}) delegates to agent {delegate_id!r}, which no longer "
                        f"exists; update its delegates with PUT /agents/{rec.id}",
                    ) from None
                assert registry is not None  # made above whenever there are delegates
                try:
                    registry.register(build(child), description=_description(child))
                except ValueError as exc:  # renamed since it was checked: two delegates share a name
                    raise ApiError(400, f"agent {rec.name!r} ({rec.id}) cannot delegate: {exc}") from None
            return agent

        yield build(record)


def _description(record: AgentOut) -> str:
    first = next((line.strip() for line in record.instructions.splitlines() if line.strip()), "")
    return first or f"The agent {record.name!r}."
