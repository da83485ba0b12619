"""Model providers: the protocol, the registry and the built-in providers.

Example:
    >>> from wingman_actors.providers import new_provider
    >>> provider = new_provider("scripted", {"replies": ["Hello!"]})
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._aio import AsyncInferenceStream
    from ._base import BaseProvider, InferenceStream, Provider, ProviderOptions, ResponseBuilder
    from ._registry import (
        ProviderMeta,
        get_provider_meta,
        list_providers,
        new_provider,
        register_provider,
    )
    from ._replay import RecordingProvider, ReplayProvider
    from ._retry import RetryPolicy
    from ._scripted import ScriptedProvider

# Imported on first use (PEP 562): a formation imports the Provider protocol (._base) without
# the registry, the replay provider or the scripted one.
_WHERE = {
    "AsyncInferenceStream": "._aio",
    "BaseProvider": "._base",
    "InferenceStream": "._base",
    "Provider": "._base",
    "ProviderOptions": "._base",
    "ResponseBuilder": "._base",
    "ProviderMeta": "._registry",
    "get_provider_meta": "._registry",
    "list_providers": "._registry",
    "new_provider": "._registry",
    "register_provider": "._registry",
    "RecordingProvider": "._replay",
    "ReplayProvider": "._replay",
    "RetryPolicy": "._retry",
    "ScriptedProvider": "._scripted",
}

__all__ = [
    "AsyncInferenceStream",
    "BaseProvider",
    "InferenceStream",
    "Provider",
    "ProviderMeta",
    "ProviderOptions",
    "RecordingProvider",
    "ReplayProvider",
    "ResponseBuilder",
    "RetryPolicy",
    "ScriptedProvider",
    "get_provider_meta",
    "list_providers",
    "new_provider",
    "register_provider",
]

__getattr__ = lazy_exports(__name__, _WHERE, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
