"""wingman-actors tools served to any MCP client (the SDK's low-level ``Server``).

Each tool runs as it would in a session: on a worker thread, with one
:class:`~wingman_actors.tools.ToolContext` whose ``work_dir`` confines the file tools.
A :class:`~wingman_actors.errors.ToolError` (bad arguments, a path outside the work dir)
becomes an ``isError`` result the client's model can read.

Example:
    >>> serve_stdio(load_tools(["read", "grep"]), work_dir=".")   # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import anyio.to_thread
import mcp_types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from ... import __version__
from ..._cancel import CancelToken
from ..._event_loop import LoopThread
from ...errors import AgentError
from ...tools import Tool, ToolContext, ToolRegistry, builtin_tools

__all__ = ["build_server", "load_tools", "serve_stdio"]


def load_tools(names: Sequence[str] = (), module: str | None = None) -> list[Tool]:
    """Built-in tools by name, then the tools of a Python module.

    Args:
        names: built-in tool names (``read``, ``grep``, ``glob``...).
        module: a dotted module name or a ``.py`` file; its tools are its ``TOOLS`` (or
            ``tools``) list when it has one, else every module-level :class:`Tool`.

    Raises:
        ValueError: an unknown built-in name, a module without tools, or duplicate names.
        ImportError: the module cannot be imported.
    """
    tools: list[Tool] = builtin_tools(names)
    if module is not None:
        mod = _import(module)
        found = getattr(mod, "TOOLS", None) or getattr(mod, "tools", None)
        if found is None:
            found = [v for v in vars(mod).values() if isinstance(v, Tool)]
        found = list(found)
        bad = [repr(t) for t in found if not isinstance(t, Tool)]
        if bad:
            raise ValueError(f"module {module!r}: TOOLS holds non-tools {bad}; decorate functions with @tool")
        if not found:
            raise ValueError(
                f"module {module!r} has no tools: define functions with @tool, or a TOOLS list"
            )
        tools.extend(found)
    if not tools:
        raise ValueError("no tools to serve: name built-ins with --tools read,grep,... or give --tools-module")
    ToolRegistry(tools)  # refuses duplicate names with a clear message
    return tools


def _import(module: str) -> ModuleType:
    if module.endswith(".py") or "/" in module:
        path = Path(module).resolve()
        if not path.is_file():
            raise ImportError(f"tools module {module!r}: no such file")
        spec = importlib.util.spec_from_file_location(f"wingman_mcp_tools_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"tools module {module!r}: cannot be loaded as Python")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        return mod
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # as `python -m` would: modules beside the caller
    return importlib.import_module(module)


def build_server(
    tools: Sequence[Tool], work_dir: str | Path, *, name: str = "wingman-actors", context: ToolContext | None = None
) -> Server[Any]:
    """An MCP server exposing ``tools``, confined to ``work_dir``.

    Args:
        tools: the tools to serve (names must be unique).
        work_dir: the directory file tools may touch; it must exist.
        name: the server's name in the handshake.
        context: the tools' context (its closers release what tools hold, such as the
            bash shell); a fresh one on ``work_dir`` when None.

    Raises:
        ValueError: ``work_dir`` is not an existing directory, or duplicate tool names.
    """
    root = Path(work_dir)
    if not root.is_dir():
        raise ValueError(f"work dir {str(work_dir)!r} is not an existing directory")
    registry = ToolRegistry(tools)
    ctx = context if context is not None else ToolContext(root)
    listing = [
        mcp_types.Tool(name=t.name, description=t.definition.description, input_schema=t.definition.input_schema)
        for t in registry
    ]

    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=listing)

    async def call_tool(_ctx: ServerRequestContext[Any], params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        found = registry.get(params.name)
        if found is None:
            return _error(f"unknown tool {params.name!r}; available tools: {', '.join(registry.names)}")
        t: Tool = found
        arguments = dict(params.arguments or {})
        token = CancelToken()
        try:
            # abandon_on_cancel: a request its client cancelled (or a client gone) returns at
            # once; a blocking tool cannot be stopped, so its thread runs on, as a session
            # abandons a tool call, instead of holding the request and the server's exit
            text = await anyio.to_thread.run_sync(t.execute, arguments, _CallContext(ctx, token), abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            token.cancel("the MCP client cancelled the request")  # an async tool is cancelled with it
            raise
        except AgentError as exc:  # ToolError included: the message is written for a model
            return _error(exc.message or f"tool {t.name!r} failed without saying why")
        except Exception as exc:  # one raised without a message is named alone, as an agent's results say
            detail = str(exc)
            return _error(f"tool {t.name!r} raised {type(exc).__name__}" + (f": {detail}" if detail else ""))
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)])

    server: Server[Any] = Server(
        name, version=__version__, instructions=f"Tools working in {root.resolve()}.",
        on_list_tools=list_tools, on_call_tool=call_tool,
    )
    return server


class _CallContext(ToolContext):
    """One call's view of the server's :class:`ToolContext`: the same work dir, state,
    closers and event loop, with the call's own cancel token (cancelled when the client
    cancels the request, which cancels an ``async def`` tool and stops one that checks it)."""

    def __init__(self, shared: ToolContext, token: CancelToken) -> None:
        super().__init__(
            shared.work_dir, token=token, agent=shared.agent, session_id=shared.session_id, metadata=shared.metadata
        )
        self.state = shared.state
        self._shared = shared

    def on_close(self, fn: Callable[[], None]) -> None:
        self._shared.on_close(fn)

    def _tools_loop(self) -> LoopThread:
        return self._shared._tools_loop()

    def close(self) -> None:
        """Nothing of its own to release: the server's context is closed with the server."""


def _error(text: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=True)


def serve_stdio(tools: Sequence[Tool], work_dir: str | Path) -> None:
    """Serve ``tools`` over this process's stdin and stdout until the client closes them.

    Raises:
        ValueError: as :func:`build_server`.
    """
    ctx = ToolContext(work_dir)
    server = build_server(tools, work_dir, context=ctx)
    print(  # stderr: stdout carries the protocol
        f"wingman-actors mcp: serving {', '.join(t.name for t in tools)} on stdio, in {ctx.work_dir}",
        file=sys.stderr,
    )

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        ctx.close()
