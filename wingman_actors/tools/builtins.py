"""The built-in tools by name. (Placeholder until the built-ins land; see tools/ issue.)"""

from __future__ import annotations

from .base import Tool

BUILTIN_TOOL_NAMES: tuple[str, ...] = ("bash", "read", "write", "edit", "glob", "grep", "webfetch")


def builtin_tool(name: str) -> Tool:
    """The built-in tool ``name``."""
    raise NotImplementedError("built-in tools are not implemented yet")


def builtin_tools(names: list[str] | None = None) -> list[Tool]:
    """The built-in tools ``names`` (all when None)."""
    return [builtin_tool(n) for n in (names or BUILTIN_TOOL_NAMES)]
