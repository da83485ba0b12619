"""A small MCP server written with the SDK's own server API (``MCPServer``), for tests.

Run as a script it serves over stdio; :func:`build` gives the server for streamable HTTP.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel


class Sum(BaseModel):
    total: int
    terms: int


def build() -> MCPServer:
    server = MCPServer("peer")

    @server.tool()
    def echo(text: str) -> str:
        """Repeat the text."""
        return f"echo: {text}"

    @server.tool()
    def add(a: int, b: int) -> Sum:
        """Add two integers."""
        return Sum(total=a + b, terms=2)

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails."""
        raise ToolError(f"refused: {reason}")

    @server.tool()
    def crash() -> str:
        """Kill the server process in the middle of the call."""
        os._exit(3)

    @server.tool()
    def slow(seconds: float) -> str:
        """Sleep, then answer."""
        time.sleep(seconds)
        return "late"

    @server.tool()
    def whoami() -> str:
        """The server's working directory and its PEER_TAG environment variable."""
        return f"{os.getcwd()}|{os.environ.get('PEER_TAG', '')}"

    return server


if __name__ == "__main__":
    print("peer starting", file=sys.stderr)
    build().run("stdio")
