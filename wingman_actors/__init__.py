"""wingman-actors: an actor-model runtime for agent formations.

Formations (graphs of agents, fleets and functions, declared with networkx) run as Pykka
actors under a supervisor; the agent layer underneath (``Agent``, ``Session``, ``Fleet``,
``tool``) is usable on its own.
"""

from .agent import Agent
from .fleet import Fleet, FleetResult, Task
from .formation import Formation
from .formation.result import FormationResult, NodeTrace
from .result import Result, StepTrace, ToolCall
from .session import Session, SessionStream
from .tools import tool

__version__ = "0.1.0.dev0"

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
    "tool",
]
