"""AgentRegistry: the agents a delegating agent may hand tasks to, by name.

Example:
    >>> from wingman_actors import Agent
    >>> from wingman_actors.testing import ScriptedProvider
    >>> registry = AgentRegistry()
    >>> registry.register(Agent("critic", provider=ScriptedProvider(["ok"])), description="Finds flaws.")
    >>> [info.name for info in registry.list()]
    ['critic']
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..agents._agent import Agent

__all__ = ["AgentFactory", "AgentInfo", "AgentRegistry"]

AgentFactory = Callable[[], Agent]
"""A callable that builds a fresh :class:`Agent` (called once per delegated task)."""


@dataclass(frozen=True)
class AgentInfo:
    """What a delegating agent is told about a registered agent."""

    name: str
    description: str


@dataclass(frozen=True)
class _Entry:
    info: AgentInfo
    agent: Agent | None
    factory: AgentFactory | None


class AgentRegistry:
    """Agents by name, with a description each; thread-safe.

    Register an :class:`Agent`, or a factory returning one (a factory is called for every
    delegated task, e.g. to give each task its own provider). Every delegated task runs
    in a fresh :class:`~wingman_actors.Session`, so nothing leaks from one delegation to
    the next. Pass the registry to ``Agent(..., delegates=registry)``; one registry may
    serve many agents (each is left out of its own listing).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def register(
        self, agent: Agent | AgentFactory, *, description: str | None = None, name: str | None = None
    ) -> None:
        """Add an agent (or a factory of agents) under its name.

        Args:
            agent: an :class:`Agent`, or a no-argument callable returning one.
            description: what the agent is good at, shown to delegating models (default:
                the first line of the agent's instructions).
            name: the name to register under; default the agent's name (a factory without
                ``name`` is called once, now, to learn it).

        Raises:
            TypeError: ``agent`` is neither an Agent nor a callable returning one, or
                ``description`` or ``name`` is not a str.
            ValueError: the name is taken, or there is no description to show.
        """
        if name is not None and not isinstance(name, str):
            raise TypeError(f"AgentRegistry.register: name must be a str, got {name!r}")
        instance: Agent | None
        factory: AgentFactory | None
        if isinstance(agent, Agent):
            instance, factory = agent, None
            probe: Agent | None = agent
        elif callable(agent):
            instance, factory = None, agent
            label = str(getattr(agent, "__name__", repr(agent)))
            probe = _call_factory(agent, label) if name is None else None
        else:
            raise TypeError(
                f"AgentRegistry.register takes an Agent or a factory returning one, got {type(agent).__name__}"
            )
        key = name if name is not None else probe.name if probe is not None else ""
        if not isinstance(key, str) or not key.strip():
            raise ValueError("AgentRegistry.register: the agent needs a non-empty name")
        if probe is not None and probe.name != key:
            raise ValueError(
                f"AgentRegistry.register: name {key!r} differs from the agent's own name {probe.name!r}; "
                "register it under its own name (drop name=) or rename the agent"
            )
        if description is not None and not isinstance(description, str):
            raise TypeError(
                f"AgentRegistry.register: description must be a str saying what agent {key!r} is good at, "
                f"e.g. description='Summarises papers.'; got {description!r}"
            )
        text = description if description is not None else _first_line(probe.instructions if probe else "")
        if not text.strip():
            raise ValueError(
                f"AgentRegistry.register: agent {key!r} needs a description of what it is good at, "
                "e.g. register(agent, description='Summarises papers.')"
            )
        entry = _Entry(AgentInfo(key, " ".join(text.split())), instance, factory)
        with self._lock:
            if key in self._entries:
                raise ValueError(
                    f"AgentRegistry.register: an agent named {key!r} is already registered; "
                    "give the new one another name, or unregister the old one first"
                )
            self._entries[key] = entry

    def unregister(self, name: str) -> None:
        """Remove the agent called ``name`` (KeyError naming the registered ones if absent)."""
        with self._lock:
            if name not in self._entries:
                raise KeyError(f"no agent named {name!r} is registered; registered: {sorted(self._entries)}")
            del self._entries[name]

    def list(self, *, exclude: str | None = None) -> list[AgentInfo]:
        """Every registered agent, sorted by name (``exclude``: leave this name out)."""
        with self._lock:
            infos = [e.info for n, e in self._entries.items() if n != exclude]
        return sorted(infos, key=lambda info: info.name)

    def names(self) -> builtins.list[str]:
        """The registered names, sorted."""
        with self._lock:
            return sorted(self._entries)

    def create(self, name: str) -> Agent:
        """The agent to run for one task: the registered agent, or a fresh one from its factory.

        Raises:
            KeyError: no agent of that name is registered (the message lists those that are).
        """
        with self._lock:
            entry = self._entries.get(name)
            known = sorted(self._entries)
        if entry is None:
            raise KeyError(f"no agent named {name!r} is registered; registered: {known}")
        if entry.agent is not None:
            return entry.agent
        assert entry.factory is not None  # one of the two is always set
        return _call_factory(entry.factory, name)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def __repr__(self) -> str:
        return f"AgentRegistry({self.names()})"

    # Picklable (the lock is rebuilt), so a delegating agent can travel to another process
    # (the Ray backend) when its registered agents can.
    def __getstate__(self) -> dict[str, Any]:
        with self._lock:
            return {"entries": dict(self._entries)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._lock = threading.Lock()
        self._entries = dict(state["entries"])


def _call_factory(factory: AgentFactory, name: str) -> Agent:
    agent = factory()
    if not isinstance(agent, Agent):
        raise TypeError(f"the factory registered for {name!r} returned {type(agent).__name__}, not an Agent")
    return agent


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
