"""A map node: one function applied to every item of a list, concurrently.

:class:`MapActor` is the fleet node's machinery with a function in place of an agent
session: the same :class:`~wingman_actors.agents._fleet_loops.Dispatch` hands item indices to
at most ``max_workers`` worker loops (no coordinator between a finished item and the
next start), the same long-lived :class:`~wingman_actors.agents._fleet_loops.WorkerPool` runs
them, finished items are kept on the work (``Work.memo``) so a retry reruns only the
items that failed, and a journalled run journals each item as it finishes. An
``async def`` function is awaited instead, on an event loop the actor owns
(:class:`~wingman_actors._event_loop.LoopThread`), with as many worker coroutines.

Example:
    >>> from wingman_actors.actors._address import start_actor                         # doctest: +SKIP
    >>> ref = start_actor(MapActor, lambda x: x * 2, name="double", reply_to=print)   # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import wait
from typing import Any

from pydantic import TypeAdapter, ValidationError

from .._event_loop import OwnedLoop, is_async_callable
from .._interrupts import RunSuspended, first_asked
from ..agents._fleet_loops import DEFAULT_MAX_WORKERS, Dispatch, WorkerPool
from ..core import Usage
from ..errors import AgentError, ErrorKind, MapItemsError, PayloadError
from ._base import NodeActor, NodeObserver
from ._envelope import Work, held_errors
from ._function import _NOT_VALUES, _plain_class, _problems, board_keyword, returned_not_a_value
from ._payloads import isolate

__all__ = ["MapActor", "is_async_callable"]


class _Visit:
    """One attempt's items: what is left to run, and what came of each item."""

    __slots__ = ("board", "dispatch", "errors", "items", "memo", "observer", "todo", "work")

    def __init__(self, work: Work, items: list[Any] | tuple[Any, ...], todo: list[int],
                 observer: NodeObserver | None) -> None:
        self.work = work
        self.items = items
        self.memo: dict[int, Any] = work.memo  # type: ignore[assignment]  # set by process
        self.todo = todo
        self.observer = observer  # a journalled run's: items are journalled as they finish
        self.errors: dict[int, BaseException] = {}
        self.dispatch = Dispatch(len(todo))
        self.board: dict[str, Any] = {}  # the function's ``blackboard`` keyword, when it takes the run's board

    def enter(self, i: int) -> None:
        """Make item ``i``'s scope current (a journalled run: ``interrupt()`` finds it)."""
        observer = self.observer
        if observer is not None:
            scope = observer.item_scope(self.work, i)
            if scope is not None:
                scope.enter()

    def finished(self, i: int, output: Any) -> None:
        observer = self.observer
        if observer is not None:
            try:
                observer.item_finished(self.work, i, output)
            except Exception as exc:  # it cannot be journalled: the item fails
                self.errors[i] = exc
                return
        self.memo[i] = output


class MapActor(NodeActor):
    """A map node as an actor: a list payload is mapped through ``fn``, item by item, at
    most ``max_workers`` items at once; the output is the list of results in item order.
    Items that succeeded are remembered across retries of the same work, so a retry
    reruns only the failed items. :meth:`interrupt` (a cancel, a timeout, a stop) starts
    no further item and cancels the coroutines of an ``async def`` function.

    Args:
        fn: the function of one item (``async def`` functions are awaited).
        name: the node's name.
        max_workers: the most items at once; 0 means ``min(len(items), 100)``, as for a
            fleet node.
        input_adapter: validates each item against ``fn``'s parameter (None: no check).
        board_param: ``required`` or ``optional`` when ``fn`` takes the run's blackboard as
            its ``blackboard`` keyword, beside each item (as a function node does); ``none``
            when it does not.
    """

    def __init__(
        self,
        fn: Callable[[Any], Any],
        *,
        name: str | None = None,
        max_workers: int = 0,
        input_adapter: TypeAdapter[Any] | None = None,
        board_param: str = "none",
        **kwargs: Any,
    ) -> None:
        super().__init__(name or str(getattr(fn, "__name__", "map")), **kwargs)
        self.fn = fn
        self.board_param = board_param
        self.max_workers = max_workers or DEFAULT_MAX_WORKERS
        self.input_adapter = input_adapter
        self._fast_type = _plain_class(input_adapter)
        self.is_async = is_async_callable(fn)
        self._pool: WorkerPool | None = None
        self._loop = OwnedLoop(f"wingman-map-{self.name}-loop-{self.replica}")
        self._visit: _Visit | None = None
        self._reason: str | None = None
        self._asked: tuple[Work, int, str] | None = None  # the last interrupt: of which attempt, why

    @property
    def interruptible(self) -> bool:
        return True

    def interrupt(self, reason: str = "the formation is stopping") -> None:
        """Start no further item of the visit in progress, and cancel the coroutines of
        its items in flight (called from another thread). A plain function's items
        already running finish on their own."""
        work = self.current
        if work is not None:  # heard by the visit even if it is not set up yet
            self._asked = (work, work.attempt, reason)
        visit = self._visit
        if visit is None:
            return
        self._reason = reason
        visit.dispatch.stop()
        self._loop.cancel()

    def on_stop(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:  # idle: a visit waits for all its items before it returns
            pool.shutdown()
        self._loop.stop()
        super().on_stop()

    def on_failure(self, *exc_info: Any) -> None:
        self.on_stop()  # a crashed actor gets no on_stop: its workers end here instead

    def process(self, env: Work) -> tuple[Any, Usage | None]:
        items = isolate(env.payload)  # the function may change its items: copies of their own
        if not isinstance(items, list | tuple):
            raise PayloadError(
                f"map node {self.name!r} needs a list input (one call per item), "
                f"got {type(items).__name__} from {env.sender!r}"
            )
        if env.memo is None:
            env.memo = {}
        memo = env.memo
        held = held_errors(memo)  # items an earlier attempt failed for good: not run again
        todo = [i for i in range(len(items)) if i not in memo]
        errors: dict[int, BaseException] = {}
        if todo:
            visit = _Visit(env, items, todo, self.observer if env.scope is not None else None)
            if self.board_param != "none":
                visit.board = self._board()
            self._reason = None
            self._visit = visit
            try:
                run, asked = env.run, self._asked
                if asked is not None and asked[0] is env and asked[1] == env.attempt:
                    self.interrupt(asked[2])  # interrupted (a timeout, a cancel) before the visit was set up
                elif run is not None and run.done:  # cancelled before interrupt() could see the visit
                    self.interrupt("the run was cancelled")
                if self.is_async:
                    self._run_async(visit)
                else:
                    self._run_threads(visit)
            finally:
                self._visit = None
            errors = visit.errors
            asking = [i for i, exc in errors.items() if isinstance(exc, RunSuspended)]
            if asking:  # one interrupt at a time: the others ask again when the run resumes
                raise first_asked(errors, asking)
        if errors or held:
            raise MapItemsError(self.name, len(items), dict(sorted({**held, **errors}.items())))  # in item order
        return [memo[i] for i in range(len(items))], None

    def _board(self) -> dict[str, Any]:
        return board_keyword(self.board_param, f"the function of map node {self.name!r}", "to the formation")

    # -- the items ---------------------------------------------------------------------

    def _item(self, visit: _Visit, i: int) -> Any:
        """Item ``i``, validated against the function's parameter."""
        value = visit.items[i]
        adapter = self.input_adapter
        if adapter is None or type(value) is self._fast_type:
            return value
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            raise PayloadError(
                f"map node {self.name!r}: item {i} from {visit.work.sender!r}, of type {type(value).__name__}, does "
                f"not fit the parameter of type {exc.title}: {_problems(exc)}"
            ) from exc

    def _lost(self, visit: _Visit) -> None:
        """Items no worker finished (the visit was interrupted, or a worker died)."""
        reason = self._reason or "its worker ended"
        for index in visit.dispatch.missing():
            i = visit.todo[index]
            visit.errors.setdefault(i, AgentError(
                f"map node {self.name!r} stopped before item {i} finished: {reason}", kind=ErrorKind.CANCELLED))

    def _cap(self, visit: _Visit) -> int:
        return max(1, min(self.max_workers, len(visit.todo)))

    def _run_threads(self, visit: _Visit) -> None:
        fn, item, dispatch, todo, errors = self.fn, self._item, visit.dispatch, visit.todo, visit.errors
        if visit.board:
            fn = functools.partial(fn, **visit.board)

        def loop() -> None:  # one worker: takes the next item as soon as it finishes one
            index = dispatch.take()
            while index is not None:
                i = todo[index]
                visit.enter(i)
                try:
                    output = fn(item(visit, i))
                    if type(output) in _NOT_VALUES:
                        raise returned_not_a_value(output, f"the function of map node {self.name!r} (item {i})")
                except BaseException as exc:  # RunSuspended: interrupt() in a journalled run; SystemExit and
                    errors[i] = exc  # KeyboardInterrupt fail their item, not the worker (and its later items)
                else:
                    visit.finished(i, output)
                index = dispatch.take(finished=index)

        if self._pool is None:  # on first use: a node that never runs starts no thread
            self._pool = WorkerPool(self.name, prefix="wingman-map")
        pool = self._pool
        for _ in range(self._cap(visit)):
            try:
                # a copy of this thread's context per worker: the run's board and trace reach the items
                dispatch.loops.append(pool.submit(contextvars.copy_context().run, loop))
            except RuntimeError as exc:  # no more threads: the workers started run every item
                if not dispatch.loops:
                    raise RuntimeError(f"map node {self.name!r} could not start any worker: {exc}") from exc
                break
        wait(dispatch.loops)
        self._lost(visit)

    def _run_async(self, visit: _Visit) -> None:
        fn, item, dispatch, todo, errors = self.fn, self._item, visit.dispatch, visit.todo, visit.errors
        if visit.board:
            fn = functools.partial(fn, **visit.board)

        async def worker() -> None:
            index = dispatch.take()
            while index is not None:
                i = todo[index]
                visit.enter(i)
                try:
                    output = await fn(item(visit, i))
                except asyncio.CancelledError:
                    raise
                except BaseException as exc:  # SystemExit, KeyboardInterrupt too: let out of a task, they would
                    errors[i] = exc  # end the loop (and every later item and visit of this node with it)
                else:
                    visit.finished(i, output)
                index = dispatch.take(finished=index)

        async def main() -> None:
            # each worker is a task with a copy of this context: an item's scope is its own
            await asyncio.gather(*(worker() for _ in range(self._cap(visit))))

        # The task runs in a copy of this thread's context: the run's board and trace reach the items.
        done = self._loop.run(main(), lambda: self._reason is not None)  # interrupted while being set up
        failure = None if done.cancelled() else done.exception()
        if failure is not None:  # a fault of the loop itself: the items' own errors are kept
            raise failure
        self._lost(visit)

