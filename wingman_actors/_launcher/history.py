"""Time travel from the command line: ``runs history RUN_ID`` (a run's visits in order,
``RunStore.history``) and ``fork RUN_ID --at NODE --output JSON`` (``Formation.fork``:
a new run from the journal before that visit, with its output replaced; ``--input JSON``
runs the visit again with another input instead)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import UsageError, unknown_run

if TYPE_CHECKING:
    from ..store import RunRecord, RunStore
    from .stores import StoreChoice

__all__ = ["add_fork_parser", "add_history_parser", "fork_command", "history_command"]

_CUT = 60


def add_history_parser(sub: Any) -> None:
    """Register ``runs history RUN_ID [--store PATH] [--json]`` under ``runs``."""
    p = sub.add_parser("history", help="list one run's node visits in order: node, visit, status, times, output",
                       description="List a journalled run's node visits in the order they finished (fork the run "
                                   "at one with `wingman-actors fork RUN_ID --at NODE --output JSON`).")
    p.add_argument("run_id", metavar="RUN_ID", help="the run (see `wingman-actors runs`)")
    p.add_argument("--store", metavar="PATH", default=argparse.SUPPRESS,
                   help="the run store's SQLite file or postgresql:// URL (default: the default store)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print a JSON list")
    p.set_defaults(func=history_command)


def add_fork_parser(sub: Any) -> None:
    """Register ``fork RUN_ID --at NODE (--output JSON | --input JSON) [--store PATH]``."""
    p = sub.add_parser("fork", help="start a new run from a journalled run, with one node visit's output replaced",
                       description="Start a new run that reuses the journal of RUN_ID before node NODE's visit, "
                                   "replaces that visit's output (--output) or runs it again with another input "
                                   "(--input), and continues. The original run is not changed. Prints the new "
                                   "run's id on stdout.")
    p.add_argument("run_id", metavar="RUN_ID", help="the run to fork (see `wingman-actors runs history RUN_ID`)")
    p.add_argument("--at", required=True, metavar="NODE", help="the node (its first visit; NODE:VISIT for another)")
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("--output", metavar="JSON", help="the visit's new output (JSON, else text)")
    given.add_argument("--input", metavar="JSON", help="run the visit again with this input (JSON, else text)")
    p.add_argument("--store", metavar="PATH", help="the run store's SQLite file or postgresql:// URL (default: the "
                                                   "default store in your data directory)")
    p.add_argument("--formation", dest="formation_file", metavar="FILE",
                   help="the formation's file, for a run that does not record one (started from Python)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="an option for the formation's build() (JSON value, else text); repeatable")
    p.add_argument("--json", action="store_true", help="print the new run's history as JSON instead of its id")
    p.set_defaults(func=fork_command)


def _open(store: str | None) -> tuple[StoreChoice, RunStore]:
    from ..store import RunStore, StoreError
    from .stores import StoreChoice

    choice = StoreChoice.of(store)
    if not choice.exists():
        raise UsageError(choice.missing())
    try:
        return choice, RunStore(choice.target)
    except StoreError as exc:
        raise choice.unusable(exc, "open") from exc


def _rows(store: RunStore, run_id: str, choice: StoreChoice) -> list[dict[str, Any]]:
    from ..formation._result import jsonable
    from ..store import UnknownRunError
    from .run_show import load_journal

    try:
        load_journal(store, run_id)  # (imports the classes of the file the run records, if its values need them)
        visits = store.history(run_id)
    except UnknownRunError as exc:
        raise unknown_run(exc, choice.flag) from exc
    rows: list[dict[str, Any]] = jsonable([
        {"node": v.node, "visit": v.visit, "status": v.status,
         "started": None if v.started is None else v.started.isoformat(timespec="milliseconds"),
         "finished": None if v.finished is None else v.finished.isoformat(timespec="milliseconds"),
         "output": v.output, "error": v.error, "attempts": v.attempts} for v in visits])
    return rows


def _print(rows: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    columns = ("node", "visit", "status", "finished", "output")
    # (a failed visit shows the node's error: the reason around it would push it out of the column)
    cells = [{c: _cut(r["error"] if c == "output" and r["status"] == "failed" and r["error"] else r[c])
              if c == "output" else str(r[c] or "") for c in columns} for r in rows]
    widths = {c: max(len(c), *(len(x[c]) for x in cells)) if cells else len(c) for c in columns}
    print("  ".join(c.upper().ljust(widths[c]) for c in columns).rstrip())
    for x in cells:
        print("  ".join(x[c].ljust(widths[c]) for c in columns).rstrip())


def _cut(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    if not text.isascii():  # a lone surrogate (a surrogateescape'd file name) cannot be printed: escape it
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= _CUT else text[:_CUT - 1] + "…"


def history_command(args: argparse.Namespace) -> int:
    """Print the run's visits. A missing store or an unknown run is a usage error (exit 2)."""
    choice, store = _open(getattr(args, "store", None))
    with store:
        rows = _rows(store, args.run_id, choice)
    _print(rows, getattr(args, "json", False))
    return 0


def _at(text: str) -> str | tuple[str, int]:
    node, sep, visit = text.rpartition(":")
    if sep and node and visit.isdigit():
        if int(visit) < 1:
            raise UsageError(f"--at {text}: a visit number is 1 or more (--at NODE for its first visit, NODE:VISIT "
                             f"for another, e.g. {node}:2)")
        return node, int(visit)
    return text


def _formation(record: RunRecord, given: str | None, params: list[str] | None, choice: StoreChoice) -> Any:
    from ..store import SERVER_SOURCE
    from .durable import parse_answer
    from .loading import load_module

    if given is None and record.source and record.source.startswith(SERVER_SOURCE):
        raise UsageError(f"run {record.id} was started by the HTTP server; fork it there (POST /runs/{record.id}/fork "
                         '{"at": NODE, "output": ...}), or here with --formation FILE naming a file that builds the '
                         "same formation")
    if given is None and not record.source:
        command = shlex.join(["wingman-actors", "fork", record.id, *choice.flag, "--formation", "FILE"])
        raise UsageError(f"run {record.id} does not record its formation file (it was not started by "
                         f"`wingman-actors run`); name the file that builds formation {record.formation!r}: {command}")
    options = {}
    for param in params or ():
        name, sep, value = param.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--param {param!r}: expected NAME=VALUE")
        options[name.strip()] = parse_answer(value)
    formation, _ = load_module(given or str(record.source)).build(None, options)
    if given:  # the fork records it (as `run` records its file), so `resume FORK_ID` needs no --formation
        formation.source = str(Path(given).resolve()) if os.path.isfile(given) else given  # type: ignore[attr-defined]
    return formation


def fork_command(args: argparse.Namespace) -> int:
    """Fork the run and print the new run's id (or its history with ``--json``). Exit 1 when
    the new run failed (it is journalled: the ``resume`` command is printed)."""
    from ..store import FormationMismatchError, UnknownRunError
    from .durable import parse_answer

    choice, store = _open(args.store)
    with store:
        try:
            record = store.get(args.run_id)
        except UnknownRunError as exc:
            raise unknown_run(exc, choice.flag) from exc
        formation = _formation(record, args.formation_file, args.param, choice)
        value = parse_answer(args.output if args.output is not None else args.input)
        given = {"output": value} if args.output is not None else {"input": value}
        try:
            new_id = formation.fork(args.run_id, store=store, at=_at(args.at), **given)
        except (ValueError, FormationMismatchError) as exc:
            raise UsageError(str(exc)) from exc
        forked = store.get(new_id)
        asked_at = _asked_at(store, forked)
        if args.json:
            print(json.dumps({"run_id": new_id, "status": forked.status,
                              "history": _rows(store, new_id, choice)}, indent=2))
        else:
            print(new_id)
    return _tell(forked, choice, args.formation_file, asked_at)


def _asked_at(store: RunStore, forked: RunRecord) -> str | None:
    """The node a suspended fork waits at, by path when the question came from inside a nested
    formation (``"sub/ask"``), as ``run``, ``resume`` and ``runs show`` name it (the record
    names the outer node)."""
    if forked.status != "suspended" or forked.interrupt is None:
        return None
    from ..store import StoreError
    from .run_show import load_journal, waiting_at

    try:
        waiting, _ = waiting_at(store, load_journal(store, forked.id))
    except StoreError:  # a journal that cannot be read here: the record's node
        return forked.interrupt.node
    return waiting[-1] if waiting else forked.interrupt.node


def _tell(forked: RunRecord, choice: StoreChoice, given: str | None, asked_at: str | None) -> int:
    """Say on stderr how the new run ended when it did not succeed, as ``run`` does: exit 1
    when it failed, with the ``resume`` command; its question when it suspended."""
    # the fork records the file it was given (or keeps the original's): resume finds it then
    formation = ["--formation", str(Path(given).resolve()) if os.path.isfile(given) else given] \
        if given and not forked.source else []
    command = shlex.join(["wingman-actors", "resume", forked.id, *choice.flag, *formation])
    if forked.status == "failed":
        print(f"wingman-actors: the forked run {forked.id} failed: {forked.error}", file=sys.stderr)
        print(f"continue it with: {command}", file=sys.stderr)
        return 1
    if forked.status == "suspended" and forked.interrupt is not None:
        payload = json.dumps(forked.interrupt.payload, default=str, ensure_ascii=False)
        print(f"run {forked.id} is waiting at node {asked_at or forked.interrupt.node!r}: {payload}", file=sys.stderr)
        from ..formation._breakpoints import is_breakpoint

        asks = not is_breakpoint(forked.interrupt.payload)  # a breakpoint takes no answer
        print(f"{'answer' if asks else 'continue'} it with: {command}{' --answer JSON' if asks else ''}", file=sys.stderr)
    return 0
