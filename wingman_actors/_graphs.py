"""Graph helpers shared by layers that may not import each other (the formation plan and
the run store both need the same notion of a back edge)."""

from __future__ import annotations

from typing import Any

import networkx as nx  # type: ignore[import-untyped]

__all__ = ["back_edges"]


def back_edges(graph: nx.DiGraph) -> set[tuple[Any, Any]]:
    """The edges closing a cycle: an edge to a node on the stack of a depth-first search
    started from the sources (nodes with no incoming edge but their own self-loop) in graph
    order, then from any node left unvisited (a graph validation refuses)."""
    on_stack: set[Any] = set()
    done: set[Any] = set()
    back: set[tuple[Any, Any]] = set()
    roots = [n for n in graph if all(u == n for u in graph.predecessors(n))] + list(graph)
    for root in roots:
        if root in on_stack or root in done:
            continue
        on_stack.add(root)
        stack = [(root, iter(graph.successors(root)))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if child in on_stack:
                    back.add((node, child))
                elif child not in done:
                    on_stack.add(child)
                    stack.append((child, iter(graph.successors(child))))
                    break
            else:
                on_stack.discard(node)
                done.add(node)
                stack.pop()
    return back
