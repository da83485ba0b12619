"""Agents that cooperate: delegation, skills and a shared blackboard.

* :class:`AgentRegistry` — agents a delegating agent may hand tasks to
  (``Agent(..., delegates=registry, max_delegation_depth=3)`` adds ``list_agents`` and
  ``delegate``).
* Skills — ``Agent(..., skills=[folders])`` loads ``SKILL.md`` folders and adds
  ``load_skill`` (:class:`Skill`, :func:`load_skill`, :class:`SkillError`).
* :class:`Blackboard` — thread-safe shared state with ``watch`` and agent tools;
  :class:`use_blackboard` / :func:`current_blackboard` / :func:`blackboard_tools` share one
  with code that does not hold it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._blackboard import Blackboard, blackboard_tools, current_blackboard, use_blackboard
    from ._delegation import DelegationTask
    from ._registry import AgentFactory, AgentInfo, AgentRegistry
    from ._skills import Skill, SkillError, load_skill, load_skills

# Imported on first use (PEP 562): a formation shares a Blackboard without importing
# delegation, the agent registry or skills.
_WHERE = {
    "Blackboard": "._blackboard",
    "blackboard_tools": "._blackboard",
    "current_blackboard": "._blackboard",
    "use_blackboard": "._blackboard",
    "DelegationTask": "._delegation",
    "AgentFactory": "._registry",
    "AgentInfo": "._registry",
    "AgentRegistry": "._registry",
    "Skill": "._skills",
    "SkillError": "._skills",
    "load_skill": "._skills",
    "load_skills": "._skills",
}

__all__ = [
    "AgentFactory",
    "AgentInfo",
    "AgentRegistry",
    "Blackboard",
    "DelegationTask",
    "Skill",
    "SkillError",
    "blackboard_tools",
    "current_blackboard",
    "load_skill",
    "load_skills",
    "use_blackboard",
]

__getattr__ = lazy_exports(__name__, _WHERE, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
