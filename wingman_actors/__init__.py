"""wingman-actors: an actor-model runtime for agent formations.

Formations (graphs of agents, fleets and functions, declared with networkx) run as Pykka
actors under a supervisor; the agent layer underneath (``Agent``, ``Session``, ``Fleet``,
``tool``) is usable on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

if TYPE_CHECKING:
    from ._interrupts import interrupt
    from .agents._agent import Agent
    from .agents._fleet import Fleet, FleetResult, Task
    from .agents._result import Result, StepTrace, ToolCall
    from .agents._session import Session, SessionStream
    from .formation import Formation
    from .formation._result import FormationResult, NodeTrace
    from .tools import tool
    from .tools._human import ask_human

__version__ = "0.1.0.dev0"

# The public names are imported on first use (PEP 562), so `import wingman_actors` (and
# the command line's --help and --version) stays fast; `from wingman_actors import Agent`
# works as before.
_WHERE = {
    "Agent": ".agents._agent",
    "Fleet": ".agents._fleet",
    "FleetResult": ".agents._fleet",
    "Formation": ".formation",
    "FormationResult": ".formation._result",
    "NodeTrace": ".formation._result",
    "Result": ".agents._result",
    "Session": ".agents._session",
    "SessionStream": ".agents._session",
    "StepTrace": ".agents._result",
    "Task": ".agents._fleet",
    "ToolCall": ".agents._result",
    "ask_human": ".tools._human",
    "interrupt": "._interrupts",
    "tool": ".tools",
}

__all__ = [
    "Agent",
    "Fleet",
    "FleetResult",
    "Formation",
    "FormationResult",
    "NodeTrace",
    "Result",
    "Session",
    "SessionStream",
    "StepTrace",
    "Task",
    "ToolCall",
    "__version__",
    "ask_human",
    "interrupt",
    "tool",
]


__getattr__ = lazy_exports(__name__, _WHERE, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
