"""One run of a formation from start to stop: what ``Formation.run``, ``resume``,
``run_stream`` and ``resume_stream`` do (and, on a worker thread, their async twins in
:mod:`._aio`): start the formation, submit the input (or continue a journalled run),
wait for the result or yield the events, commit the journal, stop.
"""

from __future__ import annotations

import dataclasses
import queue
import time
from collections.abc import Iterator
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ._board_param import check_board, require_no_board
from ._future import RunFuture
from ._options import RunOptions
from ._result import FormationResult
from ._runtime import RUN_ENDED, RunningFormation

if TYPE_CHECKING:
    from ._durable import Journal
    from ._plan import Plan
    from ._runtime import EventListener
    from .events import FormationEvent

__all__ = ["begin_once", "run_once", "run_stream", "settle"]


def begin_once(
    plan: Plan, input: Any, options: RunOptions, journal: Journal | None = None, *, resume: bool = False,
    answer: Any = None, on_event: EventListener | None = None, called: float | None = None,
) -> tuple[RunningFormation, RunFuture]:
    """Start the formation and submit ``input`` (or, with ``resume``, continue the
    journalled run ``options.run_id``): the first half of ``run``/``run_stream`` and of
    their async twins (:mod:`._aio`), which wait for the future, :func:`settle` the
    journal and stop the formation. ``journal`` is ``options.store``, opened by the caller.
    ``called``: the ``time.monotonic()`` of the call to ``run`` or ``resume``: the run's
    timeout counts from it, so loading the runtime and starting the actors are within it."""
    if check_board(options.blackboard) is None:
        require_no_board(plan)  # before any actor starts
    # the run's timeout counts from the call: loading the runtime and starting are the caller's wait too
    running = RunningFormation(plan, options, journal=journal, timeout_from=called).start()
    timeout = options.timeout
    try:
        if resume:
            assert options.run_id is not None
            future = running.resume(options.run_id, answer, timeout=timeout, on_event=on_event,
                                    break_before=options.break_before, break_after=options.break_after)
        else:
            future = running.submit(input, timeout=timeout, run_id=options.run_id, on_event=on_event,
                                    break_before=options.break_before, break_after=options.break_after)
    except BaseException:
        running.stop()
        raise
    assert isinstance(future, RunFuture)
    return running, future


def run_once(
    plan: Plan, input: Any, options: RunOptions, journal: Journal | None = None, *, resume: bool = False,
    answer: Any = None, called: float | None = None,
) -> FormationResult:
    """Start the formation, run ``input`` through it (or, with ``resume``, continue the
    journalled run ``options.run_id``), stop it; return the result or raise
    :class:`FormationRuntimeError`. ``journal`` is ``options.store``, opened by the caller;
    ``called`` as for :func:`begin_once`."""
    running, future = begin_once(plan, input, options, journal, resume=resume, answer=answer, called=called)
    with running:
        try:
            result: FormationResult = future.result()
        except BaseException:
            settle(journal, future, quiet=True)
            raise
        settle(journal, future)
        return result


def settle(journal: Journal | None, future: Future[FormationResult], *, quiet: bool = False) -> None:
    """Before ``run``/``resume`` returns on a store it did not open: the run's journal
    writes (its last status included) are committed, and those that failed are raised
    (logged only, with ``quiet``, when the run failed already). A store it opened is
    closed when the formation stops, which does the same."""
    if journal is None or journal.owned:
        return
    from ..store import StoreWriteError

    try:
        journal.store.flush(getattr(future, "run_id", None))
    except StoreWriteError:
        if not quiet:
            raise


def run_stream(
    plan: Plan, input: Any, options: RunOptions, journal: Journal | None = None, *, resume_id: str | None = None,
    answer: Any = None, called: float | None = None,
) -> Iterator[FormationEvent]:
    """Start the formation, run ``input`` (or continue the journalled run ``resume_id``) and
    yield its events until the one that ends it (``run_finished``: ``data["result"]``); the
    formation stops when the generator ends, and a consumer that stops early cancels a run
    not journalled (a journalled one is interrupted by the stop, resumable). ``journal``:
    ``options.store``, opened by the caller; ``options.on_event`` is unused; ``called`` as
    for :func:`begin_once`."""
    if called is None:  # the run's timeout counts from the call (else from the first event asked for)
        called = time.monotonic()
    events: queue.SimpleQueue[FormationEvent] = queue.SimpleQueue()
    if resume_id is not None:
        options = dataclasses.replace(options, run_id=resume_id)
    running, future = begin_once(plan, input, dataclasses.replace(options, on_event=None), journal,
                                 resume=resume_id is not None, answer=answer, on_event=events.put, called=called)
    with running:
        try:
            while (event := events.get()).type not in RUN_ENDED:
                yield event
            yield event
        finally:
            if journal is None:  # the consumer stopped early (a no-op once the run has ended)
                future.cancel()
