"""Per-request choices: ``Agent(..., prepare=fn)`` picks each model call's provider, tools
and instructions from the run in progress (multi-tenant gating, routing, dynamic prompts).

Before each model call the session calls ``fn(ctx)`` with the
:class:`~wingman_actors.agents.RunContext` (agent, step, messages, metadata); ``fn`` returns
None to keep the agent's configuration, or a :class:`Prepared` whose fields that are not
None replace the agent's for that call. Tools the model did not get offered in a call are
refused when it calls them, so ``tools=`` is an allow-list too.

Example:
    >>> from wingman_actors import Agent, Session
    >>> from wingman_actors.agents import Prepared
    >>> from wingman_actors.testing import ScriptedProvider
    >>> def per_tenant(ctx):
    ...     return Prepared(instructions=f"You serve tenant {ctx.metadata.get('tenant', '?')}.")
    >>> agent = Agent("a", provider=ScriptedProvider(["ok"]), prepare=per_tenant)
    >>> Session(agent).run("hi", metadata={"tenant": "acme"}).response
    'ok'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import AgentError, ErrorKind
from ..providers._base import Provider
from ..tools import Tool, ToolRegistry
from ._agent import Agent

if TYPE_CHECKING:
    from ._middleware import RunContext

__all__ = ["Prepared", "Prepares", "check_model_name"]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What one model call uses instead of the agent's configuration (None keeps the agent's).

    Attributes:
        model: the model to use this time: a model name, sent with the request to the
            agent's provider (``"gpt-4o"``; the built-in providers take it), or another
            provider to call (``new_provider("openai", {"model": ...})``).
        tools: the tools offered this time: names of the agent's own tools (an allow-list)
            and/or :class:`~wingman_actors.tools.Tool` objects. ``[]`` offers none.
        instructions: the instructions this time, in place of the agent's (the sections
            delegation and skills add, and the output-schema note, still follow).
    """

    model: Provider | str | None = None
    tools: Sequence[Tool | str] | None = None
    instructions: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.model, str):
            if not self.model.strip():
                raise ValueError("Prepared(model=...) got an empty model name; pass a name such as 'gpt-4o', or None")
        elif self.model is not None and not callable(getattr(self.model, "run_inference", None)):
            raise TypeError(
                f"Prepared(model=...) takes a model name or a provider, got {type(self.model).__name__}; e.g. "
                "Prepared(model='gpt-4o') or Prepared(model=new_provider(id, {'model': ...}))"
            )
        if self.tools is not None and (isinstance(self.tools, str | bytes) or not isinstance(self.tools, Sequence)):
            raise TypeError("Prepared(tools=...) takes a list of tools or names of the agent's tools")
        for i, t in enumerate(self.tools or ()):
            if not isinstance(t, str | Tool):
                raise TypeError(f"Prepared(tools=...) takes tools or names of the agent's tools; item {i} is a "
                                f"{type(t).__name__} ({t!r}): give a @tool function or a tool's name")
        if self.instructions is not None and not isinstance(self.instructions, str):
            raise TypeError(f"Prepared(instructions=...) takes a str, got {type(self.instructions).__name__}")


class Prepares:
    """One session's use of its agent's ``prepare``: calls it and resolves what it
    returns (a tool list seen before is resolved once)."""

    __slots__ = ("_agent", "_last", "_registry")

    def __init__(self, agent: Agent) -> None:
        self._agent = agent
        self._last: tuple[object, ...] | None = None
        self._registry: ToolRegistry | None = None

    def call(self, ctx: RunContext) -> Prepared | None:
        """What the agent's ``prepare`` chose for the model call ``ctx`` is about to make."""
        prepare = self._agent.prepare
        return check_prepared(self._agent, prepare(ctx)) if prepare is not None else None

    def model(self, chosen: Provider | str, provider: Provider) -> tuple[Provider, str | None]:
        """The provider to call and the request's model name, for ``Prepared(model=chosen)``
        (a name goes to ``provider``, the agent's, when it takes one: :func:`check_model_name`)."""
        if isinstance(chosen, str):
            return provider, check_model_name(self._agent, provider, chosen)
        return chosen, None

    def tools(self, chosen: Sequence[Tool | str]) -> ToolRegistry:
        """The registry of the tools ``chosen`` names or gives."""
        key = tuple(t if isinstance(t, str) else id(t) for t in chosen)
        if key == self._last and self._registry is not None:
            return self._registry
        own = self._agent.tool_registry
        picked: list[Tool] = []
        unknown: list[str] = []
        for t in chosen:
            if isinstance(t, str):
                found = own.get(t)
                if found is None:
                    unknown.append(t)
                else:
                    picked.append(found)
            else:
                picked.append(t)
        if unknown:
            raise AgentError(
                f"agent {self._agent.name!r}: prepare chose tool(s) {unknown} the agent does not have; its tools: "
                f"{list(own.names)} (pass Tool objects to offer others)",
                kind=ErrorKind.INVALID,
            )
        try:
            registry = ToolRegistry(picked)
        except (TypeError, ValueError) as exc:
            raise AgentError(f"agent {self._agent.name!r}: prepare chose bad tools: {exc}",
                             kind=ErrorKind.INVALID) from exc
        self._last, self._registry = key, registry
        return registry


def check_model_name(agent: Agent, provider: Provider, name: str) -> str:
    """``name`` when ``provider`` takes a model per request; a clear error otherwise."""
    if getattr(provider, "per_request_model", False):
        return name
    raise AgentError(
        f"agent {agent.name!r}: prepare chose model {name!r} by name, but its provider "
        f"{type(provider).__name__} cannot take a model per request (it does not set per_request_model = True); "
        f"pass a provider instead: Prepared(model=new_provider(id, {{'model': {name!r}}}))",
        kind=ErrorKind.INVALID,
    )


def check_prepared(agent: Agent, got: object) -> Prepared | None:
    """``got`` if ``prepare`` returned a Prepared or None; a clear error otherwise."""
    if got is None or isinstance(got, Prepared):
        return got
    raise AgentError(
        f"agent {agent.name!r}: prepare must return a Prepared(...) or None, got {type(got).__name__}",
        kind=ErrorKind.INVALID,
    )
