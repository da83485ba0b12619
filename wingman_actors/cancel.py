"""Cancellation and deadlines, shared by sessions, providers and tools.

A :class:`CancelToken` is set for the current context with :func:`cancel_scope`; code deep
below (a provider's retry backoff, a tool) reads it with :func:`current_token` and stops at
its next boundary. Cancelling wakes every sleeper at once: no polling.
"""

from __future__ import annotations

import contextvars
import threading
import time

from .errors import AgentError, ErrorKind

__all__ = ["CancelToken", "cancel_scope", "current_token"]


class CancelToken:
    """A cancellation flag with an optional deadline (``time.monotonic()`` seconds).

    Example:
        >>> token = CancelToken(timeout=5.0)
        >>> token.cancelled
        False
        >>> token.cancel("user pressed stop")
        >>> token.cancelled
        True
    """

    def __init__(self, *, timeout: float | None = None, parent: CancelToken | None = None) -> None:
        self._event = threading.Event()
        self._reason = ""
        self._parent = parent
        deadline: float | None = None if timeout is None else time.monotonic() + timeout
        if parent is not None and parent.deadline is not None:
            deadline = parent.deadline if deadline is None else min(deadline, parent.deadline)
        self.deadline: float | None = deadline
        self.timeout = timeout

    def cancel(self, reason: str = "cancelled") -> None:
        """Cancel: every waiter wakes and the next boundary check raises."""
        self._reason = reason
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """True once cancelled (here or in a parent token)."""
        if self._event.is_set():
            return True
        return self._parent is not None and self._parent.cancelled

    @property
    def expired(self) -> bool:
        """True once the deadline has passed."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def remaining(self) -> float | None:
        """Seconds left before the deadline, or None when there is none."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def check(self) -> None:
        """Raise ``AgentError`` (kind ``cancelled`` or ``timeout``) if the run must stop."""
        if self.cancelled:
            reason = self._reason or (self._parent._reason if self._parent else "") or "cancelled"
            raise AgentError(f"run cancelled: {reason}", kind=ErrorKind.CANCELLED)
        if self.expired:
            raise AgentError(
                f"run timed out after {self._describe_timeout()}", kind=ErrorKind.TIMEOUT
            )

    def sleep(self, seconds: float) -> None:
        """Sleep up to ``seconds``, waking early (and raising) on cancel or deadline."""
        remaining = self.remaining()
        wait = seconds if remaining is None else min(seconds, remaining)
        if self._parent is None:
            self._event.wait(max(0.0, wait))
        else:
            end = time.monotonic() + max(0.0, wait)
            # Wake on either token; the parent is checked in short slices.
            while not self.cancelled and (left := end - time.monotonic()) > 0:
                self._event.wait(min(left, 0.05))
        self.check()

    def _describe_timeout(self) -> str:
        return f"{self.timeout:g}s" if self.timeout is not None else "its deadline"


_current: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar(
    "wingman_cancel_token", default=None
)


def current_token() -> CancelToken | None:
    """The token of the innermost :func:`cancel_scope`, if any."""
    return _current.get()


class cancel_scope:  # lower-case: used like a function, `with cancel_scope(token):`
    """Make ``token`` the current token inside the ``with`` block.

    A small class rather than ``@contextmanager``: it wraps every model call, and a
    generator-based context manager costs several times more.
    """

    __slots__ = ("_reset", "token")

    def __init__(self, token: CancelToken | None) -> None:
        self.token = token

    def __enter__(self) -> CancelToken | None:
        self._reset = _current.set(self.token)
        return self.token

    def __exit__(self, *exc: object) -> None:
        _current.reset(self._reset)
