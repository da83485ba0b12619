"""Testkit for users: a scripted provider for offline, deterministic agents.

Example:
    >>> from wingman_actors import Agent, Session
    >>> from wingman_actors.testing import ScriptedProvider
    >>> provider = ScriptedProvider(["first answer", "second answer"])
    >>> Session(Agent("a", provider=provider)).run("hi").response
    'first answer'
"""

from .providers.scripted import ScriptedProvider

__all__ = ["ScriptedProvider"]
