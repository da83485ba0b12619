"""The 7 built-in tools by name: ``bash``, ``read``, ``write``, ``edit``, ``glob``, ``grep``, ``webfetch``.

The tool objects are stateless and shared: per-session state (the bash shell) lives in
the session's :class:`~wingman_actors.tools._base.ToolContext`, and the file tools are
confined to its ``work_dir``.

Example:
    >>> [t.name for t in builtin_tools(["read", "grep"])]
    ['read', 'grep']
"""

from __future__ import annotations

from collections.abc import Iterable

from ._base import Tool
from ._files import edit_tool, glob_tool, grep_tool, read_tool, write_tool
from ._shell import BASH
from ._web import webfetch_tool

__all__ = ["BUILTIN_TOOL_NAMES", "builtin_tool", "builtin_tools"]

_BUILTINS: dict[str, Tool] = {
    "bash": BASH,
    "read": read_tool,
    "write": write_tool,
    "edit": edit_tool,
    "glob": glob_tool,
    "grep": grep_tool,
    "webfetch": webfetch_tool,
}

BUILTIN_TOOL_NAMES: tuple[str, ...] = tuple(_BUILTINS)
"""The names of the built-in tools, in their canonical order."""


def builtin_tool(name: str) -> Tool:
    """The built-in tool called ``name``.

    Args:
        name: one of :data:`BUILTIN_TOOL_NAMES`.

    Raises:
        ValueError: ``name`` is not a built-in tool (the message lists the valid names).
    """
    try:
        return _BUILTINS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown built-in tool {name!r}; the built-in tools are: {', '.join(BUILTIN_TOOL_NAMES)}"
        ) from None


def builtin_tools(names: Iterable[str] | None = None) -> list[Tool]:
    """The built-in tools called ``names``, in that order (all of them when None).

    Raises:
        ValueError: a name is not a built-in tool.
    """
    return [builtin_tool(n) for n in (BUILTIN_TOOL_NAMES if names is None else names)]
