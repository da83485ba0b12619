"""The ``graph`` command: draw a formation as Mermaid, Graphviz DOT, or a PNG (with
Graphviz's ``dot``)."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from .errors import UsageError
from .loading import load_module
from .providers import parse_assignments

__all__ = ["FORMATS", "graph_command"]

FORMATS = ("mermaid", "dot", "png")


def graph_command(args: argparse.Namespace) -> int:
    """``wingman-actors graph``: print Mermaid or DOT text, or write a PNG.

    Returns:
        0 when drawn; 1 when ``dot`` ran and failed.

    Raises:
        UsageError: a bad formation module, an output path that cannot be written, or
            ``png`` without ``dot`` on PATH (exit 2).
    """
    loaded = load_module(args.formation)
    formation, _ = loaded.build(None, parse_assignments(args.param or (), "--param"))
    if args.format == "png":
        return _png(formation.to_dot(), Path(args.output or f"{formation.name}.png"))
    text = formation.to_mermaid() if args.format == "mermaid" else formation.to_dot()
    if args.output:
        out = Path(args.output)
        try:
            out.write_text(text + "\n", encoding="utf-8")
        except OSError as exc:
            raise UsageError(_unwritable(out, exc)) from exc
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        print(text)
    return 0


def _unwritable(out: Path, exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if not out.parent.is_dir():
        return (f"cannot write {out}: the folder {out.parent} does not exist; create it first "
                "or pass another --output path")
    return f"cannot write {out}: {reason}; pass another --output path"


def _png(dot_text: str, out: Path) -> int:
    if not out.parent.is_dir():
        raise UsageError(_unwritable(out, FileNotFoundError(2, "No such file or directory")))
    dot = shutil.which("dot")
    if dot is None:
        raise UsageError("png needs Graphviz's `dot` on PATH; use --format mermaid or dot "
                         "(or install Graphviz, e.g. apt-get install graphviz)")
    try:
        proc = subprocess.run([dot, "-Tpng", "-o", str(out)], input=dot_text, text=True,
                              capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"wingman-actors: graph: running {dot} failed: {exc}", file=sys.stderr)
        return 1
    if proc.returncode != 0:
        print(f"wingman-actors: graph: dot exited with {proc.returncode}: {proc.stderr.strip()}", file=sys.stderr)
        return 1
    print(f"wrote {out}", file=sys.stderr)
    return 0
