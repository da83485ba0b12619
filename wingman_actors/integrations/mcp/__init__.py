"""Model Context Protocol, both ways, through the official ``mcp`` SDK.

* :func:`mcp_tools` connects to an MCP server (a command over stdio, or a URL over
  streamable HTTP) and yields its tools as wingman-actors tools, for any agent.
* :func:`build_server` exposes wingman-actors tools as an MCP server; the command
  ``wingman-actors mcp serve --tools read,grep --work-dir DIR`` serves it over stdio.

Needs the extra: ``pip install "wingman-actors[mcp]"``.

Example:
    >>> from wingman_actors import Agent
    >>> from wingman_actors.integrations.mcp import mcp_tools
    >>> with mcp_tools(command=["python", "my_server.py"]) as tools:   # doctest: +SKIP
    ...     Session(Agent("a", provider=provider, tools=tools)).run("...")
"""

from __future__ import annotations

from ..._extras import require

with require("mcp", "the MCP integration"):  # the official SDK, and jsonschema
    from ._client import MCPConnectionError, MCPTool, mcp_tools
    from ._server import build_server, load_tools, serve_stdio

__all__ = ["MCPConnectionError", "MCPTool", "build_server", "load_tools", "mcp_tools", "serve_stdio"]
