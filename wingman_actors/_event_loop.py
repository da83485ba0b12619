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
import contextvars
import functools
import inspect
import logging
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, wait
from typing import Any, Generic, TypeVar

__all__ = [
    "DaemonIterator", "LoopThread", "OwnedLoop", "SharedLoop", "in_daemon_thread", "is_async_callable", "off_loop",
    "wait_out"]

log = logging.getLogger("wingman_actors.actors")

_T = TypeVar("_T")

_CLEANUP_S = 0.5
"""How long a stopping loop lets its cancelled tasks' cleanup await (less than
:meth:`LoopThread.stop`'s grace, so the stop does not wait for it in vain)."""


def is_async_callable(fn: Any) -> bool:
    """Whether calling ``fn`` returns a coroutine to await: an ``async def`` function, a
    ``functools.partial`` of one, or an object whose ``__call__`` is one."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isroutine(fn) or isinstance(fn, type):
        return False
    return inspect.iscoroutinefunction(getattr(type(fn), "__call__", None))  # noqa: B004  (its own async __call__)


async def in_daemon_thread(fn: Callable[..., _T], /, *args: Any, name: str = "wingman-worker") -> _T:
    """Await ``fn(*args)`` run on a daemon thread of its own, in a copy of the caller's
    context (its context variables: the run's cancel token, a visit's scope).

    Unlike :func:`asyncio.to_thread`, the call does not run on the caller's loop's default
    executor: a call left running when the awaiting task stops (a session's timeout or
    cancel abandons a stuck tool) holds neither ``asyncio.run``'s shutdown, which waits
    for that executor's threads, nor the interpreter at exit, nor a slot of the
    application's own ``to_thread`` calls. The thread ends when ``fn`` returns.
    """
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[_T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if waiter.done():  # the awaiting task stopped waiting (cancelled)
            return
        if error is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(result)

    def work() -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            result = context.run(fn, *args)
        except BaseException as exc:  # handed to the awaiting task, whatever it is
            error = exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop is closed: nobody waits for this call any more
            pass

    threading.Thread(target=work, name=name, daemon=True).start()
    return await waiter


class DaemonIterator(Generic[_T]):
    """``async for`` over a blocking iterable, made and iterated on one daemon thread of its
    own (in a copy of the context of the first ``__anext__``), one item per ``__anext__``.

    As :func:`in_daemon_thread` does for one call: an iteration left stuck in a blocking
    ``next`` when the awaiting task stops holds neither the caller's loop shutdown nor the
    interpreter at exit. :meth:`close` (or :meth:`aclose`) ends it: the iterable's
    ``close()`` is called on that thread once it is back from what it was doing.

    Args:
        make: returns the iterable (called on the thread: it may block too).
        name: the thread's name.
    """

    def __init__(self, make: Callable[[], Any], *, name: str) -> None:
        self._make = make
        self._name = name
        self._demand = threading.Semaphore(0)
        self._waiter: asyncio.Future[tuple[Any, BaseException | None, bool]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = False
        self._stopped = False
        self.source: Any = None
        """What ``make`` returned, once the thread made it."""

    def __aiter__(self) -> DaemonIterator[_T]:
        return self

    async def __anext__(self) -> _T:
        if self._stopped:
            raise StopAsyncIteration
        self._loop = loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        if not self._started:
            self._started = True
            run = contextvars.copy_context().run
            threading.Thread(target=run, args=(self._pump,), name=self._name, daemon=True).start()
        self._demand.release()
        item, error, end = await waiter
        if error is not None:
            self._stopped = True
            raise error
        if end:
            self._stopped = True
            raise StopAsyncIteration
        return item  # type: ignore[no-any-return]

    def close(self) -> None:
        """Stop: the thread closes the iterable when it is back from its current ``next``."""
        if not self._stopped:
            self._stopped = True
            self._demand.release()

    async def aclose(self) -> None:
        """:meth:`close`, for ``async for`` users that expect an async generator's."""
        self.close()

    def _pump(self) -> None:
        source: Any = None
        try:
            self._demand.acquire()
            if self._stopped:
                return
            try:
                source = self.source = self._make()
                it = iter(source)
            except BaseException as exc:  # handed to the awaiting task
                self._post(None, exc, True)
                return
            while True:
                try:
                    item = next(it)
                except StopIteration:
                    self._post(None, None, True)
                    return
                except BaseException as exc:
                    self._post(None, exc, True)
                    return
                self._post(item, None, False)
                self._demand.acquire()
                if self._stopped:
                    return
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def _post(self, item: Any, error: BaseException | None, end: bool) -> None:
        waiter, loop = self._waiter, self._loop
        assert waiter is not None and loop is not None  # set before the demand that let us here

        def settle() -> None:
            if not waiter.done():  # the awaiting task stopped waiting (cancelled)
                waiter.set_result((item, error, end))

        try:
            loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the loop is closed: nobody iterates any more
            self._stopped = True


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
                    if not task.cancelling():  # one cancelled already is awaiting its cleanup: not cut short
                        task.cancel()
                if pending:
                    # the cancelled tasks' cleanup (a finally that awaits, an async with's exit) may
                    # await for a while; what runs on past that is cancelled again, and ends
                    _, late = loop.run_until_complete(asyncio.wait(pending, timeout=_CLEANUP_S))
                    for task in late:
                        task.cancel()
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                asyncio.set_event_loop(None)
                loop.close()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop (schedule on it from other threads with ``call_soon_threadsafe``)."""
        return self._loop

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

    def stop(self, grace: float = 1.0, *, join: bool = True) -> None:
        """Cancel what still runs, close the loop and join its thread (at most ``grace``
        seconds; a coroutine stuck in blocking code is left to its daemon thread). With
        ``join=False`` it returns at once, the thread ending on its own (from a caller
        that must not wait: an event loop)."""
        with self._lock:
            if self._stopping:
                return
            self._stopping = True
            self._loop.call_soon_threadsafe(self._loop.stop)
        if join and threading.current_thread() is not self._thread:
            self._thread.join(grace)
            if self._thread.is_alive():
                log.warning("event loop %r is still busy %.1fs after stop (blocking code in a coroutine); "
                            "its daemon thread is left to finish on its own", self._thread.name, grace)


class SharedLoop:
    """A :class:`LoopThread` shared by whoever holds it: started by the first
    :meth:`acquire`, stopped (without waiting for it) when the last holder releases it.

    Args:
        name: the loop thread's name.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._holders = 0
        self._thread: LoopThread | None = None

    def acquire(self) -> LoopThread:
        """The running loop, started if none is; :meth:`release` it when done."""
        with self._lock:
            if self._thread is None:
                self._thread = LoopThread(self._name)
            self._holders += 1
            return self._thread

    def release(self) -> None:
        """One holder fewer; the last one stops the loop (what still runs on it is
        cancelled; a coroutine stuck in blocking code ends on its daemon thread)."""
        with self._lock:
            self._holders -= 1
            if self._holders:
                return
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop(join=False)


class OwnedLoop:
    """A node actor's event loop, started when first needed, and the coroutine it is
    awaiting for the actor: one attempt at a time, cancelled from any thread.

    The actor's thread blocks in :meth:`run` while the coroutine runs on the loop's
    thread (in a copy of the actor thread's context: the run's board and trace reach it);
    :meth:`cancel` cancels the asyncio task, so the coroutine's ``finally`` runs.

    Args:
        name: the loop thread's name.
    """

    __slots__ = ("_loop", "_main", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._loop: LoopThread | None = None
        self._main: Future[Any] | None = None

    def run(self, coro: Coroutine[Any, Any, _T], cancelled: Callable[[], bool]) -> Future[_T]:
        """Await ``coro`` on the loop and return its finished (or cancelled) future.

        ``cancelled`` is asked once the coroutine is on the loop: True (a cancel that came
        before :meth:`cancel` could see the coroutine) cancels it at once.
        """
        if self._loop is None:  # on first use: an actor that never awaits starts no thread
            self._loop = LoopThread(self.name)
        done = self._main = self._loop.submit(coro)
        try:
            if cancelled():
                done.cancel()
            wait([done])
        finally:
            self._main = None
        return done

    def cancel(self) -> None:
        """Cancel the coroutine being awaited, if any (from any thread)."""
        main = self._main
        if main is not None:
            main.cancel()

    def stop(self) -> None:
        """Stop the loop (when the actor stops): what still runs on it is cancelled."""
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.stop()


async def wait_out(inner: asyncio.Future[_T]) -> tuple[_T, asyncio.CancelledError | None]:
    """``inner``'s result, awaited to its end though the awaiting task is cancelled
    meanwhile, once or again and again (an AnyIO cancel scope, as Starlette's, cancels the
    task anew at each step until it leaves the scope), and the last cancel received
    (``None``: none). Only ``inner`` itself being cancelled (the loop shutting down) ends
    the wait early."""
    cancel: asyncio.CancelledError | None = None
    while True:
        try:
            return await asyncio.shield(inner), cancel
        except asyncio.CancelledError as exc:
            if inner.cancelled():
                raise
            cancel = exc


async def off_loop(fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)`` on a worker thread (the loop's default executor, in a copy of the
    caller's context), shielded: a cancel of the awaiting task neither abandons it nor
    ends the wait; the cancel goes on once ``fn`` has returned (so what ``fn`` writes, a
    store's record, is written whatever the caller's scope does)."""
    result, cancel = await wait_out(asyncio.ensure_future(asyncio.to_thread(fn, *args)))
    if cancel is not None:
        raise cancel
    return result
