"""The ``wingman-actors`` launcher.

Commands available now: ``providers`` (list registered providers and how to configure
each) and ``version``. ``run``, ``graph``, ``bench`` and ``serve`` arrive with the
formation, benchmark and server layers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__

__all__ = ["main"]


def _cmd_providers(args: argparse.Namespace) -> int:
    from .providers import list_providers

    for meta in list_providers():
        auth = ", ".join(meta.auth_types) or "none"
        env = f"; env: {', '.join(meta.env)}" if meta.env else ""
        print(f"{meta.id:<10} {meta.name} (auth: {auth}{env})")
        if meta.description:
            print(f"{'':<10} {meta.description}")
    return 0


def _cmd_version(args: argparse.Namespace) -> int:
    print(f"wingman-actors {__version__}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wingman-actors",
        description="An actor-model runtime for agent formations.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("providers", help="list registered providers and how each is configured")
    p.set_defaults(func=_cmd_providers)
    p = sub.add_parser("version", help="print the version")
    p.set_defaults(func=_cmd_version)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``wingman-actors`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    code: int = args.func(args)
    return code
