"""Fleet: run one agent over many tasks concurrently, one fresh session per task.

Every task gets its own :class:`~wingman_actors.agents._session.Session` (optionally with its own
``work_dir`` and ``instructions``), runs on a worker thread, and ends as exactly one
:class:`FleetResult`: N tasks in, N results out, always. A failing task yields a result with
``error`` set and never disturbs the others. With ``render=``, the tasks are any items, each
turned into its :class:`Task` by the worker that runs it (workers start at once; no item
waits for the others to be rendered).

Example:
    >>> from wingman_actors import Agent
    >>> from wingman_actors.agents._fleet import Fleet, Task
    >>> from wingman_actors.testing import ScriptedProvider
    >>> agent = Agent("summarizer", provider=ScriptedProvider(["short", "shorter"]))
    >>> fleet = Fleet(agent, ["Summarize A.", Task("Summarize B.", data={"id": 2})], max_workers=1)
    >>> [(r.worker_name, r.response, r.data) for r in fleet.run()]
    [('summarizer-0', 'short', None), ('summarizer-1', 'shorter', {'id': 2})]
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, wait
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar, cast, overload

from .._cancel import CancelToken, current_token
from .._interrupts import RunSuspended
from ..core import StreamEvent, Usage
from ..errors import AgentError, ErrorKind
from ..integrations import otel
from ._agent import Agent
from ._fleet_loops import DEFAULT_MAX_WORKERS, Dispatch, run_loop
from ._inputs import check_timeout
from ._result import Result
from ._session import Session

__all__ = ["DEFAULT_MAX_WORKERS", "Fleet", "FleetResult", "Task"]

log = logging.getLogger(__name__)

_Item = TypeVar("_Item")


@dataclasses.dataclass(frozen=True)
class Task:
    """One unit of fleet work.

    Args:
        message: the user message the task's session runs.
        work_dir: the session's working directory (default: the current directory).
        instructions: replaces the agent's instructions for this task only.
        data: anything; handed back untouched on the task's :class:`FleetResult`, and the
            metadata of the task's run (``RunContext.metadata``, ``ToolContext.metadata``):
            a dict as it is, any other value as ``{"data": value}``.
    """

    message: str
    work_dir: str | Path | None = None
    instructions: str | None = None
    data: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.message, str):
            raise TypeError(f"Task message must be a str, got {type(self.message).__name__}")
        if self.work_dir is not None and not isinstance(self.work_dir, str | Path):
            raise TypeError(f"Task work_dir must be a str or Path, got {type(self.work_dir).__name__}")
        if self.instructions is not None and not isinstance(self.instructions, str):
            raise TypeError(f"Task instructions must be a str, got {type(self.instructions).__name__}")


_TASK_TYPES = (str, Task)  # what a render may return (a tuple: ``str | Task`` is built per call)


@dataclasses.dataclass(frozen=True, slots=True)
class FleetResult:
    """The outcome of one fleet task.

    Attributes:
        task_index: the task's position in the fleet's task list.
        worker_name: ``f"{agent.name}-{task_index}"``.
        result: the session's result, or None when the task failed.
        error: what the task raised (an ``AgentError`` or any exception), or None.
        data: the task's ``data``, passed through.
        duration_s: wall time of the task, session creation and close included.
        usage: the tokens the task's model calls spent, a failed task's too (its
            ``result.usage`` when it succeeded).
    """

    task_index: int
    worker_name: str
    result: Result | None
    error: BaseException | None
    data: Any = None
    duration_s: float = 0.0
    usage: Usage = dataclasses.field(default_factory=Usage)

    @property
    def ok(self) -> bool:
        """True when the task succeeded."""
        return self.error is None

    @property
    def response(self) -> str:
        """The final answer's text, or ``""`` when the task failed."""
        return self.result.response if self.result is not None else ""


_new = object.__new__
_set_index, _set_name, _set_result, _set_error, _set_data, _set_duration, _set_usage = (
    FleetResult.__dict__[f].__set__
    for f in ("task_index", "worker_name", "result", "error", "data", "duration_s", "usage")
)
_NO_USAGE = Usage()


def _fleet_result(
    index: int, worker_name: str, result: Result | None, error: BaseException | None, data: Any, duration_s: float,
    spent: Usage | None = None,
) -> FleetResult:
    """``FleetResult(...)`` as each task ends, in half the time: the frozen dataclass's
    ``__init__`` goes through ``object.__setattr__`` once per field."""
    fr = _new(FleetResult)
    _set_index(fr, index)
    _set_name(fr, worker_name)
    _set_result(fr, result)
    _set_error(fr, error)
    _set_data(fr, data)
    _set_duration(fr, duration_s)
    _set_usage(fr, result.usage if result is not None else spent or _NO_USAGE)
    return fr


class Fleet:
    """Runs ``agent`` over ``tasks``, at most ``max_workers`` sessions at once.

    Args:
        agent: the agent every task runs.
        tasks: :class:`Task` objects, or plain strings (each becomes ``Task(message=s)``).
        max_workers: the hard cap on sessions running at once. ``0`` (the default) means
            ``min(len(tasks), DEFAULT_MAX_WORKERS)``, i.e. at most 100.
        timeout: seconds each task's run may take (per task, not for the whole fleet).
        executor: run tasks in this executor (e.g. a long-lived pool owned by an actor)
            instead of worker threads started per run. At most ``max_workers`` tasks are
            submitted-and-unfinished at once, and the executor is not shut down. Do not pass
            the executor whose thread calls :meth:`run` unless it has workers to spare.
        render: builds a task from each item of ``tasks`` (which may then be anything), returning a
            :class:`Task` or a message ``str``. It is called in the worker that runs the
            item, just before its session, so costly rendering (structured data to a
            prompt) overlaps the other items' sessions. A render that raises fails only
            its item (the result's ``error``).

    Raises:
        TypeError: ``agent`` is not an Agent, a task is neither a Task nor a str (without
            ``render``), or ``render`` is not callable.
        ValueError: ``max_workers`` is negative, or ``timeout`` is not positive.

    Example of ``render``:
        >>> from wingman_actors.testing import ScriptedProvider
        >>> echo = Agent("echo", provider=ScriptedProvider([lambda r: r.messages[-1].text], cycle=True))
        >>> fleet = Fleet(echo, [{"id": 1}, {"id": 2}], render=lambda item: f"item {item['id']}")
        >>> [r.response for r in fleet.run()]
        ['item 1', 'item 2']

    Cancelling (:meth:`cancel`) is final: a cancelled fleet's later runs return cancelled
    results too.
    """

    @overload
    def __init__(
        self,
        agent: Agent,
        tasks: Sequence[Task | str],
        *,
        max_workers: int = 0,
        timeout: float | timedelta | None = None,
        executor: Executor | None = None,
        render: None = None,
    ) -> None: ...

    @overload
    def __init__(
        self,
        agent: Agent,
        tasks: Sequence[_Item],
        *,
        max_workers: int = 0,
        timeout: float | timedelta | None = None,
        executor: Executor | None = None,
        render: Callable[[_Item], Task | str],
    ) -> None: ...

    def __init__(
        self,
        agent: Agent,
        tasks: Sequence[Any],
        *,
        max_workers: int = 0,
        timeout: float | timedelta | None = None,
        executor: Executor | None = None,
        render: Callable[[Any], Task | str] | None = None,
    ) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"Fleet needs an Agent, got {type(agent).__name__}")
        if isinstance(tasks, str | bytes) or not isinstance(tasks, Sequence):
            raise TypeError(f"Fleet tasks must be a list of Task or str, got {type(tasks).__name__}")
        if render is not None and not callable(render):
            raise TypeError(f"Fleet render must be a function of one item, got {type(render).__name__}")
        items: list[Any] = list(tasks)
        for i, t in enumerate(items if render is None else ()):
            if isinstance(t, str):
                items[i] = Task(message=t)
            elif not isinstance(t, Task):
                raise TypeError(f"Fleet task {i} must be a Task or a str, got {type(t).__name__}")
        if isinstance(max_workers, bool) or not isinstance(max_workers, int):
            raise TypeError(f"Fleet max_workers must be an int, got {type(max_workers).__name__}")
        if max_workers < 0:
            raise ValueError(f"Fleet max_workers must be >= 0 (0 = automatic), got {max_workers}")
        if timeout is not None:
            check_timeout(timeout, "Fleet ")
        if executor is not None and not isinstance(executor, Executor):
            raise TypeError(f"Fleet executor must be a concurrent.futures.Executor, got {type(executor).__name__}")
        self.agent = agent
        self._items: tuple[Any, ...] = tuple(items)
        self._render = render
        self.max_workers = max_workers
        self.timeout = timeout
        self.executor = executor
        self._lock = threading.Lock()
        # One token per run in progress, the parent of its sessions' tokens: cancel()
        # reaches every session, even one whose run has not made its own token yet.
        self._tokens: set[CancelToken] = set()
        self._cancel_reason: str | None = None
        self._live: dict[int, Session] = {}  # the sessions running now, by task: spent_so_far
        # Set by a fleet node whose run has listeners: each task's session is streamed and
        # its events handed here with the task's index (run, run_stream; the node does not
        # use arun). None (a run nobody listens to, or a fleet of one's own): sessions run
        # unstreamed, and nothing per event is built.
        self._on_event: Callable[[int, StreamEvent], object] | None = None

    @property
    def tasks(self) -> tuple[Task, ...]:
        """The tasks; with ``render``, every item rendered now (a render that raises raises)."""
        tasks = (self._task(i) for i in range(len(self._items)))
        return tuple(Task(message=t) if isinstance(t, str) else t for t in tasks)

    @property
    def cap(self) -> int:
        """The most sessions this fleet runs at once."""
        limit = self.max_workers or DEFAULT_MAX_WORKERS
        return max(1, min(limit, len(self._items)))

    # -- public API -------------------------------------------------------------------

    def run(self) -> list[FleetResult]:
        """Run every task; return one result per task, in task order. Blocks the calling
        thread until every task is done (from a coroutine, ``await fleet.arun()``).

        Raises:
            RuntimeError: not one worker could start (the system refuses new threads, or
                the given executor was shut down). When only some start, they run every
                task and a warning is logged.
        """
        n = len(self._items)
        if n == 0:
            return []
        results: list[FleetResult | None] = [None] * n

        def store(result: FleetResult) -> None:
            results[result.task_index] = result

        self._run_each(store)
        return cast("list[FleetResult]", results)  # _run_each delivered one result per task

    async def arun(self) -> list[FleetResult]:
        """:meth:`run`, awaited: every task's session runs on the caller's event loop
        (``Session.arun``: with a provider that has ``arun_inference``, no thread per
        session), at most :attr:`cap` at once; one result per task, in task order.
        Cancelling the awaiting task cancels the fleet's sessions.

        Example:
            >>> results = await Fleet(agent, ["a", "b"]).arun()  # doctest: +SKIP
        """
        from ._async_session import arun_fleet

        return await arun_fleet(self)

    def _run_each(self, deliver: Callable[[FleetResult], object]) -> None:
        """Run every task, handing each result to ``deliver`` on the worker that ran it (a
        task whose worker loop was lost: on the caller, at the end). Not a public API: a
        fleet node keeps what it needs of each result and lets the rest go at once."""
        if not self._items:
            return
        # Workers deliver in place: the caller sleeps until every worker is done instead of
        # waking once per task.
        with self._dispatch(deliver) as dispatch:
            wait(dispatch.loops)
        for index in dispatch.missing():
            deliver(self._lost(index, dispatch.loops))

    def run_stream(self) -> Iterator[FleetResult]:
        """Run every task, yielding results as tasks finish (completion order).

        Nothing starts until the first ``next()``. Closing the iterator early stops the
        tasks not yet started and waits for the running ones before returning. Each step
        blocks the calling thread (from a coroutine, use :meth:`arun`).
        """
        n = len(self._items)
        if n == 0:
            return
        finished: queue.SimpleQueue[FleetResult | None] = queue.SimpleQueue()
        with self._dispatch(finished.put) as dispatch:
            for fut in dispatch.loops:
                fut.add_done_callback(lambda _f: finished.put(None))
            delivered = 0
            ended = 0
            while delivered < n:
                item = finished.get()
                if item is not None:
                    delivered += 1
                    yield item
                    continue
                ended += 1
                if ended < len(dispatch.loops):
                    continue
                # Every loop ended yet tasks are missing: the executor cancelled or killed
                # loops. Each missing task still gets its result, with the error.
                for index in dispatch.missing():
                    delivered += 1
                    yield self._lost(index, dispatch.loops)

    @contextlib.contextmanager
    def _dispatch(self, deliver: Callable[[FleetResult], object]) -> Iterator[Dispatch]:
        """Start ``cap`` worker loops that hand each result to ``deliver``; on exit, stop
        giving out tasks and wait for the loops (and their own threads, if any)."""
        cap = self.cap
        dispatch = Dispatch(len(self._items))
        # The caller's token (a formation node's attempt, a delegating run) is its parent.
        token = CancelToken(parent=current_token())
        self._track(token)

        def loop() -> None:
            index = dispatch.take()
            while index is not None:
                result = self._run_task(index, token)
                index = dispatch.take(finished=index)
                deliver(result)
                del result  # not kept through the next task: deliver may have let it go

        loop = otel.carry_context(loop)  # with OpenTelemetry, sessions nest under the caller's span

        threads: list[threading.Thread] = []

        def start_loop(i: int) -> Future[None]:
            # Each worker runs in a copy of the caller's context, so context variables
            # (the active blackboard of a formation run, say) reach its sessions.
            if self.executor is not None:
                return self.executor.submit(contextvars.copy_context().run, loop)
            # Plain threads, one per loop, rather than a ThreadPoolExecutor: the pool's
            # hand-off through its work queue makes starting 100 workers take half as long
            # again, and every worker started late delays its whole chain of tasks.
            fut: Future[None] = Future()
            thread = threading.Thread(
                target=contextvars.copy_context().run, args=(run_loop, loop, fut), name=f"wingman-fleet-{self.agent.name}-{i}", daemon=True
            )
            thread.start()
            threads.append(thread)
            return fut

        try:  # the run's token is let go of even when no worker starts
            for i in range(cap):
                try:
                    dispatch.loops.append(start_loop(i))
                except RuntimeError as exc:  # no more threads, or the executor was shut down
                    if not dispatch.loops:
                        raise RuntimeError(
                            f"fleet {self.agent.name!r} could not start any worker: {exc}"
                        ) from exc
                    log.warning(
                        "fleet %r started only %d of %d workers (%s); they run all its tasks",
                        self.agent.name, len(dispatch.loops), cap, exc,
                    )
                    break
            yield dispatch
        finally:
            dispatch.stop()
            wait(dispatch.loops)
            for thread in threads:
                thread.join()
            self._untrack(token)
            token.release()

    def cancel(self, reason: str = "fleet cancelled") -> None:
        """Cancel the fleet (from another thread).

        Tasks not yet started finish with an ``AgentError(kind=cancelled)`` result; running
        sessions are cancelled and stop at their next boundary.
        """
        if not isinstance(reason, str):
            raise TypeError(f"cancel: reason must be a str (it is the tasks' error message), got {reason!r}")
        with self._lock:
            self._cancel_reason = reason
            tokens = list(self._tokens)
        for token in tokens:
            token.cancel(reason)

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._cancel_reason is not None

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        pool = "external" if self.executor is not None else "own"
        return (
            f"Fleet(agent={self.agent.name!r}, tasks={len(self._items)}, max_workers={self.cap}, "
            f"timeout={self.timeout!r}, executor={pool})"
        )

    # -- internals --------------------------------------------------------------------

    def _worker_name(self, index: int) -> str:
        return f"{self.agent.name}-{index}"

    def _task(self, index: int) -> Task | str:
        item = self._items[index]
        if self._render is None:
            return item  # type: ignore[no-any-return]  # checked in __init__
        task = self._render(item)
        if not isinstance(task, _TASK_TYPES):
            raise TypeError(f"Fleet render must return a Task or a str, got {type(task).__name__} for item {index}")
        return task  # a str stays a str: building a Task per item costs as much as rendering it

    def _run_task(self, index: int, token: CancelToken) -> FleetResult:
        started = time.perf_counter()
        result: Result | None = None
        error: BaseException | None = None
        data = None
        session: Session | None = None
        try:
            session, message, data = self._open_session(index)
            try:
                on_event = self._on_event
                if on_event is None:
                    result = session.run(message, timeout=self.timeout, parent_token=token, metadata=task_metadata(data))
                else:
                    stream = session.run_stream(message, timeout=self.timeout, parent_token=token,
                                                metadata=task_metadata(data))
                    for event in stream:
                        on_event(index, event)
                    result = stream.result()
            finally:
                self._close_session(index, session)
        except (Exception, RunSuspended) as exc:  # RunSuspended: interrupt() in a journalled formation's item
            error = exc
        spent = session._spent_so_far() if error is not None and session is not None else None
        return _fleet_result(index, f"{self.agent.name}-{index}", result, error, data, time.perf_counter() - started,
                             spent)

    def _open_session(self, index: int) -> tuple[Session, str, Any]:
        """Task ``index``'s session, message and data (the same for ``run`` and ``arun``)."""
        task = self._task(index)
        message, work_dir, instructions, data = (
            (task, None, None, None) if isinstance(task, str) else (task.message, task.work_dir, task.instructions, task.data)
        )
        reason = self._cancel_reason
        if reason is not None:
            raise AgentError(f"fleet cancelled before task {index} started: {reason}", kind=ErrorKind.CANCELLED)
        agent = self.agent if instructions is None else self.agent.with_overrides(instructions=instructions)
        session = self._live[index] = Session(agent, work_dir=work_dir)
        return session, message, data

    def _close_session(self, index: int, session: Session) -> None:
        """Close task ``index``'s session (from :meth:`_open_session`), done running."""
        self._live.pop(index, None)
        session.close()

    def _spent_so_far(self) -> Usage:
        """What the sessions running now have spent on model calls so far (read from another
        thread: a formation cutting its fleet node's attempt counts those paid calls)."""
        return Usage.sum([u for session in list(self._live.values()) if (u := session._spent_so_far()) is not None])

    def _track(self, token: CancelToken) -> None:
        """Make ``token`` (a run's) reachable by :meth:`cancel`, cancelled now if it was."""
        with self._lock:
            self._tokens.add(token)
            reason = self._cancel_reason
        if reason is not None:
            token.cancel(reason)

    def _untrack(self, token: CancelToken) -> None:
        with self._lock:
            self._tokens.discard(token)

    def _lost(self, index: int, loops: list[Future[None]]) -> FleetResult:
        """The result of a task whose worker loop was cancelled or died."""
        failures = [f.exception() for f in loops if not f.cancelled() and f.exception() is not None]
        if failures:
            error: BaseException = failures[0]  # type: ignore[assignment]
        else:
            error = AgentError(f"task {index} was cancelled by its executor", kind=ErrorKind.CANCELLED)
        item = self._items[index]
        data = item.data if isinstance(item, Task) else None  # an unrendered item has no data yet
        return FleetResult(index, self._worker_name(index), None, error, data)


def task_metadata(data: Any) -> Mapping[str, Any] | None:
    """A task's ``data`` as its run's metadata (a value that is not a mapping as ``{"data": value}``)."""
    if data is None:
        return None
    return data if isinstance(data, Mapping) else {"data": data}
