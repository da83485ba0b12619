"""Durable runs from the command line: ``run FILE --store PATH``, ``resume RUN_ID --store
PATH [--answer JSON]``.

``resume`` reads which formation file the run came from (recorded by ``run --store``),
loads it again and continues the run with the same options as ``run`` (provider, model,
live view, ``--json``); journalled nodes show as done at once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import UsageError

__all__ = ["Durable", "resume_command"]


@dataclass(frozen=True)
class Durable:
    """The durable options of one ``run`` or ``resume`` command.

    Attributes:
        store: the run store's path, or None (not journalled).
        source: what the run records as its formation (an existing file as an absolute path).
        resume_id: the run to resume (``resume``), else None.
        answer: the answer to a suspended run's interrupt (``--answer``), else None.
    """

    store: str | None
    source: str
    resume_id: str | None = None
    answer: Any = None

    @classmethod
    def of(cls, args: argparse.Namespace, target: str) -> Durable:
        source = str(Path(target).resolve()) if os.path.isfile(target) else target
        return cls(getattr(args, "store", None), source, getattr(args, "resume_id", None),
                   getattr(args, "answer_value", None))

    def tell_resume(self, run_id: str | None, interrupt: dict[str, Any] | None) -> None:
        """Print (on stderr) the command that continues a failed or suspended run."""
        if self.store is None or not run_id:
            return
        command = f"wingman-actors resume {run_id} --store {self.store}"
        if interrupt is not None:
            payload = json.dumps(interrupt.get("payload"), default=str)
            print(f"run {run_id} is waiting at node {interrupt.get('node')!r}: {payload}", file=sys.stderr)
            print(f"answer it with: {command} --answer JSON", file=sys.stderr)
        else:
            print(f"continue it with: {command}", file=sys.stderr)


def parse_answer(text: str) -> Any:
    """``--answer``: a JSON value, else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def resume_command(args: argparse.Namespace) -> int:
    """``wingman-actors resume RUN_ID --store PATH``: load the run's formation file, then
    continue the run as ``run`` would run it."""
    from ..store import RunStore, UnknownRunError
    from .run import run_command

    path = Path(args.store)
    if not path.is_file():
        raise UsageError(f"--store {path}: no such file; give the run store the run was journalled in")
    with RunStore(path) as store:
        try:
            record = store.get(args.resume_id)
        except UnknownRunError as exc:
            raise UsageError(f"{exc}; list the store's runs with: wingman-actors runs --store {path}") from exc
    if not record.source:
        raise UsageError(f"run {args.resume_id} does not record its formation file (it was not started by "
                         "`wingman-actors run --store`); resume it from Python with Formation.resume")
    args.formation = record.source
    args.input = None
    args.answer_value = None if args.answer is None else parse_answer(args.answer)
    return run_command(args)
