"""The provider registry: ids mapped to factories.

Example:
    >>> from wingman_actors.providers import new_provider
    >>> p = new_provider("scripted", {"replies": ["hi"]})
    >>> p.id
    'scripted'
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import AgentError, ErrorKind
from ._base import Provider

__all__ = [
    "ProviderMeta",
    "get_provider_meta",
    "list_providers",
    "new_provider",
    "register_provider",
]


@dataclass(frozen=True)
class ProviderMeta:
    """A registered provider.

    Attributes:
        id: the registry id, e.g. ``"anthropic"``.
        name: a human name, e.g. ``"Anthropic"``.
        auth_types: how it authenticates: ``("api_key",)``, or ``()`` for none.
        factory: builds a provider from an options dict.
        description: one line on how to configure it (shown by ``wingman-actors providers``).
        env: environment variables it reads.
    """

    id: str
    name: str
    auth_types: tuple[str, ...]
    factory: Callable[[dict[str, Any]], Provider]
    description: str = ""
    env: tuple[str, ...] = field(default_factory=tuple)


_lock = threading.Lock()
_registry: dict[str, ProviderMeta] = {}


def register_provider(meta: ProviderMeta, *, replace: bool = False) -> ProviderMeta:
    """Register a provider. Registering an existing id needs ``replace=True``."""
    if not meta.id or not meta.id.replace("-", "_").replace(".", "_").isidentifier():
        raise ValueError(f"provider id {meta.id!r} must be a non-empty name like 'my_provider'")
    with _lock:
        if meta.id in _registry and not replace:
            raise ValueError(
                f"provider {meta.id!r} is already registered; pass replace=True to override it"
            )
        _registry[meta.id] = meta
    return meta


def list_providers() -> list[ProviderMeta]:
    """Every registered provider, sorted by id."""
    _ensure_builtins()
    with _lock:
        return sorted(_registry.values(), key=lambda m: m.id)


def get_provider_meta(id: str) -> ProviderMeta:
    """The registered provider ``id``, or ``AgentError(invalid)`` listing the known ids."""
    _ensure_builtins()
    with _lock:
        meta = _registry.get(id)
        known = sorted(_registry)
    if meta is None:
        close = difflib.get_close_matches(str(id), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise AgentError(
            f"unknown provider {id!r}{hint}; registered providers: {', '.join(known)}",
            kind=ErrorKind.INVALID,
            provider=id,
        )
    return meta


def new_provider(id: str, options: dict[str, Any] | None = None) -> Provider:
    """Build the provider ``id`` from one options dict (``model``, ``max_tokens``,
    ``temperature``, ``api_key``, ``base_url``, ``timeout``, ``max_retries``, plus keys of
    the provider's own; the HTTP providers also take ``top_p``, ``top_k``, ``stop``,
    ``headers``, ``http_client``, ``async_http_client`` and pass any other key into the
    request body as it is)."""
    if options is not None and not isinstance(options, dict):
        raise AgentError(
            f"provider options must be a dict, got {type(options).__name__}",
            kind=ErrorKind.INVALID,
            provider=id,
        )
    return get_provider_meta(id).factory(dict(options or {}))


_builtins_loaded = False
_builtins_lock = threading.Lock()  # not _lock: importing the built-ins registers them under it


def _ensure_builtins() -> None:
    # Built-in providers register on import; importing lazily keeps `import wingman_actors`
    # from importing the anthropic SDK. The flag is set only once they are registered, and
    # other threads wait for that: a flag set before the import let a concurrent first
    # call find an empty registry ("unknown provider").
    global _builtins_loaded
    if _builtins_loaded:
        return
    with _builtins_lock:
        if not _builtins_loaded:
            from . import _builtin  # noqa: F401

            _builtins_loaded = True
