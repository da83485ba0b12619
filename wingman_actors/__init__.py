"""wingman-actors: an actor-model runtime for agent formations.

Formations (graphs of agents, fleets and functions, declared with networkx) run as Pykka
actors under a supervisor; the agent layer underneath (``Agent``, ``Session``, ``Fleet``,
``tool``) is usable on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

if TYPE_CHECKING:
    from .agent import Agent
    from .fleet import Fleet, FleetResult, Task
    from .formation import Formation
    from .formation.result import FormationResult, NodeTrace
    from .interrupts import interrupt
    from .result import Result, StepTrace, ToolCall
    from .session import Session, SessionStream
    from .tools import tool
    from .tools.human import ask_human

__version__ = "0.1.0.dev0"

# The public names are imported on first use (PEP 562), so `import wingman_actors` (and
# the command line's --help and --version) stays fast; `from wingman_actors import Agent`
# works as before.
_WHERE = {
    "Agent": ".agent",
    "Fleet": ".fleet",
    "FleetResult": ".fleet",
    "Formation": ".formation",
    "FormationResult": ".formation.result",
    "NodeTrace": ".formation.result",
    "Result": ".result",
    "Session": ".session",
    "SessionStream": ".session",
    "StepTrace": ".result",
    "Task": ".fleet",
    "ToolCall": ".result",
    "ask_human": ".tools.human",
    "interrupt": ".interrupts",
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
