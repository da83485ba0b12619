"""Scaffolding of the tests of cut work (a node timed out, a run cancelled or cut by its
timeout): an agent's tool and the tokens its model calls spend, a node held until the test
releases a file (a Ray actor's process sees a file, not the test's events; the formation
tests' ``gate`` fixture holds with events), and a warm-up before a timed run."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wingman_actors import tool
from wingman_actors.core import ContentBlock, InferenceResponse, Usage

__all__ = ["SPENT", "calls_a_tool", "look", "wait_for_file", "warm_up"]

SPENT = Usage(input_tokens=120, output_tokens=30)
"""The tokens each scripted model call spends."""


@tool
def look(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def calls_a_tool() -> InferenceResponse:
    """A model reply calling :func:`look` that spent :data:`SPENT`."""
    return InferenceResponse(content=[ContentBlock.tool_use_block("t1", "look", {"query": "x"})],
                             stop_reason="tool_use", usage=SPENT)


def wait_for_file(release: Path, limit_s: float = 20.0) -> None:
    """Return once ``release`` exists (or after ``limit_s``, so a failed test's node ends)."""
    deadline = time.monotonic() + limit_s
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def warm_up(submit: Callable[[Any], Any], message: Any, ready: Any, tries: int = 5) -> None:
    """Submit ``message`` until a run answers ``ready``: the node has started (a Ray
    actor's process included), so the timer of the next run fires while it works. A loaded
    machine may take longer than a node's timeout to start a Ray actor, hence the tries."""
    for _ in range(tries):
        if submit(message).result(60).output == ready:
            return
