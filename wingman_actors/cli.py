"""The ``wingman-actors`` launcher (also ``python -m wingman_actors``).

Commands:

* ``run FORMATION``: run a formation (a ``.py`` file, a module name exposing
  ``formation`` or ``build(**options)``, or a ready formation such as ``budget``) with
  live progress; prints its outputs on stdout, everything else on stderr.
* ``resume RUN_ID``, ``runs``: continue a journalled run, list the runs of a store (``run``
  journals every run in a store in the user's data directory unless given ``--store PATH``
  or ``--no-store``; see :mod:`wingman_actors._launcher.stores`); ``runs history RUN_ID``
  lists a run's visits and ``fork RUN_ID --at NODE --output JSON`` starts a new run from
  one (:mod:`wingman_actors._launcher.history`); ``runs cancel RUN_ID`` cancels a run in
  whatever process runs it (:mod:`wingman_actors._launcher.run_cancel`).
* ``graph FORMATION``: draw it as Mermaid, DOT or PNG.
* ``providers``: the registered providers, how to configure each, and which one ``run``
  would use now.
* ``bench``, ``serve``, ``ui`` (the run viewer over a run store): from their own layers (see
  :data:`COMMANDS`).
* ``version`` (also ``--version``).

Exit codes: 0 done; 1 the run failed (one line naming the node and the cause; the
traceback with ``--debug``); 2 bad usage, a bad formation, or a path, port or module
that cannot be used; 130 interrupted (Ctrl-C; a journalled run ends by printing the
``resume`` command that continues it); 143 terminated by SIGTERM (likewise); 141 stdout
closed early (``| head``).

Start-up stays fast: a command's modules are imported only when that command runs, so
``--help``, ``--version`` and ``version`` import neither the runtime nor the server.
To add a command, add a :class:`Command` to :data:`COMMANDS` naming a function
``add_X_parser(subparsers)`` that registers it with ``set_defaults(func=handler)``,
``handler(args) -> int``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from . import __version__

__all__ = ["COMMANDS", "Command", "build_parser", "main"]

PROG = "wingman-actors"

LOG_LEVELS = ("debug", "info", "warning", "error")

_RUN_EPILOG = """\
FORMATION: a .py file, a module name, or a ready formation by name (budget, research).

stdout carries only the outputs (`run budget > report.md` writes a clean report); the
provider and input lines, the live view and the summary go to stderr.

provider: --provider ID (see `wingman-actors providers`; `sample` = the formation's
offline sample replies), else WINGMAN_PROVIDER (+ WINGMAN_MODEL, WINGMAN_BASE_URL), else
ANTHROPIC_API_KEY -> anthropic, else the formation's sample replies.

input: --input TEXT_OR_PATH is passed as given (budget reads the PDF at that path);
--input @FILE passes the file's text; --input - reads standard input.

store: every run is journalled in runs.sqlite in your data directory (or in
$WINGMAN_ACTORS_DATA_DIR), or in --store PATH; --no-store opts out. A run that fails or
is cut short by Ctrl-C ends by printing the `wingman-actors resume RUN_ID` command that
continues it; `wingman-actors runs` lists the runs.

examples:
  wingman-actors run budget
  wingman-actors run formations/budget.py --input ~/statement-october.pdf --json
  wingman-actors run research --input "urban beekeeping" --provider ollama --model llama3.2
"""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose unknown flags are reported by the subcommand that got
    them (``run --bogus`` shows ``run``'s usage, not the top-level one)."""

    commands: dict[str, argparse.ArgumentParser]

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed, extras = self.parse_known_args(args, namespace)
        if extras and not getattr(parsed, "unavailable", False):  # an unavailable command says why instead
            target = self.commands.get(getattr(parsed, "command", None) or "", self)
            target.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


@dataclass(frozen=True)
class Command:
    """A subcommand of the launcher.

    Attributes:
        name: the command, e.g. ``"serve"``.
        help: its line in ``wingman-actors --help``.
        add: ``"module:function"`` (imported only when the command is used) or a
            function; called with the subparsers object, it adds the command's parser.
    """

    name: str
    help: str
    add: str | Callable[[Any], object]


def _add_run(sub: Any) -> None:
    p = sub.add_parser("run", parents=[_common()], help="run a formation with live progress",
                       description="Run a formation and print its outputs.", epilog=_RUN_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("formation", metavar="FORMATION",
                   help="a .py file, a module name, or a ready formation: budget, research")
    p.add_argument("--input", "-i", metavar="PATH_OR_TEXT", help="the run's input (default: the formation's)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--store", metavar="PATH", help="journal the run in this run store (a SQLite file or a "
                                                       "postgresql:// URL) instead of the default one in your data "
                                                       "directory")
    where.add_argument("--no-store", action="store_true", help="do not journal the run (it cannot be resumed)")
    _run_options(p)
    p.set_defaults(func=_cmd_run)


def _add_resume(sub: Any) -> None:
    p = sub.add_parser("resume", parents=[_common()], help="continue a journalled run (failed, cut short, suspended)",
                       description="Continue a run journalled by `run`: journalled nodes are not run "
                                   "again. Options as for `run`.")
    p.add_argument("resume_id", metavar="RUN_ID", help="the run (see `wingman-actors runs`)")
    p.add_argument("--store", metavar="PATH", help="the run store the run is journalled in, a SQLite file or a "
                                                   "postgresql:// URL (default: the default store in your data "
                                                   "directory)")
    p.add_argument("--answer", metavar="JSON", help="the answer to the run's pending interrupt (JSON, else text)")
    p.add_argument("--formation", metavar="FORMATION", dest="formation_file",
                   help="the formation to continue the run with (a .py file, a module name or a ready formation), "
                        "for a run that does not record its file (one started from Python); default: the "
                        "file the run records")
    _run_options(p)
    p.set_defaults(func=_cmd_resume)


def _run_options(p: Any) -> None:
    p.add_argument("--provider", metavar="ID", help="the provider of every agent (default: see below)")
    p.add_argument("--model", metavar="M", help="the provider's model")
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="a provider option (JSON value, else text), e.g. temperature=0.2; repeatable")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.add_argument("--events", action="store_true", help="print every event (JSON lines with --json)")
    p.add_argument("--timeout", type=_seconds, metavar="SECONDS", help="fail the run after this long")
    p.add_argument("--backend", choices=("threads", "ray"), default="threads",
                   help="where node actors live: threads (default) or ray (needs wingman-actors[ray])")
    p.add_argument("--ray-address", metavar="ADDR", help="with --backend ray: join this cluster ('auto', host:port, ray://...)")
    p.add_argument("--break-before", action="append", metavar="NODE",
                   help="suspend the run before NODE runs, as interrupt() does (repeatable; needs a store); "
                        "continue it with `resume`")
    p.add_argument("--break-after", action="append", metavar="NODE",
                   help="suspend the run after NODE ran, with its output (repeatable; needs a store)")
    p.add_argument("--sample-latency", type=seconds_or_zero, metavar="SECONDS",
                   help="seconds each sample reply takes (default: the formation's SAMPLE_LATENCY_S on a "
                        "terminal, so the live view shows the run; 0 otherwise)")


def _add_graph(sub: Any) -> None:
    p = sub.add_parser("graph", parents=[_common()], help="draw a formation (Mermaid, DOT or PNG)")
    p.add_argument("formation", metavar="FORMATION", help="a .py file, a module name, or a ready formation")
    p.add_argument("--format", "-f", choices=("mermaid", "dot", "png"), default="mermaid",
                   help="mermaid (default) or dot print text; png needs Graphviz's `dot`")
    p.add_argument("--output", "-o", metavar="PATH", help="write to PATH (png default: NAME.png)")
    p.set_defaults(func=_cmd_graph)


def _add_providers(sub: Any) -> None:
    p = sub.add_parser("providers", help="list providers, how to configure each, and which `run` uses")
    p.set_defaults(func=_cmd_providers)


def _add_version(sub: Any) -> None:
    p = sub.add_parser("version", help="print the version")
    p.set_defaults(func=_cmd_version)


COMMANDS: tuple[Command, ...] = (
    Command("run", "run a formation with live progress", _add_run),
    Command("resume", "continue a journalled run (failed, cut short, suspended)", _add_resume),
    Command("graph", "draw a formation (Mermaid, DOT or PNG)", _add_graph),
    Command("providers", "list providers, how to configure each, and which `run` uses", _add_providers),
    Command("bench", "measure the runtime against its targets", "wingman_actors._bench.cli:add_bench_parser"),
    Command("serve", "serve agents, sessions, fleets and formations over HTTP (SQLite persistence)",
            "wingman_actors.server._cli:add_serve_parser"),
    Command("ui", "open the run viewer over a run store in the browser",
            "wingman_actors.server._viewer_store:add_ui_parser"),
    Command("mcp", "Model Context Protocol: serve tools to MCP clients",
            "wingman_actors.integrations._mcp_command:add_mcp_parser"),
    Command("runs", "list the runs journalled in a run store", "wingman_actors._launcher.runs:add_runs_parser"),
    Command("fork", "start a new run from a journalled run, with one node visit's output replaced",
            "wingman_actors._launcher.history:add_fork_parser"),
    Command("version", "print the version", _add_version),
)
"""The launcher's commands, in the order ``--help`` lists them."""


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    common.add_argument("--param", action="append", metavar="NAME=VALUE",
                        help="an option for the formation's build() (JSON value, else text); repeatable")
    # Also accepted after the command; SUPPRESS keeps the top-level value when absent.
    common.add_argument("--log-level", type=str.lower, choices=LOG_LEVELS, default=argparse.SUPPRESS,
                        help="log messages (and library warnings) from this level on, on stderr")
    return common


def _cmd_run(args: argparse.Namespace) -> int:
    from ._launcher.run import run_command

    return run_command(args)


def _cmd_resume(args: argparse.Namespace) -> int:
    from ._launcher.durable import resume_command

    return resume_command(args)


def _cmd_graph(args: argparse.Namespace) -> int:
    from ._launcher.graph import graph_command

    return graph_command(args)


def _cmd_providers(args: argparse.Namespace) -> int:
    from ._launcher.providers import providers_text

    print(providers_text())
    return 0


def _cmd_version(args: argparse.Namespace) -> int:
    print(f"{PROG} {__version__}")
    return 0


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The launcher's argument parser.

    Args:
        command: build only this command's parser in full (the others are listed with
            their help line but import nothing; ``""`` builds none); None builds every
            command.
    """
    parser = _Parser(prog=PROG, description="An actor-model runtime for agent formations.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.add_argument("--log-level", type=str.lower, choices=LOG_LEVELS, default="warning",
                        help="log messages (and library warnings) from this level on, on stderr (default: warning)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for cmd in COMMANDS:
        if command is None or command == cmd.name:
            _add_command(cmd, sub)
        else:
            sub.add_parser(cmd.name, help=cmd.help, add_help=False)
    parser.commands = dict(sub.choices)
    return parser


def _add_command(cmd: Command, sub: Any) -> None:
    add = cmd.add
    if isinstance(add, str):
        module, _, name = add.partition(":")
        try:
            add = getattr(importlib.import_module(module), name)
        except ImportError as exc:
            from .errors import MissingExtraError

            # A missing extra says which one to install (MissingExtraError); anything else is a broken install.
            extra = isinstance(exc, MissingExtraError)
            reason = str(exc) if extra else f"{type(exc).__name__}: {exc}"
            p = sub.add_parser(cmd.name, help=cmd.help, add_help=False)
            p.set_defaults(func=lambda args: _unavailable(cmd.name, reason, extra), unavailable=True)
            return
    add(sub)


def _unavailable(name: str, reason: str, extra: bool = False) -> int:
    if extra:  # the message names the extra and the pip command
        print(f"{PROG}: error: {reason}", file=sys.stderr)
    else:
        print(f"{PROG}: error: the {name} command is not available here ({reason}); "
              f"reinstall wingman-actors with its dependencies", file=sys.stderr)
    return 2


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names (the first word that is not an option)."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--log-level":
            skip = True
        elif arg == "--":
            return None
        elif not arg.startswith("-"):
            return arg
    return None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 seconds, got {text}")
    return value


def seconds_or_zero(text: str) -> float:
    """An argparse type: a number of seconds >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0 seconds, got {text}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``wingman-actors`` command; returns the exit code.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_in(argv) or "")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or argparse's own usage error (code 2)
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    with _logging(args.log_level), _sigterm_stops_like_ctrl_c():
        return _dispatch(args)


@contextlib.contextmanager
def _sigterm_stops_like_ctrl_c() -> Iterator[None]:
    """While the command runs, SIGTERM raises :class:`Terminated` (a ``KeyboardInterrupt``)
    in the main thread instead of killing the process at once, so a run is stopped and
    journalled as on Ctrl-C. The previous handler is put back afterwards."""
    import signal
    import threading

    from ._launcher.errors import Terminated

    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return

    def terminate(signum: int, frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _dispatch(args: argparse.Namespace) -> int:
    from ._launcher.errors import UsageError, cut_short
    from .errors import FormationSetupError, MissingExtraError, WingmanError

    debug = bool(getattr(args, "debug", False))
    try:
        code: int = args.func(args)
    except KeyboardInterrupt as exc:
        how, code = cut_short(exc)
        print(f"\n{PROG}: {how}", file=sys.stderr)
        return code
    except BrokenPipeError:  # `wingman-actors run ... | head`: the reader left; say nothing more
        _silence_stdout()
        return 141
    except FormationSetupError as exc:
        if isinstance(exc.__cause__, MissingExtraError):  # `--backend ray` without Ray: not the declaration's fault
            if debug:
                traceback.print_exception(exc, file=sys.stderr)
            print(f"{PROG}: error: {exc.__cause__} (or use the default --backend threads)", file=sys.stderr)
            return 2
        _report(exc, debug, hint="fix the formation's declaration")
        return 2
    except (UsageError, MissingExtraError) as exc:
        _report(exc, debug)
        return 2
    except WingmanError as exc:
        _report(exc, debug)
        return 1
    return code


@contextlib.contextmanager
def _logging(level: str) -> Iterator[None]:
    """Log records, and warnings from libraries (pypdf, ...), go to stderr through one
    handler, from ``level`` on; undone afterwards (``main`` may run in-process)."""
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG}: %(levelname)s: %(name)s: %(message)s"))
    handler.setLevel(level.upper())
    before = root.level
    root.addHandler(handler)
    root.setLevel(min(before or logging.WARNING, handler.level))
    logging.captureWarnings(True)
    try:
        yield
    finally:
        logging.captureWarnings(False)
        root.removeHandler(handler)
        root.setLevel(before)


def _silence_stdout() -> None:
    # Python would report the broken pipe again when it flushes stdout at exit.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _report(exc: BaseException, debug: bool, hint: str = "") -> None:
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"{PROG}: error: {exc}", file=sys.stderr)
    if hint and not debug:
        print(f"{PROG}: {hint} (add --debug for the traceback)", file=sys.stderr)

