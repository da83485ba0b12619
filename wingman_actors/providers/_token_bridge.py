"""The bridge from a run's cancel token to the asyncio task awaiting on its behalf: a
cancel of the token (from any thread) cancels the task's await, and the task then raises
the run's cancel error (:class:`TokenBridge`).

A module of its own, below :mod:`._retry` (whose async retries await through it) and
:mod:`._aio`: imported where it is used, once, rather than inside each call.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import Any, TypeVar

from .._cancel import CancelToken, current_token

__all__ = ["TokenBridge"]

T = TypeVar("T")


class TokenBridge:
    """Lets a cancel of the current run's token (from any thread) cancel the awaiting task,
    while it awaits through :meth:`run`; the task then raises the run's cancel error.

    Made inside the task; :meth:`close` when done. Without a current token it only awaits.
    """

    __slots__ = ("_active", "_fired", "_key", "_task", "token")

    def __init__(self) -> None:
        self.token: CancelToken | None = current_token()
        self._active = False
        self._fired = False
        self._key: int | None = None
        if self.token is None:
            return
        self._task = asyncio.current_task()
        # The bridge is the callback (no bound method kept), unregistered by its key (no
        # unregister function kept either): a model call in flight holds one each.
        self._key = self.token._register(self)

    def __call__(self) -> None:
        """The token's cancel callback (any thread): cancel the awaiting task on its loop."""
        task = self._task
        if task is None:
            return
        try:
            task.get_loop().call_soon_threadsafe(self._cancel_now)
        except RuntimeError:  # the loop has closed: nothing awaits any more
            pass

    def _cancel_now(self) -> None:  # the loop's thread
        if self._active and self._task is not None and not self._fired:
            self._fired = True
            self._task.cancel()

    async def run(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable``; raise the run's cancel error if the token cancelled it."""
        self.arm(awaitable)
        try:
            return await awaitable
        except asyncio.CancelledError:
            self.raise_if_fired()
            raise
        finally:
            self._active = False

    def arm(self, awaitable: Awaitable[Any]) -> None:
        """Begin awaiting ``awaitable`` (what :meth:`run` does before its ``await``, for a
        caller that awaits in its own frame: no coroutine of the bridge's per await):
        raises the run's error if it has stopped already (closing ``awaitable``), else a
        cancel of the token cancels the task until :meth:`disarm`. A ``CancelledError``
        from the await goes through :meth:`raise_if_fired`."""
        if self.token is None:
            return
        try:
            self.token.check()
        except BaseException:
            if inspect.iscoroutine(awaitable):
                awaitable.close()  # never awaited: closed, or the collector warns wherever it finds it
            raise
        self._active = True

    def disarm(self) -> None:
        """The await :meth:`arm` began has ended."""
        self._active = False

    def raise_if_fired(self) -> None:
        """On a ``CancelledError`` of the armed await: the run's cancel error if the
        token's cancel caused it (the task's cancel is taken back); else nothing (the
        caller re-raises the ``CancelledError``)."""
        if self._fired and self._task is not None and self.token is not None:
            self._task.uncancel()
            self._fired = False
            self.token.check()  # raises: cancelled

    async def sleep(self, seconds: float) -> None:
        """Sleep up to ``seconds``, ending early (raising) on cancel or the deadline."""
        token = self.token
        remaining = token.remaining() if token is not None else None
        await self.run(asyncio.sleep(seconds if remaining is None else min(seconds, remaining)))
        if token is not None:
            token.check()

    def close(self) -> None:
        """Stop listening to the token."""
        key, self._key = self._key, None
        if key is not None and self.token is not None:
            self.token._forget(key)
