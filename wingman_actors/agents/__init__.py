"""The agent layer: agents, sessions, fleets, middleware, context budgets and results.

``Agent`` is a named, immutable configuration; ``Session`` runs the agentic loop
(blocking or streaming); ``Fleet`` runs one agent template over many tasks. The common
names are also exported from the top-level package (``from wingman_actors import Agent``).

Example:
    >>> from wingman_actors.agents import Agent, Session
    >>> from wingman_actors.testing import ScriptedProvider
    >>> Session(Agent("a", provider=ScriptedProvider(["hi"]))).run("hello").response
    'hi'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._agent import DEFAULT_MAX_STEPS, Agent
    from ._context_budget import ContextWindow, Fitted, estimate_message, estimate_request, estimate_text
    from ._fleet import DEFAULT_MAX_WORKERS, Fleet, FleetResult, Task
    from ._middleware import (
        Halt,
        LoggingMiddleware,
        Middleware,
        OutputGuardrail,
        RunContext,
        TimeoutMiddleware,
    )
    from ._prepare import Prepared
    from ._result import Result, StepTrace, ToolCall
    from ._session import Session, SessionStream
    from ._structured import OutputValidationError

# Imported on first use (PEP 562): ``import wingman_actors.agents`` stays cheap.
_WHERE = {
    "Agent": "._agent",
    "DEFAULT_MAX_STEPS": "._agent",
    "ContextWindow": "._context_budget",
    "Fitted": "._context_budget",
    "estimate_message": "._context_budget",
    "estimate_request": "._context_budget",
    "estimate_text": "._context_budget",
    "DEFAULT_MAX_WORKERS": "._fleet",
    "Fleet": "._fleet",
    "FleetResult": "._fleet",
    "Task": "._fleet",
    "Halt": "._middleware",
    "LoggingMiddleware": "._middleware",
    "Middleware": "._middleware",
    "OutputGuardrail": "._middleware",
    "RunContext": "._middleware",
    "TimeoutMiddleware": "._middleware",
    "Prepared": "._prepare",
    "Result": "._result",
    "StepTrace": "._result",
    "ToolCall": "._result",
    "Session": "._session",
    "SessionStream": "._session",
    "OutputValidationError": "._structured",
}

__all__ = [
    "Agent",
    "ContextWindow",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_MAX_WORKERS",
    "Fitted",
    "Fleet",
    "FleetResult",
    "Halt",
    "LoggingMiddleware",
    "Middleware",
    "OutputGuardrail",
    "OutputValidationError",
    "Prepared",
    "Result",
    "RunContext",
    "Session",
    "SessionStream",
    "StepTrace",
    "Task",
    "TimeoutMiddleware",
    "ToolCall",
    "estimate_message",
    "estimate_request",
    "estimate_text",
]

__getattr__ = lazy_exports(__name__, _WHERE, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
