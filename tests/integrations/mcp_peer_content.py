"""An MCP server written with the SDK's ``MCPServer`` whose tools return every kind of content
a tool result may hold (images, audio, embedded resources, resource links, structured output)
and use the request context (progress, logging, sampling), for the ported SDK tests
(tests/integrations/test_peer_mcp*.py).

Run as a script it serves over stdio; :func:`build` gives the server for streamable HTTP.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Audio, Image
from pydantic import BaseModel

PNG = b"\x89PNG\r\n\x1a\nfake png data"
WAV = b"RIFF\x00\x00\x00\x00WAVEfake audio"


class User(BaseModel):
    name: str
    age: int
    active: bool = True


def build() -> MCPServer:
    server = MCPServer("content-peer")

    @server.tool(description="🌟 Greets in any language: á é í ó ú ñ 漢字 🎉")
    def hello(name: str = "世界") -> str:
        return f"¡Hola, {name}! 👋"

    @server.tool()
    def picture() -> Image:
        """A PNG image."""
        return Image(data=PNG, format="png")

    @server.tool()
    def sound() -> Audio:
        """A WAV recording."""
        return Audio(data=WAV, format="wav")

    @server.tool(structured_output=False)
    def mixed() -> list[Any]:
        """Text, an image, audio, a dict and a text block, in that order."""
        return [
            "text message",
            Image(data=PNG, format="png"),
            Audio(data=WAV, format="wav"),
            {"key": "value"},
            mcp_types.TextContent(type="text", text="direct content"),
        ]

    @server.tool()
    def document() -> mcp_types.EmbeddedResource:
        """A text resource embedded in the result."""
        return mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.TextResourceContents(uri="file:///notes/todo.md", mime_type="text/markdown", text="# To do\n- ship"),
        )

    @server.tool()
    def blob() -> mcp_types.EmbeddedResource:
        """A binary resource embedded in the result."""
        return mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.BlobResourceContents(uri="file:///data/report.pdf", mime_type="application/pdf", blob="JVBERi0x"),
        )

    @server.tool()
    def link() -> mcp_types.ResourceLink:
        """A link to a resource the client may read."""
        return mcp_types.ResourceLink(
            type="resource_link", uri="file:///data/big.csv", name="big.csv", mime_type="text/csv",
            description="the whole table",
        )

    @server.tool()
    def get_user(user_id: int) -> User:
        """Get a user by id."""
        return User(name="John Doe", age=30 + user_id)

    @server.tool()
    def calculate_sum(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def numbers() -> list[int]:
        """A list of numbers."""
        return [1, 2, 3, 4, 5]

    @server.tool()
    def metadata() -> dict[str, Any]:
        """Nested metadata."""
        return {"version": "1.0.0", "enabled": True, "tags": ["production", "stable"], "config": {"nested": {"value": 123}}}

    @server.tool()
    def bad_numbers() -> list[int]:
        """Returns what its own output schema refuses."""
        return [1, 2, [3]]  # type: ignore[list-item]

    @server.tool()
    def explode() -> str:
        """Raises an ordinary exception."""
        raise ValueError("Test error")

    @server.tool()
    async def progress(steps: int, ctx: Context) -> str:
        """Reports progress, then answers."""
        for i in range(steps):
            await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        return f"{steps} steps done"

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """Logs to the client at every level, then answers."""
        await ctx.debug("debug line")
        await ctx.info("info line")
        await ctx.warning("warning line")
        await ctx.error("error line")
        return "logged"

    @server.tool()
    async def ask_model(question: str, ctx: Context) -> str:
        """Asks the client's model (sampling)."""
        answer = await ctx.session.create_message(
            [mcp_types.SamplingMessage(role="user", content=mcp_types.TextContent(type="text", text=question))],
            max_tokens=10,
        )
        return f"the model said {answer.content}"

    @server.tool()
    def thumbnail() -> Image:
        """A 22-byte image: its base64 ends in padding."""
        return Image(data=PNG + b"!", format="png")

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    async def wait(marker: str, seconds: float) -> str:
        """Waits; writes 'cancelled' to the file ``marker`` if the wait is cancelled."""
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            Path(marker).write_text("cancelled")
            raise
        return "waited"

    @server.tool()
    def big(size: int) -> str:
        """A long text."""
        return "x" * size

    return server


if __name__ == "__main__":
    # quiet: the SDK's deprecation warnings and its rendering of a tool's traceback (slow) are not under test
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    print("content peer starting", file=sys.stderr)
    build().run("stdio")
