"""Formation runs awaited from asyncio: the bridge from the runtime's threads to the
caller's event loop.

A run resolves on a runtime thread; :class:`AsyncRun` is its ``asyncio.Future`` on the
caller's loop. A run of ``asubmit`` that is not journalled resolves a :class:`LoopSettler`
(no ``concurrent.futures.Future`` in between: its condition, lock and callbacks are
eleven objects more per run for the collector to walk, and a lock to take); the others
resolve a :class:`~._future.RunFuture` that the ``AsyncRun`` follows. Completions reach the
loop through a :class:`LoopInbox`: the first completion into an empty inbox schedules one
``call_soon_threadsafe``, and the loop then settles every completion that arrived
meanwhile in one go. Handing each run to the loop on its own (one thread-safe call per run)
measured 1.8-3.1x the ideal time at 1,000 concurrent runs; batched, 1.3-1.4x. Run events
(:func:`astream_plan`) travel the same way.

``arun``, ``astream`` and ``astart`` are the sync paths' own halves (``begin_once``,
``settle``, ``stop``), the blocking ones (starting and stopping node actors, which may wait
for threads) called on a worker thread so the caller's loop never waits on them. A
journalled ``asubmit``/``aresume`` is checked on the loop and begun (its journal written)
by a :class:`Lane` on a worker thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import threading
import weakref
from collections import deque
from collections.abc import AsyncGenerator, Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._event_loop import off_loop, wait_out
from ._future import Canceller, RunFuture
from ._options import RunOptions

if TYPE_CHECKING:
    from ._durable import Journal
    from ._plan import Plan
    from ._result import FormationResult
    from ._runtime import RunningFormation
    from .events import FormationEvent

__all__ = [
    "AsyncRun", "AsyncStart", "Lane", "LoopInbox", "LoopSettler", "arun_plan", "astream_plan", "begin_off_loop", "launch", "lane_of",
    "running_loop", "watch",
]

_T = TypeVar("_T")


def running_loop(call: str) -> asyncio.AbstractEventLoop:
    """The running event loop, or a ``RuntimeError`` saying ``call`` needs one."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            f"{call} must be called from a coroutine running on an event loop (e.g. inside `async def main()` "
            "run by asyncio.run(main())); from plain code, use the blocking twin without the 'a'"
        ) from None


class LoopInbox(Generic[_T]):
    """Items handed to an event loop from any thread, in batches: one
    ``call_soon_threadsafe`` per batch, not per item.

    Args:
        loop: the loop ``handle`` runs on.
        handle: called on the loop with each item, in arrival order.
    """

    __slots__ = ("_handle", "_items", "_lock", "_loop", "_scheduled")

    def __init__(self, loop: asyncio.AbstractEventLoop, handle: Callable[[_T], object]) -> None:
        self._loop = weakref.ref(loop)  # weak: the inbox of a loop lives in a dict keyed weakly by it
        self._handle = handle
        self._items: deque[_T] = deque()
        self._lock = threading.Lock()
        self._scheduled = False

    def put(self, item: _T) -> None:
        """Hand ``item`` to the loop (from any thread); dropped if the loop is closed."""
        with self._lock:
            self._items.append(item)
            if self._scheduled:
                return  # the drain already scheduled takes it
            self._scheduled = True
        loop = self._loop()
        try:
            if loop is None:
                raise RuntimeError("the loop is gone")
            loop.call_soon_threadsafe(self._drain)
        except RuntimeError:  # the loop is closed: nobody awaits these any more
            with self._lock:
                self._items.clear()
                self._scheduled = False

    def _drain(self) -> None:
        with self._lock:
            items, self._items = self._items, deque()
            self._scheduled = False
        handle = self._handle
        for item in items:
            handle(item)


class AsyncRun(asyncio.Future["FormationResult"]):
    """A formation run awaited on an event loop: ``await`` it for the
    :class:`~wingman_actors.formation._result.FormationResult`.

    Cancelling it (or the task awaiting it: asyncio cancels the future a task waits on)
    cancels the run itself, also while a journalled run's start is still being written
    (the run is then cancelled as soon as it starts); a run cancelled elsewhere cancels it.

    Attributes:
        run_id: the run's id.

    Example:
        >>> run = running.asubmit(7)                                       # doctest: +SKIP
        >>> run.run_id, (await run).output                                 # doctest: +SKIP
    """

    __slots__ = ("_canceller", "_run", "run_id")  # no __dict__: one object less per run

    def __init__(self, run_id: str, loop: asyncio.AbstractEventLoop, future: RunFuture | None = None,
                 canceller: Canceller | None = None) -> None:
        super().__init__(loop=loop)
        self.run_id: str = run_id
        self._run: RunFuture | None = future  # None once settled (the run's callback holds this), or not yet begun
        # A run settled through a LoopSettler: what cancels it (the running formation), until it is settled
        self._canceller = canceller

    def cancel(self, msg: Any | None = None) -> bool:
        """Cancel the run (queued or in flight) and this future; False when done."""
        if self.done():
            return False
        run, canceller = self._run, self._canceller
        if run is not None:
            run.cancel()
        elif canceller is not None:
            canceller.cancel(self.run_id)  # its settler's cancel() follows, and finds this done
        return super().cancel(msg)

    def _settle(self) -> None:
        run, self._run = self._run, None
        if run is None or self.done():
            return
        if run.cancelled():
            super().cancel()
            return
        exc = run.exception()
        if exc is not None:
            self.set_exception(exc)
        else:
            self.set_result(run.result())

    def _begun(self, future: RunFuture | None, error: BaseException | None) -> None:
        """On the loop, once a worker thread has begun the run (see :func:`launch`)."""
        if error is not None:
            if not self.done():
                self.set_exception(error)
            return
        assert future is not None
        if self.done():  # cancelled while its start was being journalled
            future.cancel()
            return
        self._run = future
        _follow(self, future, self.get_loop())


_settlers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopInbox[AsyncRun]] = weakref.WeakKeyDictionary()
_settlers_lock = threading.Lock()


def _inbox(loop: asyncio.AbstractEventLoop, inboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any],
           handle: Callable[[Any], object]) -> LoopInbox[Any]:
    """The inbox of ``loop`` in ``inboxes`` (made on first use) whose items ``handle`` takes."""
    inbox = inboxes.get(loop)
    if inbox is None:
        with _settlers_lock:
            inbox = inboxes.get(loop)
            if inbox is None:
                inbox = inboxes[loop] = LoopInbox(loop, handle)
    return inbox


def _follow(run: AsyncRun, future: RunFuture, loop: asyncio.AbstractEventLoop) -> None:
    """Settle ``run`` on ``loop`` when ``future`` resolves. Every run watched on one loop
    shares its inbox, so runs finishing together are settled together."""
    put = _inbox(loop, _settlers, AsyncRun._settle).put
    future.add_done_callback(lambda _: put(run))


_CANCELLED: Any = object()  # a LoopSettler's outcome: the run was cancelled


class LoopSettler:
    """The runtime's end of a run awaited on an event loop (``asubmit``, not journalled):
    the thread that ends the run hands the outcome to the :class:`AsyncRun` on its loop,
    settled in one batch with the others that arrived meanwhile (a :class:`LoopInbox`).
    It is a :class:`~._future.RunSink`: ``set_result``, ``set_exception`` and ``cancel``
    are called once, by the runtime, on any thread."""

    __slots__ = ("_inbox", "error", "result", "run")

    def __init__(self, run: AsyncRun, loop: asyncio.AbstractEventLoop) -> None:
        self.run = run
        self._inbox = _inbox(loop, _settlers_of_sinks, LoopSettler._settle)
        self.result: Any = None
        self.error: BaseException | None = None

    def set_result(self, result: Any) -> None:
        self.result = result
        self._inbox.put(self)

    def set_exception(self, exception: BaseException | None) -> None:
        self.error = exception
        self._inbox.put(self)

    def cancel(self) -> bool:
        self.result = _CANCELLED
        self._inbox.put(self)
        return True

    def _settle(self) -> None:
        """On the loop: settle the run's ``AsyncRun`` (unless it was cancelled there)."""
        run = self.run
        run._canceller = None  # a settled run no longer refers to the formation
        if run.done():
            return
        if self.error is not None:
            run.set_exception(self.error)
        elif self.result is _CANCELLED:
            asyncio.Future.cancel(run)
        else:
            run.set_result(self.result)


_settlers_of_sinks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopInbox[LoopSettler]] = (
    weakref.WeakKeyDictionary()
)


def settled_on_loop(run_id: str, canceller: Canceller, loop: asyncio.AbstractEventLoop) -> tuple[AsyncRun, LoopSettler]:
    """An :class:`AsyncRun` on ``loop`` (the running one) and the settler that the
    runtime resolves it through; ``canceller`` cancels the run when the ``AsyncRun`` is."""
    run = AsyncRun(run_id, loop, None, canceller)
    return run, LoopSettler(run, loop)


def watch(future: Future[FormationResult], loop: asyncio.AbstractEventLoop) -> AsyncRun:
    """The :class:`AsyncRun` of ``future`` (a :class:`RunFuture`) on ``loop`` (the running
    one: call it there)."""
    assert isinstance(future, RunFuture)
    run = AsyncRun(future.run_id, loop, future)
    _follow(run, future, loop)
    return run


def launch(begin: Callable[[], RunFuture], run_id: str, lane: Lane, loop: asyncio.AbstractEventLoop) -> AsyncRun:
    """The :class:`AsyncRun` of the run ``begin()`` starts (under ``run_id``), called by
    ``lane`` on a worker thread in a copy of the caller's context: a journalled run's
    start is written to its store there (a commit, which may wait for the disk), never on
    the loop."""
    run = AsyncRun(run_id, loop)
    lane.put(run, begin, loop)
    return run


class Lane:
    """Begins journalled runs off the event loop: one worker thread of the loop's default
    executor at a time takes every run handed over meanwhile, in order, and hands the
    started runs back to their loops in batches (a :class:`LoopInbox`). One thread, not
    one per run: the store commits one begin after another faster than threads
    contending for it (200 begins on the SQLite store, ``synchronous="NORMAL"``: about
    10 ms in a row, 15-30 ms from two to six threads), and the loop pays one hand-off per
    batch. One lane per journal (a running formation's)."""

    __slots__ = ("_busy", "_items", "_lock")

    def __init__(self) -> None:
        self._items: deque[tuple[AsyncRun, contextvars.Context, Callable[[], RunFuture]]] = deque()
        self._lock = threading.Lock()
        self._busy = False

    def put(self, run: AsyncRun, begin: Callable[[], RunFuture], loop: asyncio.AbstractEventLoop) -> None:
        """Begin ``run`` with ``begin()`` on a worker thread (call on ``loop``)."""
        with self._lock:
            self._items.append((run, contextvars.copy_context(), begin))
            if self._busy:
                return  # the drain in progress takes it
            self._busy = True
        try:
            loop.run_in_executor(None, self._drain)
        except BaseException:
            with self._lock:
                self._busy = False
                self._items.clear()
            raise

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._items:
                    self._busy = False
                    return
                run, context, begin = self._items.popleft()
            future: RunFuture | None = None
            error: BaseException | None = None
            try:
                future = context.run(begin)
            except BaseException as exc:  # the store refused it: raised where it is awaited
                error = exc
            _inbox(run.get_loop(), _begins, _begun).put((run, future, error))


def _begun(item: tuple[AsyncRun, RunFuture | None, BaseException | None]) -> None:
    run, future, error = item
    run._begun(future, error)


_begins: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopInbox[Any]] = weakref.WeakKeyDictionary()
_lanes: weakref.WeakKeyDictionary[Journal, Lane] = weakref.WeakKeyDictionary()


def lane_of(journal: Journal) -> Lane:
    """The :class:`Lane` of ``journal`` (one per running formation's journal)."""
    lane = _lanes.get(journal)
    if lane is None:
        with _settlers_lock:
            lane = _lanes.setdefault(journal, Lane())
    return lane


async def begin_off_loop(fn: Callable[[], _T], undo: Callable[[_T], object]) -> _T:
    """``fn()`` (which starts node actors) on a worker thread. If the awaiting task is
    cancelled while it runs (once, or again and again as under an AnyIO cancel scope),
    what it started is undone by ``undo`` (on a worker thread) before the
    ``CancelledError`` goes on; only the loop shutting down leaves the undoing to finish
    on its own."""
    loop = asyncio.get_running_loop()
    started = asyncio.ensure_future(asyncio.to_thread(fn))
    try:
        return await asyncio.shield(started)
    except asyncio.CancelledError:
        def late(done: asyncio.Future[_T]) -> None:
            if not done.cancelled() and done.exception() is None:
                loop.run_in_executor(None, undo, done.result())

        try:
            begun, _ = await wait_out(started)
        except asyncio.CancelledError:
            started.add_done_callback(late)
            raise
        except Exception:
            raise asyncio.CancelledError() from None  # it failed: nothing to undo
        await wait_out(asyncio.ensure_future(asyncio.to_thread(undo, begun)))
        raise


def _begin_once(*args: Any, **kwargs: Any) -> tuple[RunningFormation, RunFuture]:
    """``begin_once`` on a worker thread: the runtime's modules load there the first time
    (about 0.1 s of CPU), not on the caller's loop."""
    from ._one_run import begin_once

    return begin_once(*args, **kwargs)


def _cancel_and_stop(begun: tuple[RunningFormation, RunFuture]) -> None:
    running, future = begun
    future.cancel()
    running.stop()


async def arun_plan(
    plan: Plan, input: Any, options: RunOptions, journal: Journal | None, *, resume: bool = False, answer: Any = None,
    called: float | None = None,
) -> FormationResult:
    """``run_once`` awaited: start, submit (or resume), await the result, settle the
    journal, stop. Cancelling the awaiting task cancels the run. ``called``: as for
    ``begin_once`` (the run's timeout counts from it)."""
    loop = asyncio.get_running_loop()
    running, future = await begin_off_loop(functools.partial(
        _begin_once, plan, input, options, journal, resume=resume, answer=answer, called=called,
    ), _cancel_and_stop)
    from ._one_run import settle  # loaded by _begin_once
    try:
        try:
            result = await watch(future, loop)
        except BaseException:
            if journal is not None and not journal.owned:  # else settle() has nothing to do
                await off_loop(functools.partial(settle, journal, future, quiet=True))
            raise
        if journal is not None and not journal.owned:
            await off_loop(functools.partial(settle, journal, future))
        return result
    finally:
        await off_loop(running.stop)


async def astream_plan(
    plan: Plan, input: Any, options: RunOptions, journal: Journal | None, *, resume_id: str | None = None,
    answer: Any = None, called: float | None = None,
) -> AsyncGenerator[FormationEvent, None]:
    """``run_stream`` awaited: the run's events, handed to the loop in batches, until the
    event that ends it; the formation stops when the iteration ends (also early). As
    ``run_stream``: a consumer that stops early cancels a run not journalled, and a
    journalled one is interrupted by the stop (resumable); cancelling the consuming task
    cancels the run, as it does ``arun``'s."""
    loop = asyncio.get_running_loop()
    events: deque[FormationEvent] = deque()
    waiter: list[asyncio.Future[None]] = []

    def arrived(event: FormationEvent) -> None:  # on the loop
        events.append(event)
        if waiter and not waiter[0].done():
            waiter[0].set_result(None)

    inbox: LoopInbox[FormationEvent] = LoopInbox(loop, arrived)
    if resume_id is not None:
        options = dataclasses.replace(options, run_id=resume_id)
    running, future = await begin_off_loop(functools.partial(
        _begin_once, plan, input, dataclasses.replace(options, on_event=None), journal, resume=resume_id is not None,
        answer=answer, on_event=inbox.put, called=called,
    ), _cancel_and_stop)
    from ._runtime import RUN_ENDED  # loaded by _begin_once
    try:
        while True:
            while not events:
                waiter[:] = [loop.create_future()]
                await waiter[0]
            event = events.popleft()
            yield event
            if event.type in RUN_ENDED:
                return
    except asyncio.CancelledError:  # the consuming task was cancelled: so is the run, as arun's
        future.cancel()
        raise
    finally:
        if journal is None:  # the consumer stopped early (a no-op once the run has ended)
            future.cancel()
        await off_loop(running.stop)  # a journalled run still in flight is interrupted, resumable


class AsyncStart:
    """``async with formation.astart(...) as running:``: the formation is started on a
    worker thread on entry and stopped the same way on exit, so the caller's loop never
    waits on its threads; ``running`` is the
    :class:`~wingman_actors.formation._runtime.RunningFormation`, whose ``asubmit``
    returns an awaitable :class:`AsyncRun`.

    Args:
        start: starts the formation (``Formation.start`` with its options bound).
    """

    __slots__ = ("_running", "_start")

    def __init__(self, start: Callable[[], RunningFormation]) -> None:
        self._start = start
        self._running: RunningFormation | None = None

    async def __aenter__(self) -> RunningFormation:
        if self._running is not None:
            raise RuntimeError("this astart() is already entered: call formation.astart() again for another")
        self._running = await begin_off_loop(self._start, _stop)
        return self._running

    async def __aexit__(self, *exc: object) -> None:
        running, self._running = self._running, None
        if running is not None:
            await off_loop(running.stop)


def _stop(running: RunningFormation) -> None:
    running.stop()
