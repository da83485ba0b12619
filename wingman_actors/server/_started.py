"""Started formations of stored declarations, kept for the runs that come next.

Building, validating, starting and stopping a formation's actors costs far more than a run
of a small formation, so a run over HTTP takes an idle started formation of its declaration
when there is one, and gives it back when the run ended cleanly (``succeeded`` or
``suspended``). A run that was cancelled, failed, timed out or interrupted stops its started
formation instead (an abandoned attempt may still hold a node actor), as every run did
before. Each run in flight has its started formation to itself, so concurrent runs never
queue behind one another's node actors (a node actor handles one visit at a time); its
events, blackboard, cancel and timeout are the run's own (``submit``/``resume`` options).

The key of a started formation is the formation id with its declaration and those of the
formations it nests, as they are stored: a replaced declaration never reuses the old
actors. ``PUT`` and ``DELETE`` of a formation stop the idle started formations of every
declaration involving it (those in flight are stopped when their run ends), one left idle
for :data:`IDLE_S` is stopped (so a server at rest holds no formation's threads), and the
server stopping stops them all.

Formations with agent or fleet nodes (at any depth) are not kept: each run builds and
stops its own, as before, since their agents hold providers, MCP connections and keys that
can change under them (``PUT /agents``, ``/auth``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from ..formation import Formation
from ..formation._plan import Plan
from ..formation._runtime import RunningFormation
from ..formation._typecheck import adapter_for
from ..store import SERVER_SOURCE
from ._errors import ApiError
from ._nesting import build_nested
from ._runnable import runnable

if TYPE_CHECKING:
    from ._context import ServerContext
    from ._declarations import Entry

__all__ = ["IDLE_PER_DECLARATION", "IDLE_S", "Started", "StartedFormations", "entry_checks", "misfit", "start", "started"]

IDLE_S = 0.5
"""Seconds a started formation is kept with no run before it is stopped."""

IDLE_PER_DECLARATION = 8
"""How many idle started formations one declaration keeps (more concurrent runs start more;
those beyond this many are stopped when their run ends)."""

_Key = tuple[str, ...]


@dataclass(eq=False)
class Started:
    """One started formation, used by one run at a time.

    Attributes:
        formation: the formation built from the declaration.
        running: its started actors.
        entry: the names of its entry nodes.
        key: the declaration it was built from; None when it is private to one run.
        ids: the stored formations it was built from (its own id and those it nests).
        reusable: set by the run when it ended cleanly: the formation may serve the next run.
        accepts: what a run's input must fit, as its entry nodes check it when they take it:
            ``(source path, validator)`` per typed source (see :func:`entry_checks`).
    """

    formation: Formation
    running: RunningFormation
    entry: frozenset[str]
    key: _Key | None = None
    ids: frozenset[str] = frozenset()
    accepts: tuple[tuple[str, TypeAdapter[Any]], ...] = ()
    reusable: bool = False
    stale: bool = field(default=False, repr=False)
    idle_until: float = field(default=0.0, repr=False)


class StartedFormations:
    """The idle started formations of stored declarations, by formation id."""

    def __init__(self, idle_per_declaration: int = IDLE_PER_DECLARATION, idle_s: float = IDLE_S) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._idle: dict[str, tuple[_Key, list[Started]]] = {}
        self._out: set[Started] = set()
        self._closed = False
        self._cap = idle_per_declaration
        self._idle_s = idle_s
        self._reaper: threading.Thread | None = None

    def take(self, key: _Key) -> Started | None:
        """An idle started formation of declaration ``key`` (now the caller's), or None."""
        with self._lock:
            found = self._idle.get(key[0])
            if found is None or found[0] != key or not found[1]:
                return None
            one = found[1].pop()
            self._out.add(one)
            return one

    def lend(self, one: Started) -> None:
        """Count ``one`` (just started by the caller) as in use, so a change of its
        declaration marks it stale."""
        with self._lock:
            self._out.add(one)

    def give_back(self, one: Started) -> None:
        """``one``'s run has ended: keep it idle for the next run of its declaration, or stop
        it (its run did not end cleanly, its declaration changed, or enough are idle)."""
        for s in self.hand_back(one):
            s.running.stop()

    def hand_back(self, one: Started) -> list[Started]:
        """:meth:`give_back` without stopping anything: the started formations the caller
        must stop (``one``, or those it replaces as the idle ones of its formation)."""
        stop: list[Started] = [one]
        with self._lock:
            self._out.discard(one)
            if one.reusable and not one.stale and not self._closed and one.key is not None:
                one.idle_until = time.monotonic() + self._idle_s
                found = self._idle.get(one.key[0])
                if found is None or found[0] != one.key:  # one declaration per id: the one last used
                    stop = [] if found is None else found[1]
                    self._idle[one.key[0]] = (one.key, [one])
                elif len(found[1]) < self._cap:
                    found[1].append(one)  # taken last in, first out: the oldest expire
                    stop = []
                if self._reaper is None:
                    self._reaper = threading.Thread(target=self._reap, name="wingman-started-reaper", daemon=True)
                    self._reaper.start()
        return stop

    def _reap(self) -> None:
        """Stop the started formations left idle for ``idle_s``; end when none is idle."""
        while True:
            with self._lock:
                now = time.monotonic()
                expired: list[Started] = []
                soonest = math.inf
                for fid, (_, idle) in list(self._idle.items()):
                    while idle and idle[0].idle_until <= now:
                        expired.append(idle.pop(0))
                    if idle:
                        soonest = min(soonest, idle[0].idle_until)
                    else:
                        del self._idle[fid]
                if not expired:
                    if not self._idle or self._closed:
                        self._reaper = None
                        return
                    self._wake.wait(soonest - now)
                    continue
            for s in expired:
                s.running.stop()

    def drop(self, formation_id: str) -> None:
        """Formation ``formation_id``'s declaration was replaced or deleted: stop the idle
        started formations built from it (directly or nesting it); those in use are
        stopped when their run ends."""
        stop: list[Started] = []
        with self._lock:
            for fid, (_, idle) in list(self._idle.items()):
                if idle and formation_id in idle[0].ids:
                    stop += idle
                    del self._idle[fid]
            for one in self._out:
                if formation_id in one.ids:
                    one.stale = True
        for s in stop:
            s.running.stop()

    def close(self) -> None:
        """Stop every idle started formation; those in use are stopped when their run ends."""
        with self._lock:
            self._closed = True
            stop = [s for _, idle in self._idle.values() for s in idle]
            self._idle.clear()
            reaper = self._reaper
            self._wake.notify_all()
        for s in stop:
            s.running.stop()
        if reaper is not None:
            reaper.join()


def _start(ctx: ServerContext, formation: Formation, id: str | None) -> RunningFormation:
    # recorded on the journal's runs: `wingman-actors resume` tells the user to resume them here
    formation.source = f"{SERVER_SOURCE}{id}"  # type: ignore[attr-defined]
    return formation.start(store=ctx.run_journal, work_dir=ctx.config.work_root)


def start(ctx: ServerContext, entry: Entry) -> Started:
    """A new started formation of ``entry``'s declaration, counted as in use (give it back
    with ``ctx.started.give_back``). Blocking: it builds the formation and starts its actors."""
    id = entry.record.id
    formation = build_nested(entry.decl, ctx.functions, {}, entry.nested, id)
    running = _start(ctx, formation, id)
    plan = formation.validate()
    one = Started(formation, running, frozenset(plan.sources), entry.key, entry.ids, entry_checks(plan))
    ctx.started.lend(one)
    return one


def entry_checks(plan: Plan) -> tuple[tuple[str, TypeAdapter[Any]], ...]:
    """The validators of :attr:`Plan.accepts` (the parameter type of each function source, a
    list for a map or fleet source, a nested formation's sources by path), built once per
    started formation: a streamed run checks its input with them before it starts, as its
    entry nodes would when they take it (an agent source takes anything)."""
    checks = []
    for path, tp in plan.accepts:
        adapter = adapter_for(tp)
        if adapter is not None:
            checks.append((path, adapter))
    return tuple(checks)


def misfit(one: Started, value: Any) -> ApiError | None:
    """The 400 (``kind: "input"``, naming the entry node) of an input an entry node of ``one``
    would refuse, or None when every entry node takes it."""
    for path, adapter in one.accepts:
        try:
            adapter.validate_python(value)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'the value'}: {e['msg']}" for e in exc.errors()[:3])
            node = path.split("/", 1)[0]
            where = f"entry node {node!r}" if path == node else f"entry node {node!r} (its source {path!r})"
            return ApiError(400, f"input: does not fit the {where}: a value of type {type(value).__name__} does not "
                                 f"fit its input of type {exc.title}: {problems}; send a value of that type",
                            kind="input", node=node, fields=["input"])
    return None


@contextmanager
def started(ctx: ServerContext, entry: Entry) -> Iterator[Started]:
    """A started formation of stored formation ``entry`` for one run: an idle one kept from
    an earlier run, else a new one; given back (or stopped) when the block ends, as
    :class:`StartedFormations` says."""
    id = entry.record.id
    if entry.agents:
        with runnable(ctx, entry.decl, id) as formation:
            running = _start(ctx, formation, id)
            try:
                plan = formation.validate()
                yield Started(formation, running, frozenset(plan.sources), accepts=entry_checks(plan))
            finally:
                running.stop()
        return
    pool = ctx.started
    one = pool.take(entry.key) or start(ctx, entry)
    one.reusable = False
    try:
        yield one
    finally:
        pool.give_back(one)
