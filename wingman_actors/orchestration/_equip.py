"""What ``Agent(delegates=..., skills=...)`` adds to an agent: tools and prompt sections.

Called by :class:`~wingman_actors.Agent` when it is made; a section is a callable, so the
"Available agents" list follows the registry as agents are registered later.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..tools import Tool
from ._delegation import DelegateTool, ListAgentsTool, agents_section
from ._registry import AgentRegistry
from ._skills import LoadSkillTool, load_skills, skills_section

if TYPE_CHECKING:
    from ..agents._agent import Agent

__all__ = ["equip"]


def equip(agent: Agent) -> tuple[list[Tool], tuple[Callable[[], str], ...]]:
    """The tools and system-prompt sections ``agent``'s ``delegates`` and ``skills`` call for.

    Raises:
        TypeError: ``delegates`` is not an AgentRegistry, or ``skills`` is not a list.
        ValueError: ``max_delegation_depth`` < 0, a skill folder is bad (SkillError), or one
            of the agent's own tools has the name of a tool this adds.
    """
    tools: list[Tool] = []
    sections: list[Callable[[], str]] = []
    if agent.delegates is not None:
        registry = agent.delegates
        if not isinstance(registry, AgentRegistry):
            raise TypeError(
                f"agent {agent.name!r}: delegates must be an AgentRegistry, got {type(registry).__name__}; "
                "see wingman_actors.orchestration.AgentRegistry"
            )
        depth = agent.max_delegation_depth
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
            raise ValueError(
                f"agent {agent.name!r}: max_delegation_depth must be an int >= 0 (0 refuses every "
                f"delegation), got {depth!r}"
            )
        added: list[Tool] = [
            ListAgentsTool(registry, agent.name),
            DelegateTool(registry, agent.name, max_depth=depth, concurrency=agent.tool_concurrency,
                         events=agent.events),
        ]
        _check_names(agent, "delegates=", added)
        tools += added
        sections.append(functools.partial(agents_section, registry, agent.name))
    if agent.skills:
        skills = load_skills(agent.skills)
        object.__setattr__(agent, "skills", tuple(agent.skills))
        loader: list[Tool] = [LoadSkillTool(skills)]
        _check_names(agent, "skills=", loader)
        tools += loader
        sections.append(functools.partial(skills_section, skills))
    return tools, tuple(sections)


def _check_names(agent: Agent, option: str, added: list[Tool]) -> None:
    """Refuse a tool of the agent's own named like one ``option`` adds (the tool registry
    would only say "duplicate tool name", leaving the user to guess where the other came from)."""
    names = [t.name for t in added]
    for own in agent.tools:
        name = own if isinstance(own, str) else getattr(own, "name", None)
        if name in names:
            raise ValueError(
                f"agent {agent.name!r}: its tool {name!r} has the name of a tool {option} adds "
                f"({', '.join(names)}); rename yours (e.g. @tool(name='my_{name}'))"
            )
