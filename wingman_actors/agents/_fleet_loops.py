"""The worker loops of a :class:`~wingman_actors.agents._fleet.Fleet`: how task indices are
handed out to its workers, how one worker loop reports how it ended, and the long-lived
pool of worker threads a fleet or map node keeps across its runs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from queue import SimpleQueue
from typing import Any

__all__ = ["DEFAULT_MAX_WORKERS", "Dispatch", "WorkerPool", "run_loop"]

DEFAULT_MAX_WORKERS = 100
"""Concurrent sessions when a fleet is given ``max_workers=0``: ``min(len(tasks), 100)``.
(Here, beside the worker loops, so map nodes use it without loading the agent layer.)"""


class Dispatch:
    """Hands out task indices to worker loops: each loop takes the next index as soon as it
    finishes one, so no coordinator sits between a finished task and the next start, and
    never more than ``cap`` sessions run at once."""

    def __init__(self, n: int) -> None:
        self._lock = threading.Lock()
        self._untaken = iter(range(n))
        self._taken: set[int] = set()
        self._stopped = False
        self.loops: list[Future[None]] = []

    def take(self, finished: int | None = None) -> int | None:
        """Mark ``finished`` (the caller's last index) done and hand out the next index,
        or None when there is none left or the dispatch was stopped."""
        with self._lock:
            if finished is not None:
                self._taken.discard(finished)
            if self._stopped:
                return None
            index = next(self._untaken, None)
            if index is not None:
                self._taken.add(index)
            return index

    def stop(self) -> None:
        with self._lock:
            self._stopped = True

    def missing(self) -> list[int]:
        """Indices taken by a loop that died, or never taken; clears them."""
        with self._lock:
            missing = sorted(self._taken | set(self._untaken))
            self._taken.clear()
        return missing


def run_loop(loop: Callable[[], None], fut: Future[None]) -> None:
    """Run one worker loop, reporting how it ended on ``fut``."""
    if not fut.set_running_or_notify_cancel():
        return
    try:
        loop()
    except BaseException as exc:
        fut.set_exception(exc)
    else:
        fut.set_result(None)


_Job = tuple[Callable[[], Any], "Future[Any]"]


class WorkerPool(Executor):
    """Worker threads that outlive one fleet run: a fleet node hands its runs' worker loops
    to them, so a run wakes idle threads instead of starting (and handshaking with) a new
    thread per worker. Threads are started only when no idle one is left, and they are
    daemon threads: one stuck in a model call never holds the interpreter at exit.

    Args:
        name: threads are named ``{prefix}-{name}-{i}``.
        prefix: the first part of the threads' names.
    """

    def __init__(self, name: str, prefix: str = "wingman-fleet") -> None:
        self._name = name
        self._prefix = prefix
        self._jobs: SimpleQueue[_Job | None] = SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a job and not yet promised one
        self._shut = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Run ``fn(*args, **kwargs)`` on an idle worker, starting one when none is idle.

        Raises:
            RuntimeError: the pool was shut down, or no new thread could be started.
        """
        fut: Future[Any] = Future()
        with self._lock:
            if self._shut:
                raise RuntimeError(f"worker pool {self._name!r} is shut down: it takes no new work")
            if self._idle > 0:
                self._idle -= 1
            else:
                thread = threading.Thread(
                    target=self._work, name=f"{self._prefix}-{self._name}-{len(self._threads)}", daemon=True
                )
                thread.start()  # may raise RuntimeError (no more threads): nothing was queued
                self._threads.append(thread)
        self._jobs.put(((lambda: fn(*args, **kwargs)) if args or kwargs else fn, fut))
        return fut

    def _work(self) -> None:
        get, now_idle = self._jobs.get, self._now_idle
        while True:
            job = get()
            if job is None:
                return
            fn, fut = job
            del job
            if not fut.set_running_or_notify_cancel():
                now_idle()
                continue
            result: Any = None
            try:
                result = fn()
            except BaseException as exc:
                # Idle before the future resolves: whoever waits on it and submits again
                # at once finds this worker free instead of starting another thread.
                now_idle()
                fut.set_exception(exc)
                del exc
            else:
                now_idle()
                fut.set_result(result)
            del fn, fut, result  # hold nothing of the finished run while idle

    def _now_idle(self) -> None:
        with self._lock:
            self._idle += 1

    @property
    def size(self) -> int:
        """How many worker threads the pool has started (idle or busy)."""
        return len(self._threads)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop every worker once it has finished its job; with ``wait``, join them.

        ``cancel_futures`` cancels jobs not yet started."""
        with self._lock:
            if self._shut:
                threads: list[threading.Thread] = []
            else:
                self._shut = True
                threads = list(self._threads)
            if cancel_futures:
                while not self._jobs.empty():
                    job = self._jobs.get_nowait()
                    if job is not None:
                        job[1].cancel()
            for _ in threads:
                self._jobs.put(None)
        if wait:
            for thread in threads:
                thread.join()
