"""The MCP servers of stored agents: which commands may run, and one shared connection per
server, opened at the first run that needs it and closed when the server stops.

A ``{"command": [...]}`` server is a program the HTTP server starts: an executable under the
work root (the path relative to it, symlinks followed), the server's own Python (unless
``--no-bash``: a Python runs any code, as ``bash`` does), or a program allowed with ``serve
--mcp-command PROGRAM``. Its arguments that are paths (absolute, or holding ``..``) must lie
under the work root too, like every other path of a request. It runs in the work root with
the MCP SDK's minimal environment (``PATH``, ``HOME``...: no keys). A ``{"url": ...}`` server is reached over streamable HTTP.
The connection (through :func:`wingman_actors.integrations.mcp.mcp_tools`) is shared by
every run of every agent naming the same server, as the library shares one ``mcp_tools``
block between sessions.

Example:
    >>> check_command(["npx", "-y", "server"], root=Path("/srv"), allowed=("npx",))
    >>> check_command(["/bin/sh"], root=Path("/srv"), allowed=())
    Traceback (most recent call last):
    ...
    ValueError: program '/bin/sh' is neither under the work root '/srv' nor allowed on this server; ...
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import sys
import threading
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..tools import Tool
from ._errors import ApiError, invalid

__all__ = ["MCPPool", "allowed_programs", "check_command", "check_mcp"]

log = logging.getLogger("wingman_actors.server")

_CONNECT_S = 30.0


def allowed_programs(mcp_commands: Sequence[str], allow_bash: bool) -> tuple[str, ...]:
    """The programs MCP commands may run beside those under the work root: ``--mcp-command``
    ones, and the server's own Python unless ``--no-bash``."""
    return (*mcp_commands, sys.executable) if allow_bash else tuple(mcp_commands)


def _resolve(value: str, root: Path) -> Path:
    try:
        return (Path(value) if os.path.isabs(value) else root / value).resolve()
    except (OSError, RuntimeError, ValueError):
        return Path("/")  # unresolvable: refused like any path outside the root


def check_command(command: Sequence[str], *, root: Path, allowed: Sequence[str]) -> None:
    """Refuse ``command`` unless its program is allowed or an executable under ``root``, and
    its path arguments (absolute, or holding ``..``; the value of an ``--opt=PATH`` too) lie
    under ``root``.

    Raises:
        ValueError: what is refused (the message names the fix).
    """
    for arg in command[1:]:
        # "--opt=PATH" hands the program a path as "--opt PATH" does: its value is checked too.
        values = (arg, arg.partition("=")[2]) if arg.startswith("-") and "=" in arg else (arg,)
        for value in values:
            if (os.path.isabs(value) or ".." in Path(value).parts) and not _resolve(value, root).is_relative_to(root):
                raise ValueError(f"argument {arg!r} is a path outside the work root {str(root)!r}; put the file "
                                 "under the work root (relative paths are taken from it)")
    program = command[0]
    if program in allowed:
        return
    resolved = _resolve(program, root)
    inside = resolved.is_relative_to(root)
    if inside and resolved.is_file() and os.access(resolved, os.X_OK):
        return
    why = ("is not an executable file" if inside else
           f"is neither under the work root {str(root)!r} nor allowed on this server")
    raise ValueError(
        f"program {program!r} {why}; put an executable under the work root (relative paths are taken from it), "
        f"or start the server with --mcp-command {program}"
        + (f" (allowed: {', '.join(allowed)})" if allowed else "")
    )


def check_mcp(servers: Sequence[dict[str, Any]], *, root: Path, allowed: Sequence[str]) -> None:
    """Refuse MCP servers a run could not use, naming ``mcp[i]``: the extra missing, or a
    command whose program may not run."""
    if servers and importlib.util.find_spec("mcp") is None:
        raise invalid("mcp", 'MCP servers need the mcp extra on the server: pip install "wingman-actors[mcp]"')
    for i, server in enumerate(servers):
        command = server.get("command")
        if command is not None:
            try:
                check_command(command, root=root, allowed=allowed)
            except ValueError as exc:
                raise invalid(f"mcp[{i}].command", str(exc)) from None


class MCPPool:
    """Open MCP connections by server, shared by every run; :meth:`close` ends them all.

    Args:
        root: the work root: where command servers run, what their relative programs are under.
        allowed: the programs allowed beside those under the root.
        connect_timeout: seconds to start a server and finish the handshake.
    """

    def __init__(self, root: Path, allowed: Sequence[str], connect_timeout: float = _CONNECT_S) -> None:
        self.root = root
        self.allowed = tuple(allowed)
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._open: dict[str, tuple[ExitStack, list[Tool]]] = {}
        self._closed = False

    def tools(self, server: dict[str, Any], *, agent: str) -> list[Tool]:
        """The tools of ``server`` (``{"command"}`` or ``{"url"}``, with ``prefix`` and
        ``include``), connecting on first use.

        Raises:
            ApiError: 400 when the command may no longer run (the allow-list or the root
                changed) or ``include`` names a tool the server lacks; 502 (``kind:
                network``) when the server cannot be started or reached.
        """
        key = json.dumps(server, sort_keys=True)
        with self._lock:  # one connection per server: a second run waits for the first to open it
            if self._closed:
                raise ApiError(503, "the server is stopping; send the request again once it is back")
            found = self._open.get(key)
            if found is None:
                found = self._open[key] = self._connect(server, agent)
            return found[1]

    def _connect(self, server: dict[str, Any], agent: str) -> tuple[ExitStack, list[Tool]]:
        from ..integrations.mcp import MCPConnectionError, mcp_tools  # the mcp extra, checked when stored

        command = server.get("command")
        where = " ".join(command) if command is not None else str(server.get("url"))
        if command is not None:
            try:
                check_command(command, root=self.root, allowed=self.allowed)
            except ValueError as exc:
                raise ApiError(400, f"agent {agent}: MCP server {where!r}: {exc}", fields=["mcp"]) from None
        stack = ExitStack()
        try:
            tools = stack.enter_context(mcp_tools(
                command, url=server.get("url"), cwd=self.root if command is not None else None,
                prefix=server.get("prefix", ""), include=server.get("include"), connect_timeout=self.connect_timeout,
            ))
        except MCPConnectionError as exc:
            stack.close()
            raise ApiError(502, f"agent {agent}: MCP server {where!r} could not be reached: {exc}",
                           kind="network") from None
        except ValueError as exc:
            stack.close()
            raise ApiError(400, f"agent {agent}: MCP server {where!r}: {exc}", fields=["mcp"]) from None
        log.info("connected to MCP server %s (%d tools)", where, len(tools))
        return stack, list(tools)

    def close(self) -> None:
        """Close every connection (at shutdown); later requests get a 503."""
        with self._lock:
            self._closed = True
            entries = list(self._open.values())
            self._open.clear()
        for stack, _ in entries:
            try:
                stack.close()
            except Exception:  # one server failing to close must not keep the others open
                log.warning("closing an MCP connection failed", exc_info=True)
