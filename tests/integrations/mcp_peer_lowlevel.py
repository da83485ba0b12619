"""An MCP server written with the SDK's low-level ``Server``, for what ``MCPServer`` does not
let a test choose: paginated tool listings, tool names a model cannot take as they are, and
structured content that breaks the tool's own output schema (tests/integrations/test_peer_mcp*.py).

Run as a script it serves over stdio; the ``PEER_MODE`` environment variable picks the tools:

* ``paged``: 7 tools served 3 to a page (``PEER_PAGE`` sets the page size);
* ``looping``: every page answers with the same next cursor, forever;
* ``names``: tools named ``files.read``, ``files_read`` and one of 80 characters;
* ``structured``: tools with output schemas, some answering against them.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from typing import Any

import anyio
import mcp_types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

USER_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def _tool(name: str, output_schema: dict[str, Any] | None = None) -> mcp_types.Tool:
    return mcp_types.Tool(
        name=name, description=f"The tool {name}.",
        input_schema={"type": "object", "properties": {}}, output_schema=output_schema,
    )


def _tools(mode: str) -> list[mcp_types.Tool]:
    if mode in ("paged", "looping"):
        return [_tool(f"tool_{i}") for i in range(7)]
    if mode == "names":
        return [_tool("files.read"), _tool("files_read"), _tool("n" * 80)]
    return [
        _tool("good_user", USER_SCHEMA),
        _tool("bad_user", USER_SCHEMA),
        _tool("missing_structured", USER_SCHEMA),
        _tool("structured_only"),
        _tool("error_structured_only"),
    ]


def _result(name: str) -> mcp_types.CallToolResult:
    text = [mcp_types.TextContent(type="text", text=f"{name} ran")]
    if name == "good_user":
        return mcp_types.CallToolResult(content=text, structured_content={"name": "Ada", "age": 36})
    if name == "bad_user":
        return mcp_types.CallToolResult(content=text, structured_content={"name": "Ada", "age": "old"})
    if name == "missing_structured":
        return mcp_types.CallToolResult(content=text)
    if name == "structured_only":
        return mcp_types.CallToolResult(content=[], structured_content={"answer": "forty-two", "ok": True})
    if name == "error_structured_only":
        return mcp_types.CallToolResult(content=[], structured_content={"reason": "quota exceeded"}, is_error=True)
    return mcp_types.CallToolResult(content=text)


def build(mode: str, page_size: int = 3, seen: list[str | None] | None = None) -> Server[Any]:
    """The server of ``mode``; ``seen`` receives the cursor of every tools/list request, in order."""
    tools = _tools(mode)
    seen = seen if seen is not None else []

    async def list_tools(
        _ctx: ServerRequestContext[Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        seen.append(cursor)
        if mode == "looping":
            return mcp_types.ListToolsResult(tools=tools[:2], next_cursor="again")
        if mode != "paged":
            return mcp_types.ListToolsResult(tools=tools)
        start = int(cursor) if cursor else 0
        end = start + page_size
        return mcp_types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)

    async def call_tool(_ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        return _result(params.name)

    return Server(f"lowlevel-{mode}", on_list_tools=list_tools, on_call_tool=call_tool)


async def _main() -> None:
    server = build(os.environ.get("PEER_MODE", "paged"), int(os.environ.get("PEER_PAGE", "3")))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    # quiet: the SDK's deprecation warnings and its rendering of a tool's traceback (slow) are not under test
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    print("lowlevel peer starting", file=sys.stderr)
    anyio.run(_main)
