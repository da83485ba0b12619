"""``mcp_tools``: an MCP server's tools as wingman-actors tools.

Example:
    >>> with mcp_tools(command=["python", "server.py"]) as tools:          # doctest: +SKIP
    ...     agent = Agent("a", provider=provider, tools=tools)
    >>> with mcp_tools(url="http://127.0.0.1:8000/mcp", headers={"Authorization": "Bearer ..."}) as tools:  # doctest: +SKIP
    ...     ...
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jsonschema
import mcp_types
from mcp import MCPError, StdioServerParameters

from ...core import ToolDefinition
from ...errors import AgentError, ToolError
from ...tools._base import Tool, ToolContext
from ._connection import Connection, MCPConnectionError, http_transport, stdio_transport

__all__ = ["MCPConnectionError", "MCPTool", "mcp_tools"]

_BAD_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_PREFIX = re.compile(r"^[a-zA-Z0-9_-]{1,40}$")


class MCPTool:
    """One tool of an MCP server, callable by any agent while its connection is open.

    Arguments are checked against the server's input schema (with ``jsonschema``) before
    the call, so a model gets a precise account of what it got wrong without a round trip.
    The server's errors (``isError`` results, protocol errors, structured content that
    breaks the tool's own output schema, a crashed server, a call that takes longer than
    the timeout) become :class:`~wingman_actors.errors.ToolError` naming the tool and,
    where the server is at fault, the server; the session turns it into an error result
    for the model.

    Attributes:
        name: the name the model sees (the server's, with ``prefix`` and unsafe
            characters replaced by ``_``).
        remote_name: the server's name for the tool.
    """

    def __init__(self, conn: Connection, spec: mcp_types.Tool, *, prefix: str = "") -> None:
        self._conn = conn
        self.remote_name = spec.name
        self.name = (prefix + _BAD_NAME_CHARS.sub("_", spec.name))[:64]
        self.description = spec.description or spec.title or ""
        schema = dict(spec.input_schema or {"type": "object", "properties": {}})
        self._definition = ToolDefinition(name=self.name, description=self.description, input_schema=schema)
        validator_cls = jsonschema.validators.validator_for(schema)
        try:
            validator_cls.check_schema(schema)
            self._validator: Any = validator_cls(schema)
        except jsonschema.SchemaError:
            self._validator = None  # the server's schema is broken: let the server judge

    @property
    def definition(self) -> ToolDefinition:
        """The definition sent to the model (the server's name, description and schema)."""
        return self._definition

    def execute(self, input: dict[str, Any], ctx: ToolContext) -> str:
        """Validate ``input`` against the server's schema, call the tool, render the result."""
        self._validate(input)
        try:
            result = self._conn.call_tool(self.remote_name, input, ctx.token)
        except AgentError:
            raise  # the run was cancelled or timed out: the session handles it
        except TimeoutError as exc:
            raise ToolError(
                f"MCP tool {self.name!r} of server {self._conn.label} did not answer within "
                f"{self._conn.call_timeout:g}s ({exc}); try a smaller request or another tool", tool=self.name,
            ) from exc
        except ConnectionError as exc:
            raise ToolError(f"MCP tool {self.name!r} is unavailable: {exc}", tool=self.name) from exc
        except MCPError as exc:
            raise ToolError(
                f"MCP tool {self.name!r} of server {self._conn.label} failed: {exc.message} (code {exc.code})",
                tool=self.name,
            ) from exc
        except RuntimeError as exc:
            # the SDK checks structured content against the tool's output schema (and
            # raises RuntimeError): the server broke its own contract
            raise ToolError(
                f"MCP tool {self.name!r} of server {self._conn.label} returned a result its own output schema "
                f"refuses: {_first_paragraph(exc)}", tool=self.name,
            ) from exc
        except Exception as exc:  # e.g. pydantic's ValidationError: a result the protocol does not allow
            raise ToolError(
                f"MCP tool {self.name!r} of server {self._conn.label} returned a result the MCP client cannot "
                f"read: {type(exc).__name__}: {_first_paragraph(exc)}", tool=self.name,
            ) from exc
        text = render_result(result)
        if result.is_error:
            raise ToolError(text or f"MCP tool {self.name!r} reported an error without a message", tool=self.name)
        return text

    def _validate(self, input: dict[str, Any]) -> None:
        if self._validator is None:
            return
        errors = sorted(self._validator.iter_errors(input), key=lambda e: [str(p) for p in e.absolute_path])
        if not errors:
            return
        problems = "; ".join(f"{'.'.join(str(p) for p in e.absolute_path) or '(input)'}: {e.message}" for e in errors[:10])
        raise ToolError(
            f"invalid arguments for tool {self.name!r}: {problems}. "
            "Call it again with arguments matching its input schema.",
            tool=self.name,
        )

    def __reduce__(self) -> Any:
        raise TypeError(
            f"MCP tool {self.name!r} holds a live connection to {self._conn.label} and cannot be sent to another "
            "process (e.g. the ray backend): open mcp_tools(...) where the agent runs, or use the threads backend"
        )

    def __repr__(self) -> str:
        return f"<mcp tool {self.name} of {self._conn.label}>"


def render_result(result: mcp_types.CallToolResult) -> str:
    """The text a model receives for an MCP tool result.

    Text blocks as they are; embedded text resources by their text; images and audio (type
    and decoded size), binary resources (URI and type) and resource links (URI, name, type
    and description) as a one-line note each. Structured content is sent as JSON when the
    result has no text (servers that return both put the same data in the text, as the
    spec asks).
    """
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.EmbeddedResource):
            res = block.resource
            text = getattr(res, "text", None)
            parts.append(text if text is not None else f"[resource {res.uri} ({res.mime_type or 'binary'})]")
        elif isinstance(block, mcp_types.ResourceLink):
            kind = f" ({block.mime_type})" if block.mime_type else ""
            about = f": {block.description}" if block.description else ""
            parts.append(f"[resource link {block.uri}: {block.name}{kind}{about}]")
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(f"[{block.type} {block.mime_type}, {_decoded_size(block.data)} bytes, not shown]")
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


def _first_paragraph(exc: Exception) -> str:
    """The first paragraph of an exception's text (jsonschema's errors add the whole schema)."""
    return str(exc).split("\n\n", 1)[0].strip() or type(exc).__name__


def _decoded_size(data: str) -> int:
    """The size in bytes of base64 ``data`` once decoded (its ``=`` padding is no data)."""
    data = data.rstrip()
    return len(data) * 3 // 4 - (len(data) - len(data.rstrip("=")))


@contextmanager
def mcp_tools(
    command: Sequence[str] | None = None,
    *,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    connect_timeout: float = 30.0,
    prefix: str = "",
    include: Iterable[str] | None = None,
) -> Iterator[list[Tool]]:
    """Connect to an MCP server and yield its tools; the connection closes with the block.

    One connection serves every session that uses the tools, concurrently: MCP matches
    answers to requests by id, and one server process (or HTTP session) is cheaper than
    one per session. A server that keeps per-client state therefore shares it between
    those sessions; open one ``mcp_tools`` block per session when that matters.

    Args:
        command: the server's command line, run as a subprocess speaking MCP over stdio,
            e.g. ``["npx", "-y", "@modelcontextprotocol/server-everything"]``.
        url: the server's streamable HTTP endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
        env: extra environment variables for the subprocess (stdio only).
        cwd: the subprocess's working directory (stdio only).
        headers: HTTP headers sent with every request, e.g. authorization (HTTP only).
        timeout: seconds one tool call may take; a later answer is an error result.
        connect_timeout: seconds to start the server and finish the handshake.
        prefix: prepended to every tool name (to tell two servers' tools apart).
        include: only these tools (by the server's names); all of them when None.

    Yields:
        The server's tools (:class:`MCPTool`), in the server's order.

    Raises:
        ValueError: neither or both of ``command`` and ``url``, or options of the other
            transport, a timeout not > 0, a ``prefix`` of characters a tool name cannot
            hold, ``include`` names a tool the server does not have, or two of the
            server's tools have the same name once made safe for a model.
        TypeError: a timeout that is not a number, a ``prefix`` not a str, ``include`` not
            a list of names (a str included), ``env`` or ``headers`` not a dict of str to str,
            ``url`` not a str, ``cwd`` not a path.
        MCPConnectionError: the server could not be started, reached or initialised, or
            its paginated tool listing never ends (a cursor that comes back).
    """
    _check_options(timeout, connect_timeout, prefix, include, env, headers)
    wanted = _names(include)
    server, label = _target(command, url, env, cwd, headers)
    conn = Connection(server, label, call_timeout=timeout)
    specs = conn.open(connect_timeout)
    try:
        if wanted is not None:
            known = {s.name for s in specs}
            missing = [n for n in wanted if n not in known]
            if missing:
                raise ValueError(
                    f"MCP server {label} has no tool(s) {missing}; it has: {', '.join(sorted(known)) or 'none'}"
                )
            specs = [s for s in specs if s.name in wanted]
        tools = [MCPTool(conn, spec, prefix=prefix) for spec in specs]
        _refuse_clashes(tools, label)
        as_tools: list[Tool] = list(tools)
        yield as_tools
    finally:
        conn.close()


def _refuse_clashes(tools: list[MCPTool], label: str) -> None:
    """Refuse server tools whose names, made safe for a model, are one name (an agent could
    not tell them apart)."""
    by_name: dict[str, list[str]] = {}
    for t in tools:
        by_name.setdefault(t.name, []).append(t.remote_name)
    for name, remote in by_name.items():
        if len(remote) > 1:
            raise ValueError(
                f"MCP server {label}: its tools {' and '.join(repr(r) for r in remote)} are both named {name!r} "
                "for the model (a tool name keeps letters, digits, '_' and '-', up to 64 characters); leave all "
                "but one out with include=[...], or open each in its own mcp_tools block with another prefix="
            )


def _check_options(
    timeout: object, connect_timeout: object, prefix: object, include: object, env: object, headers: object
) -> None:
    """Refuse, before connecting, options a connection could not use."""
    if any(isinstance(t, bool) or not isinstance(t, int | float) for t in (timeout, connect_timeout)):
        raise TypeError(
            f"mcp_tools: timeout and connect_timeout must be numbers of seconds, got {timeout!r} and {connect_timeout!r}"
        )
    if not timeout > 0 or not connect_timeout > 0:  # type: ignore[operator]  # numbers, checked above
        raise ValueError(f"mcp_tools: timeout and connect_timeout must be > 0, got {timeout} and {connect_timeout}")
    if not isinstance(prefix, str):
        raise TypeError(f"mcp_tools: prefix must be a str, got {type(prefix).__name__}")
    if prefix and not _PREFIX.match(prefix):
        # the providers' APIs refuse tool names of other characters (at the first model call)
        raise ValueError(f"mcp_tools: prefix must be letters, digits, '_' or '-' (e.g. 'files_'), got {prefix!r}")
    if isinstance(include, str | bytes):
        raise TypeError(f"mcp_tools: include must be a list of the server's tool names, e.g. [{include!r}]")
    for name, pairs in (("env", env), ("headers", headers)):
        if pairs is not None and (
            not isinstance(pairs, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in pairs.items())
        ):
            raise TypeError(f"mcp_tools: {name} must be a dict of str to str, e.g. {{'NAME': 'value'}}; got {pairs!r}")


def _names(include: Iterable[str] | None) -> list[str] | None:
    """``include`` as a list (an iterator is read once, here), refused unless it names tools."""
    if include is None:
        return None
    wanted = list(include) if isinstance(include, Iterable) else None
    if wanted is None or not all(isinstance(name, str) for name in wanted):
        raise TypeError(
            f"mcp_tools: include must be a list of the server's tool names (str), e.g. ['echo'], "
            f"got {wanted if wanted is not None else include!r}"
        )
    return wanted


def _target(
    command: Sequence[str] | None,
    url: str | None,
    env: Mapping[str, str] | None,
    cwd: str | Path | None,
    headers: Mapping[str, str] | None,
) -> tuple[Any, str]:
    if (command is None) == (url is None):
        raise ValueError(
            "mcp_tools needs exactly one of command=[...] (a server over stdio) or url=... "
            "(a server over streamable HTTP)"
        )
    if command is not None:
        if isinstance(command, str) or not command or not all(isinstance(c, str) for c in command):
            raise ValueError(
                f"mcp_tools: command must be a non-empty list of strings, e.g. ['python', 'server.py'], got {command!r}"
            )
        if headers is not None:
            raise ValueError("mcp_tools: headers= applies to url=...; pass env= to a stdio server instead")
        if cwd is not None and not isinstance(cwd, str | os.PathLike):
            raise TypeError(f"mcp_tools: cwd must be a folder's path (a str or Path), got {cwd!r}")
        if cwd is not None and not Path(cwd).is_dir():
            raise ValueError(f"mcp_tools: cwd {str(cwd)!r} is not an existing directory")
        params = StdioServerParameters(
            command=command[0], args=list(command[1:]), env=dict(env) if env is not None else None,
            cwd=str(cwd) if cwd is not None else None,
        )
        return stdio_transport(params), " ".join(command)
    if not isinstance(url, str):
        raise TypeError(f"mcp_tools: url must be a str such as 'http://127.0.0.1:8000/mcp', got {url!r}")
    if env is not None or cwd is not None:
        raise ValueError("mcp_tools: env= and cwd= apply to command=[...]; an HTTP server runs elsewhere")
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"mcp_tools: url must start with http:// or https://, got {url!r}")
    return http_transport(url, headers), url
