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

from ._blackboard import Blackboard, blackboard_tools, current_blackboard, use_blackboard
from ._delegation import DelegationTask
from ._registry import AgentFactory, AgentInfo, AgentRegistry
from ._skills import Skill, SkillError, load_skill, load_skills

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
