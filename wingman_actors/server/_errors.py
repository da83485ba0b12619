"""HTTP errors: one exception type carrying a status and a ``{"error": ...}`` body, and the
mapping of library failures onto statuses.

Statuses: 400 bad JSON, failed validation (the body names the fields) or an unusable
configuration; 401 missing or wrong bearer token; 404 unknown id; 409 busy; 502 the model
provider failed during a run (``kind`` says how: ``agent``, ``rate_limit``, ``network``,
``invalid``, ``cancelled``; a provider's 4xx such as a rejected key is ``invalid``);
504 a run or request ran out of time (``kind`` = ``timeout``); 500 anything else.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import AgentError, ErrorKind, WingmanError
from ._body import scrub

__all__ = ["ApiError", "find_agent_error", "from_agent_error", "invalid", "not_found", "status_for_kind"]


class ApiError(WingmanError):
    """An error answered as ``{"error": message, **extra}`` with ``status``.

    Args:
        status: the HTTP status.
        message: what went wrong and how to fix it.
        **extra: more JSON fields (``fields``, ``kind``, ``problems``...); None values are dropped.
    """

    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = scrub(message)  # it may quote input or run-time text; it must encode as UTF-8
        self.extra = {k: scrub(v) for k, v in extra.items() if v is not None}

    def body(self) -> dict[str, Any]:
        """The JSON body."""
        return {"error": self.message, **self.extra}


def not_found(kind: str, id: str) -> ApiError:
    """404 for an unknown id: ``agent not found: 01H...``."""
    return ApiError(404, f"{kind} not found: {id}")


def invalid(field: str, message: str) -> ApiError:
    """400 naming one field of the request body."""
    return ApiError(400, f"{field}: {message}", fields=[field])


def status_for_kind(kind: ErrorKind | str) -> int:
    """504 for ``timeout``, 502 for every other failure of a run."""
    return 504 if ErrorKind(kind) is ErrorKind.TIMEOUT else 502


def from_agent_error(exc: AgentError) -> ApiError:
    """The answer to a run that failed with ``exc`` (502, or 504 on timeout)."""
    where = f"provider {exc.provider!r}" if exc.provider else "the run"
    return ApiError(
        status_for_kind(exc.kind),
        f"{where} failed: {exc}",
        kind=exc.kind.value,
        provider=exc.provider,
        provider_status=exc.status,
    )


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        nested = getattr(current, "errors", None)  # a fleet's per-item errors
        if isinstance(nested, dict):
            todo.extend(e for _, e in sorted(nested.items()) if isinstance(e, BaseException))
        if current.__cause__ is not None:
            todo.append(current.__cause__)
        elif current.__context__ is not None and not current.__suppress_context__:
            todo.append(current.__context__)


def find_agent_error(exc: BaseException) -> AgentError | None:
    """The first :class:`AgentError` in ``exc``'s cause chain (fleet item errors included)."""
    for cause in _causes(exc):
        if isinstance(cause, AgentError):
            return cause
    return None
