"""``ask_human``: a ready-made tool that asks a person, built on :func:`~wingman_actors.interrupt`.

Give it to an agent of a formation run with a store: when the model calls it, the run is
suspended with ``interrupt == {"node": ..., "payload": {"question": ...}}``; resuming the
run with ``answer=...`` hands the answer to the model as the tool's result, and the
session continues where it stopped (its earlier model calls are not made again).
"""

from __future__ import annotations

import json

from .._interrupts import interrupt
from ._base import tool

__all__ = ["ask_human"]


@tool
def ask_human(question: str) -> str:
    """Ask a person a question and wait for their answer. Use it when you need a decision,
    an approval or a fact only a person can give.

    Args:
        question: the question, complete enough to answer without other context.
    """
    answer = interrupt({"question": question})
    return answer if isinstance(answer, str) else json.dumps(answer)
