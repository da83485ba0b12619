"""Providers shared by the runs of one stored agent, rebuilt when its configuration changes
and closed once no run uses them."""

from __future__ import annotations

import json
import threading
from typing import Any

from ..providers import new_provider
from ..providers._base import Provider

__all__ = ["ProviderCache", "close_provider"]


def close_provider(provider: Provider | None) -> None:
    """Close ``provider`` if it has a ``close`` (HTTP providers hold connections)."""
    close = getattr(provider, "close", None)
    if close is not None:
        close()


class _Cached:
    """A provider shared by the runs of one agent configuration, closed when it is replaced
    (or the server stops) and no run still uses it."""

    def __init__(self, signature: str, provider: Provider) -> None:
        self.signature = signature
        self.provider = provider
        self.users = 0
        self.stale = False


class ProviderCache:
    """Providers by agent id, rebuilt when the agent's provider, model, options or stored key
    change. Sharing keeps HTTP connections alive between messages and lets a scripted
    provider's replies advance from one message to the next, as in the library."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Cached] = {}

    def acquire(self, agent_id: str, provider_id: str, options: dict[str, Any]) -> _Cached:
        """The cached provider for this configuration, built on a miss (may raise AgentError)."""
        signature = json.dumps([provider_id, options], sort_keys=True, default=str)
        with self._lock:
            entry = self._entries.get(agent_id)
            if entry is not None and entry.signature == signature:
                entry.users += 1
                return entry
        provider = new_provider(provider_id, options)  # outside the lock: building may be slow
        fresh = _Cached(signature, provider)
        fresh.users = 1
        with self._lock:
            old = self._entries.get(agent_id)
            self._entries[agent_id] = fresh
            if old is not None:
                old.stale = True
                if old.users == 0:
                    close_provider(old.provider)
        return fresh

    def release(self, entry: _Cached) -> None:
        """A run is done with ``entry``'s provider."""
        with self._lock:
            entry.users -= 1
            done = entry.stale and entry.users == 0
        if done:
            close_provider(entry.provider)

    def forget(self, agent_id: str) -> None:
        """Drop a deleted agent's provider (closed once unused)."""
        with self._lock:
            entry = self._entries.pop(agent_id, None)
            if entry is None:
                return
            entry.stale = True
            done = entry.users == 0
        if done:
            close_provider(entry.provider)

    def close(self) -> None:
        """Close every provider (at shutdown)."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            close_provider(entry.provider)
