"""``wingman-actors mcp serve``: built-in tools (and a module's) served over stdio.

Only the parser lives here; the MCP SDK is imported when the command runs.

Example::

    wingman-actors mcp serve --tools read,grep,glob --work-dir ./project
    wingman-actors mcp serve --tools-module my_tools.py --work-dir .
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_mcp_parser", "mcp_serve_command"]


def add_mcp_parser(sub: Any) -> None:
    """Register ``mcp serve`` on the launcher's subparsers."""
    p = sub.add_parser("mcp", help="Model Context Protocol: serve tools to MCP clients",
                       description="Model Context Protocol commands.")
    msub = p.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND", required=True)
    s = msub.add_parser(
        "serve", help="serve tools over stdio to an MCP client",
        description="Serve built-in tools (and a module's tools) over stdio, confined to --work-dir.",
    )
    s.add_argument("--tools", default="", metavar="NAMES",
                   help="comma-separated built-in tools, e.g. read,grep,glob (see the README for the list)")
    s.add_argument("--tools-module", metavar="MODULE_OR_FILE",
                   help="a module (dotted name or .py file) whose @tool functions or TOOLS list are served too")
    s.add_argument("--work-dir", default=".", metavar="DIR", help="the directory the tools may touch (default: .)")
    s.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    s.set_defaults(func=mcp_serve_command)


def mcp_serve_command(args: argparse.Namespace) -> int:
    """Run ``mcp serve``; returns the exit code (2 for bad usage)."""
    try:
        from .mcp import load_tools, serve_stdio
    except ImportError as exc:
        print(f"wingman-actors: error: {exc}", file=sys.stderr)
        return 2
    names = [n.strip() for n in args.tools.split(",") if n.strip()]
    try:
        tools = load_tools(names, args.tools_module)
        serve_stdio(tools, args.work_dir)
    except (ValueError, ImportError) as exc:
        print(f"wingman-actors: error: {exc}", file=sys.stderr)
        return 2
    return 0
