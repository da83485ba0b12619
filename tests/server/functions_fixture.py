"""Functions and predicates the formation tests load by module name (``--functions``)."""

from __future__ import annotations

import itertools
import threading
from collections import Counter

from wingman_actors import interrupt, tool
from wingman_actors.formation import NodeFailure
from wingman_actors.orchestration import Blackboard
from wingman_actors.server import function, predicate


@function
def clean(text: str) -> str:
    """Strip surrounding blanks."""
    return text.strip()


@function
def words(text: str) -> list[str]:
    """Split into words."""
    return text.split()


@function(name="shout")
def to_upper(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@function
def explode(text: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot handle {text!r}")


@function
def explain_failure(failure: NodeFailure) -> str:
    """What failed, for an error edge's handler."""
    return f"{failure.node} failed after {failure.attempts} attempt(s): {type(failure.error).__name__}"


@predicate
def is_long(text: str) -> bool:
    """More than three words."""
    return len(text.split()) > 3


@predicate
def is_short(text: str) -> bool:
    """Three words or fewer."""
    return len(text.split()) <= 3


@function
def half_character(text: str) -> str:
    """Returns text with a lone surrogate, as careless user code can."""
    return text + "\ud800"


@function
def remember(text: str, blackboard: Blackboard) -> str:
    """Writes the text to the run's blackboard."""
    blackboard.set("said", text)
    return text


@function
def recall(text: str, blackboard: Blackboard) -> str:
    """Reads what an earlier node of the same run wrote."""
    return f"{blackboard.get('said')} / {text}"


@function
def peek(text: str, blackboard: Blackboard) -> str:
    """The text with what the run's blackboard holds under "said" (None on a fresh board)."""
    return f"{text} (board: {blackboard.get('said')})"


_THREADS = itertools.count(1)
_THREAD = threading.local()


@function
def node_thread(text: str) -> str:
    """``"serial:ident"`` of the thread running this node (a started formation's node
    actor): its serial is new for every thread, however the OS reuses idents."""
    if not hasattr(_THREAD, "serial"):
        _THREAD.serial = next(_THREADS)
    return f"{_THREAD.serial}:{threading.get_ident()}"


GATE = threading.Event()
"""Opened by the tests: ``gated`` waits for it (a run to cancel while it is in flight)."""

CALLS: Counter[str] = Counter()
"""How many times each counting function ran (side effects a resume must not repeat)."""


@function
def gated(text: str) -> str:
    """Waits until the test opens GATE, then passes the text on."""
    CALLS["gated"] += 1
    GATE.wait(30)
    return text


@function
def lap(text: str) -> str:
    """Adds a lap mark ("!"), counting its calls; a second lap waits for GATE (a loop's
    visit in flight)."""
    CALLS["lap"] += 1
    if text.endswith("!"):
        GATE.wait(30)
    return text + "!"


@predicate
def one_lap(text: str) -> bool:
    """One lap mark so far: loop once more."""
    return text.count("!") == 1


@function
def counted(text: str) -> str:
    """Counts its calls."""
    CALLS["counted"] += 1
    return text


@function
def joined(shout: str, clean: str) -> str:
    """A join of the nodes ``shout`` and ``clean``: counts its calls."""
    CALLS["joined"] += 1
    return f"{shout}|{clean}"


DATABASE: list[str] = []
"""The database ``sees_running`` reads (set by the test)."""
SEEN: list[list[str]] = []
"""What each ``sees_running`` call saw: the ids of the runs recorded ``running`` then."""


@function
def sees_running(text: str) -> str:
    """Notes which run records are committed as ``running`` while it runs (a connection of its own)."""
    import sqlite3

    with sqlite3.connect(DATABASE[0]) as conn:
        SEEN.append([r[0] for r in conn.execute("SELECT id FROM run_records WHERE status = 'running'")])
    return text


@function
def ask(text: str) -> str:
    """Asks a person whether to publish the text; returns the text with the answer."""
    answer = interrupt({"question": f"publish {text!r}?"})
    return f"{text}: {answer}"


@tool
def count_words(text: str) -> str:
    """Count the words of a text.

    Args:
        text: the text to count.
    """
    return f"{len(text.split())} words"
