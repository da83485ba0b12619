"""Path confinement for the file tools: every path must stay inside the session's work_dir.

Example:
    >>> from wingman_actors.tools import ToolContext
    >>> ctx = ToolContext("/tmp")
    >>> resolve_in(ctx, "notes/todo.txt") == ctx.work_dir / "notes" / "todo.txt"
    True
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ToolError
from ._base import ToolContext

__all__ = ["display_path", "resolve_in"]


def resolve_in(ctx: ToolContext, path: str | Path, *, tool: str | None = None) -> Path:
    """Resolve ``path`` inside ``ctx.work_dir``, refusing anything that leads outside it.

    Relative paths are taken relative to the work_dir; absolute paths are accepted only
    when they lie inside it. Symbolic links are followed (anywhere along the path,
    including the last component), and the path is refused if the target is outside.
    The path need not exist.

    Args:
        ctx: the session's tool context (its ``work_dir`` is the confinement root).
        path: the path the model gave, relative or absolute.
        tool: the calling tool's name, recorded on the error.

    Returns:
        The absolute, symlink-free path inside the work_dir.

    Raises:
        ToolError: the path is empty-looking garbage (NUL bytes), escapes the work_dir with
            ``..``, is absolute outside it, or goes through a symlink pointing outside.
    """
    work = ctx.work_dir
    text = os.fspath(path)
    if "\0" in text:
        raise ToolError(f"path {text!r} contains a NUL character; give a plain file path", tool=tool)
    candidate = Path(text)
    if not candidate.is_absolute():
        candidate = work / candidate
    lexical = Path(os.path.normpath(candidate))
    if not lexical.is_relative_to(work):
        raise ToolError(
            f"path {text!r} is outside the working directory {work}; file tools can only access "
            "files inside it (use a path relative to the working directory)",
            tool=tool,
        )
    try:
        real = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # symlink loops, permission problems
        raise ToolError(f"cannot resolve path {text!r}: {exc}", tool=tool) from exc
    if not real.is_relative_to(work):
        raise ToolError(
            f"path {text!r} goes through a symbolic link to {real}, which is outside the working "
            f"directory {work}; file tools can only access files inside it",
            tool=tool,
        )
    return real


def display_path(ctx: ToolContext, path: Path) -> str:
    """``path`` relative to ``ctx.work_dir``, in POSIX form (``"."`` for the work_dir itself)."""
    try:
        rel = path.relative_to(ctx.work_dir)
    except ValueError:
        return str(path)
    return rel.as_posix() if rel.parts else "."
