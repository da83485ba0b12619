"""The PostgreSQL run store's database: connections, the versioned schema, and the bulk
statement that applies a run of journalling writes in one trip.

The tables are those of the SQLite store (``shapes``, ``owners``, ``runs``, ``journal``,
same columns, same journal format: a codec number and JSON text per value), created in the
connection's schema (the first of its ``search_path``; choose one with
``?options=-csearch_path%3Dmyschema`` in the URL). ``wingman_run_store`` marks the schema as
a run store and holds its version, so another application's ``runs`` table (or ``journal``,
``shapes``, ``owners``) is refused instead of being written into. Owners hold a lease (``owners.lease_until``, in the
server's clock, so machines with skewed clocks agree on it) while their writer's connection
(``owners.backend``, its server process) is open.

The queries shared with the SQLite store are written with SQLite's placeholders (``?``,
``:name``); :class:`PgConnection` translates them for psycopg (``%s``, ``%(name)s``).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import psycopg

from ._errors import StoreOpenError, StoreVersionError
from ._values import masked, without_password

__all__ = ["LATEST_VERSION", "LIVE", "NOW", "PgConnection", "connect", "masked", "migrate"]

NOW = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)"
"""The database server's clock, in seconds since the epoch (leases are measured by it)."""
LIVE = f"(o.lease_until > {NOW} AND EXISTS (SELECT 1 FROM pg_stat_get_activity(o.backend)))"
"""Whether owner ``o`` is live: its lease holds, and its writer's connection is open (a
process that died has its connections closed by its kernel, and the server sees that at
once; a frozen one keeps them, and its lease lapses)."""

_STATUSES = "'running', 'succeeded', 'failed', 'cancelled', 'suspended', 'expired', 'interrupted'"
_SCHEMA = (
    "CREATE TABLE wingman_run_store (version INTEGER NOT NULL)",
    "CREATE TABLE shapes (fingerprint TEXT PRIMARY KEY, shape TEXT NOT NULL)",
    """CREATE TABLE owners (
        id BIGSERIAL PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        opened DOUBLE PRECISION NOT NULL,
        lease_until DOUBLE PRECISION NOT NULL,
        backend INTEGER NOT NULL
    )""",
    f"""CREATE TABLE runs (
        key BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        formation TEXT NOT NULL,
        fingerprint TEXT NOT NULL REFERENCES shapes (fingerprint),
        source TEXT,
        input_codec INTEGER NOT NULL,
        input TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ({_STATUSES})),
        created DOUBLE PRECISION NOT NULL,
        updated DOUBLE PRECISION NOT NULL,
        error TEXT,
        owner BIGINT REFERENCES owners (id),
        expires DOUBLE PRECISION,
        parent TEXT REFERENCES runs (id) ON DELETE CASCADE
    )""",
    "CREATE INDEX runs_by_status ON runs (status, updated)",
    "CREATE INDEX runs_by_parent ON runs (parent) WHERE parent IS NOT NULL",
    "CREATE INDEX runs_by_owner ON runs (owner)",
    # seq is the global write order; kind: 1 visit, 2 item, 3 progress, 4 interrupt, 5 answer, 6 skip;
    # at: when it was recorded (seconds since the epoch)
    """CREATE TABLE journal (
        seq BIGSERIAL PRIMARY KEY,
        run BIGINT NOT NULL REFERENCES runs (key) ON DELETE CASCADE,
        kind INTEGER NOT NULL,
        node TEXT NOT NULL,
        visit INTEGER NOT NULL,
        item INTEGER,
        codec INTEGER NOT NULL,
        value TEXT NOT NULL,
        at DOUBLE PRECISION
    )""",
    "CREATE INDEX journal_by_run ON journal (run, seq)",
    # The rows of a run of journalling writes (see _bulk: the same rows, as JSON), applied in
    # order by one call. An entry is written only for a run this store owns (``me``), and so is
    # the status of a run this store is running (its owner in the row's 7th item): a store
    # whose lease lapsed and whose run was taken over cannot write into that run's journal.
    # Without ``sync`` (writes nobody waits for) its transaction commits without waiting for
    # the WAL flush.
    # Its statements find runs by id through their index whatever the table's size when their
    # plans were made and cached (a plan made on a near-empty table scans it, for every row).
    """CREATE FUNCTION wingman_journal_ops(ops TEXT, me BIGINT, sync BOOLEAN) RETURNS void LANGUAGE plpgsql
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off AS $f$
DECLARE
    j jsonb := CAST(ops AS jsonb);
    wanted integer;
    done integer;
BEGIN
    IF NOT sync THEN  -- the commit of this call's transaction does not wait for the WAL flush
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    -- One statement per kind of row, each over every row of that kind (a row at a time in
    -- PL/pgSQL cost ~5 times the server's CPU): shapes, runs and their parents first, then
    -- the entries in their order (seq follows it), then each run's last status. Runs are found
    -- by id (``owner + 0``: a plan through runs_by_owner walked every run of the owner per row).
    INSERT INTO shapes (fingerprint, shape)
    SELECT v->>2, v->>3 FROM jsonb_array_elements(j) v WHERE v->>0 = '0' ON CONFLICT DO NOTHING;
    INSERT INTO runs (id, formation, fingerprint, source, input_codec, input, status, created, updated, owner)
    SELECT v->>1, v->>2, v->>3, v->>4, CAST(v->>5 AS integer), v->>6, 'running', CAST(v->>7 AS double precision),
           CAST(v->>7 AS double precision), CAST(v->>8 AS bigint)
    FROM jsonb_array_elements(j) WITH ORDINALITY e(v, i) WHERE v->>0 = '1' ORDER BY i;
    UPDATE runs r SET parent = v->>2 FROM jsonb_array_elements(j) v WHERE v->>0 = '4' AND r.id = v->>1;
    SELECT count(*) INTO wanted FROM jsonb_array_elements(j) v WHERE v->>0 = '2';
    IF wanted > 0 THEN
        INSERT INTO journal (run, kind, node, visit, item, codec, value, at)
        SELECT r.key, CAST(v->>2 AS integer), v->>3, CAST(v->>4 AS integer), CAST(v->>5 AS integer),
               CAST(v->>6 AS integer), v->>7, CAST(v->>8 AS double precision)
        FROM jsonb_array_elements(j) WITH ORDINALITY e(v, i) JOIN runs r ON r.id = v->>1 AND r.owner + 0 = me
        WHERE v->>0 = '2' ORDER BY i;
        GET DIAGNOSTICS done = ROW_COUNT;
        IF done < wanted THEN
            RAISE EXCEPTION 'wingman-actors: a journal entry of a run unknown, or owned by another store';
        END IF;
    END IF;
    SELECT count(DISTINCT v->>1) INTO wanted FROM jsonb_array_elements(j) v WHERE v->>0 = '3';
    IF wanted > 0 THEN
        UPDATE runs r SET status = s.v->>2, error = s.v->>3, expires = CAST(s.v->>4 AS double precision),
                          updated = CAST(s.v->>5 AS double precision)
        FROM (SELECT DISTINCT ON (v->>1) v FROM jsonb_array_elements(j) WITH ORDINALITY e(v, i)
              WHERE v->>0 = '3' ORDER BY v->>1, i DESC) s
        WHERE r.id = s.v->>1 AND (s.v->>6 IS NULL OR r.owner + 0 = CAST(s.v->>6 AS bigint));
        GET DIAGNOSTICS done = ROW_COUNT;
        IF done < wanted THEN
            RAISE EXCEPTION 'wingman-actors: the status of a run unknown, or owned by another store';
        END IF;
    END IF;
END
$f$""",
    "INSERT INTO wingman_run_store (version) VALUES (1)",
)
"""Version 1 of the schema, as it was released (a new store is made with it, then migrated)."""

_MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (2, (  # a running run can carry a request to cancel it (see the SQLite store's migration 7)
        "ALTER TABLE runs ADD COLUMN cancel_requested DOUBLE PRECISION",
        "CREATE INDEX runs_cancel_requested ON runs (owner) WHERE cancel_requested IS NOT NULL",
    )),
)
"""Every change since version 1, oldest first: (version, statements). Append new ones;
never edit one that was released."""

LATEST_VERSION = _MIGRATIONS[-1][0]

_PLACEHOLDER = re.compile(r"\?|(?<![:\w]):([A-Za-z_]\w*)")


@functools.lru_cache(maxsize=256)
def _translate(sql: str) -> str:
    return _PLACEHOLDER.sub(lambda m: "%s" if m.group(0) == "?" else f"%({m.group(1)})s", sql)


class PgConnection:
    """A psycopg connection (autocommit; transactions are explicit) that takes the shared
    queries' SQLite placeholders. ``owner`` is the owner id of the store writing through it.

    The writer's connection is given ``url``: when the server dropped it (a restart, a
    network cut), the next statement opens a new one and records its server process as
    the owner's (``owners.backend``), so the store's runs read as running again.
    """

    __slots__ = ("owner", "raw", "url")

    def __init__(self, raw: psycopg.Connection[Any], owner: int = 0, url: str | None = None) -> None:
        self.raw = raw
        self.owner = owner
        self.url = url

    def ensure(self) -> None:
        """Reconnect a writer's connection the server dropped (see the class docs)."""
        if self.url is not None and self.raw.broken:
            raw = psycopg.connect(self.url, autocommit=True, connect_timeout=10, application_name="wingman-actors")
            raw.execute("UPDATE owners SET backend = pg_backend_pid() WHERE id = %s", (self.owner,))
            self.raw = raw

    def execute(self, sql: str, params: Any = None) -> psycopg.Cursor[Any]:
        if self.url is not None and self.raw.broken:
            self.ensure()
        if params is None:
            return self.raw.execute(sql)  # (sent as it is: no placeholders)
        return self.raw.execute(_translate(sql), params)

    def close(self) -> None:
        self.raw.close()




def connect(url: str, shown: str) -> PgConnection:
    """A connection with the store's settings (autocommit, a connect timeout).

    Raises:
        StoreOpenError: the server cannot be reached or refuses the connection.
    """
    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=10, application_name="wingman-actors")
    except psycopg.Error as exc:
        reason = str(exc).strip()
        error = StoreOpenError(f"RunStore cannot connect to {shown}: {without_password(reason, url)}; check that the "
                               "PostgreSQL server runs and the URL (postgresql://user:password@host:port/database) "
                               "is right", path=shown)
        if without_password(reason, url) != reason:  # (psycopg quoted the URL: a traceback would show the password)
            raise error from None
        raise error from exc
    return PgConnection(raw)


def migrate(conn: PgConnection, shown: str) -> int:
    """Create the schema in the connection's schema if it has none, or upgrade an older
    one to :data:`LATEST_VERSION` (one transaction, under a lock other openers wait for);
    the version it had (0: created now).

    Raises:
        StoreOpenError: the schema holds another application's table of a store table's name
            (``runs``, ``journal``, ``shapes``, ``owners``), or cannot be created (permissions).
        StoreVersionError: the store was written by a newer wingman-actors.
    """
    raw = conn.raw
    try:
        with raw.transaction():
            # Several processes may open a new store at once: one creates it, the others wait.
            raw.execute("SELECT pg_advisory_xact_lock(hashtext('wingman-actors run store ' || current_schema()))")
            marker, taken = raw.execute(  # a table of the store's names that is another application's
                "SELECT to_regclass('wingman_run_store'), COALESCE(to_regclass('runs'), to_regclass('journal'), "
                "to_regclass('shapes'), to_regclass('owners'))::text").fetchone() or (None, None)
            if marker is None:
                if taken is not None:
                    raise StoreOpenError(
                        f"RunStore {shown}: the schema already has a {taken!r} table of another application; use "
                        "another database or schema (e.g. ?options=-csearch_path%3Dwingman in the URL)", path=shown)
                for statement in _SCHEMA:
                    raw.execute(statement)
                _upgrade(raw, 1)
                return 0
            row = raw.execute("SELECT max(version) FROM wingman_run_store").fetchone()
            version = int(row[0]) if row and row[0] is not None else 0
            if version < LATEST_VERSION:
                _upgrade(raw, version)
    except psycopg.Error as exc:
        raise StoreOpenError(f"RunStore cannot prepare {shown}: {str(exc).strip()}; check that the user may create "
                             "tables there, or pass another database", path=shown) from exc
    if version > LATEST_VERSION:
        raise StoreVersionError(
            f"RunStore {shown} has schema version {version}, written by a newer wingman-actors; this one "
            f"understands versions up to {LATEST_VERSION}. Upgrade wingman-actors (pip install -U wingman-actors), "
            "or use another database", path=shown, version=version, supported=LATEST_VERSION)
    return version


def _upgrade(raw: psycopg.Connection[Any], version: int) -> None:
    """Apply the migrations after ``version`` (inside the caller's transaction)."""
    for number, statements in _MIGRATIONS:
        if number > version:
            for statement in statements:
                raw.execute(statement)
    raw.execute("UPDATE wingman_run_store SET version = %s", (LATEST_VERSION,))
