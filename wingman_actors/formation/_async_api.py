"""The async methods of :class:`~wingman_actors.formation.Formation` (``arun``, ``astream``,
``astart``, ``aresume``, ``aresume_stream``: the twins of ``run``, ``run_stream``, ``start``,
``resume`` and ``resume_stream``) and of the running formation (``asubmit`` and
``aresume``, the twins of ``submit`` and ``resume``), for code running on an asyncio event
loop. They never block the loop: see :mod:`._aio` for how.

Example:
    >>> import asyncio
    >>> from wingman_actors.formation import Formation
    >>> async def fetch(x: int) -> int:
    ...     await asyncio.sleep(0.01)
    ...     return x + 1
    >>> f = Formation("demo").add_function("fetch", fetch)
    >>> asyncio.run(f.arun(1)).output
    2
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._aio import (
    AsyncRun,
    AsyncStart,
    arun_plan,
    astream_plan,
    begin_off_loop,
    lane_of,
    launch,
    running_loop,
    settled_on_loop,
)
from ._options import RunOptions, merge_options, require_run_id

if TYPE_CHECKING:
    from ..orchestration._blackboard import Blackboard
    from ..providers._base import Provider
    from ._breakpoints import Breakpoints
    from ._durable import Journal, Replay, StoreArg
    from ._future import RunFuture, RunSink
    from ._plan import Plan
    from ._result import FormationResult
    from ._runtime import EventListener, RunningFormation
    from .events import FormationEvent

__all__ = ["AsyncRuns", "AsyncSubmit"]


class AsyncRuns:
    """``arun``, ``astream`` and ``astart``: a formation's runs awaited on an event loop."""

    if TYPE_CHECKING:  # given by Formation
        def validate(self) -> Plan: ...
        def _journal(self, store: StoreArg | None, resumed: str | None = None) -> Journal | None: ...
        def start(self, *, options: RunOptions | None = None) -> RunningFormation: ...

    async def arun(
        self,
        input: Any,
        *,
        timeout: float | timedelta | None = None,
        on_event: EventListener | None = None,
        provider: Provider | None = None,
        work_dir: str | Path | None = None,
        backend: str = "threads",
        backend_options: Mapping[str, Any] | None = None,
        blackboard: Blackboard | None = None,
        store: StoreArg | None = None,
        run_id: str | None = None,
        break_before: Collection[str] | None = None,
        break_after: Collection[str] | None = None,
        options: RunOptions | None = None,
    ) -> FormationResult:
        """:meth:`run`, awaited: start, run ``input`` through, stop, without blocking the
        event loop (node actors start and stop on a worker thread; the result comes back
        to the loop). Cancelling the awaiting task cancels the run, as ``future.cancel()``
        does: ``async def`` nodes have their coroutine cancelled (their ``finally`` runs),
        agent sessions stop at their next boundary; the formation is stopped before the
        ``CancelledError`` propagates. The options are those of :meth:`run`.

        Returns:
            The :class:`FormationResult`, as from :meth:`run`.

        Raises:
            FormationSetupError: as for :meth:`run`.
            FormationRuntimeError: the run failed (a node timeout included).
            asyncio.CancelledError: the awaiting task was cancelled.

        Example:
            >>> result = await formation.arun("question", timeout=30)  # doctest: +SKIP
        """
        running_loop("Formation.arun()")
        called = time.monotonic()  # the run's timeout counts from here
        opts = merge_options(
            options, "Formation.arun()", timeout=timeout, on_event=on_event, provider=provider, work_dir=work_dir,
            backend=backend, backend_options=backend_options, blackboard=blackboard, store=store, run_id=run_id,
            break_before=break_before, break_after=break_after,
        )
        plan = self.validate()
        return await arun_plan(plan, input, opts, await _journal_of(self, opts.store), called=called)

    async def aresume(
        self,
        run_id: str,
        *,
        store: StoreArg,
        answer: Any = None,
        timeout: float | timedelta | None = None,
        on_event: EventListener | None = None,
        provider: Provider | None = None,
        work_dir: str | Path | None = None,
        backend: str = "threads",
        backend_options: Mapping[str, Any] | None = None,
        blackboard: Blackboard | None = None,
        break_before: Collection[str] | None = None,
        break_after: Collection[str] | None = None,
        options: RunOptions | None = None,
    ) -> FormationResult:
        """:meth:`resume`, awaited: continue the journalled run ``run_id`` without blocking
        the event loop (the store is read, claimed and written on worker threads; node
        actors start and stop there). Cancelling the awaiting task cancels the resumed
        run, as for :meth:`arun`; the run can be resumed again later. The arguments are
        those of :meth:`resume`.

        Returns:
            The :class:`FormationResult`, as from :meth:`resume` (``status ==
            "suspended"`` again when a node interrupts again).

        Raises:
            asyncio.CancelledError: the awaiting task was cancelled (the run is
                cancelled too). Otherwise the errors of :meth:`resume`.

        Example:
            >>> result = await formation.arun(draft, store="runs.sqlite")                   # doctest: +SKIP
            >>> if result.status == "suspended":                                           # doctest: +SKIP
            ...     result = await formation.aresume(result.run_id, store="runs.sqlite", answer="yes")
        """
        running_loop("Formation.aresume()")
        called = time.monotonic()  # the run's timeout counts from here
        require_run_id(run_id, "Formation.aresume()")
        opts = merge_options(
            options, "Formation.aresume()", timeout=timeout, on_event=on_event, provider=provider, work_dir=work_dir,
            backend=backend, backend_options=backend_options, blackboard=blackboard, store=store, run_id=run_id,
            break_before=break_before, break_after=break_after,
        )
        plan = self.validate()
        return await arun_plan(plan, None, opts, await _journal_of(self, opts.store, run_id), resume=True, answer=answer,
                               called=called)

    def astream(
        self,
        input: Any,
        *,
        timeout: float | timedelta | None = None,
        provider: Provider | None = None,
        work_dir: str | Path | None = None,
        backend: str = "threads",
        backend_options: Mapping[str, Any] | None = None,
        blackboard: Blackboard | None = None,
        store: StoreArg | None = None,
        break_before: Collection[str] | None = None,
        break_after: Collection[str] | None = None,
        options: RunOptions | None = None,
    ) -> AsyncIterator[FormationEvent]:
        """:meth:`run_stream`, for ``async for``: the run's events in the order the run
        emits them, ending with ``run_finished`` (``data["result"]``), ``run_failed`` or
        ``run_cancelled``; the formation stops when the iteration ends, also early.
        Leaving early does what it does to :meth:`run_stream`: a run not journalled is
        cancelled, a journalled one is interrupted (``resume`` continues it); cancelling
        the task that iterates cancels the run. Nothing starts before the first
        ``__anext__``. The options are those of :meth:`run_stream`.

        Example:
            >>> async for event in formation.astream("question"):  # doctest: +SKIP
            ...     print(event.type, event.node)
        """
        opts = merge_options(
            options, "Formation.astream()", timeout=timeout, provider=provider, work_dir=work_dir,
            backend=backend, backend_options=backend_options, blackboard=blackboard, store=store,
            break_before=break_before, break_after=break_after,
        )
        plan = self.validate()
        return _lazy_stream(self, plan, input, opts)

    def aresume_stream(
        self,
        run_id: str,
        *,
        store: StoreArg,
        answer: Any = None,
        timeout: float | timedelta | None = None,
        provider: Provider | None = None,
        work_dir: str | Path | None = None,
        backend: str = "threads",
        backend_options: Mapping[str, Any] | None = None,
        blackboard: Blackboard | None = None,
        break_before: Collection[str] | None = None,
        break_after: Collection[str] | None = None,
        options: RunOptions | None = None,
    ) -> AsyncIterator[FormationEvent]:
        """:meth:`resume_stream`, for ``async for``: the resumed run's events, as
        :meth:`astream` yields a new run's (journalled visits report ``node_finished``
        with ``journalled: True``). Nothing starts before the first ``__anext__``.

        Example:
            >>> async for event in formation.aresume_stream(run_id, store=store, answer="yes"):  # doctest: +SKIP
            ...     print(event.type, event.node)
        """
        require_run_id(run_id, "Formation.aresume_stream()")
        opts = merge_options(
            options, "Formation.aresume_stream()", timeout=timeout, provider=provider, work_dir=work_dir,
            backend=backend, backend_options=backend_options, blackboard=blackboard, store=store, run_id=run_id,
            break_before=break_before, break_after=break_after,
        )
        plan = self.validate()
        return _lazy_stream(self, plan, None, opts, resume_id=run_id, answer=answer)

    def astart(
        self,
        *,
        on_event: EventListener | None = None,
        provider: Provider | None = None,
        work_dir: str | Path | None = None,
        backend: str = "threads",
        backend_options: Mapping[str, Any] | None = None,
        blackboard: Blackboard | None = None,
        store: StoreArg | None = None,
        options: RunOptions | None = None,
    ) -> AsyncStart:
        """:meth:`start`, for ``async with``: the formation starts on entry and stops on
        exit, on a worker thread (the loop does not wait on node actors' threads). The
        options are those of :meth:`start`.

        Returns:
            An async context manager whose target is the
            :class:`~wingman_actors.formation._runtime.RunningFormation`; its
            ``asubmit(input)`` returns an awaitable with a ``run_id``.

        Example:
            >>> async with formation.astart() as running:  # doctest: +SKIP
            ...     results = await asyncio.gather(*(running.asubmit(q) for q in questions))
        """
        opts = merge_options(
            options, "Formation.astart()", on_event=on_event, provider=provider, work_dir=work_dir, backend=backend,
            backend_options=backend_options, blackboard=blackboard, store=store,
        )
        self.validate()  # a setup error is raised here, not on entry
        return AsyncStart(functools.partial(self.start, options=opts))


class AsyncSubmit:
    """``asubmit`` and ``aresume``: runs of a started formation, awaited on an event loop."""

    if TYPE_CHECKING:  # given by RunningFormation
        _journal: Journal | None

        def _admit(self, input: Any, timeout: float | timedelta | None, on_event: EventListener | None,
                   blackboard: Blackboard | None, run_id: str | None, break_before: Collection[str] | None,
                   break_after: Collection[str] | None, options: RunOptions | None,
                   call: str = ...) -> tuple[str, float | None, EventListener | None, Blackboard | None,
                                             Breakpoints | None]: ...

        def _launch(self, run_id: str, input: Any, timeout: float | None, on_event: EventListener | None,
                    replay: Replay | None, board: Blackboard | None, breaks: Breakpoints | None,
                    sink: RunSink) -> RunSink: ...

        def cancel(self, run_id: str) -> bool: ...

        def _fail_if_stopped(self, run_id: str) -> None: ...

        def _begin_journalled(self, journal: Journal, run_id: str, input: Any, timeout: float | None,
                              on_event: EventListener | None, board: Blackboard | None,
                              breaks: Breakpoints | None) -> RunFuture: ...

        def _readmit(self, run_id: str, answer: Any, timeout: float | timedelta | None, on_event: EventListener | None,
                     blackboard: Blackboard | None, break_before: Collection[str] | None,
                     break_after: Collection[str] | None, options: RunOptions | None,
                     call: str = ...) -> Callable[[], RunFuture]: ...

    def asubmit(
        self,
        input: Any,
        *,
        timeout: float | timedelta | None = None,
        on_event: EventListener | None = None,
        blackboard: Blackboard | None = None,
        run_id: str | None = None,
        break_before: Collection[str] | None = None,
        break_after: Collection[str] | None = None,
        options: RunOptions | None = None,
    ) -> AsyncRun:
        """:meth:`submit`, for a coroutine: the same run, as an awaitable on the running
        event loop (call it there). The options are those of :meth:`submit`, and so are
        the errors raised here. With a store, the journal's record of the run's start
        (a commit) is written on a worker thread, not on the loop: the run starts once
        it is durable, and its ``run_id`` is known at once.

        Returns:
            An :class:`~wingman_actors.formation._aio.AsyncRun` (an ``asyncio.Future``)
            with a ``run_id``: ``await`` it for the :class:`FormationResult`; cancelling
            it, or the task awaiting it, cancels the run. A store's refusal (a
            ``run_id`` it already has) is raised when it is awaited.

        Example:
            >>> async with formation.astart() as running:             # doctest: +SKIP
            ...     run = running.asubmit("question")
            ...     print(run.run_id, (await run).output)
        """
        loop = running_loop("RunningFormation.asubmit()")
        run_id, timeout, on_event, board, breaks = self._admit(
            input, timeout, on_event, blackboard, run_id, break_before, break_after, options, "RunningFormation.asubmit()")
        from ..actors import _function  # loaded with the runtime already: kept out of the package's import

        input = _function.isolate(input)  # as submit(): the input as it is now, not as changed later
        journal = self._journal
        if journal is None:  # nothing blocks: start it here, resolving the loop's settler
            run, settler = settled_on_loop(run_id, self, loop)
            self._launch(run_id, input, timeout, on_event, None, board, breaks, settler)
            self._fail_if_stopped(run_id)
            return run
        begin = functools.partial(self._begin_journalled, journal, run_id, input, timeout, on_event, board, breaks)
        return launch(begin, run_id, lane_of(journal), loop)

    def aresume(
        self,
        run_id: str,
        answer: Any = None,
        *,
        timeout: float | timedelta | None = None,
        on_event: EventListener | None = None,
        blackboard: Blackboard | None = None,
        break_before: Collection[str] | None = None,
        break_after: Collection[str] | None = None,
        options: RunOptions | None = None,
    ) -> AsyncRun:
        """:meth:`resume`, for a coroutine: the continued run as an awaitable on the
        running event loop (call it there). Its journal is read and claimed on a worker
        thread, not on the loop. The arguments are those of :meth:`resume`.

        Returns:
            An :class:`~wingman_actors.formation._aio.AsyncRun` with the ``run_id``:
            ``await`` it for the :class:`FormationResult`; cancelling it, or the task
            awaiting it, cancels the run.

        Raises:
            ValueError: the formation was started without a store (raised here). The
                store's refusals (an unknown run, one that cannot be resumed, a formation
                that differs, an ``answer`` with no interrupt pending) are raised when it
                is awaited.

        Example:
            >>> async with formation.astart(store=store) as running:   # doctest: +SKIP
            ...     result = await running.aresume(run_id, answer="yes")
        """
        loop = running_loop("RunningFormation.aresume()")
        begin = self._readmit(run_id, answer, timeout, on_event, blackboard, break_before, break_after, options,
                              "RunningFormation.aresume()")
        assert self._journal is not None  # _readmit refuses a formation without a store
        return launch(begin, run_id, lane_of(self._journal), loop)


async def _lazy_stream(
    formation: AsyncRuns, plan: Plan, input: Any, opts: RunOptions, *, resume_id: str | None = None, answer: Any = None,
) -> AsyncIterator[FormationEvent]:
    called = time.monotonic()  # the first event asked for: the run's timeout counts from here
    journal = await _journal_of(formation, opts.store, resume_id)
    # closed here when this generator is (a consumer that leaves early): not later by the
    # loop's finalizer, where the loop's shutdown could cancel the closing
    async with contextlib.aclosing(astream_plan(plan, input, opts, journal, resume_id=resume_id, answer=answer,
                                                       called=called)) as events:
        async for event in events:
            yield event


async def _journal_of(formation: AsyncRuns, store: StoreArg | None, resumed: str | None = None) -> Journal | None:
    """The run's journal in ``store``: a store given by path is opened (its SQLite file,
    perhaps created; not for ``resumed``, the run a resume reads) on a worker thread, not
    on the loop."""
    if isinstance(store, str | os.PathLike):
        return await begin_off_loop(functools.partial(formation._journal, store, resumed), _close)
    return formation._journal(store, resumed)


def _close(journal: Journal | None) -> None:
    if journal is not None:
        journal.close()
