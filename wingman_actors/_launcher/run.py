"""The ``run`` command: load a formation, choose its provider, run it with progress, print
the outputs (text, or one JSON document with ``--json``).

stdout carries only the outputs (``run budget > report.md`` writes a clean report, and
``--json`` one document, or JSON lines with ``--events``); the provider and input lines,
the live view, readable event lines and the closing summary go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .._extras import require
from ..actors._nodes import render_input
from ..errors import FormationRuntimeError, WingmanError
from ..formation import Formation, RunOptions
from ..formation._plan import Plan
from ..formation._result import FormationResult, jsonable
from ..formation.events import FormationEvent, FormationEventType
from ..providers._base import Provider
from .durable import Durable
from .errors import UsageError, cut_short
from .loading import FormationModule, load_module
from .metering import LiveUsage, MeteredProvider
from .progress import EventPrinter, LiveProgress, RunBoard
from .providers import (
    SAMPLE,
    ProviderChoice,
    choose_provider,
    describe_choice,
    make_provider,
    parse_assignments,
)
from .samples import SampleReplies

with require("cli", "the launcher's terminal view"):
    from rich.console import Console

__all__ = ["failure_message", "format_output", "resolve_input", "run_command"]

SAMPLE_LABEL = "sample replies: offline, not from a model"


def run_command(args: argparse.Namespace) -> int:
    """``wingman-actors run``: 0 when the run succeeds, 1 when it fails.

    Raises:
        UsageError: bad flags, input or formation module (the launcher exits with 2).
        FormationSetupError: the formation is not valid (exit 2).
    """
    info = sys.stderr  # stdout is for the outputs only
    loaded = load_module(args.formation)
    live = not args.json and sys.stderr.isatty()
    choice = choose_provider(args.provider, args.model, args.option or (), os.environ)
    latency = args.sample_latency if args.sample_latency is not None else (loaded.sample_latency() if live else 0.0)
    provider, samples = _provider_for(choice, loaded, latency)
    per_agent = provider if isinstance(provider, SampleReplies) else None
    print(describe_choice(choice, provider, samples=samples), file=info, flush=True)
    usage = LiveUsage()
    if live and provider is not None:  # tokens and fleet items show while nodes run
        provider = MeteredProvider(provider, usage)
    formation, took_provider = loaded.build(provider, parse_assignments(args.param or (), "--param"))
    if per_agent is not None:
        per_agent.attach(formation)
    plan = formation.validate()
    if getattr(args, "resume_id", None) is not None:
        value, label = None, f"resuming run {args.resume_id} (journalled nodes are not run again)"
    else:
        value, label = resolve_input(args.input, loaded)
    board = RunBoard(_rows(plan))
    usage.attach(formation, board)
    if live:
        progress: Any = LiveProgress(board, f"formation {formation.name}", console=Console(stderr=True),
                                     echo=args.events)
    elif args.events:  # JSON lines are output (the result document ends them); text lines are not
        progress = EventPrinter(sys.stdout if args.json else sys.stderr, as_json=args.json)
    else:
        progress = None
    backend = getattr(args, "backend", "threads")
    address = getattr(args, "ray_address", None)
    if address is not None and backend != "ray":
        raise UsageError("--ray-address needs --backend ray")
    _check_breakpoint_names(args, plan)
    durable = Durable.open(args, loaded.target, info)
    try:
        _check_breakpoint_store(args, durable)
        formation.source = durable.source  # type: ignore[attr-defined]  # recorded on the run, for `resume`
        print(f"input: {label}", file=info, flush=True)
        options = RunOptions(
            timeout=args.timeout, provider=None if took_provider else provider, backend=backend,
            backend_options={"address": address} if address is not None else None, store=durable.store,
            run_id=durable.resume_id, break_before=getattr(args, "break_before", None),
            break_after=getattr(args, "break_after", None),
        )
        outcome = _drive(formation, value, options, board, progress, durable)
        head = {"formation": formation.name, "provider": _provider_id(choice, samples),
                "model": getattr(provider, "model", None), "sample_replies": samples}
        return _report(outcome, head, samples, durable, args)
    finally:
        durable.close()


def _report(outcome: FormationResult | FormationRuntimeError | CutShort | Cancelled, head: dict[str, Any], samples: bool,
            durable: Durable, args: argparse.Namespace) -> int:
    """Print the outcome (outputs on stdout, the rest on stderr); the exit code."""
    if isinstance(outcome, CutShort):  # Ctrl-C: the formation is stopped, the run journalled as interrupted
        how, code = cut_short(outcome.signal)
        print(f"\nwingman-actors: {how}{_journalled(outcome.run_id, durable)}", file=sys.stderr)
        durable.tell_resume(outcome.run_id, None)
        return code
    if isinstance(outcome, Cancelled):  # asked to through the run store (`runs cancel`, the run viewer)
        print(f"wingman-actors: run {outcome.run_id} was cancelled (a cancel requested through the run store)"
              f"{'; it is journalled (status cancelled) and can be resumed' if durable.store is not None else ''}",
              file=sys.stderr)
        durable.tell_resume(outcome.run_id, None)
        if args.json:
            _print_json({**head, "run_id": outcome.run_id, "status": "cancelled"}, compact=args.events)
        return 1
    if isinstance(outcome, FormationRuntimeError):
        print(f"wingman-actors: {failure_message(outcome)}", file=sys.stderr)
        durable.tell_resume(outcome.run_id, None)
        if args.debug:
            traceback.print_exception(outcome, file=sys.stderr)
        if args.json:
            _print_json({**head, **_failure_dict(outcome)}, compact=args.events)
        return 1
    if args.json:
        _print_json({**head, **outcome.to_dict()}, compact=args.events)
    elif outcome.status != "suspended":
        _print_outputs(outcome, samples, sys.stdout, sys.stderr)
    if outcome.status == "suspended":
        durable.tell_resume(outcome.run_id, outcome.interrupt)
    return 0


def _check_breakpoint_names(args: argparse.Namespace, plan: Plan) -> None:
    """``--break-before``/``--break-after`` name nodes of the formation; else a usage error
    naming the flag (the library's error would blame the declaration)."""
    for flag in ("break_before", "break_after"):
        for name in getattr(args, flag, None) or ():
            outer = name.split("/", 1)[0]
            if name not in plan.nodes and "/" in name and outer in plan.nodes:  # a path, as events name it
                option = f"--{flag.replace('_', '-')}"
                raise UsageError(f"{option} {name}: {name!r} is inside the nested formation {outer!r}, and "
                                 f"breakpoints name the formation's own nodes: stop at the nested node as a whole "
                                 f"({option} {outer})")
            if name not in plan.nodes:
                nodes = ", ".join(repr(n) for n in plan.nodes)
                raise UsageError(f"--{flag.replace('_', '-')} {name}: formation {plan.name!r} has no node {name!r}; "
                                 f"its nodes are {nodes}")


def _check_breakpoint_store(args: argparse.Namespace, durable: Durable) -> None:
    """Breakpoints suspend the run, which needs a store: without one, a usage error naming
    the flags that fix it (the library's names ``store=``)."""
    if durable.store is None and (getattr(args, "break_before", None) or getattr(args, "break_after", None)):
        why = "--no-store was given" if getattr(args, "no_store", False) else "the default run store cannot be used"
        raise UsageError(f"--break-before/--break-after suspend the run as interrupt() does, which needs a journalled "
                         f"run, and {why}: drop --no-store (runs are journalled in the default store) or give "
                         "--store PATH")


def _journalled(run_id: str | None, durable: Durable) -> str:
    if run_id is None or durable.store is None:
        return ""
    return f"; run {run_id} is journalled (status interrupted) and can be resumed"


@dataclass(frozen=True)
class CutShort:
    """The outcome of a run cut short by Ctrl-C or SIGTERM (the run's id once it was seen,
    else None)."""

    run_id: str | None
    signal: KeyboardInterrupt  # what cut it short: Ctrl-C, or SIGTERM (Terminated)


@dataclass(frozen=True)
class Cancelled:
    """The outcome of a run cancelled while it ran (``run_cancelled``: a cancel requested
    through the run store, e.g. with ``wingman-actors runs cancel``)."""

    run_id: str


def _provider_for(choice: ProviderChoice, loaded: FormationModule, latency_s: float) -> tuple[Provider | None, bool]:
    if choice.real:
        return make_provider(choice), False
    sample = loaded.sample_provider(latency_s)
    if sample is None and choice.id == SAMPLE:
        raise UsageError(f"{loaded.target} ships no sample replies (no sample_provider() or SAMPLE_REPLIES); "
                         "choose a real provider with --provider ID")
    return sample, sample is not None


def _provider_id(choice: ProviderChoice, samples: bool) -> str:
    if samples:
        return SAMPLE
    return choice.id if choice.real and choice.id else "own"


def _drive(
    formation: Formation, value: Any, options: RunOptions, board: RunBoard, progress: Any, durable: Durable,
) -> FormationResult | FormationRuntimeError | CutShort | Cancelled:
    """Run the formation with ``options`` (its ``run_id``, when set, is the run to
    resume), feeding every event to the board and the progress display. Ctrl-C stops
    the formation (a journalled run becomes ``interrupted``) and gives :class:`CutShort`."""
    if options.run_id is not None:
        if options.store is None:
            raise UsageError(f"resuming run {options.run_id} needs the run store it is journalled in")
        stream = formation.resume_stream(options.run_id, store=options.store, answer=durable.answer, options=options)
    else:
        stream = formation.run_stream(value, options=options)
    outcome: FormationResult | FormationRuntimeError | Cancelled | None = None
    run_id: str | None = durable.resume_id
    live = progress if isinstance(progress, LiveProgress) else contextlib.nullcontext()
    try:
        with live:
            for event in stream:
                run_id = event.run_id
                if progress is not None:
                    progress(event)
                if not isinstance(progress, LiveProgress):
                    board.apply(event)
                outcome = _outcome(event) or outcome
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
        # Raised where the main thread waited for the next event, inside the stream: its
        # generator has stopped the formation on the way out (runs in flight are journalled
        # as interrupted), so only the report is left to do.
        return CutShort(run_id, exc)
    finally:
        close = getattr(stream, "close", None)  # a generator: closing it stops the formation
        if close is not None:
            close()
    return outcome or FormationRuntimeError(f"formation {formation.name!r} ended without a result")


def _outcome(event: FormationEvent) -> FormationResult | FormationRuntimeError | Cancelled | None:
    if event.type is FormationEventType.RUN_CANCELLED:
        return Cancelled(event.run_id)
    if event.type is FormationEventType.RUN_FINISHED:
        result: FormationResult = event.data["result"]
        return result
    if event.type is FormationEventType.RUN_FAILED:
        exc = event.data.get("exception")
        if isinstance(exc, FormationRuntimeError):
            return exc
        return FormationRuntimeError(str(event.data.get("error", "the run failed")), node=event.node)
    return None


def failure_message(exc: FormationRuntimeError) -> str:
    """One line naming the failed node and the cause, e.g.
    ``run failed at node 'parse': budget: cannot read statement 'x.pdf': file not found``."""
    cause = exc.__cause__
    if exc.node is None or cause is None:
        return f"run failed: {exc.message}"
    after = f" after {exc.attempts} attempts" if exc.attempts > 1 else ""
    text = str(cause) if isinstance(cause, WingmanError) else f"{type(cause).__name__}: {cause}"
    return f"run failed at node {exc.node!r}{after}: {' '.join(text.split())}"


def _failure_dict(exc: FormationRuntimeError) -> dict[str, Any]:
    cause = exc.__cause__
    return {
        "run_id": exc.run_id,
        "status": "failed",
        "error": {
            "message": failure_message(exc),
            "node": exc.node,
            "attempts": exc.attempts,
            "cause": None if cause is None else f"{type(cause).__name__}: {cause}",
        },
        "outputs": jsonable(exc.outputs),
        "nodes": {k: jsonable(v.to_dict()) for k, v in exc.nodes.items()},  # as a result's (runs show --json's)
    }


def resolve_input(value: str | None, loaded: FormationModule) -> tuple[Any, str]:
    """The run's input and how to show it: ``--input TEXT`` as given (a file path stays a
    path: the formation decides what to do with it), ``@FILE`` the file's text, ``-``
    standard input, nothing the formation's default.

    Raises:
        UsageError: no input and no default, or an ``@FILE`` that cannot be read as text.
    """
    if value is None:
        default = loaded.default_input()
        if default is None:
            raise UsageError(f"{loaded.target} has no default input: pass --input TEXT_OR_PATH, "
                             "--input @FILE (the file's text) or --input - (standard input)")
        return default, f"{_short(default)} (the formation's default)"
    if value == "-":
        return sys.stdin.read(), "standard input"
    if value.startswith("@") and len(value) > 1:
        path = Path(value[1:]).expanduser()
        try:
            return path.read_text(encoding="utf-8"), f"the text of {value[1:]}"
        except FileNotFoundError:
            raise UsageError(f"--input {value}: no file {value[1:]!r} (without @ the text is passed as is)") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--input {value}: cannot read it as UTF-8 text ({exc}); pass the path "
                             "without @ if the formation reads the file itself") from None
    return value, _short(value)


def _short(value: Any, limit: int = 100) -> str:
    text = " ".join((value if isinstance(value, str) else repr(value)).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_output(value: Any) -> str:
    """An output as text: strings as they are, models and data as indented JSON (the same
    rendering agent nodes use for their input)."""
    return render_input(value, None)


def _print_outputs(result: FormationResult, samples: bool, out: IO[str], info: IO[str]) -> None:
    """The outputs on ``out``: the text of a single sink as it is; several sinks each under
    a ``--- output of 'NAME' ---`` line. What is not output goes to ``info``."""
    label = f" ({SAMPLE_LABEL})" if samples else ""
    if not result.outputs:
        print(f"--- no output{label}: every sink was skipped ---", file=info)
    several = len(result.outputs) > 1
    for name, value in result.outputs.items():
        if several:
            print(f"--- output of {name!r} ---", file=out)
        print(format_output(value), file=out, flush=True)
    tokens = result.usage.total_tokens
    print(f"---\ndone in {result.duration_s:.2f}s: {len(result.nodes)} nodes, {tokens:,} tokens, "
          f"run {result.run_id}{label}", file=info, flush=True)


def _print_json(doc: dict[str, Any], *, compact: bool) -> None:
    text = json.dumps(doc, default=str) if compact else json.dumps(doc, indent=2, default=str)
    print(text, flush=True)


def _rows(plan: Plan, prefix: str = "") -> list[tuple[str, str]]:
    """``(name, kind)`` of the nodes the live board shows, in run order: a formation
    node's inner nodes follow it, named by path (``"outer/inner"``) as their events are."""
    rows: list[tuple[str, str]] = []
    for name in plan.order:
        spec = plan.nodes[name]
        rows.append((prefix + name, spec.kind))
        if spec.kind == "formation" and spec.subplan is not None:
            rows += _rows(spec.subplan, f"{prefix}{name}/")
    return rows
