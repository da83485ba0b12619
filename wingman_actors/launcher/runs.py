"""The ``runs`` command: list the runs journalled in a run store (a table, or ``--json``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .errors import UsageError

__all__ = ["add_runs_parser", "runs_command"]


def add_runs_parser(sub: Any) -> None:
    """Register ``runs --store PATH [--status S] [--json]``."""
    from ..store import RUN_STATUSES

    p = sub.add_parser("runs", help="list the runs journalled in a run store",
                       description="List the runs of a run store (oldest first): id, formation, status, "
                                   "created and updated (UTC).")
    p.add_argument("--store", required=True, metavar="PATH", help="the run store's SQLite file")
    p.add_argument("--status", choices=RUN_STATUSES, help="only runs with this status")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    p.set_defaults(func=runs_command)


def runs_command(args: argparse.Namespace) -> int:
    """Print the store's runs. Exit 0; a missing store file is a usage error (exit 2)."""
    from ..store import RunStore

    path = Path(args.store)
    if not path.is_file():
        raise UsageError(f"--store {path}: no such file; give the path of a run store "
                         "(the file passed as store= to Formation.run or start)")
    with RunStore(path) as store:
        runs = store.runs(args.status)
    rows = [{"id": r.id, "formation": r.formation, "status": r.status,
             "created": r.created.isoformat(timespec="seconds"), "updated": r.updated.isoformat(timespec="seconds")}
            for r in runs]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no runs in {path}", file=sys.stderr)
        return 0
    columns = ("id", "formation", "status", "created", "updated")
    widths = {c: max(len(c), *(len(str(row[c])) for row in rows)) for c in columns}
    print("  ".join(c.upper().ljust(widths[c]) for c in columns).rstrip())
    for row in rows:
        print("  ".join(str(row[c]).ljust(widths[c]) for c in columns).rstrip())
    return 0
