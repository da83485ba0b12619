"""``start``, ``run``, ``resume``, ``run_stream`` and ``resume_stream``: a formation's runs
from a thread, each blocking it (the awaitable twins are in :mod:`._async_api`).

Starting a formation loads the runtime (actors, backends, routing, supervision), and a
journalled run the store: each is imported at its first use, so declaring and validating
a formation (``from wingman_actors import Formation``) loads neither.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._options import RunOptions, merge_options, require_run_id

if TYPE_CHECKING:
    import networkx as nx  # type: ignore[import-untyped]

    from ..orchestration._blackboard import Blackboard
    from ..providers._base import Provider
    from ._durable import Journal, StoreArg
    from ._plan import Plan
    from ._result import FormationResult
    from ._runtime import EventListener, RunningFormation
    from .events import FormationEvent

__all__ = ["Runs"]


class Runs:
    """A formation's blocking runs: :meth:`start`, :meth:`run`, :meth:`resume`,
    :meth:`run_stream` and :meth:`resume_stream`."""

    if TYPE_CHECKING:  # given by Formation
        name: str
        graph: nx.DiGraph

        def validate(self) -> Plan: ...

    def start(
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
    ) -> RunningFormation:
        """Validate, then start every node actor (the supervisor starts when first needed).

        Args:
            on_event: called with every :class:`FormationEvent` of every run.
            provider: replaces the provider of every agent and fleet node (e.g. from the CLI).
            work_dir: where agent and fleet sessions run their tools (default: the current
                directory).
            backend: where the node actors live: ``"threads"`` (Pykka actors on threads of
                this process, the default) or ``"ray"`` (each replica a Ray actor; needs
                the ``ray`` extra); any other name is a ``FormationSetupError``.
            backend_options: for ``backend="ray"``: ``address`` (``"auto"`` or a
                ``ray://`` address to join a cluster; default a local Ray), ``num_cpus``,
                ``init`` (more ``ray.init`` arguments).
            blackboard: a :class:`~wingman_actors.orchestration.Blackboard` shared with every
                node of every run submitted without its own (``submit(..., blackboard=...)``
                gives one run its own board): function nodes with a ``blackboard``
                parameter receive it; agent and fleet nodes, and the agents they delegate
                to, see it as ``current_blackboard()`` (what ``blackboard_tools`` act on).
            store: journal every run in this :class:`~wingman_actors.store.RunStore` (or
                the SQLite file at this path, opened now and closed on stop), so runs can
                be resumed (``running.resume(run_id)``) and can ``interrupt()``.
            options: a :class:`~wingman_actors.formation.RunOptions` giving any of the
                above instead of the keywords (``timeout`` and ``run_id`` go to
                ``submit()``).

        Returns:
            The running formation: ``submit(input) -> Future[FormationResult]``; use it
            as a context manager so it stops.

        Raises:
            TypeError: ``options`` and a keyword give one option different values, or
                ``options`` sets ``timeout`` or ``run_id``.
        """
        opts = merge_options(
            options, "Formation.start()", on_event=on_event, provider=provider, work_dir=work_dir, backend=backend,
            backend_options=backend_options, blackboard=blackboard, store=store,
        )
        plan = self.validate()
        from ._runtime import RunningFormation  # the runtime loads at the first start

        return RunningFormation(plan, opts, journal=self._journal(opts.store)).start()

    def _journal(self, store: StoreArg | None, resumed: str | None = None) -> Journal | None:
        """The journal in ``store`` (None: no store); ``resumed``, the id of the run a
        resume reads: a SQLite path where no file is is then an ``UnknownRunError``, not a
        new empty store."""
        if store is None:
            return None
        from ..store import FormationShape  # the store loads for a durable run only
        from ._durable import Journal, open_store

        opened, owned = open_store(store, run_id=resumed)
        return Journal(opened, owned, self.name, FormationShape.of(self.graph),
                       getattr(self, "source", None))  # the launcher sets the file it loaded

    def run(
        self,
        input: Any,
        timeout: float | timedelta | None = None,
        *,
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
        """Start, run ``input`` through, stop. ``timeout`` bounds the whole run (None or
        ``math.inf``: no limit);
        ``backend``, ``backend_options``, ``blackboard`` (shared with every node) and
        ``store`` are as for :meth:`start`; ``run_id`` names the journalled run (a new id
        when None). ``break_before``/``break_after`` name nodes where a journalled run
        stops (``status == "suspended"``, ``interrupt == {"node": n, "payload":
        {"breakpoint": "before", "input": ...}}`` or ``"after"`` with ``"output"``) until
        :meth:`resume`. ``options`` (a :class:`~wingman_actors.formation.RunOptions`) may
        give any of them instead: ``run(x, options=RunOptions(timeout=5))`` is
        ``run(x, timeout=5)``; giving one option two different values is a ``TypeError``.

        Blocks the calling thread until the run ends, also inside a running event loop
        (which waits meanwhile): from a coroutine, ``await formation.arun(...)``.

        Returns:
            The result; with a store, ``status`` is ``"suspended"`` (and ``interrupt`` set)
            when a node called ``interrupt()``: continue with :meth:`resume`.

        Raises:
            FormationSetupError: the formation is not valid, a function node takes a
                ``blackboard`` parameter without a default and no board was given, or a
                breakpoint names no node (or has no store).
            FormationRuntimeError: the run failed (node, attempts, run id, partial outputs).
        """
        called = time.monotonic()  # the run's timeout counts from here
        opts = merge_options(
            options, "Formation.run()", timeout=timeout, on_event=on_event, provider=provider, work_dir=work_dir,
            backend=backend, backend_options=backend_options, blackboard=blackboard, store=store, run_id=run_id,
            break_before=break_before, break_after=break_after,
        )
        plan = self.validate()
        from ._one_run import run_once

        return run_once(plan, input, opts, self._journal(opts.store), called=called)

    def resume(
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
        """Continue the journalled run ``run_id`` in this process: its process was killed,
        or it failed, was cancelled or suspended. Journalled node visits and fleet items
        are not run again; what was in flight runs again. Blocks the calling thread until
        the run ends, as :meth:`run` does (from a coroutine: ``await formation.aresume(...)``).

        Args:
            run_id: the run.
            store: the run's store (a ``RunStore`` or its path).
            answer: for a suspended run, the value its pending ``interrupt()`` returns.
            timeout: as for :meth:`run`.
            on_event: as for :meth:`run`.
            provider: as for :meth:`run`.
            work_dir: as for :meth:`run`.
            backend: as for :meth:`run` (``backend="ray"`` journals in the driver's store,
                as threads do).
            backend_options: as for :meth:`run`.
            blackboard: the board the resumed nodes share, as for :meth:`run`. A board's
                contents are not journalled: pass one holding what the rest of the run needs.
            break_before: replaces the run's breakpoints before nodes (None keeps those it
                was given; the one it stopped at does not stop it again).
            break_after: likewise, after nodes.
            options: a :class:`~wingman_actors.formation.RunOptions` giving any of the
                above instead of the keywords, as for :meth:`run`.

        Raises:
            wingman_actors.store.FormationMismatchError: this formation's nodes, kinds or
                edges differ from the run's (the message says what differs).
            wingman_actors.store.RunNotResumableError: the run succeeded, expired, or is
                running in a live process.
            wingman_actors.store.NoPendingInterruptError: ``answer`` was given for a run
                that has no pending interrupt (also a ``ValueError``).
            FormationRuntimeError: the resumed run failed.

        Example:
            >>> result = formation.resume(run_id, store="runs.sqlite", answer="yes")  # doctest: +SKIP
        """
        called = time.monotonic()  # the run's timeout counts from here
        require_run_id(run_id, "Formation.resume()")
        opts = merge_options(
            options, "Formation.resume()", timeout=timeout, on_event=on_event, provider=provider, work_dir=work_dir,
            backend=backend, backend_options=backend_options, blackboard=blackboard, store=store, run_id=run_id,
            break_before=break_before, break_after=break_after,
        )
        plan = self.validate()
        from ._one_run import run_once

        return run_once(plan, None, opts, self._journal(opts.store, run_id), resume=True, answer=answer, called=called)

    def run_stream(
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
    ) -> Iterator[FormationEvent]:
        """Start, run ``input``, yield its events (ending with ``run_finished``, whose
        ``data["result"]`` is the result, or ``run_failed``), stop; the options as for
        :meth:`start` and :meth:`run` (no ``on_event``: the events are yielded). Each step
        blocks the calling thread (from a coroutine: ``formation.astream(...)``). Leaving
        early cancels the run, unless journalled (``store=``): the stop interrupts it."""
        called = time.monotonic()  # the run's timeout counts from here (importing the runtime included)
        opts = merge_options(
            options, "Formation.run_stream()", timeout=timeout, provider=provider, work_dir=work_dir,
            backend=backend, backend_options=backend_options, blackboard=blackboard, store=store,
            break_before=break_before, break_after=break_after,
        )
        plan = self.validate()
        from ._one_run import run_stream

        return run_stream(plan, input, opts, self._journal(opts.store), called=called)

    def resume_stream(
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
    ) -> Iterator[FormationEvent]:
        """:meth:`resume` as :meth:`run_stream` does :meth:`run` (each step blocks the calling thread; from a coroutine:
        ``formation.aresume_stream(...)``): yield its events (a journalled visit's ``node_finished`` is ``journalled``)."""
        require_run_id(run_id, "Formation.resume_stream()")
        called = time.monotonic()  # the run's timeout counts from here (importing the runtime included)
        opts = merge_options(
            options, "Formation.resume_stream()", timeout=timeout, provider=provider, work_dir=work_dir,
            backend=backend, backend_options=backend_options, blackboard=blackboard, store=store, run_id=run_id,
            break_before=break_before, break_after=break_after,
        )
        plan = self.validate()
        from ._one_run import run_stream

        return run_stream(plan, None, opts, self._journal(opts.store, run_id), resume_id=run_id, answer=answer, called=called)
