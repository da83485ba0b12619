"""Durable runs from the command line: ``run FILE [--store PATH | --no-store]``,
``resume RUN_ID [--store PATH] [--answer JSON] [--formation FILE]``.

``run`` journals into the store named with ``--store``, else into the default store in
the user's data directory (:mod:`.stores`), unless ``--no-store``. A run that fails, is
cut short by Ctrl-C or is suspended by ``interrupt()`` ends by printing, on stderr, the
``resume`` command that continues it. ``resume`` reads which formation file the run came
from (recorded by ``run``; ``--formation FILE`` names it for a run started from Python,
which records none), loads it again and continues the run with the same options
as ``run`` (provider, model, live view, ``--json``); journalled nodes show as done at once.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .errors import UsageError, unknown_run
from .stores import StoreChoice, close_after_run, open_for_run

if TYPE_CHECKING:
    from ..store import RunStore

__all__ = ["Durable", "parse_answer", "resume_command"]

_SECRET_WORDS = ("key", "token", "secret", "password")


@dataclass
class Durable:
    """The durable side of one ``run`` or ``resume`` command.

    Attributes:
        store: the open run store the run is journalled in, or None (``--no-store``, or
            the default store could not be used).
        choice: which store that is (None with ``--no-store``).
        source: what the run records as its formation (an existing file as an absolute path).
        resume_id: the run to resume (``resume``), else None.
        answer: the answer to a suspended run's interrupt (``--answer``), else None.
        rerun: the command-line flags a ``resume`` of this run needs again (provider,
            model, options but secrets, params, backend, and ``--formation FILE`` when given).
        dropped: the ``--option`` keys left out of ``rerun`` because they look secret.
    """

    store: RunStore | None
    choice: StoreChoice | None
    source: str
    resume_id: str | None = None
    answer: Any = None
    rerun: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, args: argparse.Namespace, target: str, info: IO[str]) -> Durable:
        """Open the command's store (see :func:`.stores.open_for_run`)."""
        source = str(Path(target).resolve()) if os.path.isfile(target) else target
        choice = None if getattr(args, "no_store", False) else StoreChoice.of(getattr(args, "store", None))
        resume_id = getattr(args, "resume_id", None)
        store = None if choice is None else open_for_run(choice, info, required=resume_id is not None)
        rerun, dropped = _rerun_flags(args)
        return cls(store, choice, source, resume_id, getattr(args, "answer_value", None), rerun, dropped)

    def close(self) -> None:
        """Close the store (pruning the default store's old runs)."""
        if self.store is not None and self.choice is not None:
            close_after_run(self.store, self.choice)
            self.store = None

    def resume_command(self, run_id: str) -> str:
        """The ready-to-paste command that continues ``run_id`` (a PostgreSQL URL's password
        shown as ``***``, as every message shows it: put it back when pasting)."""
        flag = self.choice.flag if self.choice is not None else []
        return shlex.join(["wingman-actors", "resume", run_id, *flag, *self.rerun])

    def tell_resume(self, run_id: str | None, interrupt: dict[str, Any] | None, info: IO[str] | None = None) -> None:
        """Print (on stderr) the command that continues a failed, cut-short or suspended run."""
        out = info or sys.stderr
        if self.store is None or not run_id:
            return  # not journalled: nothing to continue
        command = self.resume_command(run_id)
        if interrupt is not None:
            from ..formation._breakpoints import is_breakpoint

            payload = json.dumps(interrupt.get("payload"), default=str, ensure_ascii=False)
            print(f"run {run_id} is waiting at node {interrupt.get('node')!r}: {payload}", file=out)
            if is_breakpoint(interrupt.get("payload")):  # a breakpoint takes no answer: resume goes on
                print(f"continue it with: {command}", file=out)
            else:
                print(f"answer it with: {command} --answer JSON", file=out)
        else:
            print(f"continue it with: {command}", file=out)
        if self.dropped:
            keys = ", ".join(self.dropped)
            print(f"(add your --option {keys} again: secrets are not echoed)", file=out, flush=True)


def _rerun_flags(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    flags: list[str] = []
    for flag, attr in (("--provider", "provider"), ("--model", "model")):
        value = getattr(args, attr, None)
        if value:
            flags += [flag, value]
    dropped: list[str] = []
    for option in getattr(args, "option", None) or ():
        key = option.partition("=")[0].strip()
        if any(word in key.lower() for word in _SECRET_WORDS):
            dropped.append(key)
        else:
            flags += ["--option", option]
    for param in getattr(args, "param", None) or ():
        flags += ["--param", param]
    if getattr(args, "backend", "threads") != "threads":
        flags += ["--backend", args.backend]
    if getattr(args, "ray_address", None):
        flags += ["--ray-address", args.ray_address]
    given = getattr(args, "formation_file", None)
    if given:  # a run started from Python records no file: name it again (a file as its absolute path)
        flags += ["--formation", str(Path(given).resolve()) if os.path.isfile(given) else given]
    return flags, dropped


def parse_answer(text: str) -> Any:
    """``--answer``: a JSON value, else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def resume_command(args: argparse.Namespace) -> int:
    """``wingman-actors resume RUN_ID [--store PATH]``: load the run's formation file, then
    continue the run as ``run`` would run it."""
    from ..formation._durable import replayed_answers, replayed_text
    from ..store import (
        SERVER_SOURCE,
        FormationMismatchError,
        RunNotResumableError,
        RunStore,
        StoreError,
        UnknownRunError,
    )
    from .run import run_command

    choice = StoreChoice.of(args.store)
    if not choice.exists():
        raise UsageError(choice.missing())
    try:
        with RunStore(choice.target) as store:
            record = top = store.get(args.resume_id)
            while top.parent is not None:  # an inner run of a nested formation: its top-level run
                top = store.get(top.parent)
            replayed = replayed_answers(store.load(args.resume_id)) if args.answer is not None else []
    except UnknownRunError as exc:
        raise unknown_run(exc, choice.flag) from exc
    except StoreError as exc:
        raise choice.unusable(exc, "read") from exc
    if top is not record:
        command = shlex.join(["wingman-actors", "resume", top.id, *choice.flag])
        raise UsageError(f"run {args.resume_id} is an inner run of run {record.parent} (a nested formation's run, "
                         f"journalled with its outer run) and is not resumed on its own; resume run {top.id} "
                         f"instead, which resumes it: {command}")
    if record.status == "succeeded":  # nothing to continue: say where its outputs are (exit 1, as the store refuses)
        show = shlex.join(["wingman-actors", "runs", "show", args.resume_id, *choice.flag])
        raise RunNotResumableError(f"run {args.resume_id} cannot be resumed: it already succeeded; see its outputs "
                                   f"with: {show}", run_id=args.resume_id, status=record.status)
    if record.status == "running":  # a live process runs it (opening the store marked dead ones interrupted)
        cancel = shlex.join(["wingman-actors", "runs", "cancel", args.resume_id, *choice.flag])
        raise RunNotResumableError(f"run {args.resume_id} cannot be resumed: it is running in a live process; wait "
                                   f"for it, or cancel it with: {cancel}", run_id=args.resume_id, status=record.status)
    given = getattr(args, "formation_file", None)
    if given is None and record.source and record.source.startswith(SERVER_SOURCE):
        raise UsageError(f"run {args.resume_id} was started by the HTTP server (`wingman-actors serve`, "
                         f"formation {record.source.removeprefix(SERVER_SOURCE)}); resume it there: "
                         f"POST /runs/{args.resume_id}/resume")
    if given is None and not record.source:
        command = shlex.join(["wingman-actors", "resume", args.resume_id, *choice.flag, "--formation", "FILE"])
        raise UsageError(f"run {args.resume_id} does not record its formation file (it was not started by "
                         f"`wingman-actors run`); name the file that builds formation {record.formation!r}: "
                         f"{command}, or resume it from Python with Formation.resume")
    if given is None and record.source and os.path.isabs(record.source) and not os.path.exists(record.source):
        command = shlex.join(["wingman-actors", "resume", args.resume_id, *choice.flag, "--formation", "FILE"])
        raise UsageError(f"run {args.resume_id} was started from {record.source}, which is not there any more; "
                         f"name the file that builds formation {record.formation!r} now: {command}")
    if args.answer is not None and record.interrupt is None and record.status not in ("succeeded", "expired"):
        again = ""
        if replayed:  # a step rejected its answer: resuming replays it, so say how to ask again
            at = f"{replayed[0].node}:{replayed[0].visit}"
            fork = shlex.join(["wingman-actors", "fork", args.resume_id, "--at", at, "--input", "JSON", *choice.flag])
            again = (f"; that replays the answers its unfinished visits were given ({replayed_text(replayed)}): to "
                     f"answer again, fork the run at that visit, which asks anew: {fork}")
        raise UsageError(f"run {args.resume_id} has no pending interrupt to answer (status {record.status}); "
                         f"resume it without --answer: {shlex.join(['wingman-actors', 'resume', args.resume_id, *choice.flag])}"
                         f"{again}")
    args.formation = given or record.source
    args.input = None
    args.answer_value = None if args.answer is None else parse_answer(args.answer)
    try:
        return run_command(args)
    except FormationMismatchError as exc:  # the file builds another formation: the flag, not the declaration
        command = shlex.join(["wingman-actors", "resume", args.resume_id, *choice.flag, "--formation", "FILE"])
        where = (f"--formation {given} builds" if given else
                 f"the file the run records, {record.source}, now builds")
        lines = "\n".join(f"  - {d}" for d in exc.differences)
        built = (f"formation {exc.formation!r} otherwise than" if exc.formation == record.formation else
                 f"formation {exc.formation!r}, not formation {record.formation!r} as")
        raise UsageError(f"{where} {built} run {args.resume_id} started with it (a run resumes only with the same "
                         f"nodes, kinds and edges). Differences:\n{lines}\n"
                         f"Name a file that builds it as it was: {command}") from exc
