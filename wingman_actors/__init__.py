"""wingman-actors: an actor-model runtime for agent formations.

The agent layer (``Agent``, ``Session``, ``tool``) is usable on its own; formations build
on it.
"""

from .agent import Agent
from .result import Result, StepTrace, ToolCall
from .session import Session, SessionStream
from .tools import tool

__version__ = "0.1.0.dev0"

__all__ = ["Agent", "Result", "Session", "SessionStream", "StepTrace", "ToolCall", "__version__", "tool"]
