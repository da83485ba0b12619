"""The server's configuration: where the database lives, who may call, what runs may touch."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..store._values import POSTGRES_SCHEMES

__all__ = ["DEFAULT_DB_PATH", "DEFAULT_MAX_BODY_BYTES", "DEFAULT_PORT", "TOKEN_ENV", "ServerConfig"]

DEFAULT_PORT = 8787
"""The port ``wingman-actors serve`` listens on by default."""

DEFAULT_DB_PATH = Path("~/.local/share/wingman/wingman.db")
"""The SQLite database used when ``--db`` is not given (its folder is created)."""

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body the server reads when ``--max-body-bytes`` is not given (4 MiB)."""

TOKEN_ENV = "WINGMAN_TOKEN"
"""The environment variable read for the bearer token when ``--token`` is not given."""


@dataclass(frozen=True)
class ServerConfig:
    """Everything :func:`~wingman_actors.server._app.create_app` needs.

    Args:
        db_path: the SQLite database file; created, with its folder, when missing.
        token: when set, every route but ``/health`` requires ``Authorization: Bearer <token>``.
        work_root: session, fleet and task ``work_dir`` values must lie under this folder
            (default: the current directory).
        allow_bash: False refuses agents with the ``bash`` tool and removes it from stored
            agents at run time (``--no-bash``).
        request_timeout: seconds a non-streaming request may take (runs included); streaming
            routes are not bounded.
        functions: Python modules whose ``@function`` / ``@predicate`` callables formation
            declarations may name (``--functions``).
        entry_points: also load the modules of the ``wingman_actors.functions`` entry-point group.
        worker_threads: threads running blocking work (database calls, agent runs, streams);
            at most this many runs are in progress at once, the rest wait their turn.
        cors_origins: browser origins allowed to call the API (``--cors-origin``); none by default.
            A request whose ``Origin`` is neither one of these nor the server itself is refused.
        allowed_hosts: names clients may reach the server by (``--allowed-host``), beside the
            bound address and the loopback names (``localhost``, ``127.0.0.1``, ``::1``); a
            request with another ``Host`` is refused, so a web page cannot reach a local server
            through DNS rebinding. ``*.example.com`` allows the subdomains, ``*`` any name.
        suspend_ttl: seconds a formation run suspended by ``interrupt()`` waits for its answer
            (``POST /runs/{id}/resume``) before it expires; None: forever. Default 7 days.
        mcp_commands: programs the ``{"command": [...]}`` MCP servers of stored agents may run
            (``--mcp-command``) beside the executables under the work root and the server's
            own Python (unless ``allow_bash`` is False): ``npx``, ``uvx``, a path. Path
            arguments must lie under the work root; the server runs in the work root, with
            the MCP SDK's minimal environment (no keys).
        journal_retention: seconds a finished formation run (succeeded, failed, cancelled,
            expired...) stays in the run journal; older ones are pruned when the server
            starts and every hour, so the database does not grow without end. None: keep
            them all. At least ``suspend_ttl``, so a run waiting for its answer is never
            pruned. Default 30 days. The runs' records (``GET /runs``) stay; only their
            journals go.
        max_body_bytes: the largest request body the server reads (``--max-body-bytes``);
            a larger one is refused with 413 as soon as its ``Content-Length`` says so, or
            while it is read (a chunked body), never held whole. Default 4 MiB.

    Example:
        >>> ServerConfig(db_path="/tmp/w.db", token="s3cret").work_root.is_absolute()
        True
    """

    db_path: str | Path = DEFAULT_DB_PATH
    token: str | None = None
    work_root: str | Path = field(default_factory=Path.cwd)
    allow_bash: bool = True
    request_timeout: float = 60.0
    functions: tuple[str, ...] = ()
    entry_points: bool = True
    worker_threads: int = 64
    cors_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    suspend_ttl: float | None = 7 * 24 * 3600.0
    journal_retention: float | None = 30 * 24 * 3600.0
    mcp_commands: tuple[str, ...] = ()
    run_store: str | None = None
    run_store_lease: float | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES

    def __post_init__(self) -> None:
        object.__setattr__(self, "db_path", Path(os.path.expanduser(str(self.db_path))))
        object.__setattr__(self, "work_root", Path(os.path.expanduser(str(self.work_root))).resolve())
        object.__setattr__(self, "functions", tuple(self.functions))
        object.__setattr__(self, "mcp_commands", tuple(self.mcp_commands))
        if any(not c or "\x00" in c for c in self.mcp_commands):
            raise ValueError(f"mcp_commands holds {self.mcp_commands!r}: give program names or paths, e.g. 'npx'")
        object.__setattr__(self, "cors_origins", tuple(o.rstrip("/") for o in self.cors_origins))
        object.__setattr__(self, "allowed_hosts", tuple(h.strip().lower().rstrip(".") for h in self.allowed_hosts))
        bad = [h for h in self.allowed_hosts if not h or "/" in h]
        if bad:
            raise ValueError(f"allowed_hosts holds {bad!r}: give host names such as 'wingman.lan', without scheme or path")
        if self.token is not None and not self.token.strip():
            raise ValueError("token must not be empty: pass a secret, or None for no authentication")
        if not self.request_timeout > 0:
            raise ValueError(f"request_timeout must be > 0 seconds, got {self.request_timeout}")
        if self.suspend_ttl is not None and not self.suspend_ttl > 0:
            raise ValueError(f"suspend_ttl must be > 0 seconds or None, got {self.suspend_ttl}")
        if self.journal_retention is not None:
            if not self.journal_retention > 0:
                raise ValueError(f"journal_retention must be > 0 seconds or None, got {self.journal_retention}")
            if self.suspend_ttl is None or self.journal_retention < self.suspend_ttl:
                raise ValueError(
                    f"journal_retention (--journal-retention, {self.journal_retention:g} s) must be at least "
                    f"suspend_ttl (--suspend-ttl, {'forever' if self.suspend_ttl is None else f'{self.suspend_ttl:g} s'})"
                    ", or a run waiting for its answer could be pruned; raise the retention, lower the ttl, or "
                    "keep finished runs forever (journal_retention=None, --journal-retention 0)")
        if self.run_store is not None and not self.run_store.startswith(POSTGRES_SCHEMES):
            shown = self.run_store.rpartition("@")[2]  # never echo a password
            raise ValueError(f"run_store must be a postgresql:// URL, got {shown!r}; leave it out to journal runs "
                             "in the database file")
        if self.run_store_lease is not None:
            if self.run_store is None:
                raise ValueError("run_store_lease applies to a PostgreSQL run store: give run_store "
                                 "(--run-store postgresql://...) too, or leave the lease out")
            if not self.run_store_lease > 0:
                raise ValueError(f"run_store_lease must be > 0 seconds, got {self.run_store_lease}")
        if isinstance(self.max_body_bytes, bool) or not isinstance(self.max_body_bytes, int) \
                or self.max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be a whole number of bytes >= 1, got {self.max_body_bytes!r}; "
                             f"the default is {DEFAULT_MAX_BODY_BYTES} (4 MiB)")
        if self.worker_threads < 2:
            raise ValueError(f"worker_threads must be >= 2, got {self.worker_threads}")

    @property
    def database(self) -> Path:
        """``db_path`` as a Path."""
        return Path(self.db_path)

    @property
    def journal_location(self) -> str | Path:
        """Where formation runs are journalled: ``run_store`` if given, else the database file."""
        return self.database if self.run_store is None else self.run_store

    @property
    def root(self) -> Path:
        """``work_root`` as a resolved Path."""
        return Path(self.work_root)
