"""Tools: the protocol, the ``@tool`` decorator, the registry, and the 7 built-ins.

Built-ins (``bash``, ``read``, ``write``, ``edit``, ``glob``, ``grep``, ``webfetch``) are
built by name with :func:`builtin_tool`; file tools are confined to the session's work_dir.
``bash`` runs without the process's secrets; :func:`bash_tool` builds one that passes some.
"""

from ._base import FunctionTool, Tool, ToolContext, ToolRegistry, format_validation_error, tool
from ._builtins import BUILTIN_TOOL_NAMES, builtin_tool, builtin_tools
from ._shell import bash_tool

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "FunctionTool",
    "Tool",
    "ToolContext",
    "ToolRegistry",
    "bash_tool",
    "builtin_tool",
    "builtin_tools",
    "format_validation_error",
    "tool",
]
