"""Functions the browser tests' formations run (loaded with ``--functions``)."""

from __future__ import annotations

import threading
import time

from wingman_actors import interrupt
from wingman_actors.server import function

GATE = threading.Event()
"""Opened by the tests: ``gated`` waits for it (a run to cancel while it is in flight)."""


@function
def slow(text: str) -> str:
    """Takes a moment (so a page sees the node running), then passes the text on."""
    time.sleep(0.3)
    return text


@function
def shout(text: str) -> str:
    """Upper-cases the text."""
    return text.upper()


@function
def explode(text: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot handle {text!r}")


@function
def ask(text: str) -> str:
    """Asks a person whether to publish the text; returns the text with the answer."""
    answer = interrupt({"question": f"publish {text!r}?"})
    return f"{text}: {answer}"


@function
def gated(text: str) -> str:
    """Waits until the test opens GATE (at most 20 s), then passes the text on."""
    GATE.wait(20)
    return text
