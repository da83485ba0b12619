"""The store file: checks that a path is (or can become) a run store, connection settings,
and the versioned schema (``PRAGMA user_version``) with its migrations.

A run store file is marked with ``PRAGMA application_id`` so another application's SQLite
database is refused instead of being written into.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ._errors import StoreOpenError, StoreVersionError
from ._values import masked, other_scheme

__all__ = ["APPLICATION_ID", "LATEST_VERSION", "MIGRATIONS", "Migration", "check_path", "connect", "damaged", "migrate",
           "preparing"]

APPLICATION_ID = 0x574D524A  # "WMRJ": wingman run journal
_STATUSES = "'running', 'succeeded', 'failed', 'cancelled', 'suspended', 'expired', 'interrupted'"
_BUSY_TIMEOUT_MS = 30_000
_MIN_PAGE = 512
_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


@dataclass(frozen=True)
class Migration:
    """One schema change, applied once, in one transaction, in version order (foreign
    keys off meanwhile, as SQLite's recipe for rebuilding a table needs, and checked
    before the commit)."""

    version: int
    name: str
    statements: tuple[str, ...]


_NODE_PATH = "substr(rtrim(runs.id, '0123456789'), 1, length(rtrim(runs.id, '0123456789')) - 1)"  # "<outer>/<node>"
_OUTER = (f"substr(rtrim({_NODE_PATH}, replace({_NODE_PATH}, '/', '')), 1, "
          f"length(rtrim({_NODE_PATH}, replace({_NODE_PATH}, '/', ''))) - 1)")

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "runs, formation shapes and the journal of deltas", (
        f"PRAGMA application_id = {APPLICATION_ID}",
        """CREATE TABLE shapes (
            fingerprint TEXT PRIMARY KEY,
            shape TEXT NOT NULL
        ) WITHOUT ROWID""",
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            formation TEXT NOT NULL,
            fingerprint TEXT NOT NULL REFERENCES shapes (fingerprint),
            source TEXT,
            input_codec INTEGER NOT NULL,
            input TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled',
                                                   'suspended', 'expired', 'interrupted')),
            created REAL NOT NULL,
            updated REAL NOT NULL,
            error TEXT
        ) WITHOUT ROWID""",
        # seq is the global write order; kind: 1 visit, 2 item, 3 progress, 4 interrupt, 5 answer,
        # 6 skip (added without a migration: kinds are not constrained)
        """CREATE TABLE journal (
            seq INTEGER PRIMARY KEY,
            run TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            kind INTEGER NOT NULL,
            node TEXT NOT NULL,
            visit INTEGER NOT NULL,
            item INTEGER,
            codec INTEGER NOT NULL,
            value TEXT NOT NULL
        )""",
        "CREATE INDEX journal_by_run ON journal (run, seq)",
    )),
    Migration(2, "run owners (to mark runs of dead processes interrupted) and expiry of suspended runs", (
        """CREATE TABLE owners (
            id INTEGER PRIMARY KEY,
            host TEXT NOT NULL,
            boot TEXT NOT NULL,
            pid INTEGER NOT NULL,
            started TEXT NOT NULL,
            opened REAL NOT NULL
        )""",
        "ALTER TABLE runs ADD COLUMN owner INTEGER REFERENCES owners (id)",
        "ALTER TABLE runs ADD COLUMN expires REAL",
        "CREATE INDEX runs_by_status ON runs (status, updated)",
    )),
    Migration(3, "journal rows point at their run by an integer key (about 60 bytes less per row)", (
        f"""CREATE TABLE runs_v3 (
            key INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            formation TEXT NOT NULL,
            fingerprint TEXT NOT NULL REFERENCES shapes (fingerprint),
            source TEXT,
            input_codec INTEGER NOT NULL,
            input TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ({_STATUSES})),
            created REAL NOT NULL,
            updated REAL NOT NULL,
            error TEXT,
            owner INTEGER REFERENCES owners (id),
            expires REAL
        )""",
        """INSERT INTO runs_v3 (id, formation, fingerprint, source, input_codec, input, status, created, updated,
                                error, owner, expires)
           SELECT id, formation, fingerprint, source, input_codec, input, status, created, updated, error, owner,
                  expires FROM runs ORDER BY created, id""",
        # seq is the global write order; kind: 1 visit, 2 item, 3 progress, 4 interrupt, 5 answer, 6 skip
        """CREATE TABLE journal_v3 (
            seq INTEGER PRIMARY KEY,
            run INTEGER NOT NULL REFERENCES runs (key) ON DELETE CASCADE,
            kind INTEGER NOT NULL,
            node TEXT NOT NULL,
            visit INTEGER NOT NULL,
            item INTEGER,
            codec INTEGER NOT NULL,
            value TEXT NOT NULL
        )""",
        """INSERT INTO journal_v3 (seq, run, kind, node, visit, item, codec, value)
           SELECT j.seq, r.key, j.kind, j.node, j.visit, j.item, j.codec, j.value
           FROM journal j JOIN runs_v3 r ON r.id = j.run""",
        "DROP TABLE journal",
        "DROP TABLE runs",
        "ALTER TABLE runs_v3 RENAME TO runs",
        "ALTER TABLE journal_v3 RENAME TO journal",
        "CREATE INDEX journal_by_run ON journal (run, seq)",
        "CREATE INDEX runs_by_status ON runs (status, updated)",
    )),
    Migration(4, "runs record their parent: the outer run of a nested formation's inner run", (
        # Deleting an outer run deletes its inner runs (and theirs). The partial index
        # (inner runs only) finds them, and costs a top-level run's insert nothing.
        "ALTER TABLE runs ADD COLUMN parent TEXT REFERENCES runs (id) ON DELETE CASCADE",
        "CREATE INDEX runs_by_parent ON runs (parent) WHERE parent IS NOT NULL",
    )),
    Migration(5, "inner runs journalled before version 4 get their parent from their id", (
        # An inner run's id is "<outer run id>/<node>/<visit>": strip the visit's digits and
        # the "/<node>/" before them (rtrim(x, replace(x, '/', '')) cuts x after its last '/').
        f"""UPDATE runs SET parent = {_OUTER}
            WHERE parent IS NULL AND id GLOB '*/*/[0-9]*'
              AND EXISTS (SELECT 1 FROM runs AS outer_run WHERE outer_run.id = {_OUTER})""",
    )),
    Migration(6, "journal entries record when they were written (a run's history gives each visit's times)", (
        "ALTER TABLE journal ADD COLUMN at REAL",
    )),
    Migration(7, "a running run can carry a request to cancel it (RunStore.request_cancel), for its owner", (
        # When it was requested; cleared by the owner once it acts, and by a claim. The partial
        # index holds only the runs with a pending request (nearly always none): the owner's
        # look for its own is a read of an empty index.
        "ALTER TABLE runs ADD COLUMN cancel_requested REAL",
        "CREATE INDEX runs_cancel_requested ON runs (owner) WHERE cancel_requested IS NOT NULL",
    )),
)
"""Every migration, oldest first. Append new ones; never edit one that was released."""

LATEST_VERSION = MIGRATIONS[-1].version


def _not_sqlite(path: str) -> StoreOpenError:
    return StoreOpenError(f"RunStore path {path} exists and is not an SQLite database; pass the path of a run "
                          "store, or of a file that does not exist yet", path=path)


def damaged(path: str, exc: BaseException) -> StoreOpenError | None:
    """The error refusing a damaged store file when ``exc`` (or the database error behind a
    failed write, its ``__cause__``) is SQLite saying the file is malformed; else None."""
    cause = exc if isinstance(exc, sqlite3.DatabaseError) else exc.__cause__
    if not isinstance(cause, sqlite3.DatabaseError) or (cause.sqlite_errorcode or 0) & 0xFF != sqlite3.SQLITE_CORRUPT:
        return None
    return StoreOpenError(f"RunStore cannot open {path}: the file is damaged ({cause}); restore it from a backup, "
                          "or move it aside and pass the path of a new file", path=path)


@contextlib.contextmanager
def preparing(conn: sqlite3.Connection, path: str) -> Iterator[None]:
    """While a store prepares its writer connection: if that fails, roll back and close the
    connection; a database error is a :class:`StoreOpenError` (a damaged file says so)."""
    try:
        yield
    except BaseException as exc:
        with contextlib.suppress(sqlite3.Error):  # (a damaged file may refuse even that)
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        conn.close()
        if not isinstance(exc, sqlite3.DatabaseError):
            raise
        raise damaged(path, exc) or StoreOpenError(f"RunStore cannot prepare {path}: {exc}; check that the file is "
                                                   "a run store and writable, or pass another path", path=path) from exc


def check_path(path: str | os.PathLike[str]) -> str:
    """The path as a string, once it is known to be usable for a store file.

    Raises:
        TypeError: ``path`` is neither a str nor an ``os.PathLike``.
        StoreOpenError: the path is empty or ``:memory:``, a URL of another scheme than
            postgresql:// (``mysql://...``, ``sqlite:///...``), a directory, in a folder that
            does not exist, or an existing file too short to be an SQLite database (the
            header of a longer one is checked by SQLite, in :func:`connect`).
    """
    try:
        text = os.fspath(path)
    except TypeError:
        raise TypeError(f"RunStore: path must be a SQLite file's path (a str or os.PathLike) or a postgresql:// URL, "
                        f"got {type(path).__name__}; pass e.g. RunStore('runs.sqlite')") from None
    if not isinstance(text, str) or text in ("", ":memory:") or text.startswith("file:"):
        raise StoreOpenError(
            f"RunStore needs the path of a database file, got {text!r}; pass e.g. RunStore('runs.sqlite') "
            "(an in-memory store cannot be shared by the writer and readers, use a temporary file)",
            path=str(text))
    wrong_scheme = other_scheme(text)
    if wrong_scheme is not None:
        raise StoreOpenError(wrong_scheme, path=masked(text))
    p = Path(text)
    if p.is_dir():
        raise StoreOpenError(f"RunStore path {text} is a directory; pass a file path such as {p / 'runs.sqlite'}",
                             path=text)
    if not p.parent.is_dir():
        raise StoreOpenError(f"RunStore path {text}: the folder {p.parent} does not exist; create it "
                             f"(mkdir -p {p.parent}) or pass another path", path=text)
    # The header is left to SQLite to read (see connect): opening the file here and closing
    # it would drop every POSIX lock this process holds on it, those of its open stores'
    # connections included, and let another process delete their WAL under them. A file
    # shorter than the smallest SQLite page is no database, and SQLite would overwrite it.
    if p.is_file() and 0 < p.stat().st_size < _MIN_PAGE:
        raise _not_sqlite(text)
    return text


def connect(path: str, *, synchronous: str, read_only: bool = False) -> sqlite3.Connection:
    """A connection with the store's settings: WAL, the given ``synchronous`` level,
    foreign keys on, a busy timeout, autocommit (transactions are explicit)."""
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                               timeout=_BUSY_TIMEOUT_MS / 1000)
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        if not read_only:
            mode = _wal(conn)
            if str(mode).lower() != "wal":
                raise StoreOpenError(f"RunStore {path}: SQLite refused WAL mode (got {mode!r}); put the store on a "
                                     "local file system", path=path)
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        if read_only:
            conn.execute("PRAGMA query_only = ON")
    except (sqlite3.DatabaseError, StoreOpenError) as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, StoreOpenError):
            raise
        refused = damaged(path, exc)
        if refused is not None:
            raise refused from exc
        if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_NOTADB:
            raise StoreOpenError(f"RunStore cannot open {path}: the file exists and is not an SQLite database, or "
                                 f"is a damaged one ({exc}); pass the path of a run store, or of a file that does "
                                 "not exist yet", path=path) from exc
        raise StoreOpenError(f"RunStore cannot open {path}: {exc}; check the file's permissions, or pass "
                             "another path", path=path) from exc
    return conn


def _wal(conn: sqlite3.Connection) -> object:
    """Switch ``conn``'s file to WAL (a no-op once it is): the journal mode it ends in.

    While the file is new, and so not yet in WAL mode, the switch is a rollback-journal
    transaction, and SQLite answers "database is locked" at once, without waiting, when
    another connection creating the file holds its lock: wait and try again, as long as
    the busy timeout.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    pause = 0.001
    while True:
        try:
            return conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF not in _BUSY or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def migrate(conn: sqlite3.Connection, path: str) -> int:
    """Create or upgrade the schema to :data:`LATEST_VERSION`; the version it had.

    Raises:
        StoreOpenError: the file is another application's database.
        StoreVersionError: the file's schema is newer than this wingman-actors knows.
    """
    try:
        # A read (opening a store of the latest version writes nothing), in one transaction:
        # its application id and tables from one moment, not from either side of another
        # process's first migration.
        conn.execute("BEGIN")
        try:
            version = _check_identity(conn, path)
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        if version < LATEST_VERSION:
            version = _upgrade(conn, path)
    except sqlite3.DatabaseError as exc:
        raise damaged(path, exc) or StoreOpenError(f"RunStore cannot prepare {path}: {exc}; check that the file is "
                                                   "a run store and writable, or pass another path", path=path) from exc
    return version


def _upgrade(conn: sqlite3.Connection, path: str) -> int:
    # Foreign keys can only be switched outside a transaction: off for the whole upgrade,
    # checked before it commits, on again after.
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = _check_identity(conn, path)  # again: another process may have upgraded it meanwhile
            if version < LATEST_VERSION:
                for m in MIGRATIONS:
                    if m.version > version:
                        for statement in m.statements:
                            conn.execute(statement)
                broken = conn.execute("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise sqlite3.IntegrityError(
                        f"the upgraded file breaks {len(broken)} foreign key(s), e.g. {broken[0]}")
                conn.execute(f"PRAGMA user_version = {LATEST_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # an I/O error may have rolled it back already
                conn.execute("ROLLBACK")
            raise
    finally:
        conn.execute("PRAGMA foreign_keys = ON")
    return version


def _check_identity(conn: sqlite3.Connection, path: str) -> int:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables):
        raise StoreOpenError(
            f"RunStore path {path} is an SQLite database of another application (application_id {app_id}, "
            f"tables {', '.join(tables) or 'none'}); pass the path of a run store, or of a new file",
            path=path)
    if version > LATEST_VERSION:
        raise StoreVersionError(
            f"RunStore {path} has schema version {version}, written by a newer wingman-actors; this one "
            f"understands versions up to {LATEST_VERSION}. Upgrade wingman-actors "
            "(pip install -U wingman-actors), or use another store file",
            path=path, version=version, supported=LATEST_VERSION)
    return int(version)
