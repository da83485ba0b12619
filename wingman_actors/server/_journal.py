"""The server's run journal: a :class:`~wingman_actors.store.RunStore` in the database file
whose writes have the server's secrets masked, as every run record, answer and log line has.

A provider's error text may repeat the key it was given (``Incorrect API key provided:
sk-...``); the journal keeps run errors, inputs, node outputs, interrupt payloads and
answers, so each is masked on its way in. Masking keeps a value's type (only strings
inside ``str``, ``list``, ``tuple`` and ``dict`` values change), so what a resume reads
back is what the run produced, bar the secrets.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from ..store import (
    FormationShape,
    JournalStore,
    RunJournal,
    RunRecord,
    RunStatus,
    RunStore,
    RunSummary,
    Visit,
)
from ._config import ServerConfig
from ._redact import Redactor

__all__ = ["MaskedJournal", "begin_queued", "open_journal", "run_store_secret"]


def open_journal(config: ServerConfig, *, recover: bool = True) -> RunStore:
    """The run journal ``config`` names: its PostgreSQL ``run_store``, or the database file.

    Opening it (``recover``) marks interrupted the runs of a server that died (on the file:
    by process check; on PostgreSQL: those whose lease lapsed).
    """
    if config.run_store is None:
        return RunStore(config.database, suspend_ttl=config.suspend_ttl, recover=recover)
    return RunStore(config.run_store, suspend_ttl=config.suspend_ttl, recover=recover, lease=config.run_store_lease)


def run_store_secret(config: ServerConfig) -> str | None:
    """The password in ``config.run_store``'s URL, masked like the server's other secrets."""
    if config.run_store is None:
        return None
    try:
        password = urlsplit(config.run_store).password
    except ValueError:
        return None
    return unquote(password) if password else None


_QUEUED: ContextVar[bool] = ContextVar("wingman_queued_begin", default=False)


@contextmanager
def begin_queued() -> Iterator[None]:
    """Inside the block, runs begun on this thread through a :meth:`MaskedJournal.queued_begins`
    journal do not wait for their journal's start to commit: it commits in call order, before
    anything the run writes after it (the caller has committed the run's record already)."""
    token = _QUEUED.set(True)
    try:
        yield
    finally:
        _QUEUED.reset(token)


class MaskedJournal:
    """``store`` (a :class:`~wingman_actors.store.JournalStore`) with ``redactor``'s secrets
    masked in everything written to it; reads and housekeeping pass straight through.

    Args:
        store: the journal.
        redactor: the secrets to mask.
        wait_begin: False: inside :func:`begin_queued`, ``begin_run`` returns at once (a
            :class:`RunStore`'s ``begin_run(wait=False)``), the run committed before
            anything written after it.
    """

    def __init__(self, store: JournalStore, redactor: Redactor, *, wait_begin: bool = True) -> None:
        self.store = store
        self.redactor = redactor
        self._queued = not wait_begin and isinstance(store, RunStore)

    def queued_begins(self) -> MaskedJournal:
        """This journal, its ``begin_run`` not waited for inside :func:`begin_queued`:
        the journal of the formations run over HTTP (see :mod:`._loop_runs`)."""
        return MaskedJournal(self.store, self.redactor, wait_begin=False)

    def __getattr__(self, name: str) -> Any:
        # calls this class does not know (the store's own extras) reach the store unchanged
        return getattr(self.store, name)

    def _mask(self, value: Any) -> Any:
        if self.redactor.empty:
            return value
        if isinstance(value, str):
            return self.redactor.text(value)
        if isinstance(value, list):
            return [self._mask(v) for v in value]
        if isinstance(value, tuple) and type(value) is tuple:  # a named tuple keeps its own type
            return tuple(self._mask(v) for v in value)
        if isinstance(value, dict) and type(value) is dict:
            return {self._mask(k) if isinstance(k, str) else k: self._mask(v) for k, v in value.items()}
        return value

    def begin_run(self, formation: str, shape: FormationShape, input: Any, *, run_id: str | None = None,
                  source: str | None = None, parent: str | None = None) -> str:
        if self._queued and _QUEUED.get():
            return cast(RunStore, self.store).begin_run(formation, shape, self._mask(input), run_id=run_id,
                                                        source=source, parent=parent, wait=False)
        return self.store.begin_run(formation, shape, self._mask(input), run_id=run_id, source=source, parent=parent)

    def record_visit(self, run_id: str, node: str, visit: int, output: Any) -> None:
        self.store.record_visit(run_id, node, visit, self._mask(output))

    def record_item(self, run_id: str, node: str, visit: int, index: int, output: Any) -> None:
        self.store.record_item(run_id, node, visit, index, self._mask(output))

    def record_progress(self, run_id: str, node: str, visit: int, value: Any, *, item: int | None = None) -> None:
        self.store.record_progress(run_id, node, visit, self._mask(value), item=item)

    def record_input(self, run_id: str, node: str, visit: int, value: Any) -> None:
        cast(RunStore, self.store).record_input(run_id, node, visit, self._mask(value))

    def record_skip(self, run_id: str, node: str, visit: int, reason: str) -> None:
        self.store.record_skip(run_id, node, visit, self._mask(reason))

    def record_interrupt(self, run_id: str, node: str, visit: int, payload: Any, *,
                         item: int | None = None) -> None:
        self.store.record_interrupt(run_id, node, visit, self._mask(payload), item=item)

    def withdraw_interrupt(self, run_id: str, node: str, visit: int, reason: str, *, item: int | None = None) -> None:
        self.store.withdraw_interrupt(run_id, node, visit, self._mask(reason), item=item)

    def answer(self, run_id: str, answer: Any) -> None:
        self.store.answer(run_id, self._mask(answer))

    def set_status(self, run_id: str, status: RunStatus, *, error: str | None = None, wait: bool = False) -> None:
        self.store.set_status(run_id, status, error=self._mask(error), wait=wait)

    def claim_run(self, run_id: str, shape: FormationShape | None = None, *,
                  formation: str | None = None, parent: str | None = None) -> RunJournal:
        return self.store.claim_run(run_id, shape, formation=formation, parent=parent)

    def load(self, run_id: str) -> RunJournal:
        return self.store.load(run_id)

    def history(self, run_id: str) -> list[Visit]:
        return self.store.history(run_id)  # type: ignore[attr-defined,no-any-return]

    def get(self, run_id: str) -> RunRecord:
        return self.store.get(run_id)

    def runs(self, status: RunStatus | None = None, *, nested: bool = False) -> list[RunSummary]:
        return self.store.runs(status, nested=nested)

    def prune(self, older_than: datetime.timedelta | float) -> int:
        return self.store.prune(older_than)

    def flush(self, run_id: str | None = None) -> None:
        self.store.flush(run_id)

    def close(self) -> None:
        self.store.close()
