"""The ``serve`` command: ``wingman-actors serve [--host] [--port] [--db] [--token] ...``.

``wingman_actors/cli.py`` wires it in with :func:`add_serve_parser`; :func:`serve` runs it.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from pathlib import Path

from .config import DEFAULT_DB_PATH, DEFAULT_PORT, TOKEN_ENV, ServerConfig

__all__ = ["add_serve_parser", "build_config", "serve"]


def add_serve_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add the ``serve`` subcommand to an argparse ``subparsers`` object; returns its parser.

    Example:
        >>> parser = argparse.ArgumentParser(prog="wingman-actors")
        >>> _ = add_serve_parser(parser.add_subparsers(dest="command"))
        >>> parser.parse_args(["serve", "--port", "9000"]).port
        9000
    """
    p = subparsers.add_parser(
        "serve",
        help="serve agents, sessions, fleets and formations over HTTP (SQLite persistence)",
        description="Serve agents, sessions, fleets and formations over HTTP, persisted in SQLite. "
        "OpenAPI document at /openapi.json, interactive docs at /docs.",
    )
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT})")
    p.add_argument("--db", default=str(DEFAULT_DB_PATH), metavar="PATH",
                   help=f"SQLite database, created with its folder (default: {DEFAULT_DB_PATH})")
    p.add_argument("--token", default=None,
                   help=f"require 'Authorization: Bearer TOKEN' on every route but /health (default: ${TOKEN_ENV})")
    p.add_argument("--work-root", default=None, metavar="DIR",
                   help="session and fleet work_dirs must lie under DIR (default: the current directory)")
    p.add_argument("--no-bash", action="store_true", help="disable the bash tool server-wide")
    p.add_argument("--functions", action="append", default=[], metavar="MODULE",
                   help="import MODULE for formation functions and predicates (repeatable)")
    p.add_argument("--no-entry-points", action="store_true",
                   help="do not load the wingman_actors.functions entry-point group")
    p.add_argument("--request-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="time limit of non-streaming requests (default: 60)")
    p.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                   help="let browser pages from ORIGIN call the API, e.g. http://localhost:5173 (repeatable)")
    p.add_argument("--threads", type=int, default=64,
                   help="worker threads for database work and runs (default: 64)")
    p.set_defaults(func=serve)
    return p


def build_config(args: argparse.Namespace) -> ServerConfig:
    """The :class:`ServerConfig` the parsed ``serve`` arguments describe."""
    token = args.token if args.token is not None else (os.environ.get(TOKEN_ENV) or None)
    return ServerConfig(
        db_path=args.db,
        token=token,
        work_root=Path(args.work_root) if args.work_root else Path.cwd(),
        allow_bash=not args.no_bash,
        request_timeout=args.request_timeout,
        functions=tuple(args.functions),
        entry_points=not args.no_entry_points,
        worker_threads=args.threads,
        cors_origins=tuple(args.cors_origin),
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(args: argparse.Namespace) -> int:
    """Run the server until interrupted; returns the exit code (2 on a configuration error)."""
    import uvicorn

    from .app import create_app
    from .store import Store

    try:
        config = build_config(args)
        Store(config.database).close()  # create and migrate now: errors show before listening
        app = create_app(config)
    except (ValueError, ImportError, OSError, RuntimeError) as exc:
        print(f"wingman-actors serve: {exc}", file=sys.stderr)
        return 2
    if config.token is None and not _is_loopback(args.host):
        print(
            f"wingman-actors serve: warning: listening on {args.host} without a token; anyone who can reach "
            f"it can run agents. Pass --token or set {TOKEN_ENV}.",
            file=sys.stderr,
        )
    print(f"wingman-actors serve: http://{args.host}:{args.port} (database {config.database})", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info", timeout_graceful_shutdown=10)
    return 0
