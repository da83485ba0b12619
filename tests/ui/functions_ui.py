"""Functions the browser tests' formations run (loaded with ``--functions``)."""

from __future__ import annotations

import threading
import time

from wingman_actors import interrupt
from wingman_actors.server import function, predicate

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


LATER = threading.Event()
"""Opened by the tests: ``gated_later`` waits for it (a node at work after ``gated`` finished)."""


@function
def gated_later(text: str) -> str:
    """Waits until the test opens LATER (at most 20 s), then passes the text on."""
    LATER.wait(20)
    return text


@function
def lap(text: str) -> str:
    """Adds a lap mark ("!"); the first lap waits for GATE, the second for LATER (at most 20 s
    each): a loop's visits at work, one after the other."""
    (LATER if text.endswith("!") else GATE).wait(20)
    return text + "!"


@predicate
def one_lap(text: str) -> bool:
    """One lap mark so far: loop once more."""
    return text.count("!") == 1
