"""``runs cancel RUN_ID [--store PATH] [--no-wait]``: cancel a journalled run, wherever it runs.

A run that a live process runs (``wingman-actors run`` in another terminal, a Python
program, ``wingman-actors ui``, a server; on a PostgreSQL store, on any machine) is asked
to stop through the store (``RunStore.request_cancel``): its process cancels it within a
second, and the command waits (10 s at most, unless ``--no-wait``) until the store says so.
A suspended or interrupted run, which nothing runs, is marked ``cancelled`` at once. Either
way the run can be resumed later. A run that has finished is left alone (exit 1).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .errors import UsageError, unknown_run

__all__ = ["add_cancel_parser", "cancel_command"]

_WAIT_S = 10.0


def add_cancel_parser(sub: Any) -> None:
    """Register ``runs cancel RUN_ID [--store PATH] [--no-wait]`` under ``runs``."""
    p = sub.add_parser("cancel", help="cancel a run, in whatever process runs it (or a suspended run)",
                       description="Cancel a journalled run. A run going on in another process (a launcher, a "
                                   "Python program, a server, the run viewer) is asked to stop through the run "
                                   "store, and stops within a second; a suspended or interrupted run is marked "
                                   "cancelled. The run can be resumed later.")
    p.add_argument("run_id", metavar="RUN_ID", help="the run (see `wingman-actors runs`)")
    p.add_argument("--store", metavar="PATH", default=argparse.SUPPRESS,
                   help="the run store's SQLite file or postgresql:// URL (default: the default store in your "
                        "data directory)")
    p.add_argument("--no-wait", action="store_true", default=False,
                   help="return once the cancel is requested, without waiting for the run's process to act")
    p.set_defaults(func=cancel_command)


def cancel_command(args: argparse.Namespace) -> int:
    """Cancel the run. Exit 0 once it is cancelled (or requested, with ``--no-wait``); 1 when
    it had finished, or its process did not act within 10 s; 2 for an unknown run or store."""
    from ..store import RunStore, StoreError, UnknownRunError
    from .stores import StoreChoice

    choice = StoreChoice.of(getattr(args, "store", None))
    if not choice.exists():
        raise UsageError(choice.missing())
    run_id = args.run_id
    try:
        with RunStore(choice.target) as store:  # (opening marks the runs of dead processes interrupted)
            if store.request_cancel(run_id):
                if args.no_wait:
                    print(f"cancel of run {run_id} requested; its process stops it within a second")
                    return 0
                return _wait(store, run_id)
            status = store.get(run_id).status
            if status in ("suspended", "interrupted"):  # nothing runs it: only its status changes
                store.set_status(run_id, "cancelled", error=f"cancelled with `wingman-actors runs cancel` while "
                                                            f"{status}", wait=True)
                print(f"run {run_id} cancelled (it was {status}; resume it to continue)")
                return 0
    except UnknownRunError as exc:
        raise unknown_run(exc, choice.flag) from exc
    except StoreError as exc:
        raise choice.unusable(exc, f"cancel run {run_id} in") from exc
    print(f"wingman-actors: run {run_id} has already finished ({status}): nothing to cancel", file=sys.stderr)
    return 1


def _wait(store: Any, run_id: str) -> int:
    deadline = time.monotonic() + _WAIT_S
    while (status := store.get(run_id).status) == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
    if status == "cancelled":
        print(f"run {run_id} cancelled")
        return 0
    if status == "running":
        print(f"wingman-actors: cancel of run {run_id} requested, but its process has not acted on it in "
              f"{_WAIT_S:g} s (a run journalled by a program that runs no formation with the store is never "
              "stopped); the request stays until the run ends", file=sys.stderr)
    else:
        print(f"wingman-actors: run {run_id} ended {status} before its process acted on the cancel", file=sys.stderr)
    return 1
