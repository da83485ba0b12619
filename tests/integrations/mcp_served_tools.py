"""Tools served by our MCP server (``wingman-actors mcp serve --tools-module``) to the SDK's own
client in tests/integrations/test_peer_mcp_server.py."""

from __future__ import annotations

import asyncio
import os
import threading
import time

from pydantic import BaseModel

from wingman_actors import tool
from wingman_actors.errors import ToolError


class Person(BaseModel):
    name: str
    age: int


@tool
def shout(text: str, times: int = 1) -> str:
    """🌟 Upper-case the text: á é í ó ú ñ 漢字 🎉."""
    return " ".join([text.upper()] * times)


@tool
def explode(reason: str) -> str:
    """Raises an ordinary exception."""
    raise ValueError(f"exploded: {reason}")


@tool
def refuse(reason: str) -> str:
    """Fails as a tool does on purpose."""
    raise ToolError(f"refused: {reason}")


@tool
def mute(tool_error: bool) -> str:
    """Fails without a message: a bare ToolError, or a bare TimeoutError."""
    raise ToolError("") if tool_error else TimeoutError()


@tool
def nap(seconds: float) -> str:
    """Blocks for a while, then answers."""
    time.sleep(seconds)
    return f"slept {seconds}"


@tool
async def anap(seconds: float) -> str:
    """Awaits for a while, then answers."""
    await asyncio.sleep(seconds)
    return f"awaited {seconds}"


@tool
def person(name: str) -> Person:
    """A structured value."""
    return Person(name=name, age=7)


@tool
def pid() -> int:
    """The serving process's id."""
    return os.getpid()


@tool
async def wait(marker: str, seconds: float) -> str:
    """Awaits; writes 'cancelled' to the file ``marker`` if the await is cancelled."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        with open(marker, "w") as f:
            f.write("cancelled")
        raise
    return "waited"


MEETING = threading.Barrier(3, timeout=5)


@tool
def meet() -> str:
    """Blocks until three calls of it are in flight at once (in-process tests only)."""
    MEETING.wait()
    return "met"


TOOLS = [shout, explode, refuse, mute, nap, anap, person, pid, wait, meet]
