"""Shared httpx plumbing for the HTTP providers (Ollama, OpenAI-compatible): requests
through the provider's :class:`~wingman_actors.providers._abort.ClientPool` (closed by a
cancel, timed out by the run's deadline), and the mapping of HTTP failures onto :class:`ErrorKind`.

Mapping: 429 → rate_limit (``retry-after`` honoured); 408 → timeout; 400/401/403/404/422 and
other 4xx → invalid (a context-window overflow names the fix); 5xx and 529 → agent;
refused/reset/DNS → network; read/connect timeout → timeout.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, TypeVar

import httpx
import pydantic_core

from ..errors import AgentError, ErrorKind
from ._abort import ClientPool, request_timeout
from ._asend import Answer, json_body

__all__ = [
    "ClientPool",
    "aopen_stream",
    "apost_json",
    "context_window_hint",
    "error_from_exception",
    "error_from_response",
    "open_stream",
    "parse_retry_after",
    "post_json",
    "retry_after_from",
]

T = TypeVar("T")


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``retry-after`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_after_from(headers: Mapping[str, str]) -> float | None:
    """Seconds an error answer's headers ask us to wait: ``retry-after-ms`` (milliseconds,
    which OpenAI and Anthropic send) before ``retry-after``, as their SDKs read them."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms)) / 1000
        except ValueError:
            pass
    return parse_retry_after(headers.get("retry-after"))


def kind_for_status(status: int) -> ErrorKind:
    """The :class:`ErrorKind` of an HTTP error status."""
    if status == 429:
        return ErrorKind.RATE_LIMIT
    if status == 408:
        return ErrorKind.TIMEOUT
    if status >= 500:
        return ErrorKind.AGENT
    return ErrorKind.INVALID


def _error_text(body: bytes | str) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data: Any = json.loads(text)
    except ValueError:
        return text.strip()[:500]
    # {"error": "..."} (Ollama), {"error": {"message": "..."}} (OpenAI), {"message": ...}
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail") or json.dumps(err)
            return str(msg)[:500]
        return str(err)[:500]
    return text.strip()[:500]


def error_from_response(provider: str, status: int, headers: Mapping[str, str], body: bytes | str) -> AgentError:
    """An :class:`AgentError` for an HTTP error answer."""
    kind = kind_for_status(status)
    detail = _error_text(body) or httpx.codes.get_reason_phrase(status)
    hint = ""
    if status in (401, 403):
        hint = " (check the api_key option or the provider's key environment variable)"
    elif status == 404:
        hint = " (check base_url and that the model exists on this server)"
    else:
        hint = context_window_hint(status, detail)
    return AgentError(
        f"{provider} answered HTTP {status}: {detail}{hint}",
        kind=kind,
        status=status,
        retry_after=retry_after_from(headers),
        provider=provider,
    )


# How servers say a request is longer than the model's context window (OpenAI, vLLM,
# llama.cpp, Anthropic, Bedrock...), lower-cased; LiteLLM matches these phrases too.
_CONTEXT_WINDOW = (
    "context length", "context_length", "context limit", "context window", "context_window",
    "prompt is too long", "input tokens exceed", "maximum length",
)


def context_window_hint(status: int, detail: str) -> str:
    """The fix to name when a 4xx answer says the request overflows the context window."""
    text = detail.lower()
    if 400 <= status < 500 and status != 429 and any(phrase in text for phrase in _CONTEXT_WINDOW):
        return (
            " (the request does not fit the model's context window: give the agent a context_budget "
            "below the window, so older turns are left out of requests, or send less)"
        )
    return ""


def error_from_exception(provider: str, exc: httpx.HTTPError, url: str = "") -> AgentError:
    """An :class:`AgentError` for a transport failure (refused, reset, DNS, timeout)."""
    where = f" at {url}" if url else ""
    if isinstance(exc, httpx.TimeoutException):
        return AgentError(
            f"{provider} timed out{where}: {exc!r}; raise the timeout option (seconds) for long answers",
            kind=ErrorKind.TIMEOUT, provider=provider,
        )
    if isinstance(exc, httpx.HTTPStatusError):
        r = exc.response
        return error_from_response(provider, r.status_code, r.headers, r.content)
    if isinstance(exc, httpx.TransportError):
        return AgentError(
            f"cannot reach {provider}{where}: {exc!s} ({type(exc).__name__})",
            kind=ErrorKind.NETWORK,
            provider=provider,
        )
    return AgentError(f"{provider} request failed{where}: {exc!r}", kind=ErrorKind.AGENT, provider=provider)


def post_json(holder: ClientPool, provider: str, path: str, body: dict[str, Any]) -> Any:
    """POST ``body`` as JSON to ``path`` and return the decoded JSON answer. A cancel of
    the current run closes the request; its timeout is cut to the run's remaining time.

    Args:
        holder: the provider's client pool.
        provider: the provider id, named in errors.
        path: the path under the holder's base URL, e.g. ``"/api/chat"``.
        body: the JSON request body.

    Returns:
        The decoded JSON body of a 2xx answer.

    Raises:
        AgentError: for an HTTP error status, a transport failure, or a body that is not JSON.
    """
    url = holder.base_url + path
    try:
        with holder.lease() as lease:
            target, headers = holder.target(path)
            response = lease.client.post(
                target, json=body, headers=headers, timeout=request_timeout(holder.timeout), extensions=lease.extensions
            )
    except httpx.HTTPError as exc:
        raise error_from_exception(provider, exc, url) from exc
    return json_answer(provider, response)


async def apost_json(holder: ClientPool, provider: str, path: str, body: dict[str, Any],
                     parse: Callable[[Any, str], T], model: str) -> T:
    """:func:`post_json` on the running event loop's async client, the decoded answer
    read by ``parse(data, model)`` (the provider's reading of its JSON): a provider's
    ``_ainfer`` returns this coroutine rather than awaiting it in one of its own."""
    content = json_body(body)
    del body  # not held through the await: one object (and its messages) less per call in flight
    try:
        response = await holder.aread(path, content)
    except httpx.HTTPError as exc:
        raise error_from_exception(provider, exc, holder.base_url + path) from exc
    return parse(json_answer(provider, response), model)


def json_answer(provider: str, response: Answer) -> Any:
    """The decoded JSON body of a read ``response``; an error status or a body that is not
    JSON raises :class:`AgentError`."""
    status, content = response.status_code, response.content
    if status >= 400:
        raise error_from_response(provider, status, response.headers, content)
    try:
        return loads(content)  # as httpx's Response.json()
    except ValueError as exc:
        text = content.decode("utf-8", "replace")
        raise AgentError(
            f"{provider} answered with a body that is not JSON: {text[:200]!r}",
            kind=ErrorKind.AGENT,
            status=status,
            provider=provider,
        ) from exc


def loads(content: bytes) -> Any:
    """``json.loads(content)``: parsed by pydantic's JSON parser (``pydantic_core.from_json``,
    a third of the time for an answer's body) when it can. What it refuses (a body not in
    UTF-8, a lone surrogate, anything not JSON) is left to ``json.loads``, so what either
    returns, and the error raised, are ``json.loads``'s."""
    try:
        return pydantic_core.from_json(content, cache_strings="keys")
    except ValueError:
        return json.loads(content)


@contextlib.contextmanager
def open_stream(
    holder: ClientPool,
    provider: str,
    path: str,
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> Iterator[httpx.Response]:
    """POST ``body`` and yield the streaming response once its status is known to be good.

    An error status is read in full and raised as :func:`error_from_response`. Transport
    failures, at the start or while the caller reads the body inside the ``with`` block,
    are raised as :func:`error_from_exception`. The response is closed on leaving the block,
    and by a cancel of the current run at any time.

    Raises:
        AgentError: for an HTTP error status or a transport failure.
    """
    url = holder.base_url + path
    timeout = request_timeout(holder.timeout)
    try:
        target, headers = holder.target(path, headers)
        with holder.lease() as lease, lease.client.stream(
            "POST", target, json=body, headers=headers, timeout=timeout, extensions=lease.extensions
        ) as response:
            if lease.extensions:
                lease.attach(response)
            if response.status_code >= 400:
                response.read()
                raise error_from_response(provider, response.status_code, response.headers, response.content)
            yield response
    except httpx.HTTPError as exc:
        raise error_from_exception(provider, exc, url) from exc


@contextlib.asynccontextmanager
async def aopen_stream(
    holder: ClientPool,
    provider: str,
    path: str,
    body: dict[str, Any],
    headers: dict[str, str] | None = None,
) -> AsyncIterator[httpx.Response]:
    """:func:`open_stream` on the running event loop's async client."""
    content = json_body(body)
    try:
        response = await holder.astream(path, content, headers)
    except httpx.HTTPError as exc:
        raise error_from_exception(provider, exc, holder.base_url + path) from exc
    try:
        try:
            if response.status_code >= 400:
                await response.aread()
                raise error_from_response(provider, response.status_code, response.headers, response.content)
            yield response
        finally:
            await response.aclose()
    except httpx.HTTPError as exc:
        raise error_from_exception(provider, exc, holder.base_url + path) from exc
