"""The ``runs`` command: list the runs journalled in a run store (a table, or ``--json``);
``runs show RUN_ID`` shows one (:mod:`.run_show`), ``runs cancel RUN_ID`` cancels one
(:mod:`.run_cancel`). JSON names a run's id ``run_id``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .errors import UsageError

__all__ = ["add_runs_parser", "runs_command"]


def add_runs_parser(sub: Any) -> None:
    """Register ``runs --store PATH [--status S] [--json]`` and ``runs show RUN_ID``."""
    from ..store import RUN_STATUSES

    p = sub.add_parser("runs", help="list the runs journalled in a run store",
                       description="List the runs of a run store (oldest first): id, formation, status, "
                                   "created and updated (UTC). `runs show RUN_ID` shows one run node by node; "
                                   "`runs cancel RUN_ID` cancels one, in whatever process runs it.")
    p.add_argument("--store", metavar="PATH", help="the run store's SQLite file, or a postgresql:// URL (default: "
                                                   "the default store in your data directory, where `run` journals)")
    p.add_argument("--status", choices=RUN_STATUSES, help="only runs with this status")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.set_defaults(func=runs_command)
    from .history import add_history_parser
    from .run_cancel import add_cancel_parser
    from .run_show import add_show_parser

    commands = p.add_subparsers(title="commands", metavar="{show,history,cancel}", dest="runs_command")
    add_show_parser(commands)
    add_history_parser(commands)
    add_cancel_parser(commands)


def runs_command(args: argparse.Namespace) -> int:
    """Print the store's runs. Exit 0 (a default store not created yet has no runs); a
    missing ``--store`` file, a folder, or a file that is no run store is a usage error (exit 2)."""
    from ..store import RunStore, StoreError
    from .stores import StoreChoice

    choice = StoreChoice.of(args.store)
    path = choice.target
    if not choice.exists():
        if choice.default:  # `run` creates it on first use
            return _print([], args.json, choice.shown, args.status)
        if choice.path.is_dir():
            raise UsageError(choice.missing())
        raise UsageError(f"--store {path}: no such file; give the path of a run store "
                         "(the file passed as store= to Formation.run or start)")
    try:
        with RunStore(path) as store:
            runs = store.runs(args.status)
    except StoreError as exc:
        raise choice.unusable(exc, "read") from exc
    rows = [{"run_id": r.id, "formation": r.formation, "status": r.status,
             "created": r.created.isoformat(timespec="seconds"), "updated": r.updated.isoformat(timespec="seconds")}
            for r in runs]
    return _print(rows, args.json, choice.shown, args.status)


def _print(rows: list[dict[str, Any]], as_json: bool, path: str | Path, status: str | None = None) -> int:
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no {status + ' ' if status else ''}runs in {path}", file=sys.stderr)
        return 0
    columns = ("run_id", "formation", "status", "created", "updated")
    widths = {c: max(len(c), *(len(str(row[c])) for row in rows)) for c in columns}
    print("  ".join(("ID" if c == "run_id" else c.upper()).ljust(widths[c]) for c in columns).rstrip())
    for row in rows:
        print("  ".join(str(row[c]).ljust(widths[c]) for c in columns).rstrip())
    return 0
