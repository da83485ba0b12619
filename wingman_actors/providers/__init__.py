"""Model providers: the protocol, the registry and the built-in providers.

Example:
    >>> from wingman_actors.providers import new_provider
    >>> provider = new_provider("scripted", {"replies": ["Hello!"]})
"""

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

__all__ = [
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
