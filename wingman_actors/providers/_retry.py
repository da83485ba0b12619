"""One retry policy for every provider: exponential backoff with full jitter.

Retries rate limits (honouring ``retry-after``), network errors, timeouts and 5xx answers;
never ``invalid`` requests. Sleeps through the current :class:`~wingman_actors._cancel.CancelToken`
so a cancelled or timed-out run stops waiting at once.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .._cancel import CancelToken, current_token
from ..errors import AgentError
from ._token_bridge import TokenBridge

__all__ = ["RetryPolicy", "stopped"]

T = TypeVar("T")
log = logging.getLogger("wingman_actors.providers")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a provider retries a failed call.

    Attributes:
        max_retries: retries after the first attempt (0 = never retry).
        base_delay: the first backoff ceiling, in seconds; it doubles each retry.
        max_delay: the largest backoff ceiling, in seconds.
        max_retry_after: the longest ``retry-after`` honoured, in seconds.
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, error: AgentError) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based) after ``error``."""
        if error.retry_after is not None:
            return min(max(error.retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return random.uniform(ceiling / 2, ceiling)

    def call(self, fn: Callable[[], T], *, describe: str = "model call") -> T:
        """Run ``fn``, retrying retryable :class:`AgentError` failures."""
        attempt = 0
        while True:
            token = current_token()
            if token is not None:
                token.check()
            try:
                return fn()
            except AgentError as exc:
                attempt += 1
                wait = self.wait_after(exc, attempt, token, describe)
                if token is None:
                    time.sleep(wait)
                    continue
                try:
                    token.sleep(wait)
                except AgentError as stop:  # the run ended while it waited: say for what
                    raise waiting(stop, exc, wait, describe) from exc

    async def acall(self, fn: Callable[..., Awaitable[T]], *args: Any, describe: str = "model call") -> T:
        """:meth:`call` for a coroutine function: the same policy, awaited; each attempt
        awaits ``fn(*args)``. A cancel of the current run's token cancels the attempt in
        flight (its request is closed)."""
        bridge = TokenBridge()
        try:
            attempt = 0
            while True:
                try:
                    pending = fn(*args)
                    bridge.arm(pending)  # what bridge.run() does, without a coroutine of its own per call
                    try:
                        return await pending
                    except asyncio.CancelledError:
                        bridge.raise_if_fired()
                        raise
                    finally:
                        bridge.disarm()
                except AgentError as exc:
                    attempt += 1
                    wait = self.wait_after(exc, attempt, bridge.token, describe)
                    try:
                        await bridge.sleep(wait)
                    except AgentError as stop:  # the run ended while it waited: say for what
                        raise waiting(stop, exc, wait, describe) from exc
        finally:
            bridge.close()

    def wait_after(self, error: AgentError, attempt: int, token: CancelToken | None, describe: str) -> float:
        """The wait before retry number ``attempt`` after ``error``; raises instead when the
        run has stopped (its error, from ``error``), or ``error`` is not to be retried."""
        if token is not None and (token.cancelled or token.expired):
            stopped(token, error)  # the run ended it (a closed request): say so
        if not error.retryable or attempt > self.max_retries:
            raise error
        wait = self.delay(attempt, error)
        log.info("%s failed (%s); retry %d/%d in %.2fs", describe, error, attempt, self.max_retries, wait)
        return wait


def waiting(stop: AgentError, error: AgentError, wait: float, describe: str) -> AgentError:
    """The run's cancel or timeout error ``stop``, raised while it waited ``wait`` seconds to
    retry after ``error``: the same kind, its message naming that wait and that error."""
    err = AgentError(f"{stop.message}, while waiting {wait:.1f}s to retry the {describe} after: {error}",
                     kind=stop.kind, provider=error.provider)
    err.run_stop = True  # type: ignore[attr-defined]  # stopped() raises it as it is
    return err


def stopped(token: CancelToken, cause: BaseException) -> None:
    """Raise the run's cancel or timeout error from ``cause`` if ``token`` says the run
    must stop (a request the cancel closed fails as a network error: this names why).
    ``cause`` already the run's error, from :func:`waiting`, is left for the caller to raise."""
    if getattr(cause, "run_stop", False):
        return
    try:
        token.check()
    except AgentError as stop:
        raise stop from cause
