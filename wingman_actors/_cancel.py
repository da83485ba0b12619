"""Cancellation and deadlines, shared by sessions, providers and tools.

A :class:`CancelToken` is set for the current context with :func:`cancel_scope`; code deep
below (a provider's retry backoff, a tool) reads it with :func:`current_token` and stops at
its next boundary. Cancelling wakes every sleeper at once: no polling.
"""

from __future__ import annotations

import _thread
import contextvars
import itertools
import queue
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from .errors import AgentError, ErrorKind

__all__ = ["CancelToken", "cancel_scope", "current_token", "next_handed"]

_T = TypeVar("_T")


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
        self._cancelled = False
        self._reason = ""
        # Sleepers wait on a latch: a lock held from its creation until cancel() releases
        # it; each sleeper it wakes releases it again for the next. It exists only once
        # someone sleeps on the token (most runs never do), and costs a fraction of a
        # threading.Event, whose Condition allocates a lock and a deque entry per wait.
        self._latch: _thread.LockType | None = None
        # A child sees its ancestors' cancellation by looking up its chain of parents when
        # asked (check(), cancelled); a parent keeps (and cancels, to wake them) only the
        # children that have a sleeper on them or below them. A fleet's sessions, none of
        # which sleeps, then cost the parent nothing: no registration, no shared lock.
        self._children: dict[CancelToken, None] | None = None  # a dict: release() is O(1)
        # What on_cancel() registered (a request to close, a tool wait to wake): made on
        # first use, like the latch, so a run that registers nothing pays nothing.
        self._callbacks: dict[int, Callable[[], None]] | None = None
        self._parent = parent
        self._started: float | None = None
        deadline: float | None = None
        if timeout is not None:
            self._started = time.monotonic()
            deadline = self._started + timeout
        if parent is not None and parent.deadline is not None:
            deadline = parent.deadline if deadline is None else min(deadline, parent.deadline)
        self.deadline: float | None = deadline
        self.timeout = timeout

    def cancel(self, reason: str = "cancelled") -> None:
        """Cancel: every waiter wakes (in child tokens too) and the next check raises."""
        with _latch_lock:
            if self._cancelled:
                return
            self._reason = reason
            self._cancelled = True
            latch = self._latch
            if latch is not None:
                latch.release()
            children = list(self._children or ())
            callbacks = self._callbacks
            if callbacks:
                self._callbacks = {}  # not None: release() still unregisters from the parent
        for fn in (callbacks or {}).values():
            fn()
        for child in children:
            child.cancel(reason)

    def on_cancel(self, fn: Callable[[], None]) -> Callable[[], None]:
        """Call ``fn`` once when this token (or an ancestor) is cancelled: from the
        cancelling thread, or at once when it is cancelled already. Used to abort what a
        check between steps cannot reach: an HTTP request in flight, a wait on a tool.

        Returns:
            A function that unregisters ``fn`` (call it when the guarded work has ended).
        """
        return _Unregister(self, self._register(fn))

    def _register(self, fn: Callable[[], None]) -> int:
        """What :meth:`on_cancel` does; returns the key :meth:`_forget` unregisters ``fn``
        by (for a caller that keeps the token: no unregister object per registration)."""
        key = next(_callback_keys)
        with _latch_lock:
            if self._callbacks is None:
                self._callbacks = {}
            self._callbacks[key] = fn
            self._attach()  # set before _attach reads the parents: see release()
            stopper = self._stopper()
            late = self._callbacks.pop(key) if stopper is not None else None
        if late is not None:
            late()
        return key

    def _forget(self, key: int) -> None:
        """Unregister the function :meth:`_register` gave ``key`` (if it is still there)."""
        with _latch_lock:
            if self._callbacks is not None:
                self._callbacks.pop(key, None)

    def release(self) -> None:
        """Detach from the parent token: the run this token guards has ended. A long-lived
        parent (a fleet's run, a delegating agent's) then keeps no finished child, and its
        later cancellation no longer reaches this token (one already seen stays)."""
        parent = self._parent
        if parent is None:
            return
        stopper = parent._stopper()
        if stopper is not None and not self._cancelled:
            self.cancel(stopper._reason)
        self._parent = None
        # Registered with the parent only if a sleeper is on this token or below it; _attach
        # sets those before it reads _parent, this reads them after clearing it: either it
        # sees them (and unregisters under the lock) or the sleeper never registers it.
        if self._latch is not None or self._children is not None or self._callbacks is not None:
            with _latch_lock:
                if parent._children is not None:
                    parent._children.pop(self, None)

    def _stopper(self) -> CancelToken | None:
        """This token or the nearest ancestor that is cancelled, if any."""
        token: CancelToken | None = self
        while token is not None:
            if token._cancelled:
                return token
            token = token._parent
        return None

    def _attach(self) -> None:
        """Register this token with its parent, and so on up, so that cancelling any
        ancestor reaches (and wakes) its sleepers. Call with ``_latch_lock`` held."""
        child = self
        parent = child._parent
        while parent is not None:
            if parent._children is None:
                parent._children = {}
            elif child in parent._children:
                return  # registered before: so is everything above
            parent._children[child] = None
            child, parent = parent, parent._parent

    @property
    def cancelled(self) -> bool:
        """True once cancelled (here or in a parent token)."""
        return self._cancelled or (self._parent is not None and self._stopper() is not None)

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
        # Called at every step of a run: the parents are walked only when there are any.
        stopper = self._stopper() if self._cancelled or self._parent is not None else None
        if stopper is not None:
            raise AgentError(f"run cancelled: {stopper._reason or 'cancelled'}", kind=ErrorKind.CANCELLED)
        deadline = self.deadline
        if deadline is not None and time.monotonic() >= deadline:
            raise AgentError(
                f"run timed out after {self._describe_timeout()}", kind=ErrorKind.TIMEOUT
            )

    def sleep(self, seconds: float) -> None:
        """Sleep up to ``seconds``, waking early (and raising) on cancel or deadline."""
        remaining = self.remaining()
        wait = seconds if remaining is None else min(seconds, remaining)
        latch = self._latch
        if latch is None:
            with _latch_lock:
                latch = self._latch
                if latch is None:
                    latch = _thread.allocate_lock()
                    latch.acquire()
                    self._latch = latch  # before _attach reads the parents: see release()
                    self._attach()
                    stopper = self._stopper()
                    if stopper is not None:  # cancelled (here or above) before any latch existed
                        if not self._cancelled:
                            self._reason = stopper._reason
                            self._cancelled = True
                        latch.release()
        if wait > 0 and latch.acquire(timeout=wait):
            latch.release()  # woken by cancel(): leave the latch open for the other sleepers
        self.check()

    def _describe_timeout(self) -> str:
        # The limit, and how long the run really took (a stuck call may have held it past).
        if self.timeout is None or self._started is None:
            return "its deadline"
        return f"{self.timeout:g}s (it ran {time.monotonic() - self._started:.2f}s)"


class _Unregister:
    """What :meth:`CancelToken.on_cancel` returns: call it to unregister the function (one
    object rather than a closure's function, cells and tuple: requests in flight hold one
    each, and every object they hold is one more for the collector to walk)."""

    __slots__ = ("_key", "_token")

    def __init__(self, token: CancelToken, key: int) -> None:
        self._token = token
        self._key = key

    def __call__(self) -> None:
        self._token._forget(self._key)


_latch_lock = threading.Lock()
_callback_keys = itertools.count()

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


def next_handed(items: queue.SimpleQueue[_T | None], token: CancelToken, abandon: Callable[[], None]) -> _T:
    """The next item that threads working for a run hand the thread waiting on them through
    ``items``, waited for until the run must stop.

    ``None`` in ``items`` wakes the wait (the waiter puts one from ``token.on_cancel``), as
    does the token's deadline; then, if the token is cancelled or expired, ``abandon()``
    gives up on the work in flight (logging it once) and the run's error is raised: the
    waiting thread never waits for work that ignores the token.
    """
    while True:
        try:
            item = items.get(timeout=token.remaining())
        except queue.Empty:  # the deadline passed
            item = None
        if item is not None:
            return item
        if token.cancelled or token.expired:
            abandon()
            token.check()
