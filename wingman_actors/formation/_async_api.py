"""The async methods of :class:`~wingman_actors.formation.Formation` (``arun``, ``astream``,
``astart``: the twins of ``run``, ``run_stream`` and ``start``) and of the running formation
(``asubmit``, the twin of ``submit``), for code running on an asyncio event loop. They
never block the loop: see :mod:`._aio` for how.

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

import functools
from collections.abc import AsyncIterator, Collection, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._aio import AsyncRun, AsyncStart, arun_plan, astream_plan, running_loop, watch
from ._options import RunOptions, merge_options

if TYPE_CHECKING:
    from ..orchestration._blackboard import Blackboard
    from ..providers._base import Provider
    from ._durable import Journal, StoreArg
    from ._plan import Plan
    from ._result import FormationResult
    from ._runtime import EventListener, RunningFormation
    from .events import FormationEvent

__all__ = ["AsyncRuns", "AsyncSubmit"]


class AsyncRuns:
    """``arun``, ``astream`` and ``astart``: a formation's runs awaited on an event loop."""

    if TYPE_CHECKING:  # given by Formation
        def validate(self) -> Plan: ...
        def _journal(self, store: StoreArg | None) -> Journal | None: ...
        def start(self, *, options: RunOptions | None = None) -> RunningFormation: ...

    async def arun(
        self,
        input: Any,
        *,
        timeout: float | None = None,
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
        opts = merge_options(
            options, "Formation.arun()", timeout=timeout, on_event=on_event, provider=provider, work_dir=work_dir,
            backend=backend, backend_options=backend_options, blackboard=blackboard, store=store, run_id=run_id,
            break_before=break_before, break_after=break_after,
        )
        plan = self.validate()
        return await arun_plan(plan, input, opts, self._journal(opts.store))

    def astream(
        self,
        input: Any,
        *,
        timeout: float | None = None,
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
        Nothing starts before the first ``__anext__``. The options are those of
        :meth:`run_stream`.

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
    """``asubmit``: a run of a started formation, awaited on an event loop."""

    if TYPE_CHECKING:  # given by RunningFormation
        def submit(self, input: Any, *, timeout: float | None = None, on_event: EventListener | None = None,
                   blackboard: Blackboard | None = None, run_id: str | None = None,
                   break_before: Collection[str] | None = None, break_after: Collection[str] | None = None,
                   options: RunOptions | None = None) -> Future[FormationResult]: ...

    def asubmit(
        self,
        input: Any,
        *,
        timeout: float | None = None,
        on_event: EventListener | None = None,
        blackboard: Blackboard | None = None,
        run_id: str | None = None,
        break_before: Collection[str] | None = None,
        break_after: Collection[str] | None = None,
        options: RunOptions | None = None,
    ) -> AsyncRun:
        """:meth:`submit`, for a coroutine: the same run, as an awaitable on the running
        event loop (call it there). The options are those of :meth:`submit`. Submitting
        is done on the caller's thread, as ``submit`` does it (with a store, that includes
        journalling the run's start before this returns).

        Returns:
            An :class:`~wingman_actors.formation._aio.AsyncRun` (an ``asyncio.Future``)
            with a ``run_id``: ``await`` it for the :class:`FormationResult`; cancelling
            it, or the task awaiting it, cancels the run.

        Example:
            >>> async with formation.astart() as running:             # doctest: +SKIP
            ...     run = running.asubmit("question")
            ...     print(run.run_id, (await run).output)
        """
        loop = running_loop("RunningFormation.asubmit()")
        return watch(self.submit(input, timeout=timeout, on_event=on_event, blackboard=blackboard, run_id=run_id,
                                 break_before=break_before, break_after=break_after, options=options), loop)


async def _lazy_stream(formation: AsyncRuns, plan: Plan, input: Any, opts: RunOptions) -> AsyncIterator[FormationEvent]:
    async for event in astream_plan(plan, input, opts, formation._journal(opts.store)):
        yield event
