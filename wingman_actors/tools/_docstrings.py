"""What ``@tool`` reads from a Google-style docstring: the summary (the tool's
description) and each argument's description (from ``Args:`` and the like).

Indentation decides, as Google style lays it out: an ``Args:`` entry is a ``name: text``
line at the section's indent (two spaces, four or a tab alike); a deeper line continues
the entry above it (colons and all); an unindented line ends the section, so the text of
``Returns:``, ``Warning:`` or any other section never leaks into an argument.
"""

from __future__ import annotations

import inspect
import re

__all__ = ["doc_parts"]

# the sections that list arguments
_ARGS = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Kwargs|Other Parameters):\s*$")
# the sections that end a summary (any ``Word:`` alone on an unindented line ends an Args section)
_SECTION = re.compile(r"^(Returns?|Raises|Yields?|Examples?|Notes?|Warnings?|See Also|Todo|Attributes|References):\s*$")
_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def _depth(line: str) -> int:
    return len(line) - len(line.lstrip())


def doc_parts(doc: str) -> tuple[str, dict[str, str]]:
    """Summary and per-argument descriptions from a Google-style docstring."""
    doc = inspect.cleandoc(doc or "")  # tabs become spaces here
    summary: list[str] = []
    args: dict[str, str] = {}
    section = "summary"
    indent: int | None = None  # the Args entries' indent, set by the section's first line
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        if not stripped:
            if section == "summary":
                summary.append("")
            continue
        depth = _depth(line)
        if depth == 0:
            if _ARGS.match(stripped):
                section, indent, current = "args", None, None
                continue
            if section == "args" or _SECTION.match(stripped):
                section, current = "other", None
                continue
        if section == "summary":
            summary.append(line)
        elif section == "args":
            entry = _ENTRY.match(stripped)
            if entry and (indent is None or depth <= indent):
                indent = depth
                current = entry.group(1)
                args[current] = entry.group(3)
            elif current is not None:
                args[current] = f"{args[current]} {stripped}".strip()
    return "\n".join(summary).strip(), args
