"""Which models a provider offers, asked of the provider's own endpoint.

No outside catalogue is consulted, so the answer is the provider's truth and works on an
airgapped network with a local server: Anthropic's models list (through the official SDK),
an OpenAI-compatible ``GET {base_url}/models``, Ollama's ``GET /api/tags``. The offline
providers (``scripted``, ``replay``) offer the one model they report.

Example:
    >>> [m.id for m in list_models("scripted", {"replies": ["hi"]})]
    ['scripted']
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
from pydantic import BaseModel, Field

from .._extras import require
from ..errors import AgentError, ErrorKind
from ..providers import new_provider
from ..providers._http import error_from_exception, error_from_response
from ._ids import rfc3339

__all__ = ["ModelOut", "list_models"]

_PLACEHOLDER_MODEL = "list-models"  # building a provider needs a model; listing does not use it


class ModelOut(BaseModel):
    """One model a provider offers."""

    id: str = Field(description="the name to give as an agent's model")
    name: str = Field(description="a display name (the id when the provider has none)")
    provider: str
    created_at: str | None = Field(default=None, description="RFC 3339, when the provider says")


def _when(value: Any) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return rfc3339(float(value))
    if isinstance(value, datetime):
        return rfc3339(value.timestamp())
    if isinstance(value, str) and value:
        try:
            return rfc3339(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
        except ValueError:
            return None
    return None


def _get_json(provider: str, url: str, headers: dict[str, str], timeout: float) -> Any:
    try:
        with httpx.Client(timeout=timeout) as client:
            response = client.get(url, headers=headers)
    except httpx.HTTPError as exc:
        raise error_from_exception(provider, exc, url) from exc
    if response.status_code >= 400:
        raise error_from_response(provider, response.status_code, response.headers, response.content)
    try:
        return response.json()
    except ValueError:
        raise AgentError(f"{provider} at {url} did not answer JSON", kind=ErrorKind.AGENT, provider=provider) from None


def _anthropic(options: dict[str, Any], timeout: float) -> list[ModelOut]:
    with require("anthropic", "listing the anthropic provider's models"):
        import anthropic  # the SDK is heavy: imported only when asked

    client = anthropic.Anthropic(api_key=options.get("api_key") or None, base_url=options.get("base_url") or None,
                                 max_retries=0, timeout=timeout)
    try:
        return [ModelOut(id=m.id, name=m.display_name or m.id, provider="anthropic", created_at=_when(m.created_at))
                for m in client.models.list(limit=1000)]
    except anthropic.APITimeoutError as exc:
        raise AgentError(f"anthropic timed out listing models: {exc}", kind=ErrorKind.TIMEOUT,
                         provider="anthropic") from exc
    except anthropic.APIConnectionError as exc:
        raise AgentError(f"cannot reach anthropic at {client.base_url}: {exc}", kind=ErrorKind.NETWORK,
                         provider="anthropic") from exc
    except anthropic.APIStatusError as exc:
        headers = httpx.Headers(dict(exc.response.headers))  # the SDK has its own httpx
        raise error_from_response("anthropic", exc.status_code, headers, exc.response.content) from exc
    finally:
        client.close()


def _base_url(provider_id: str, options: dict[str, Any]) -> str:
    """Where ``provider_id`` would send requests with ``options`` (its own defaults and
    environment variables applied, as at run time)."""
    provider = new_provider(provider_id, {**options, "model": options.get("model") or _PLACEHOLDER_MODEL})
    try:
        return str(getattr(provider, "base_url", "")).rstrip("/")
    finally:
        close = getattr(provider, "close", None)
        if close is not None:
            close()


def _openai(options: dict[str, Any], timeout: float) -> list[ModelOut]:
    base = _base_url("openai", options)
    key = options.get("api_key")
    data = _get_json("openai", f"{base}/models", {"Authorization": f"Bearer {key}"} if key else {}, timeout)
    items = data.get("data") if isinstance(data, dict) else None
    return [ModelOut(id=str(m["id"]), name=str(m["id"]), provider="openai", created_at=_when(m.get("created")))
            for m in items or [] if isinstance(m, dict) and m.get("id")]


def _ollama(options: dict[str, Any], timeout: float) -> list[ModelOut]:
    base = _base_url("ollama", options)
    data = _get_json("ollama", f"{base}/api/tags", {}, timeout)
    items = data.get("models") if isinstance(data, dict) else None
    return [ModelOut(id=str(m.get("model") or m["name"]), name=str(m["name"]), provider="ollama",
                     created_at=_when(m.get("modified_at")))
            for m in items or [] if isinstance(m, dict) and m.get("name")]


def list_models(provider: str, options: dict[str, Any], timeout: float = 30.0) -> list[ModelOut]:
    """The models ``provider`` offers, asked of its endpoint with ``options`` (``base_url``,
    ``api_key``...), sorted by id.

    Raises:
        AgentError: the provider could not be asked (``network``, ``timeout``) or refused
            (``invalid`` for its 4xx, e.g. a rejected key).
    """
    if provider == "anthropic":
        models = _anthropic(options, timeout)
    elif provider == "openai":
        models = _openai(options, timeout)
    elif provider == "ollama":
        models = _ollama(options, timeout)
    else:
        built = new_provider(provider, options)
        try:
            models = [ModelOut(id=built.model, name=built.model, provider=provider)]
        finally:
            close = getattr(built, "close", None)
            if close is not None:
                close()
    return sorted(models, key=lambda m: m.id)
