"""Durable runs: what a running formation with a store journals, and what a resume replays.

:class:`Journal` is the runtime's side of a :class:`~wingman_actors.store.RunStore`: one
per started formation with ``store=``. The router calls it at the points the store's
contract names (a run accepted, a visit or fleet item finished, a skip, an interrupt,
the end of a run). Without a store the router holds None and pays nothing.

:class:`Replay` is what a resumed run knows from its journal: the outputs of the visits
that finished (fed downstream instead of running the node again), the finished fleet
items, the skips, the failures taken by error edges, and the answers to interrupts.

A failure taken by error edges is journalled as the visit's last progress value (a dict
naming the error's class, its message, arguments and the attempts) followed by a skip of
the visit, so a resume neither retries the node nor loses the failure: it sends the
handlers a :class:`~.failure.NodeFailure` again (:meth:`Journal.failure`). Exceptions are
not values the store can journal in general, so the one a resumed handler receives is
rebuilt: a built-in exception as its own class with its arguments, a
:class:`~wingman_actors.errors.NodeTimeoutError` as one, any other as a
:class:`~wingman_actors.errors.FormationRuntimeError` whose message starts with the
original class name. A store opened with ``allow_pickle=True`` keeps the exception
itself (pickled) when it comes back from a pickle, and the handler gets it back as it was.

A visit that failed the run (nothing took the failure) is journalled the same way, the
record saying so (``RUN_FAILURE``), and no skip after it: a resume runs the visit again,
and ``RunStore.history`` lists the failed visit before that one.
"""

from __future__ import annotations

import builtins
import functools
import os
import pickle
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._interrupts import VisitScope
from ..errors import FormationRuntimeError, NodeTimeoutError, error_text
from ..store import (
    FormationShape,
    Interrupt,
    JournalStore,
    NoPendingInterruptError,
    RunJournal,
    RunNotResumableError,
    RunStore,
    SerializationError,
    UnknownRunError,
)
from ..store._history import FAILURE_MARK, RUN_FAILURE
from ..store._values import POSTGRES_SCHEMES, new_run_id
from ._breakpoints import JOURNAL_KEY, Breakpoints, is_breakpoint
from ._failure import NodeFailure

__all__ = ["Journal", "Replay", "StoreArg", "open_store", "replayed_answers", "replayed_text"]

_FAILURE = FAILURE_MARK  # the key that marks a progress value as a journalled failure
_TIMEOUT = f"{NodeTimeoutError.__module__}:{NodeTimeoutError.__qualname__}"
_PLAIN = (str, int, float, bool, type(None))

StoreArg = JournalStore | str | os.PathLike[str]
"""What ``store=`` takes: a store, or the path of a SQLite file or a ``postgresql://`` URL (a
``RunStore`` is opened)."""


def open_store(store: StoreArg, *, run_id: str | None = None) -> tuple[JournalStore, bool]:
    """The store for ``store=``, and whether the caller opened it (and must close it).
    With ``run_id`` (a call that reads that run), a SQLite path where no file is raises
    :class:`~wingman_actors.store.UnknownRunError` instead of creating an empty store."""
    if isinstance(store, str | os.PathLike):
        if run_id is not None and not os.fspath(store).startswith(POSTGRES_SCHEMES) \
                and not os.path.exists(os.fspath(store)):
            raise UnknownRunError(run_id, os.fspath(store), no_store=True)
        return RunStore(store), True
    if isinstance(store, JournalStore):
        return store, False
    raise TypeError(
        f"store must be a RunStore (wingman_actors.store.RunStore(path or url)), or the path of its SQLite file "
        f"or a postgresql:// URL, got {type(store).__name__}"
    )


@dataclass(frozen=True, slots=True)
class Replay:
    """What a resumed run already has (read from its journal once, at resume).

    Attributes:
        visits: finished visits' outputs, ``node -> {visit: output}``.
        items: finished fleet items, ``(node, visit) -> {index: output}``.
        skipped: skipped visits, ``(node, visit) -> reason``.
        journal: the whole journal (answers to interrupts, progress).
        failures: the skipped visits that failed into error edges, ``(node, visit) ->``
            the record :meth:`Journal.record_failure` wrote.
        inputs: the inputs given to visits not yet made (a fork's ``input=``),
            ``(node, visit) -> input``: the visit runs with it instead of its payload.
    """

    visits: Mapping[str, Mapping[int, Any]]
    items: Mapping[tuple[str, int], Mapping[int, Any]]
    skipped: Mapping[tuple[str, int], Any]
    journal: RunJournal
    failures: Mapping[tuple[str, int], Mapping[str, Any]]
    inputs: Mapping[tuple[str, int], Any]

    @classmethod
    def of(cls, journal: RunJournal) -> Replay:
        failures = {}
        for node, visit in journal.skipped:
            steps = journal.progress.get((node, visit, None), ())
            record = next((v for v in reversed(steps) if isinstance(v, dict) and _FAILURE in v), None)
            if record is not None:
                failures[(node, visit)] = record
        return cls(journal.visits, journal.items, journal.skipped, journal, failures, journal.inputs)


class Journal:
    """The journalling side of one running formation.

    Args:
        store: where runs are journalled.
        owned: close the store when the formation stops (it was opened from a path).
        name: the formation's name.
        shape: ``FormationShape.of(formation.graph)``.
        source: where the formation came from (e.g. its file), recorded on each run.
        inner_of: for the journal of a formation node's inner formation, the node and how
            many numbered parts follow its name in the inner run ids (1: ``"<outer run
            id>/<node>/<visit>"``; 2 for a map's ``.../<visit>/<item>``): each run is
            begun and claimed as an inner run of the outer run the id names.
    """

    def __init__(self, store: JournalStore, owned: bool, name: str, shape: FormationShape,
                 source: str | None = None, inner_of: tuple[str, int] | None = None) -> None:
        self.store = store
        self.owned = owned
        self.name = name
        self.shape = shape
        self.source = source
        self.inner_of = inner_of
        self._unwatch: list[Callable[[], None]] = []

    def parent(self, run_id: str | None) -> str | None:
        """The outer run of the inner run ``run_id`` (None outside a nested formation)."""
        if self.inner_of is None or run_id is None:
            return None
        node, parts = self.inner_of
        head = run_id.rsplit("/", parts)[0]  # the numbers hold no "/"; the node name may
        suffix = "/" + node
        return head[:-len(suffix)] if head.endswith(suffix) and len(head) > len(suffix) else None

    def begin(self, input: Any, run_id: str | None) -> str:
        """Record a new run (durable on return) and give its id."""
        parent = self.parent(run_id)
        if parent is None:
            return self.store.begin_run(self.name, self.shape, input, run_id=run_id, source=self.source)
        return self.store.begin_run(self.name, self.shape, input, run_id=run_id, source=self.source, parent=parent)

    def new_id(self, run_id: str | None) -> str:
        """``run_id``, or a new run's id (as the store would choose it) when None."""
        return new_run_id() if run_id is None else run_id

    def open_run(self, input: Any, run_id: str, breaks: Breakpoints | None) -> None:
        """Record the new run ``run_id`` with its breakpoints, if any (durable on return)."""
        self.begin(input, run_id)
        if breaks is not None:  # journalled with the run: a resume keeps them
            self.store.record_progress(run_id, JOURNAL_KEY[0], JOURNAL_KEY[1], breaks.to_json())

    def reopen(self, run_id: str, answer: Any, breaks: Breakpoints | None,
               given: bool) -> tuple[RunJournal, Breakpoints | None]:
        """Take the run ``run_id`` over for resuming: claim it, record ``answer`` to its
        pending interrupt (a breakpoint it stopped at is passed), and journal the
        breakpoints ``given`` in place of its own. Returns its journal and its breakpoints.

        Raises:
            NoPendingInterruptError: ``answer`` was given for a run with no pending interrupt
                (a ``StoreError`` and a ``ValueError``).
            RunNotResumableError: ``answer`` was given for a run that is running (being
                resumed elsewhere, say): it is refused before any claim, saying so.
            StoreError: the store refuses the claim (see ``claim_run``), or the answer
                (``SerializationError``: the run is left suspended, as it was).
        """
        store = self.store
        if answer is not None:
            asked = store.get(run_id)
            if asked.status == "running":  # (a run whose owner died reads "interrupted")
                raise RunNotResumableError(f"run {run_id!r} cannot be resumed: it is running (in this or another "
                                           "live process); wait for it or cancel it first",
                                           run_id=run_id, status="running")
            # a run that ended for good is refused by the claim below, saying why
            if asked.interrupt is None and asked.status not in ("succeeded", "expired"):
                raise NoPendingInterruptError(f"run {run_id!r} has no pending interrupt to answer: resume it without "
                                              f"answer={_replayed(store.load(run_id))}", run_id=run_id,
                                              status=asked.status)
        record = self.claim(run_id)
        pending = record.pending_interrupt
        if answer is not None or (pending is not None and is_breakpoint(pending.payload)):
            try:
                store.answer(run_id, answer)  # a breakpoint is passed: its visit goes on
            except BaseException:
                # Refused (an answer the store cannot keep): the run was not resumed, so it
                # waits as before, not "running" in this process.
                store.set_status(run_id, "suspended", wait=True)
                raise
            record = store.load(run_id)
        if given:
            store.record_progress(run_id, JOURNAL_KEY[0], JOURNAL_KEY[1],
                                  (breaks or Breakpoints(frozenset(), frozenset())).to_json())
            return record, breaks
        return record, Breakpoints.journalled(record)

    def claim(self, run_id: str) -> RunJournal:
        """Take a run over for resuming (refuses another formation's shape)."""
        parent = self.parent(run_id)
        if parent is None:
            return self.store.claim_run(run_id, self.shape, formation=self.name)
        return self.store.claim_run(run_id, self.shape, formation=self.name, parent=parent)

    def scope(self, run_id: str, node: str, visit: int, replay: Replay | None, item: int | None = None) -> VisitScope:
        """The context ``interrupt()`` and agent sessions find while this visit (or this
        fleet item of it) runs."""
        progress = functools.partial(self.store.record_progress, run_id, node, visit, item=item)
        if replay is None:  # a new run (the common case): nothing journalled to replay
            return VisitScope(run_id, node, visit, (), progress, None, item)
        journal = replay.journal
        # a breakpoint's answer is none of the visit's own interrupt() calls'
        answers = [i.answer for i in journal.interrupts if i.answered and (i.node, i.visit, i.item) == (node, visit, item)
                   and not is_breakpoint(i.payload)]
        # An agent suspended in a tool call continues from its journalled model
        # responses. A visit that failed or crashed starts its session afresh (a
        # bad answer replayed would fail it again). A fleet's or a map's item journals
        # responses only when it asked (recorded, or beside the recorded question).
        replies: list[Any] = []
        if item is not None or any((i.node, i.visit, i.item) == (node, visit, item) for i in journal.interrupts):
            # (not the record of an attempt that failed the run: no model response)
            replies = [v for v in journal.progress.get((node, visit, item), ())
                       if not (isinstance(v, dict) and _FAILURE in v)]
        return VisitScope(run_id, node, visit, answers, progress, replies, item)

    def record_failure(self, run_id: str, node: str, visit: int, failure: NodeFailure) -> None:
        """Journal that the visit failed into its node's error edges (see the module docs)."""
        error = failure.error
        text = error_text(error)
        record = _record(error, failure.attempts)
        kept = False
        if _unpickles(error):  # a store that pickles keeps the exception itself
            try:
                self.store.record_progress(run_id, node, visit, {**record, "exception": error})
                kept = True
            except SerializationError:
                pass  # a store that does not pickle
        if not kept:
            self.store.record_progress(run_id, node, visit, record)
        self.store.record_skip(run_id, node, visit, f"failed after {failure.attempts} attempt(s) into its error "
                                                    f"edges: {text}")

    def record_run_failure(self, run_id: str, node: str, visit: int, error: BaseException, attempts: int) -> None:
        """Journal that the visit failed the run (its retries spent, nothing to take the
        failure), for ``RunStore.history``: no skip follows, so a resume runs the visit again."""
        why = f"failed after {attempts} attempt(s), which failed the run: {error_text(error)}"
        self.store.record_progress(run_id, node, visit, {**_record(error, attempts), RUN_FAILURE: why})

    def failure(self, run_id: str, node: str, input: Any, record: Mapping[str, Any]) -> NodeFailure:
        """The :class:`NodeFailure` a journalled failure ``record`` stands for (its error
        rebuilt: see the module docs)."""
        attempts = int(record["attempts"])
        error = record.get("exception")
        if not isinstance(error, BaseException):
            error = _rebuilt(record, node, attempts, run_id)
        return NodeFailure(node, error, input, attempts, run_id)

    def watch(self, lost: Callable[[Any], None], cancel: Callable[[str], Any]) -> None:
        """Until :meth:`close`, tell ``lost`` of the runs the store loses to another (a
        PostgreSQL store's ``on_run_lost``: runs taken over by another process), and
        ``cancel`` of the runs whose cancel another process requested (the store's
        ``on_cancel_requested``; see ``RunStore.request_cancel``)."""
        for name, listener in (("on_run_lost", lost), ("on_cancel_requested", cancel)):
            subscribe = getattr(self.store, name, None)  # (a JournalStore need not have them)
            if subscribe is not None:
                self._unwatch.append(subscribe(listener))

    def close(self) -> None:
        for unwatch in self._unwatch:
            unwatch()
        if self.owned:
            self.store.close()


def _record(error: BaseException, attempts: int) -> dict[str, Any]:
    """The journalled record of a failed visit (see the module docs)."""
    message = error_text(error).partition(": ")[2]  # (not str(error): a broken __str__ must not lose the failure)
    args = list(error.args) if all(type(a) in _PLAIN for a in error.args) else [message]
    return {_FAILURE: f"{type(error).__module__}:{type(error).__qualname__}", "message": message, "args": args,
            "attempts": attempts}


def replayed_answers(journal: RunJournal) -> list[Interrupt]:
    """The answered interrupts of visits (or items) that did not finish: what a resume of
    ``journal``'s run replays, the answers a step rejected among them. The refusal of a new
    answer names them (here and in ``wingman-actors resume --answer``): without that, a user
    whose step rejected its answer is told to resume without one, which replays that answer
    and fails the same way."""
    return [i for i in journal.interrupts if i.answered
            and i.visit not in journal.visits.get(i.node, {}) and (i.node, i.visit) not in journal.skipped
            and (i.item is None or i.item not in journal.items.get((i.node, i.visit), {}))]


def replayed_text(kept: list[Interrupt]) -> str:
    """Which visits got which answers, for a refusal naming :func:`replayed_answers`."""
    return ", ".join(f"node {i.node!r} (visit {i.visit}{'' if i.item is None else f', item {i.item}'}) got "
                     f"{i.answer!r}" for i in kept)


def _replayed(journal: RunJournal) -> str:
    """The tail of the refusal of a new ``answer=`` (empty when nothing would be replayed)."""
    kept = replayed_answers(journal)
    if not kept:
        return ""
    first = kept[0]
    return (f"; that replays the answers its unfinished visits were given ({replayed_text(kept)}): to answer "
            f"again, fork the run at that visit, which asks anew: formation.fork(run_id, store=..., "
            f"at=({first.node!r}, {first.visit}), input=<the visit's input>)")


def _rebuilt(record: Mapping[str, Any], node: str, attempts: int, run_id: str) -> BaseException:
    path, message = str(record[_FAILURE]), str(record["message"])
    module, _, name = path.partition(":")
    if path == _TIMEOUT:
        return NodeTimeoutError(message, node=node, attempt=attempts, run_id=run_id)
    cls = getattr(builtins, name, None) if module == "builtins" else None
    if isinstance(cls, type) and issubclass(cls, BaseException):
        try:
            return cls(*record.get("args", [message]))
        except Exception:  # a signature the journalled arguments do not fit
            pass
    text = f"{name}: {message}" if message else name  # (as error_text names an error without a message)
    return FormationRuntimeError(text, node=node, attempts=attempts, run_id=run_id)


def _unpickles(error: BaseException) -> bool:
    """Whether ``error`` survives a pickle round trip (an exception whose ``__init__``
    takes other arguments than its ``args`` does not, and would break loading the journal)."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return False
    return True
