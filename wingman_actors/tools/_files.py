"""The file tools ``read``, ``write``, ``edit``, ``glob`` and ``grep``, confined to the work_dir.

Every path goes through :func:`~wingman_actors.tools._sandbox.resolve_in`; directory walks
never follow symbolic links and skip entries whose target lies outside the work_dir.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from ..errors import ToolError
from ._base import FunctionTool, ToolContext
from ._sandbox import display_path, resolve_in

__all__ = [
    "SKIPPED_DIRS",
    "edit_tool",
    "glob_regex",
    "glob_tool",
    "grep_tool",
    "read_tool",
    "write_tool",
]

MAX_LINE_CHARS = 2_000
MAX_READ_CHARS = 200_000
MAX_GLOB_RESULTS = 1_000
MAX_GREP_MATCHES = 500
MAX_GREP_LINE_CHARS = 500
MAX_GREP_FILE_BYTES = 20 * 1024 * 1024
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
                          ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"})
"""Directories the glob and grep walks do not enter (search inside one by passing it as ``path``)."""


def _is_binary(path: Path) -> bool:
    with path.open("rb") as f:
        return b"\0" in f.read(8192)


def _existing_file(ctx: ToolContext, path: str, tool: str) -> Path:
    target = resolve_in(ctx, path, tool=tool)
    if not target.exists():
        raise ToolError(f"file not found: {path!r} (in {ctx.work_dir}); use glob to find files", tool=tool)
    if target.is_dir():
        raise ToolError(f"{path!r} is a directory, not a file; use glob to list its contents", tool=tool)
    return target


def read_file(ctx: ToolContext, path: str, offset: int = 1, limit: int = 2000) -> str:
    """Read a text file and return its lines numbered like `cat -n` (number, tab, text).

    Reads at most `limit` lines starting at line `offset`; a note at the end says how to
    continue when the file has more. Lines longer than 2,000 characters are cut. Binary
    files are refused. Paths are relative to the working directory.

    Args:
        path: the file to read, relative to the working directory.
        offset: the 1-based line number to start at (default 1).
        limit: the most lines to return (default 2000).
    """
    if offset < 1:
        raise ToolError(f"offset must be 1 or more (line numbers start at 1), got {offset}", tool="read")
    if limit < 1:
        raise ToolError(f"limit must be 1 or more, got {limit}", tool="read")
    target = _existing_file(ctx, path, "read")
    try:
        if _is_binary(target):
            raise ToolError(f"{path!r} is a binary file; read only reads text files", tool="read")
        out: list[str] = []
        size = 0
        total = 0
        last = offset - 1
        with target.open(encoding="utf-8", errors="replace", newline=None) as f:
            for total, line in enumerate(f, start=1):
                if total < offset or len(out) >= limit or size > MAX_READ_CHARS:
                    continue
                line = line.rstrip("\r\n")
                if len(line) > MAX_LINE_CHARS:
                    line = line[:MAX_LINE_CHARS] + f" [... line cut, {len(line) - MAX_LINE_CHARS} more characters]"
                out.append(f"{total:>6}\t{line}")
                size += len(out[-1]) + 1
                last = total
    except OSError as exc:
        raise ToolError(f"cannot read {path!r}: {exc}", tool="read") from exc
    if total == 0:
        return "(empty file)"
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {path!r}, which has {total} lines", tool="read")
    text = "\n".join(out)
    if last < total:
        text += f"\n[showing lines {offset}-{last} of {total}; call read with offset={last + 1} to continue]"
    return text


def write_file(ctx: ToolContext, path: str, content: str) -> str:
    """Write a file with the given content, replacing it if it exists.

    Creates missing parent directories. The content is written exactly as given (UTF-8).
    To change part of an existing file prefer edit; read a file before overwriting it.

    Args:
        path: the file to write, relative to the working directory.
        content: the complete new content of the file.
    """
    target = resolve_in(ctx, path, tool="write")
    if target.is_dir():
        raise ToolError(f"{path!r} is a directory; give a file path", tool="write")
    data = content.encode("utf-8")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    except OSError as exc:
        raise ToolError(f"cannot write {path!r}: {exc}", tool="write") from exc
    return f"wrote {len(data)} bytes to {display_path(ctx, target)}"


def edit_file(ctx: ToolContext, path: str, old_string: str, new_string: str, replace_all: bool = False) -> str:
    """Replace exact text in a file.

    `old_string` must match the file's text exactly, including whitespace and indentation
    (copy it from read's output without the line-number prefix). It must occur exactly
    once unless `replace_all` is true; include surrounding lines to make it unique.

    Args:
        path: the file to edit, relative to the working directory.
        old_string: the exact text to replace.
        new_string: the text to put in its place (must differ from old_string).
        replace_all: replace every occurrence instead of requiring a unique one (default false).
    """
    if not old_string:
        raise ToolError("old_string is empty; give the exact text to replace (use write to create a file)", tool="edit")
    if old_string == new_string:
        raise ToolError("old_string and new_string are identical; nothing would change", tool="edit")
    target = _existing_file(ctx, path, "edit")
    try:
        raw = target.read_bytes()
    except OSError as exc:
        raise ToolError(f"cannot read {path!r}: {exc}", tool="edit") from exc
    if b"\0" in raw[:8192]:
        raise ToolError(f"{path!r} is a binary file; edit only changes text files", tool="edit")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{path!r} is not valid UTF-8 text ({exc}); edit cannot change it", tool="edit") from exc
    count = text.count(old_string)
    if count == 0 and "\r\n" in text and "\n" in old_string and "\r" not in old_string:
        # read shows a CRLF file's lines without their "\r", and the model copies from it:
        # match (and write) the file's own line endings
        crlf = old_string.replace("\n", "\r\n")
        count = text.count(crlf)
        if count:
            old_string, new_string = crlf, new_string.replace("\r\n", "\n").replace("\n", "\r\n")
    if count == 0:
        raise ToolError(
            f"old_string not found in {path!r}; read the file first and copy the text exactly, "
            "including whitespace and indentation",
            tool="edit",
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string found {count} times in {path!r}; give more surrounding context to make it "
            "unique, or set replace_all to replace every occurrence",
            tool="edit",
        )
    new_text = text.replace(old_string, new_string) if replace_all else text.replace(old_string, new_string, 1)
    try:
        target.write_bytes(new_text.encode("utf-8"))
    except OSError as exc:
        raise ToolError(f"cannot write {path!r}: {exc}", tool="edit") from exc
    return f"replaced {count if replace_all else 1} occurrence(s) in {display_path(ctx, target)}"


def _split_top_level(text: str) -> list[str]:
    """Split ``text`` at commas that are not inside nested braces."""
    options, level, begin = [], 0, 0
    for j, c in enumerate(text):
        level += (c == "{") - (c == "}")
        if c == "," and level == 0:
            options.append(text[begin:j])
            begin = j + 1
    options.append(text[begin:])
    return options


def _expand_braces(pattern: str) -> list[str]:
    """``a.{py,pyi}`` -> ``["a.py", "a.pyi"]`` (nested braces allowed)."""
    depth, start = 0, -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                options = _split_top_level(pattern[start + 1 : i])
                if len(options) > 1:
                    prefix, suffix = pattern[:start], pattern[i + 1 :]
                    return [e for o in options for e in _expand_braces(prefix + o + suffix)]
    return [pattern]


def _segment_regex(segment: str) -> str:
    """Regex for one path component of a glob (no ``/`` inside)."""
    out, i = [], 0
    while i < len(segment):
        ch = segment[i]
        j = i + 1
        if segment[j : j + 1] in ("!", "^"):
            j += 1
        if segment[j : j + 1] == "]":
            j += 1
        end = segment.find("]", j) if ch == "[" else -1
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif end != -1:
            body = segment[i + 1 : end]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            escaped = "".join("\\" + c if c in "\\[]&~|^" else c for c in body)
            out.append("[" + ("^" if negate else "") + escaped + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob (``*``, ``?``, ``[...]``, ``**`` for any depth, ``{a,b}``) to a regex on POSIX paths."""
    alternatives = []
    for expanded in _expand_braces(pattern):
        parts = [p for p in expanded.split("/") if p not in ("", ".")]
        out = []
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if part == "**":
                out.append(".*" if last else "(?:.*/)?")
            else:
                out.append(_segment_regex(part) + ("" if last else "/"))
        alternatives.append("".join(out))
    return re.compile("(?:" + "|".join(alternatives) + r")\Z", re.DOTALL)


def _walk(ctx: ToolContext, base: Path) -> Iterator[tuple[Path, bool]]:
    """Yield (path, is_dir) under ``base`` in sorted order, without leaving the work_dir."""
    for root, dirs, files in os.walk(base, followlinks=False):
        if ctx.token is not None:
            ctx.token.check()
        root_path = Path(root)
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        entries = [(d, True) for d in dirs] + [(f, False) for f in sorted(files)]
        for name, is_dir in entries:
            p = root_path / name
            if p.is_symlink():
                try:
                    real = p.resolve()
                except (OSError, RuntimeError):
                    continue
                if not real.is_relative_to(ctx.work_dir) or not real.exists():
                    continue
                is_dir = real.is_dir()
            yield p, is_dir


def _base_dir(ctx: ToolContext, path: str | None, tool: str) -> Path:
    base = resolve_in(ctx, path or ".", tool=tool)
    if not base.exists():
        raise ToolError(f"path not found: {path!r} (in {ctx.work_dir})", tool=tool)
    return base


def glob_files(ctx: ToolContext, pattern: str, path: str | None = None) -> str:
    """Find files and directories whose path matches a glob pattern; one path per line, sorted.

    Patterns: `*` matches within one path component, `**` any number of directories,
    `?` one character, `[abc]` a character class, `{py,pyi}` alternatives; e.g.
    `**/*.py`, `src/**/test_*.py`, `*.{md,txt}`. The pattern is matched against paths
    relative to `path`; results are relative to the working directory, directories end
    with `/`. Directories such as .git, node_modules, __pycache__ and .venv are skipped
    unless `path` points inside one. At most 1,000 results.

    Args:
        pattern: the glob pattern, relative (no leading `/`, no `..`).
        path: the directory to search in, relative to the working directory (default: the working directory).
    """
    if not pattern.strip():
        raise ToolError("pattern is empty; give a glob such as '**/*.py'", tool="glob")
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise ToolError(
            f"pattern {pattern!r} must be relative and must not contain '..'; use path to choose "
            "the directory to search in",
            tool="glob",
        )
    base = _base_dir(ctx, path, "glob")
    if not base.is_dir():
        raise ToolError(f"{path!r} is a file, not a directory; give a directory to search in", tool="glob")
    regex = glob_regex(pattern)
    matches: list[str] = []
    for p, is_dir in _walk(ctx, base):
        if regex.match(p.relative_to(base).as_posix()):
            matches.append(display_path(ctx, p) + ("/" if is_dir else ""))
    if not matches:
        return f"no files match {pattern!r} in {display_path(ctx, base)}"
    matches.sort()
    text = "\n".join(matches[:MAX_GLOB_RESULTS])
    if len(matches) > MAX_GLOB_RESULTS:
        text += (f"\n[{len(matches) - MAX_GLOB_RESULTS} more matches not shown ({len(matches)} in all); "
                 "use a more specific pattern or path]")
    return text


def grep_files(
    ctx: ToolContext,
    pattern: str,
    path: str | None = None,
    glob: str | None = None,
    case_insensitive: bool = False,
) -> str:
    """Search file contents with a regular expression; prints `path:line_number:line` per match.

    The pattern is a Python regular expression matched against each line (use `\\b`,
    `\\s`, `(?:...)`; escape literal characters such as `.` `(` `[`). Binary files and
    directories such as .git, node_modules and .venv are skipped. Paths are relative to
    the working directory. At most 500 matching lines are shown; narrow the search with
    `path` or `glob` if there are more.

    Args:
        pattern: the Python regular expression to search for.
        path: the file or directory to search, relative to the working directory (default: all of it).
        glob: only search files matching this glob, e.g. `*.py` (matched against the file name) or `src/**/*.ts` (matched against the path below `path`).
        case_insensitive: ignore letter case (default false).
    """
    try:
        regex = re.compile(pattern, re.IGNORECASE if case_insensitive else 0)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}", tool="grep") from exc
    base = _base_dir(ctx, path, "grep")
    name_filter = glob_regex(glob) if glob else None
    files = [base] if base.is_file() else [p for p, is_dir in _walk(ctx, base) if not is_dir]
    matches: list[str] = []
    extra = 0
    for file in files:
        if name_filter is not None and file != base:
            subject = file.relative_to(base).as_posix() if "/" in (glob or "") else file.name
            if not name_filter.match(subject):
                continue
        try:
            if file.stat().st_size > MAX_GREP_FILE_BYTES or _is_binary(file):
                continue
            with file.open(encoding="utf-8", errors="replace") as f:
                for lineno, line in enumerate(f, start=1):
                    if regex.search(line):
                        if len(matches) >= MAX_GREP_MATCHES:
                            extra += 1
                            continue
                        line = line.rstrip("\r\n")
                        if len(line) > MAX_GREP_LINE_CHARS:
                            line = line[:MAX_GREP_LINE_CHARS] + " [...]"
                        matches.append(f"{display_path(ctx, file)}:{lineno}:{line}")
        except OSError:
            continue
    if not matches:
        return f"no matches for {pattern!r} in {display_path(ctx, base)}"
    text = "\n".join(matches)
    if extra:
        text += f"\n[{extra} more matching lines not shown; narrow the search with path, glob or a more specific pattern]"
    return text


read_tool = FunctionTool(read_file, name="read")
"""The ``read`` tool."""
write_tool = FunctionTool(write_file, name="write")
"""The ``write`` tool."""
edit_tool = FunctionTool(edit_file, name="edit")
"""The ``edit`` tool."""
glob_tool = FunctionTool(glob_files, name="glob")
"""The ``glob`` tool."""
grep_tool = FunctionTool(grep_files, name="grep")
"""The ``grep`` tool."""
