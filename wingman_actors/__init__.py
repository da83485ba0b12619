"""wingman-actors: an actor-model runtime for agent formations."""

from .tools import tool

__version__ = "0.1.0.dev0"

__all__ = ["__version__", "tool"]
