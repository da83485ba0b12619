"""The options of the HTTP providers (OpenAI-compatible, Ollama, Anthropic): the common keys,
the sampling keys the APIs share, extra headers, a client of the user's, and pass-through
keys.

Example:
    >>> from wingman_actors.providers._options import RemoteOptions
    >>> opts = RemoteOptions.parse("openai", {"model": "m", "top_p": 0.9, "seed": 7})
    >>> opts.top_p, opts.extra_body()
    (0.9, {'seed': 7})
"""

from __future__ import annotations

import difflib
import logging
from typing import Any, Literal, Self

import httpx
from pydantic import ConfigDict, Field, field_validator, model_validator

from ._aiohttp import aiohttp_installed
from ._base import ProviderOptions

__all__ = ["TOOL_USE_KEYS", "RemoteOptions", "check_client", "without_tool_use"]

log = logging.getLogger(__name__)

_DOCUMENTED_PASS_THROUGH = frozenset({"top_k"})
"""Keys sent as they are where a provider has no option of that name (``top_k`` to an
OpenAI-compatible server: vLLM and llama.cpp take it): documented, so never a typo."""


TOOL_USE_KEYS = frozenset({"tool_choice", "parallel_tool_calls"})
"""Pass-through keys that say how the model is to use the tools offered. OpenAI and
Anthropic refuse them (a 400) on a request that offers none, so such a request (an agent's
final call past ``max_steps``, a ``prepare`` that offers no tools, a compaction) goes
without them."""


def without_tool_use(extra: dict[str, Any]) -> dict[str, Any]:
    """``extra`` (pass-through keys) as sent on a request that offers no tools."""
    return {key: value for key, value in extra.items() if key not in TOOL_USE_KEYS}


def check_client(key: str, value: Any, types: tuple[type, ...]) -> Any:
    """``value`` if it is ``None`` or one of ``types``; else a ``ValueError`` naming ``key``
    and the types it takes."""
    if value is None or isinstance(value, types):
        return value
    names = " or ".join(f"{t.__module__.split('.')[0]}.{t.__name__}" for t in types)
    raise ValueError(f"{key} must be an {names} (got {type(value).__name__})")


class RemoteOptions(ProviderOptions):
    """Options of the providers that talk HTTP to a model server.

    Attributes:
        top_p: nucleus sampling, 0 to 1.
        stop: sequences that end the answer (a string or a list of them).
        headers: HTTP headers added to every request (they override the provider's own,
            e.g. ``Authorization``).
        http_client: an ``httpx.Client`` to send the sync requests through, used as it is
            (its own base URL, headers and timeouts are overridden per request only where
            the provider sets them); the provider does not close it.
        async_http_client: an ``httpx.AsyncClient`` for the async requests, likewise.
        async_transport: what the provider's own async client sends its requests through:
            ``"aiohttp"`` (the ``aiohttp`` extra: ``httpx-aiohttp``'s transport, about a fifth
            of httpx's CPU per request) or ``"httpx"`` (httpx's own). Default: ``"aiohttp"``
            when the extra is installed, else ``"httpx"``.

    Any other key is sent in the request body as it is (``extra_body``): a vendor
    parameter this library does not know needs no new release. (``tool_choice`` and
    ``parallel_tool_calls`` only with tools: see :data:`TOOL_USE_KEYS`.)
    """

    model_config = ConfigDict(extra="allow")

    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    stop: list[str] | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    http_client: Any = None
    async_http_client: Any = None
    async_transport: Literal["httpx", "aiohttp"] | None = None

    @field_validator("stop", mode="before")
    @classmethod
    def _one_stop(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        # Checked here, once: a URL no request can go to failed every request later as a
        # "network" error, retried as if the server were down.
        if not value:
            return value
        try:
            url = httpx.URL(value.strip())
            fine = url.scheme in ("http", "https") and bool(url.host)
        except httpx.InvalidURL:
            fine = False
        if not fine:
            raise ValueError(
                f"base_url {value!r} is not an http:// or https:// URL; give the server's address with its "
                "scheme, e.g. 'http://localhost:8000/v1'"
            )
        return value

    @field_validator("http_client")
    @classmethod
    def _sync_client(cls, value: Any) -> Any:
        return check_client("http_client", value, cls.sync_client_types())

    @field_validator("async_http_client")
    @classmethod
    def _async_client(cls, value: Any) -> Any:
        return check_client("async_http_client", value, cls.async_client_types())

    @field_validator("async_transport")
    @classmethod
    def _transport_installed(cls, value: str | None) -> str | None:
        if value == "aiohttp" and not aiohttp_installed():
            raise ValueError(
                'async_transport "aiohttp" needs the aiohttp extra: pip install "wingman-actors[aiohttp]" '
                '(or leave async_transport out, or set it to "httpx")'
            )
        return value

    @classmethod
    def sync_client_types(cls) -> tuple[type, ...]:
        """The types ``http_client`` takes."""
        return (httpx.Client,)

    @classmethod
    def async_client_types(cls) -> tuple[type, ...]:
        """The types ``async_http_client`` takes."""
        return (httpx.AsyncClient,)

    @model_validator(mode="after")
    def _near_misses(self) -> Self:
        # A pass-through key is sent, not refused; one that looks like a typo of an option
        # of ours is worth a word (the server may well refuse it).
        known = list(type(self).model_fields)
        for key in self.model_extra or {}:
            if key in _DOCUMENTED_PASS_THROUGH:
                continue
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
            if close:
                log.warning(
                    "provider option %r is not one of ours, so it is sent in the request body as it is; "
                    "did you mean %r?", key, close[0],
                )
        return self

    def extra_body(self) -> dict[str, Any]:
        """The keys this model does not define, to send in the request body as they are."""
        return dict(self.model_extra or {})
