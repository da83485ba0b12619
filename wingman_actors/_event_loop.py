"""An asyncio event loop the runtime owns: one loop on a daemon thread of its own, where
node code written as ``async def`` is awaited.

A node actor starts one when it first needs it and stops it when the actor stops, so no
thread outlives the formation: :meth:`LoopThread.stop` cancels what still runs on the
loop, lets it unwind, shuts down the loop's default executor and async generators, and
joins the thread (for at most a grace period: a coroutine stuck in blocking code cannot
be cancelled, and its daemon thread never holds the interpreter at exit).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["LoopThread"]

log = logging.getLogger("wingman_actors.actors")

_T = TypeVar("_T")


class LoopThread:
    """An asyncio event loop running on its own daemon thread.

    Args:
        name: the thread's name.

    Example:
        >>> async def double(x: int) -> int:
        ...     return 2 * x
        >>> loop = LoopThread("demo")
        >>> loop.submit(double(21)).result()
        42
        >>> loop.stop()
    """

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._stopping = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            try:
                pending = asyncio.all_tasks(loop)
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                asyncio.set_event_loop(None)
                loop.close()

    def submit(self, coro: Coroutine[Any, Any, _T]) -> Future[_T]:
        """Run ``coro`` on the loop; its future's ``cancel()`` cancels the coroutine.

        Raises:
            RuntimeError: the loop was stopped.
        """
        with self._lock:
            if self._stopping:
                coro.close()
                raise RuntimeError(f"event loop {self._thread.name!r} is stopped: it takes no new work")
            return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def call_soon(self, fn: Callable[..., object], *args: Any) -> None:
        """Call ``fn(*args)`` on the loop's thread, from any thread (it may create tasks
        there with ``asyncio.get_running_loop()``)."""
        self._loop.call_soon_threadsafe(fn, *args)

    def stop(self, grace: float = 1.0) -> None:
        """Cancel what still runs, close the loop and join its thread (at most ``grace``
        seconds; a coroutine stuck in blocking code is left to its daemon thread)."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            self._loop.call_soon_threadsafe(self._loop.stop)
        if threading.current_thread() is not self._thread:
            self._thread.join(grace)
            if self._thread.is_alive():
                log.warning("event loop %r is still busy %.1fs after stop (blocking code in a coroutine); "
                            "its daemon thread is left to finish on its own", self._thread.name, grace)
