"""The ``serve`` command: ``wingman-actors serve [--host] [--port] [--db] [--token] ...``.

``wingman_actors/cli.py`` wires it in with :func:`add_serve_parser`; :func:`serve` runs it.
Every mistake on the command line — a port out of range, a ``--functions`` module that
cannot be found or imported, an address already in use — is one line on stderr and exit
code 2, before the server listens.
"""

from __future__ import annotations

import argparse
import importlib
import ipaddress
import os
import re
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .._extras import require
from ..cli import seconds_or_zero
from ..errors import WingmanError
from ._config import DEFAULT_DB_PATH, DEFAULT_MAX_BODY_BYTES, DEFAULT_PORT, TOKEN_ENV, ServerConfig

__all__ = ["ServeError", "add_serve_parser", "build_config", "functions_modules", "serve"]


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
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, help=f"port, 0-65535 (default: {DEFAULT_PORT})")
    p.add_argument("--db", default=str(DEFAULT_DB_PATH), metavar="PATH",
                   help=f"SQLite database, created with its folder (default: {DEFAULT_DB_PATH})")
    p.add_argument("--token", default=None,
                   help=f"require 'Authorization: Bearer TOKEN' on every route but /health (default: ${TOKEN_ENV})")
    p.add_argument("--work-root", default=None, metavar="DIR",
                   help="session and fleet work_dirs must lie under DIR (default: the current directory)")
    p.add_argument("--no-bash", action="store_true", help="disable the bash tool server-wide")
    p.add_argument("--functions", action="append", default=[], metavar="MODULE",
                   help="a module name (resolved from the current directory too) or a .py file to import "
                        "for formation functions and predicates (repeatable)")
    p.add_argument("--mcp-command", action="append", default=[], metavar="PROGRAM",
                   help="a program stored agents' MCP servers may run ({\"command\": [PROGRAM, ...]}), beside "
                        "executables under the work root and this Python; repeatable, e.g. --mcp-command npx")
    p.add_argument("--no-entry-points", action="store_true",
                   help="do not load the wingman_actors.functions entry-point group")
    p.add_argument("--request-timeout", type=_positive(float), default=60.0, metavar="SECONDS",
                   help="time limit of non-streaming requests (default: 60)")
    p.add_argument("--max-body-bytes", type=_positive(int), default=DEFAULT_MAX_BODY_BYTES, metavar="N",
                   help="the largest request body read; a larger one is refused with 413 "
                        f"(default: {DEFAULT_MAX_BODY_BYTES}, 4 MiB)")
    p.add_argument("--suspend-ttl", type=_positive(float), default=7 * 24 * 3600.0, metavar="SECONDS",
                   help="how long a formation run suspended by interrupt() waits for its answer before it "
                        "expires (default: 604800, 7 days)")
    p.add_argument("--journal-retention", type=seconds_or_zero, default=30 * 24 * 3600.0, metavar="SECONDS",
                   help="how long finished formation runs stay in the run journal; older ones are pruned at "
                        "start-up and every hour; 0 keeps them forever (default: 2592000, 30 days; at least --suspend-ttl)")
    p.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                   help="let browser pages from ORIGIN call the API, e.g. http://localhost:5173 (repeatable)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="a host name clients may reach the server by, besides the bound address and "
                        "loopback names, e.g. wingman.lan (repeatable)")
    p.add_argument("--run-store", default=None, metavar="URL",
                   help="journal formation runs in this PostgreSQL run store (postgresql://user:password@host/db; "
                        "the postgres extra) instead of the database file, so several server processes share "
                        "runs; agents, sessions, fleets, formations and run records stay in --db")
    p.add_argument("--run-store-lease", type=_positive(float), default=None, metavar="SECONDS",
                   help="with --run-store: how long this server's runs stay running after its last lease renewal "
                        "before another server may resume them (default: the store's, 15)")
    p.add_argument("--threads", type=_positive(int), default=64,
                   help="worker threads for database work and runs (default: 64)")
    p.set_defaults(func=serve)
    return p


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number; pass 0-65535") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is out of range; pass a port from 0 to 65535 (0: any free port)")
    return value


def _positive(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a{'n integer' if kind is int else ' number'}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value

    return parse


class ServeError(WingmanError, ValueError):
    """A ``serve`` argument that cannot work; the message names it and the fix (also a ``ValueError``)."""


def functions_modules(values: Sequence[str], cwd: Path | None = None) -> tuple[str, ...]:
    """The module names ``--functions`` values stand for, with their folders on ``sys.path``.

    A value ending in ``.py`` or holding a path separator is a file: imported by its dotted
    name when it sits in a package (a folder with ``__init__.py``), else by its stem, from
    the folder holding it. Any other value is a module name, resolved from the current
    directory too (as ``wingman-actors run`` and ``python -m`` do).

    Raises:
        ServeError: a file that does not exist, or a value that is neither.
    """
    cwd = Path.cwd() if cwd is None else cwd
    names: list[str] = []
    for value in values:
        if value.endswith(".py") or "/" in value or os.sep in value:
            path = (cwd / Path(value).expanduser()).resolve()
            if not path.is_file():
                raise ServeError(f"--functions {value}: no such file; pass a .py file or a module name "
                                 "such as my_pkg.functions")
            parts = [path.stem]
            root = path.parent
            while (root / "__init__.py").is_file():
                parts.insert(0, root.name)
                root = root.parent
            _on_path(root)
            names.append(".".join(parts))
        elif value and all(part.isidentifier() for part in value.split(".")):
            _on_path(cwd)
            names.append(value)
        else:
            raise ServeError(f"--functions {value!r}: not a module name nor a .py file; pass e.g. "
                             "my_pkg.functions or ./functions.py")
    return tuple(names)


def _on_path(folder: Path) -> None:
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def _import_functions(names: Sequence[str], values: Sequence[str]) -> None:
    """Import every ``--functions`` module now, so a broken one is one line, not a traceback."""
    for name, value in zip(names, values, strict=True):
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
                raise ServeError(f"--functions {value}: no module named {name!r}; run from the folder that "
                                 "holds it, pass its .py file, or install it") from exc
            raise ServeError(f"--functions {value}: importing it failed: {type(exc).__name__}: {exc}") from exc
        except Exception as exc:  # the user's module raised while importing: say where, not how
            where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
            raise ServeError(f"--functions {value}: importing it failed: {type(exc).__name__}{where}: {exc}; "
                             "fix the module") from exc


def build_config(args: argparse.Namespace) -> ServerConfig:
    """The :class:`ServerConfig` the parsed ``serve`` arguments describe.

    Raises:
        ServeError: a ``--functions`` value names no file or module.
    """
    token = args.token if args.token is not None else (os.environ.get(TOKEN_ENV) or None)
    # A server bound to a name (``--host wingman.lan``) is reached by that name: allow it.
    named = [] if _is_ip(args.host) or args.host in ("", "localhost") else [args.host]
    return ServerConfig(
        db_path=args.db,
        token=token,
        work_root=Path(args.work_root) if args.work_root else Path.cwd(),
        allow_bash=not args.no_bash,
        request_timeout=args.request_timeout,
        functions=functions_modules(args.functions),
        entry_points=not args.no_entry_points,
        worker_threads=args.threads,
        cors_origins=tuple(args.cors_origin),
        allowed_hosts=(*args.allowed_host, *named),
        suspend_ttl=args.suspend_ttl,
        journal_retention=args.journal_retention or None,
        mcp_commands=tuple(args.mcp_command),
        run_store=args.run_store,
        run_store_lease=args.run_store_lease,
        max_body_bytes=args.max_body_bytes,
    )


def _shown(url: str) -> str:
    """``url`` with its password hidden."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _listen(host: str, port: int) -> socket.socket:
    """Bind the server's socket now, so a port in use is a clear error before startup.

    Raises:
        ServeError: the address cannot be resolved or bound.
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise ServeError(f"--host {host}: cannot resolve it ({exc.strerror}); pass an address such as "
                         "127.0.0.1 or 0.0.0.0") from exc
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        fix = "pass another --port, or stop what listens there" if exc.errno in (98, 48) else \
            "pass another --host or --port (ports below 1024 need privileges)"
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; {fix}") from exc
    sock.set_inheritable(True)
    return sock


def serve(args: argparse.Namespace) -> int:
    """Run the server until interrupted; returns the exit code (2 on a configuration error)."""
    with require("server", "wingman-actors serve"):
        import uvicorn

    from ._app import create_app, freeze_startup_heap
    from ._journal import open_journal
    from ._store import Store

    try:
        config = build_config(args)
        _import_functions(config.functions, args.functions)
        Store(config.database).close()  # create and migrate now: errors show before listening
        open_journal(config, recover=False).close()  # and the run journal (beside its tables, or PostgreSQL)
        app = create_app(config)
        sock = _listen(args.host, args.port)
    except (ValueError, ImportError, OSError, RuntimeError) as exc:
        one_line = " ".join(part.strip() for part in str(exc).splitlines())  # (a driver's may hold several)
        print(f"wingman-actors serve: error: {one_line}", file=sys.stderr)
        return 2
    if config.token is None and not _is_loopback(args.host):
        print(
            f"wingman-actors serve: warning: listening on {args.host} without a token; anyone who can reach "
            f"it can run agents. Pass --token or set {TOKEN_ENV}.",
            file=sys.stderr,
        )
    port = sock.getsockname()[1]
    journal = "" if config.run_store is None else f", run store {_shown(config.run_store)}"
    print(f"wingman-actors serve: http://{args.host}:{port} (database {config.database}{journal})", file=sys.stderr)
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=port, log_level="info",
                                           timeout_graceful_shutdown=10))
    freeze_startup_heap()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    return 0
