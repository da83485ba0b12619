"""Run records: every formation run and fleet run, from start to end (``/runs``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from .body import scrub
from .db import Database
from .errors import not_found
from .ids import new_id, now
from .redact import Redactor
from .schemas import FleetOut, FormationOut, RunOut

__all__ = ["RunRecords"]


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class RunRecords(Database):
    """The ``runs`` table. What it writes is scrubbed of lone surrogates (so it can always
    be answered) and of secrets (``redactor``).

    Args:
        path: the database file.
        redactor: the secrets to mask in what runs write (default: none).
    """

    def __init__(self, path: str | Path, redactor: Redactor | None = None) -> None:
        super().__init__(path)
        self.redactor = Redactor() if redactor is None else redactor
        """Masks secrets in what is written from runs: messages and run records."""
        self.fail_interrupted_runs()

    def _clean(self, value: Any) -> Any:
        return self.redactor.value(scrub(value))

    @staticmethod
    def _run(row: sqlite3.Row) -> RunOut:
        return RunOut(
            id=row["id"], kind=row["kind"], formation_id=row["formation_id"], formation_name=row["formation_name"],
            fleet_id=row["fleet_id"], fleet_name=row["fleet_name"],
            status=row["status"], input=_loads(row["input"]), output=_loads(row["output"]),
            outputs=json.loads(row["outputs"]), nodes=json.loads(row["nodes"]), usage=json.loads(row["usage"]),
            error=row["error"], error_kind=row["error_kind"], failed_node=row["failed_node"],
            duration_s=row["duration_s"], created_at=row["created_at"], finished_at=row["finished_at"],
        )

    def create_run(self, formation: FormationOut, input: Any) -> RunOut:
        """Record a run of ``formation`` as ``running``."""
        return self._insert(RunOut(id=new_id(), formation_id=formation.id, formation_name=formation.name,
                                   status="running", input=input, outputs={}, nodes={}, usage={}, created_at=now()))

    def create_fleet_run(self, fleet: FleetOut, input: Any) -> RunOut:
        """Record a run of ``fleet`` (``input``: its tasks) as ``running``."""
        return self._insert(RunOut(id=new_id(), kind="fleet", fleet_id=fleet.id, fleet_name=fleet.name,
                                   status="running", input=input, outputs={}, nodes={}, usage={}, created_at=now()))

    def _insert(self, run: RunOut) -> RunOut:
        run = RunOut.model_validate(self._clean(run.model_dump()))
        with self.write() as conn:
            conn.execute(
                "INSERT INTO runs (id, kind, formation_id, formation_name, fleet_id, fleet_name, status, input, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run.id, run.kind, run.formation_id, run.formation_name, run.fleet_id, run.fleet_name, run.status,
                 _dumps(run.input), run.created_at),
            )
        return run

    def finish_run(self, run: RunOut) -> RunOut:
        """Store ``run``'s outcome (status, outputs, node traces, error) and its finish time."""
        run = RunOut.model_validate(self._clean(run.model_copy(update={"finished_at": now()}).model_dump()))
        with self.write() as conn:
            conn.execute(
                "UPDATE runs SET status = ?, output = ?, outputs = ?, nodes = ?, usage = ?, error = ?, "
                "error_kind = ?, failed_node = ?, duration_s = ?, finished_at = ? WHERE id = ?",
                (run.status, _dumps(run.output), _dumps(run.outputs), _dumps(run.nodes), _dumps(run.usage),
                 run.error, run.error_kind, run.failed_node, run.duration_s, run.finished_at, run.id),
            )
        return run

    def get_run(self, id: str) -> RunOut:
        """Run ``id``."""
        with self.read() as conn:
            row = conn.execute("SELECT * FROM runs WHERE id = ?", (id,)).fetchone()
        if row is None:
            raise not_found("run", id)
        return self._run(row)

    def list_runs(
        self, formation_id: str | None = None, limit: int = 100, fleet_id: str | None = None
    ) -> list[RunOut]:
        """Runs, newest first; only ``formation_id``'s and/or ``fleet_id``'s when given."""
        where, args = [], []
        for column, value in (("formation_id", formation_id), ("fleet_id", fleet_id)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        clause = f"WHERE {' AND '.join(where)} " if where else ""
        with self.read() as conn:
            rows = conn.execute(f"SELECT * FROM runs {clause}ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()
        return [self._run(r) for r in rows]

    def fail_interrupted_runs(self) -> int:
        """Mark runs left ``running`` by a server that stopped as failed; return how many."""
        with self.write() as conn:
            return conn.execute(
                "UPDATE runs SET status = 'failed', error = 'the server stopped before this run finished', "
                "error_kind = 'cancelled', finished_at = ? WHERE status = 'running'",
                (now(),),
            ).rowcount
