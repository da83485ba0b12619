"""Whether a formation has one output: its sinks exclude one another.

Some sinks can never both produce in one run, because they lie on the two sides of a
choice a node makes:

- behind a node's error edges, and behind its success (its forward out-edges; the node
  itself when it is a sink whose only outgoing edges are error edges);
- behind a node's ``otherwise`` edge, and behind its conditional edges.

A formation whose sinks pairwise exclude one another has one output, as a chain does:
``result.output`` is the value of whichever sink produced it, and a formation node or a
map over the formation passes that value on (not the dict of sink outputs); its output
type is the union of theirs. "Behind" means reachable from the sources only through those
edges. The check is static and conservative: sinks behind two conditional edges of one
node may both fire, and in a formation with loops a node may be visited again, so there
only a single sink gives one output.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from ._plan import EdgeSpec

__all__ = ["one_output", "output_union"]


def one_output(sources: Sequence[str], sinks: Sequence[str], edges: Sequence[EdgeSpec]) -> bool:
    """Whether at most one of ``sinks`` can produce in a run (always, for one sink)."""
    if len(sinks) <= 1:
        return len(sinks) == 1
    if any(e.back for e in edges):
        return False
    everything = _reached(sources, edges, ())
    sides: list[tuple[set[str], set[str]]] = []  # (one side's sinks, the other's), per choice
    for node in dict.fromkeys(e.source for e in edges if e.on_error or e.otherwise):
        out = [e for e in edges if e.source == node]
        errors = [e for e in out if e.on_error]
        forward = [e for e in out if not e.on_error]
        if errors:
            success = _behind(sources, edges, forward, everything) | ({node} if not forward else set())
            sides.append((_behind(sources, edges, errors, everything), success))
        if any(e.otherwise for e in forward):
            sides.append((_behind(sources, edges, [e for e in forward if e.otherwise], everything),
                          _behind(sources, edges, [e for e in forward if e.when is not None], everything)))
    sink_set = set(sinks)
    sides = [(a & sink_set, b & sink_set) for a, b in sides]
    return all(any((x in a and y in b) or (y in a and x in b) for a, b in sides) for x, y in combinations(sinks, 2))


def _behind(sources: Sequence[str], edges: Sequence[EdgeSpec], through: list[EdgeSpec], everything: set[str]) -> set[str]:
    """The nodes reachable from ``sources`` only through the edges ``through``."""
    return everything - _reached(sources, edges, through) if through else set()


def _reached(sources: Iterable[str], edges: Sequence[EdgeSpec], without: Sequence[EdgeSpec]) -> set[str]:
    """The nodes reachable from ``sources`` along ``edges`` but ``without``."""
    skipped = {id(e) for e in without}
    successors: dict[str, list[str]] = {}
    for e in edges:
        if id(e) not in skipped:
            successors.setdefault(e.source, []).append(e.target)
    seen = set(sources)
    stack = list(seen)
    while stack:
        for nxt in successors.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def output_union(members: Sequence[Any]) -> Any:
    """The output type of a formation whose sinks are alternatives: the union of their
    output types ``members`` (None, unknown, when one of them is unknown)."""
    if any(t is None for t in members):
        return None
    return Union[tuple(members)]  # a union of runtime values (Union dedupes them)
