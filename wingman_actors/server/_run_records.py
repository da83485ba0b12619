"""Run records: every formation run and fleet run, from start to end (``/runs``).

A formation run also lives in the run journal (:class:`~wingman_actors.store.RunStore`, in
the same file): the journal holds what a resume needs (each finished node visit, the
interrupts and answers), the record what ``GET /runs/{id}`` answers (outputs, node
traces, usage, error). Both carry the same id and, once a run has settled, the same status;
:func:`~wingman_actors.server._recovery.recover_runs` makes them agree again after a crash.

When the journal is the SQLite store in this file (no ``--run-store``), a record's insert
and outcome are written through the journal's writer (:meth:`RunRecords.commit_with`), in
the journal's group commits: a run's record is inserted in the commit of its journal's
``begin_run``, and its outcome commits with (or after) the journal's last writes of the run
(its visits and final status), so a run answered over HTTP has both durable. Otherwise (a
PostgreSQL journal, or once the journal is closed) they go through a writer of their own,
which commits them in groups (``synchronous = NORMAL``, as durable as the journal's
commits) on a connection of its own. Either way a caller may be told when its write is
committed instead of waiting for it (``finish_run(..., on_commit=...)``).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from ..store import RunStore, StoreClosedError
from ..store._ops import Alongside, AlongsideTold, AlongsideWaited
from ..store._writer import Writer
from ._body import scrub
from ._db import Database
from ._errors import not_found
from ._ids import new_id, now
from ._redact import Redactor
from ._schemas import FleetOut, FormationOut, RunOut

__all__ = ["RunRecords"]


def _dumps(value: Any) -> str:
    """``value`` (JSON data: what :meth:`RunRecords._cleaned` let through) as compact JSON
    text, read back by :func:`json.loads` (pydantic's encoder: several times faster than
    :func:`json.dumps`)."""
    return to_json(value).decode()


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _outcome_columns(run: RunOut) -> tuple[Any, ...]:
    return (run.status, None if run.interrupt is None else _dumps(run.interrupt), _dumps(run.output),
            _dumps(run.outputs), _dumps(run.nodes), _dumps(run.usage), run.error, run.error_kind,
            run.failed_node, run.duration_s, run.finished_at, run.id)


class RunRecords(Database):
    """The ``runs`` table. What it writes is scrubbed of lone surrogates (so it can always
    be answered) and of secrets (``redactor``).

    Args:
        path: the database file.
        redactor: the secrets to mask in what runs write (default: none).
    """

    def __init__(self, path: str | Path, redactor: Redactor | None = None) -> None:
        self._own: Writer | None = None  # the writer of its own, once needed
        self._own_lock = threading.Lock()
        super().__init__(path)
        self.redactor = Redactor() if redactor is None else redactor
        """Masks secrets in what is written from runs: messages and run records."""
        self._journal: RunStore | None = None

    def commit_with(self, journal: RunStore | None) -> None:
        """Write run records through ``journal``'s writer, in its commits (``journal``: the
        SQLite run store in this database file); None: in commits of their own."""
        self._journal = journal

    def _change(self, apply: Callable[[sqlite3.Connection], object], wait: bool = True,
                on_commit: Callable[[BaseException | None], None] | None = None) -> None:
        """Commit ``apply``: with the journal's writes when there is one (``wait=False``: in
        its next commit, e.g. the ``begin_run`` that follows), else through the writer of
        its own; ``on_commit``: return at once, and tell it once committed."""
        journal = self._journal
        if journal is not None:
            try:
                journal.write_alongside(apply, wait=wait and on_commit is None, on_commit=on_commit)
                return
            except StoreClosedError:  # the server is stopping: the journal closes first
                pass
        writer = self._own_writer()
        if on_commit is not None:
            writer.submit(AlongsideTold(apply, on_commit))
        elif wait:
            writer.call(AlongsideWaited(apply))
        else:
            writer.submit(Alongside(apply))

    def _own_writer(self) -> Writer:
        with self._own_lock:
            if self._own is None:
                conn = self.connect()
                conn.execute("PRAGMA synchronous = NORMAL")  # as the journal's commits
                self._own = Writer(conn, "wingman-records-writer")
            return self._own

    def close(self) -> None:
        """Commit the run records' writes still queued, then close every connection."""
        with self._own_lock:
            own, self._own = self._own, None
        try:
            if own is not None:
                own.stop()
        finally:
            super().close()

    def _clean(self, value: Any) -> Any:
        return self.redactor.value(scrub(value))

    def _cleaned(self, run: RunOut) -> RunOut:
        """``run`` with lone surrogates and secrets replaced in its text. A record with
        neither (the usual case, found by encoding it once as JSON) is returned as it is,
        without walking every value of its node traces."""
        try:
            text = run.model_dump_json()  # refuses lone surrogates (not UTF-8)
        except ValueError:
            pass
        else:
            if self.redactor.text(text) == text:
                return run
        return RunOut.model_validate(self._clean(run.model_dump()))

    def _outcome(self, run: RunOut) -> tuple[RunOut, tuple[Any, ...]]:
        """``run`` and the columns :meth:`finish_run` writes, encoded here (not on the
        writer's thread) and once: what they encode is what is checked for lone surrogates
        and secrets (the record's other fields are not written again, and were cleaned
        when it was created). A record with either is cleaned whole, as
        :meth:`_cleaned` does, and encoded again."""
        try:
            row = _outcome_columns(run)  # refuses lone surrogates (not UTF-8)
            for value in row:
                if isinstance(value, str):
                    value.encode()  # (error, failed_node: text as they are)
        except ValueError:  # (UnicodeEncodeError too)
            pass
        else:
            if self.redactor.empty or all(self.redactor.text(v) == v for v in row if isinstance(v, str)):
                return run, row
        run = RunOut.model_validate(self._clean(run.model_dump()))
        return run, _outcome_columns(run)

    @staticmethod
    def _run(row: sqlite3.Row) -> RunOut:
        return RunOut(
            id=row["id"], kind=row["kind"], formation_id=row["formation_id"], formation_name=row["formation_name"],
            fleet_id=row["fleet_id"], fleet_name=row["fleet_name"],
            status=row["status"], input=_loads(row["input"]), output=_loads(row["output"]),
            outputs=json.loads(row["outputs"]), nodes=json.loads(row["nodes"]), usage=json.loads(row["usage"]),
            interrupt=_loads(row["interrupt"]),
            error=row["error"], error_kind=row["error_kind"], failed_node=row["failed_node"],
            duration_s=row["duration_s"], created_at=row["created_at"], finished_at=row["finished_at"],
        )

    def create_run(self, formation: FormationOut, input: Any, id: str | None = None, *, wait: bool = True) -> RunOut:
        """Record a run of ``formation`` as ``running`` (``id``: its id, default a new one).

        Args:
            wait: return once committed. False (the run's journal ``begin_run`` follows at
                once): return at once; with the journal's writer, committed with the
                ``begin_run``, else in the next commit of the records' own writer.
        """
        return self.insert_run(self.new_run(formation, input, id), wait=wait)

    def new_run(self, formation: FormationOut, input: Any, id: str | None = None) -> RunOut:
        """The record of a new run of ``formation``, ``running``, not stored yet (see
        :meth:`insert_run`)."""
        run = RunOut(id=id or new_id(), formation_id=formation.id, formation_name=formation.name, status="running",
                     input=input, outputs={}, nodes={}, usage={}, created_at=now())
        try:  # its text: the input's JSON (refuses lone surrogates), the formation's id and name, its id
            texts = (_dumps(input), formation.name, formation.id, run.id)
            for text in texts:
                text.encode()
        except ValueError:
            return self._cleaned(run)
        if self.redactor.empty or all(self.redactor.text(t) == t for t in texts):
            return run
        return self._cleaned(run)

    def create_fleet_run(self, fleet: FleetOut, input: Any) -> RunOut:
        """Record a run of ``fleet`` (``input``: its tasks) as ``running``."""
        return self.insert_run(self._cleaned(RunOut(id=new_id(), kind="fleet", fleet_id=fleet.id, fleet_name=fleet.name,
                                                    status="running", input=input, outputs={}, nodes={}, usage={},
                                                    created_at=now())))

    def insert_run(self, run: RunOut, *, wait: bool = True,
                   on_commit: Callable[[BaseException | None], None] | None = None) -> RunOut:
        """Store the record ``run`` (from :meth:`new_run`). ``wait`` as for
        :meth:`create_run`; ``on_commit``: return at once, and call ``on_commit(error)``
        once committed (``error``: None, or what failed the write), on the thread that
        committed it, which it must not keep long (it may queue writes, not wait for any)."""
        row = (run.id, run.kind, run.formation_id, run.formation_name, run.fleet_id, run.fleet_name, run.status,
               _dumps(run.input), run.created_at)
        self._change(lambda conn: conn.execute(
            "INSERT INTO run_records (id, kind, formation_id, formation_name, fleet_id, fleet_name, status, input, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row,
        ), wait, on_commit)
        return run

    def finish_run(self, run: RunOut, *, wait: bool = True,
                   on_commit: Callable[[RunOut, BaseException | None], None] | None = None) -> RunOut:
        """Store ``run``'s outcome (status, outputs, node traces, error) and its finish time.

        Args:
            run: the run's record.
            wait: return once committed. False: return at once and call
                ``on_commit(record, error)`` (``error``: None, or what failed the write)
                once committed, on the thread that committed it.
        """
        run, row = self._outcome(run.model_copy(update={"finished_at": now()}))
        told = None if wait or on_commit is None else partial(on_commit, run)
        self._change(lambda conn: conn.execute(
            "UPDATE run_records SET status = ?, interrupt = ?, output = ?, outputs = ?, nodes = ?, usage = ?, "
            "error = ?, error_kind = ?, failed_node = ?, duration_s = ?, finished_at = ? WHERE id = ?", row,
        ), told is None, told)
        return run

    def get_run(self, id: str) -> RunOut:
        """Run ``id``."""
        with self.read() as conn:
            row = conn.execute("SELECT * FROM run_records WHERE id = ?", (id,)).fetchone()
        if row is None:
            raise not_found("run", id)
        return self._run(row)

    def list_runs(
        self, formation_id: str | None = None, limit: int = 100, fleet_id: str | None = None,
        status: str | None = None, kind: str | None = None,
    ) -> list[RunOut]:
        """Runs, newest first; only ``formation_id``'s, ``fleet_id``'s and/or those with
        ``status`` or of ``kind`` (``"formation"``, ``"fleet"``) when given."""
        where, args = [], []
        for column, value in (("formation_id", formation_id), ("fleet_id", fleet_id), ("status", status),
                              ("kind", kind)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        clause = f"WHERE {' AND '.join(where)} " if where else ""
        with self.read() as conn:
            rows = conn.execute(f"SELECT * FROM run_records {clause}ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()
        return [self._run(r) for r in rows]

    def reopen_run(self, id: str) -> RunOut:
        """Mark a resumed run ``running`` again: its error, interrupt and finish time cleared."""
        with self.write() as conn:
            conn.execute(
                "UPDATE run_records SET status = 'running', interrupt = NULL, error = NULL, error_kind = NULL, "
                "failed_node = NULL, finished_at = NULL WHERE id = ?", (id,))
        return self.get_run(id)

    def set_run_status(self, id: str, status: str, error: str | None = None,
                       interrupt: Any = None, error_kind: str | None = None) -> RunOut:
        """Change a run's status (and error, interrupt) without touching its outputs."""
        with self.write() as conn:
            conn.execute(
                "UPDATE run_records SET status = ?, error = ?, error_kind = ?, interrupt = ?, "
                "finished_at = COALESCE(finished_at, ?) WHERE id = ?",
                (status, None if error is None else self._clean(error), error_kind,
                 None if interrupt is None else _dumps(self._clean(interrupt)), now(), id))
        return self.get_run(id)

    def running_ids(self) -> list[tuple[str, str]]:
        """``(id, kind)`` of every run recorded as ``running``."""
        with self.read() as conn:
            rows = conn.execute("SELECT id, kind FROM run_records WHERE status = 'running'").fetchall()
        return [(str(r["id"]), str(r["kind"])) for r in rows]
