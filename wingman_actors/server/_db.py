"""SQLite plumbing: WAL mode, one writer, one reader connection per thread, versioned
migrations.

Write discipline: every write goes through :meth:`Database.write`, which holds one
process-wide lock and runs a ``BEGIN IMMEDIATE`` transaction on the single writer
connection, so concurrent requests queue instead of failing with "database is locked",
and a read-modify-write (a partial update, an append at the next index) is atomic. Readers
use their own connection per thread; in WAL mode they never block the writer and always
see committed data. ``busy_timeout`` covers other processes sharing the file.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..store._schema import APPLICATION_ID
from ._ids import now

__all__ = ["MIGRATIONS", "Database", "Migration"]


_BUSY_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class Migration:
    """One schema change, applied once, in a transaction, in version order."""

    version: int
    name: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "agents, sessions and their messages, fleets, formations, provider auth",
        (
            """CREATE TABLE agents (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                instructions TEXT NOT NULL DEFAULT '',
                tools TEXT NOT NULL DEFAULT '[]',
                provider TEXT,
                model TEXT,
                options TEXT NOT NULL DEFAULT '{}',
                output_schema TEXT,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
            """CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                title TEXT NOT NULL DEFAULT '',
                work_dir TEXT NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
            """CREATE TABLE messages (
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                idx INTEGER NOT NULL,
                role TEXT NOT NULL,
                content TEXT NOT NULL,
                created_at TEXT NOT NULL,
                PRIMARY KEY (session_id, idx)
            )""",
            """CREATE TABLE fleets (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                agent_id TEXT NOT NULL,
                worker_count INTEGER NOT NULL DEFAULT 0,
                work_dir TEXT,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
            """CREATE TABLE formations (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                definition TEXT NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
            """CREATE TABLE auth (
                provider TEXT PRIMARY KEY,
                type TEXT NOT NULL,
                key TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
        ),
    ),
    Migration(
        2,
        "formation runs",
        (
            """CREATE TABLE runs (
                id TEXT PRIMARY KEY,
                formation_id TEXT NOT NULL,
                formation_name TEXT NOT NULL,
                status TEXT NOT NULL,
                input TEXT,
                output TEXT,
                outputs TEXT NOT NULL DEFAULT '{}',
                nodes TEXT NOT NULL DEFAULT '{}',
                usage TEXT NOT NULL DEFAULT '{}',
                error TEXT,
                error_kind TEXT,
                failed_node TEXT,
                duration_s REAL,
                created_at TEXT NOT NULL,
                finished_at TEXT
            )""",
            "CREATE INDEX runs_by_formation ON runs (formation_id, id)",
        ),
    ),
    Migration(
        3,
        "fleet runs beside formation runs: kind, fleet_id, fleet_name; formation_id may be null",
        (
            """CREATE TABLE runs_v3 (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL DEFAULT 'formation',
                formation_id TEXT,
                formation_name TEXT,
                fleet_id TEXT,
                fleet_name TEXT,
                status TEXT NOT NULL,
                input TEXT,
                output TEXT,
                outputs TEXT NOT NULL DEFAULT '{}',
                nodes TEXT NOT NULL DEFAULT '{}',
                usage TEXT NOT NULL DEFAULT '{}',
                error TEXT,
                error_kind TEXT,
                failed_node TEXT,
                duration_s REAL,
                created_at TEXT NOT NULL,
                finished_at TEXT
            )""",
            "INSERT INTO runs_v3 (id, kind, formation_id, formation_name, status, input, output, outputs, nodes, "
            "usage, error, error_kind, failed_node, duration_s, created_at, finished_at) "
            "SELECT id, 'formation', formation_id, formation_name, status, input, output, outputs, nodes, usage, "
            "error, error_kind, failed_node, duration_s, created_at, finished_at FROM runs",
            "DROP TABLE runs",
            "ALTER TABLE runs_v3 RENAME TO runs",
            "CREATE INDEX runs_by_formation ON runs (formation_id, id)",
            "CREATE INDEX runs_by_fleet ON runs (fleet_id, id)",
        ),
    ),
    Migration(
        4,
        "agents that cooperate: delegates (agent ids), max_delegation_depth, skills (folders)",
        (
            "ALTER TABLE agents ADD COLUMN delegates TEXT NOT NULL DEFAULT '[]'",
            "ALTER TABLE agents ADD COLUMN max_delegation_depth INTEGER NOT NULL DEFAULT 3",
            "ALTER TABLE agents ADD COLUMN skills TEXT NOT NULL DEFAULT '[]'",
        ),
    ),
    Migration(
        5,
        "durable runs: the run journal shares this file (its tables: shapes, runs, journal, owners), so the "
        "server's run records move to run_records and gain the pending interrupt",
        (
            "ALTER TABLE runs RENAME TO run_records",
            "ALTER TABLE run_records ADD COLUMN interrupt TEXT",
            "DROP INDEX runs_by_formation",
            "DROP INDEX runs_by_fleet",
            "CREATE INDEX run_records_by_formation ON run_records (formation_id, id)",
            "CREATE INDEX run_records_by_fleet ON run_records (fleet_id, id)",
            "CREATE INDEX run_records_by_status ON run_records (status)",
            # the run journal (wingman_actors.store) opens only files marked as wingman's
            f"PRAGMA application_id = {APPLICATION_ID}",
        ),
    ),
    Migration(
        6,
        "agents as capable as the library's: MCP servers, max_steps, context_budget",
        (
            "ALTER TABLE agents ADD COLUMN mcp TEXT NOT NULL DEFAULT '[]'",
            "ALTER TABLE agents ADD COLUMN max_steps INTEGER",
            "ALTER TABLE agents ADD COLUMN context_budget INTEGER",
        ),
    ),
)
"""Every migration, oldest first. Append new ones; never edit an applied one."""


class Database:
    """The SQLite file of a server.

    Args:
        path: the database file; it and its folder are created when missing.

    Raises:
        RuntimeError: the file cannot use WAL mode, or its schema is newer than this code.
        sqlite3.Error: a migration failed (it was rolled back; the message names it).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._closed = False
        self._writer = self.connect()
        mode = self._writer.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            self._writer.close()
            raise RuntimeError(
                f"database {self.path}: SQLite refused WAL mode (got {mode!r}); "
                "put the database on a local disk (--db PATH)"
            )
        try:
            self.migrate()
        except BaseException:
            self.close()
            raise

    def connect(self) -> sqlite3.Connection:
        """A new connection to the file, set up as the writer's (WAL, busy timeout, foreign keys)."""
        conn = sqlite3.connect(
            self.path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = FULL")  # a committed write survives power loss too
        return conn

    # -- transactions -----------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction on the writer connection; commits on success, rolls back on error."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"database {self.path} is closed")
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction (one consistent snapshot) on this thread's reader connection."""
        conn = self._reader()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self.connect()
            conn.execute("PRAGMA query_only = ON")
            with self._lock:
                if self._closed:
                    conn.close()
                    raise RuntimeError(f"database {self.path} is closed")
                self._readers.append(conn)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close every connection (readers of every thread included)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for conn in [*self._readers, self._writer]:
                conn.close()
            self._readers.clear()

    # -- migrations ---------------------------------------------------------------------

    @property
    def schema_version(self) -> int:
        """The newest applied migration."""
        with self.read() as conn:
            row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
        return int(row[0] or 0)

    def migrate(self) -> list[int]:
        """Apply the migrations not applied yet; return their versions.

        Each runs in its own transaction together with its ``schema_migrations`` row, so a
        failure leaves the schema at the previous version and is raised, never ignored.
        """
        with self.write() as conn:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "journal" in tables and "schema_migrations" not in tables:
                raise RuntimeError(
                    f"database {self.path} is a run store (wingman-actors run --store), not a server database: "
                    "give the server a --db of its own (it journals its formation runs in it)"
                )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            newest = int(conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] or 0)
        known = MIGRATIONS[-1].version
        if newest > known:
            raise RuntimeError(
                f"database {self.path} has schema version {newest}, newer than this server knows ({known}): "
                "upgrade wingman-actors or use another --db"
            )
        applied = []
        for migration in MIGRATIONS:
            with self.write() as conn:
                done = conn.execute(
                    "SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)
                ).fetchone()
                if done:
                    continue
                try:
                    for statement in migration.statements:
                        conn.execute(statement)
                except sqlite3.Error as exc:
                    raise sqlite3.OperationalError(
                        f"database {self.path}: migration {migration.version} ({migration.name}) failed: {exc}"
                    ) from exc
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.name, now()),
                )
            applied.append(migration.version)
        return applied
