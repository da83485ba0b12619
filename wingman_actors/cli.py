"""The ``wingman-actors`` launcher (also ``python -m wingman_actors``).

Commands:

* ``run FORMATION``: run a formation (a ``.py`` file or a module name exposing
  ``formation`` or ``build(**options)``) with live progress; prints its outputs.
* ``graph FORMATION``: draw it as Mermaid, DOT or PNG.
* ``providers``: the registered providers, how to configure each, and which one ``run``
  would use now.
* ``version``.

Exit codes: 0 done; 1 the run failed (one line naming the node and the cause; the
traceback with ``--debug``); 2 bad usage or a bad formation; 130 interrupted; 141
stdout closed early (``| head``).

Other layers add commands through :func:`_add_optional_commands`: a module exposing
``add_X_parser(subparsers)`` that registers a subcommand with
``set_defaults(func=handler)``, ``handler(args) -> int``.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from . import __version__
from .errors import FormationSetupError, WingmanError
from .launcher.errors import UsageError

__all__ = ["build_parser", "main"]

PROG = "wingman-actors"

_RUN_EPILOG = """\
provider: --provider ID (see `wingman-actors providers`; `sample` = the formation's
offline sample replies), else WINGMAN_PROVIDER (+ WINGMAN_MODEL, WINGMAN_BASE_URL), else
ANTHROPIC_API_KEY -> anthropic, else the formation's sample replies.

input: --input TEXT_OR_PATH is passed as given (budget reads the PDF at that path);
--input @FILE passes the file's text; --input - reads standard input.

examples:
  wingman-actors run formations/budget.py
  wingman-actors run formations.budget --input ~/statement-october.pdf --json
  wingman-actors run formations/research.py --input "urban beekeeping" --provider ollama --model llama3.2
"""


def _cmd_run(args: argparse.Namespace) -> int:
    from .launcher.run import run_command

    return run_command(args)


def _cmd_graph(args: argparse.Namespace) -> int:
    from .launcher.graph import graph_command

    return graph_command(args)


def _cmd_providers(args: argparse.Namespace) -> int:
    from .launcher.providers import providers_text

    print(providers_text())
    return 0


def _cmd_version(args: argparse.Namespace) -> int:
    print(f"{PROG} {__version__}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The launcher's argument parser, optional commands included."""
    parser = argparse.ArgumentParser(prog=PROG, description="An actor-model runtime for agent formations.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    common.add_argument("--param", action="append", metavar="NAME=VALUE",
                        help="an option for the formation's build() (JSON value, else text); repeatable")

    p = sub.add_parser("run", parents=[common], help="run a formation with live progress",
                       description="Run a formation and print its outputs.", epilog=_RUN_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("formation", metavar="FORMATION", help="a .py file or a module name, e.g. formations/budget.py")
    p.add_argument("--input", "-i", metavar="PATH_OR_TEXT", help="the run's input (default: the formation's)")
    p.add_argument("--provider", metavar="ID", help="the provider of every agent (default: see below)")
    p.add_argument("--model", metavar="M", help="the provider's model")
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="a provider option (JSON value, else text), e.g. temperature=0.2; repeatable")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout (the provider and input lines go to stderr)")
    p.add_argument("--events", action="store_true", help="print every event (JSON lines with --json)")
    p.add_argument("--timeout", type=_seconds, metavar="SECONDS", help="fail the run after this long")
    p.add_argument("--backend", choices=("threads", "ray"), default="threads",
                   help="where node actors live: threads (default) or ray (needs wingman-actors[ray])")
    p.add_argument("--ray-address", metavar="ADDR", help="with --backend ray: join this cluster ('auto', host:port, ray://...)")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("graph", parents=[common], help="draw a formation (Mermaid, DOT or PNG)")
    p.add_argument("formation", metavar="FORMATION", help="a .py file or a module name")
    p.add_argument("--format", "-f", choices=("mermaid", "dot", "png"), default="mermaid",
                   help="mermaid (default) or dot print text; png needs Graphviz's `dot`")
    p.add_argument("--output", "-o", metavar="PATH", help="write to PATH (png default: NAME.png)")
    p.set_defaults(func=_cmd_graph)

    p = sub.add_parser("providers", help="list providers, how to configure each, and which `run` uses")
    p.set_defaults(func=_cmd_providers)
    p = sub.add_parser("version", help="print the version")
    p.set_defaults(func=_cmd_version)
    _add_optional_commands(sub)
    return parser


def _add_optional_commands(sub: Any) -> None:
    """Let other layers register subcommands (``bench``, ``serve``) when they are present."""
    try:
        from .bench.cli import add_bench_parser  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        pass
    else:
        add_bench_parser(sub)
    try:
        from .server.cli import add_serve_parser  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        pass
    else:
        add_serve_parser(sub)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0 seconds, got {text}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``wingman-actors`` command; returns the exit code.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or argparse's own usage error (code 2)
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    debug = bool(getattr(args, "debug", False))
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `wingman-actors run ... | head`: the reader left; say nothing more
        _silence_stdout()
        return 141
    except FormationSetupError as exc:
        _report(exc, debug, hint="fix the formation's declaration")
        return 2
    except UsageError as exc:
        _report(exc, debug)
        return 2
    except WingmanError as exc:
        _report(exc, debug)
        return 1
    return code


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
