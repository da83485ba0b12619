"""Agent: a named, immutable configuration bundle (provider, instructions, tools, schema).

Example:
    >>> from wingman_actors import Agent
    >>> from wingman_actors.testing import ScriptedProvider
    >>> a = Agent("helper", instructions="Be brief.", provider=ScriptedProvider(["ok"]))
    >>> a.with_overrides(instructions="Be thorough.").instructions
    'Be thorough.'
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .._event_loop import is_async_callable
from ..events import EventBus
from ..providers._base import Provider
from ..tools import Tool, ToolRegistry, builtin_tool

if TYPE_CHECKING:
    from ..orchestration import AgentRegistry
    from ._middleware import Middleware, RunContext
    from ._prepare import Prepared

__all__ = ["DEFAULT_MAX_STEPS", "Agent"]

DEFAULT_MAX_STEPS = 50
"""Model calls per run when an agent sets no ``max_steps``: a guard against endless tool loops."""


@dataclasses.dataclass(frozen=True, eq=False)
class Agent:
    """An agent's configuration. Immutable: derive variants with :meth:`with_overrides`.

    Args:
        name: a name for logs, traces and fleet workers.
        instructions: the system prompt.
        provider: the model provider (see :func:`wingman_actors.providers.new_provider`).
        tools: tools the model may call: :class:`~wingman_actors.tools.Tool` objects, or
            names of built-ins (``"bash"``, ``"read"``, ``"write"``, ``"edit"``, ``"glob"``,
            ``"grep"``, ``"webfetch"``).
        output_schema: a pydantic model class (or any type pydantic can validate) the final
            answer must match; the result's ``output`` holds the validated object. A JSON
            Schema dict is sent to the model as it is, but the answer is checked against its
            top level only (its ``type``, an object's ``required`` fields): use a model class
            for a full check.
        max_steps: the most model calls with tools per run (default 50); when reached,
            one last call without tools asks for the answer (``Result.max_steps_reached``,
            and a warning on the ``wingman_actors.agents`` logger).
        max_tokens: per-request output token cap (else the provider's option).
        temperature: per-request temperature (else the provider's option).
        middleware: hooks run at the six stages of the loop, in order.
        max_tool_result_chars: tool results longer than this are truncated in history.
        tool_concurrency: tool calls of one step run concurrently, at most this many at once.
        delegates: an :class:`~wingman_actors.orchestration.AgentRegistry` of agents this
            one may hand tasks to: adds the tools ``list_agents`` and ``delegate`` and an
            "Available agents" section to the system prompt.
        max_delegation_depth: how deep a tree of delegations started by this agent may grow
            (its children are depth 1); the root agent's limit bounds the whole tree.
        skills: folders holding a ``SKILL.md`` (YAML front matter ``name`` and
            ``description``, then the instructions): adds the tool ``load_skill`` and a
            "Skills" section to the system prompt. Bad folders fail here, not at run time.
        context_budget: the most (estimated) input tokens of one request; older turns are
            left out of requests to stay under it (see :mod:`wingman_actors.agents._context_budget`).
        compactor: with ``context_budget``, a provider that summarises the left-out turns
            into one message (one extra model call each time, counted in the usage). When
            it fails, the turns are left out without a summary (trimming) and the trace
            says so; the run goes on.
        events: an :class:`~wingman_actors.events.EventBus` that receives this agent's
            session, model, tool and sub-agent events (see :mod:`wingman_actors.events`).
        prepare: called before each model call with the
            :class:`~wingman_actors.agents.RunContext`; it may return a
            :class:`~wingman_actors.agents.Prepared` choosing that call's provider, tools
            and instructions (None, or a field left None, keeps the agent's).
    """

    name: str
    _: dataclasses.KW_ONLY
    instructions: str = ""
    provider: Provider | None = None
    tools: Sequence[Tool | str] = ()
    output_schema: Any = None
    max_steps: int | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    middleware: Sequence[Middleware] = ()
    max_tool_result_chars: int = 50_000
    tool_concurrency: int = 10
    # Cooperation (wingman_actors.orchestration): delegation and skills.
    delegates: AgentRegistry | None = None
    max_delegation_depth: int = 3
    skills: Sequence[str | os.PathLike[str]] = ()
    # Long sessions: fit every request to a token budget (context_budget.py).
    context_budget: int | None = None
    compactor: Provider | None = None
    # Hooks: an event bus, and per-request choices (agents/_prepare.py).
    events: EventBus | None = None
    prepare: Callable[[RunContext], Prepared | None] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("Agent needs a non-empty name, e.g. Agent('researcher', ...)")
        _check_types(self)
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"agent {self.name!r}: max_steps must be >= 1, got {self.max_steps}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"agent {self.name!r}: max_tokens must be >= 1, got {self.max_tokens}")
        if self.temperature is not None and not 0.0 <= self.temperature <= 2.0:
            raise ValueError(f"agent {self.name!r}: temperature must be within 0..2, got {self.temperature}")
        if not 1 <= self.tool_concurrency <= 10:
            raise ValueError(
                f"agent {self.name!r}: tool_concurrency must be within 1..10, got {self.tool_concurrency}"
            )
        if self.max_tool_result_chars < 100:
            raise ValueError(f"agent {self.name!r}: max_tool_result_chars must be >= 100")
        if self.context_budget is not None and self.context_budget < 256:
            raise ValueError(
                f"agent {self.name!r}: context_budget must be a number of tokens >= 256, got {self.context_budget!r}"
            )
        if self.compactor is not None and self.context_budget is None:
            raise ValueError(
                f"agent {self.name!r}: compactor= summarises what context_budget leaves out; set context_budget too"
            )
        if self.events is not None and not isinstance(self.events, EventBus):
            raise TypeError(
                f"agent {self.name!r}: events must be an EventBus (from wingman_actors.events import EventBus), "
                f"got {type(self.events).__name__}"
            )
        if self.prepare is not None and not callable(self.prepare):
            raise TypeError(
                f"agent {self.name!r}: prepare must be a function taking a RunContext and returning a Prepared "
                f"or None, got {type(self.prepare).__name__}"
            )
        if self.prepare is not None and is_async_callable(self.prepare):
            raise TypeError(
                f"agent {self.name!r}: prepare must be a plain function, not async def: it is called before each "
                "model call and its Prepared used at once; compute what it needs beforehand (e.g. into the run's "
                "metadata=) and read it from ctx.metadata"
            )
        if isinstance(self.tools, str | bytes) or not isinstance(self.tools, Iterable):
            raise TypeError(f"agent {self.name!r}: tools must be a list of tools or built-in names")
        resolved = tuple(builtin_tool(t) if isinstance(t, str) else t for t in self.tools)
        extra: Sequence[Tool] = ()
        sections: tuple[Any, ...] = ()
        if self.delegates is not None or self.skills:
            # Imported here: orchestration is a layer above agents and builds on them.
            from ..orchestration._equip import equip

            extra, sections = equip(self)
        object.__setattr__(self, "_sections", sections)
        # Refuses duplicate names and non-tools with a clear message; kept, since the tools
        # never change, for every session of this agent to share.
        object.__setattr__(self, "_registry", ToolRegistry((*resolved, *extra)))
        object.__setattr__(self, "tools", resolved)
        if self.output_schema is not None:
            from ._structured import OutputSchema

            OutputSchema.of(self.output_schema)  # fails now, not at the first run

    @property
    def tool_registry(self) -> ToolRegistry:
        """The agent's tools by name (built once, when the agent was made)."""
        registry: ToolRegistry = self.__dict__["_registry"]
        return registry

    @property
    def system_prompt(self) -> str:
        """The instructions, plus the sections delegation and skills add (agents, skills)."""
        return self.prompt_with(self.instructions)

    def prompt_with(self, instructions: str) -> str:
        """The system prompt with ``instructions`` in place of the agent's own (the
        sections of delegation and skills follow them)."""
        sections = self.__dict__["_sections"]
        if not sections:
            return instructions
        parts = [instructions] if instructions else []
        parts += [text for section in sections if (text := section())]
        return "\n\n".join(parts)

    @property
    def steps_limit(self) -> int:
        """``max_steps``, or the default when unset."""
        return self.max_steps if self.max_steps is not None else DEFAULT_MAX_STEPS

    def with_overrides(self, **changes: Any) -> Agent:
        """A copy with some fields changed, e.g. ``agent.with_overrides(instructions=...)``."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise TypeError(f"Agent has no field(s) {sorted(unknown)}")
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        tools = [t.name for t in self.tools if not isinstance(t, str)]
        return f"Agent(name={self.name!r}, provider={self.provider!r}, tools={tools})"


_COUNTS = ("max_steps", "max_tokens", "tool_concurrency", "max_tool_result_chars", "max_delegation_depth", "context_budget")
_OPTIONAL_COUNTS = frozenset(("max_steps", "max_tokens", "context_budget"))
_HOOKS = ("before_agent", "before_model", "after_model", "before_tool", "after_tool", "after_agent")


def _is_provider(value: object) -> bool:
    return callable(getattr(value, "run_inference", None))


def _check_types(agent: Agent) -> None:
    """Refuse fields of the wrong type, naming the field and the fix (the ranges are
    checked after): a wrong type would otherwise fail at the first run, or in a comparison."""
    name = agent.name
    if not isinstance(agent.instructions, str):
        raise TypeError(f"agent {name!r}: instructions must be a str, got {type(agent.instructions).__name__}")
    for field, what in (("provider", agent.provider), ("compactor", agent.compactor)):
        if what is not None and not _is_provider(what):
            raise TypeError(
                f"agent {name!r}: {field} must be a provider (with run_inference), got {what!r}; "
                f"e.g. {field}=new_provider('openai', {{'model': ...}}) (from wingman_actors.providers import new_provider)"
            )
    for field in _COUNTS:
        value = getattr(agent, field)
        if value is None and field in _OPTIONAL_COUNTS:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"agent {name!r}: {field} must be an int, got {value!r}")
    if agent.max_delegation_depth < 0:
        raise ValueError(
            f"agent {name!r}: max_delegation_depth must be an int >= 0 (0 refuses every delegation), "
            f"got {agent.max_delegation_depth}"
        )
    skills = agent.skills
    if not isinstance(skills, str | bytes | os.PathLike) and isinstance(skills, Iterable):
        skills = tuple(skills)  # an iterator is read once: kept as read
        object.__setattr__(agent, "skills", skills)
        for i, folder in enumerate(skills):
            if not isinstance(folder, str | os.PathLike):
                raise TypeError(f"agent {name!r}: skills[{i}] must be a folder's path (a str or Path), got {folder!r}")
    temperature = agent.temperature
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, int | float)):
        raise TypeError(f"agent {name!r}: temperature must be a number, got {temperature!r}")
    middleware = agent.middleware
    if isinstance(middleware, str | bytes) or not isinstance(middleware, Iterable):
        raise TypeError(f"agent {name!r}: middleware must be a list of Middleware objects, got {middleware!r}")
    middleware = tuple(middleware)  # an iterator is read once: kept as read
    object.__setattr__(agent, "middleware", middleware)
    for mw in middleware:
        missing = [hook for hook in _HOOKS if not callable(getattr(mw, hook, None))]
        if missing:
            raise TypeError(
                f"agent {name!r}: middleware {mw!r} lacks the hook(s) {', '.join(missing)}: subclass "
                "wingman_actors.agents.Middleware and override the hooks you need"
            )
        # Hooks are called inline, by blocking and awaited runs alike: an async def one would hand back a
        # coroutine taken for its replacement (and never awaited)
        awaited = [hook for hook in _HOOKS if is_async_callable(getattr(mw, hook))]
        if awaited:
            raise TypeError(
                f"agent {name!r}: middleware {mw!r}: {', '.join(awaited)} is async def; middleware hooks are "
                "called inline by every run (blocking or awaited), so write them as plain def (to await "
                "something, do it in an async def tool, or beforehand and pass it as the run's metadata=)"
            )
