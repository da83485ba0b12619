"""The input of each journalled visit, as the run viewer shows it.

The journal holds each visit's output, not its input (a visit's input is what its
predecessors delivered, so journalling it too would double a journalled run's writes).
The viewer works the inputs out from the outputs and the formation's shape:

* a node without back edges into it, fed by unconditional edges (or by several
  predecessors, a join per visit), gets the outputs of its predecessors' visits of the
  same number: each of their visits delivers to it once;
* a node in a loop (a back edge into it) or behind one conditional edge gets its values
  one at a time, in the order the journal wrote them: a visit takes the oldest value an
  unconditional edge brought, else the only value a conditional edge may have brought.
  Where several could have been (a conditional edge whose predicate the journal does not
  record), that visit's input and those of the node's later visits are unknown, and left
  out, rather than guessed;
* a fork's ``input=`` is the input of the visit it was given to.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import RunJournal
    from ..store._shape import EdgeShape

__all__ = ["visit_inputs"]

def visit_inputs(journal: RunJournal, run_input: Any, after: Collection[tuple[str, int]] = ()
                 ) -> dict[tuple[str, int], Any]:
    """``(node, visit)`` → the visit's input, for the journalled visits (and skips) whose
    input can be told, and for the visits ``after`` the journal's last entry (the visit a
    failed run failed in, which the journal does not record); the others are missing."""
    incoming: dict[str, list[EdgeShape]] = {}
    for edge in journal.shape.edges:
        incoming.setdefault(edge.target, []).append(edge)
    out: dict[tuple[str, int], Any] = {}
    for node, _kind in journal.shape.nodes:
        edges = incoming.get(node, [])
        forward = [e for e in edges if not e.back]
        if len(forward) <= 1 and (len(forward) < len(edges) or (forward and forward[0].conditional)):
            out.update(_in_turn(journal, node, edges, run_input, [v for n, v in after if n == node]))
        else:
            out.update(_by_visit(journal, node, [e.source for e in forward], run_input,
                                 [v for n, v in after if n == node]))
    for key, given in journal.inputs.items():
        out[key] = given
    return out


def _by_visit(journal: RunJournal, node: str, sources: list[str], run_input: Any, later: list[int]
              ) -> dict[tuple[str, int], Any]:
    """The inputs of ``node``'s visits from its predecessors' visits of the same number."""
    out: dict[tuple[str, int], Any] = {}
    numbers = [e.visit for e in journal.entries if e.node == node and e.kind in ("visit", "skip")] + later
    for visit in numbers:
        if not sources:
            out[(node, visit)] = run_input
            continue
        found = {p: journal.visits.get(p, {}).get(visit) for p in sources}
        out[(node, visit)] = found[sources[0]] if len(sources) == 1 else found
    return out


def _in_turn(journal: RunJournal, node: str, edges: list[EdgeShape], run_input: Any, later: list[int]
             ) -> dict[tuple[str, int], Any]:
    """The inputs of ``node``'s visits from the values its incoming edges brought, in
    journal order (see the module docs)."""
    conditional = {e.source: e.conditional for e in edges}
    pending: list[tuple[Any, bool]] = []  # (value, brought by an unconditional edge)
    if all(e.back for e in edges):  # a source entered again through back edges: the run's input first
        pending.append((run_input, True))
    out: dict[tuple[str, int], Any] = {}
    lost = False

    def take(visit: int) -> None:
        nonlocal lost
        if not lost and pending and pending[0][1]:
            out[(node, visit)] = pending.pop(0)[0]
        elif not lost and len(pending) == 1:
            out[(node, visit)] = pending.pop()[0]
        else:
            lost = True  # which value it took is unknown from here on

    for entry in journal.entries:
        if entry.item is not None or entry.kind not in ("visit", "skip"):
            continue
        if entry.node == node:  # it took a value first (a self-loop's output comes after)
            take(entry.visit)
        if entry.kind == "visit" and entry.node in conditional:
            pending.append((entry.value, not conditional[entry.node]))
    for visit in later:
        take(visit)
    return out
