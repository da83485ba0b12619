"""An MCP server written with the SDK's server API, run over stdio by the server-agent tests:
its ``pid`` tool tells which process answered (one shared connection, one process)."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("pids")


@server.tool()
def pid() -> str:
    """The process id of this server."""
    return str(os.getpid())


@server.tool()
def where() -> str:
    """The working directory of this server."""
    return os.getcwd()


if __name__ == "__main__":
    server.run("stdio")
