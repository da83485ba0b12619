"""The worker threads that run the server's blocking work: SQLite calls, agent runs and
the producers of streamed responses.

A fixed set of threads, started with the app and joined when it stops, so the server
never leaves a thread behind and a burst of requests queues instead of spawning threads.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["WorkerPool"]

T = TypeVar("T")
log = logging.getLogger("wingman_actors.server")

_Job = tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]


class WorkerPool:
    """``size`` threads taking jobs from one queue.

    Args:
        size: how many threads.
        name: their name prefix (``wingman-server-worker-0``...).

    Example:
        >>> pool = WorkerPool(2).start()
        >>> pool.submit(sum, [1, 2]).result()
        3
        >>> pool.stop()
    """

    def __init__(self, size: int, name: str = "wingman-server-worker") -> None:
        if size < 1:
            raise ValueError(f"a worker pool needs >= 1 thread, got {size}")
        self.size = size
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(size)
        ]
        self._stopped = False

    def start(self) -> WorkerPool:
        """Start every thread."""
        for thread in self._threads:
            thread.start()
        return self

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Queue ``fn(*args)``; a cancelled future that has not started never runs."""
        if self._stopped:
            raise RuntimeError("the worker pool is stopped")
        future: Future[T] = Future()
        self._jobs.put((future, fn, args))
        return future

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a worker thread, awaited. Cancelling the await abandons the job
        (it does not start if it was still queued)."""
        return await asyncio.wrap_future(self.submit(fn, *args))

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            future, fn, args = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args)
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)

    def stop(self, timeout: float = 10.0) -> None:
        """Let queued jobs finish, then end every thread (waiting up to ``timeout`` seconds)."""
        if self._stopped:
            return
        self._stopped = True
        for _ in self._threads:
            self._jobs.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            if thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))
                if thread.is_alive():
                    log.warning("server worker %s is still busy after stop", thread.name)
