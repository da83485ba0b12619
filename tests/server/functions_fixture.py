"""Functions and predicates the formation tests load by module name (``--functions``)."""

from __future__ import annotations

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
