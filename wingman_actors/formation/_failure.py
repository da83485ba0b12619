"""What an error edge carries: :class:`NodeFailure`.

``connect("fetch", "fallback", on_error=True)`` declares an error edge: when ``fetch``
fails after its retries (a timeout included), ``fallback`` receives a :class:`NodeFailure`
instead of the run failing, and the run goes on from it.

Example:
    >>> from wingman_actors.formation import Formation, NodeFailure
    >>> def fetch(url: str) -> str:
    ...     raise ConnectionError("offline")
    >>> def fallback(failure: NodeFailure) -> str:
    ...     return f"cached page ({type(failure.error).__name__} in {failure.node})"
    >>> f = Formation("web").add_function("fetch", fetch).add_function("fallback", fallback)
    >>> f.connect("fetch", "fallback", on_error=True).run("https://example.org").outputs
    {'fallback': 'cached page (ConnectionError in fetch)'}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import error_text, shippable_error

__all__ = ["NodeFailure"]


@dataclass(frozen=True, slots=True)
class NodeFailure:
    """A node's failure, delivered along its error edges once its retries are spent.

    Attributes:
        node: the node that failed.
        error: the exception of its last attempt (a
            :class:`~wingman_actors.errors.NodeTimeoutError` when it ran out of time). In
            a resumed run whose journal holds the failure, a rebuilt exception: see
            :class:`~wingman_actors.formation._durable.Journal`.
        input: the input of the visit that failed (the value the node received).
        attempts: how many attempts the visit made.
        run_id: the run it happened in.
    """

    node: str
    error: BaseException
    input: Any
    attempts: int
    run_id: str

    def __reduce__(self) -> tuple[Any, ...]:
        # the error may be of a class pickle cannot rebuild from its args (a handler on
        # the Ray backend runs in another process)
        return (NodeFailure, (self.node, shippable_error(self.error), self.input, self.attempts, self.run_id))

    def __str__(self) -> str:
        # what an agent handler reads as its message, and a log line shows
        return f"node {self.node!r} failed after {self.attempts} attempt(s): {error_text(self.error)}"
