"""Graph helpers shared by layers that may not import each other (the formation plan and
the run store both need the same notion of a back edge)."""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import networkx as nx  # type: ignore[import-untyped]

__all__ = ["back_edges", "downstream", "loop_roles", "natural_loops", "topological_order"]

_N = TypeVar("_N", bound=Hashable)


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


def topological_order(nodes: Sequence[_N], successors: Mapping[_N, Iterable[_N]]) -> tuple[_N, ...]:
    """The nodes in topological order of the acyclic ``successors`` (each node's forward
    successors; every node is a key), the earliest of ``nodes`` first among those ready:
    what ``networkx.lexicographical_topological_sort`` returns with the nodes' positions
    as keys, without building a graph for it (one pass over the edges, a heap of positions).

    Raises:
        ValueError: the edges have a cycle.
    """
    position = {n: i for i, n in enumerate(nodes)}
    waiting = dict.fromkeys(nodes, 0)  # unvisited predecessors
    for n in nodes:
        for s in successors[n]:
            waiting[s] += 1
    ready = [i for i, n in enumerate(nodes) if not waiting[n]]  # sorted: already a heap
    order: list[_N] = []
    while ready:
        node = nodes[heapq.heappop(ready)]
        order.append(node)
        for s in successors[node]:
            waiting[s] -= 1
            if not waiting[s]:
                heapq.heappush(ready, position[s])
    if len(order) != len(nodes):
        raise ValueError("the edges have a cycle: no topological order")
    return tuple(order)


def downstream(edges: Iterable[tuple[_N, _N]], node: _N) -> set[_N]:
    """The nodes reachable from ``node`` along ``edges`` (source, target), ``node`` itself
    left out (a cycle back to it included)."""
    after: dict[_N, list[_N]] = {}
    for source, target in edges:
        after.setdefault(source, []).append(target)
    found: set[_N] = set()
    todo = list(after.get(node, ()))
    while todo:
        name = todo.pop()
        if name not in found and name != node:
            found.add(name)
            todo.extend(after.get(name, ()))
    return found


def loop_roles(graph: nx.DiGraph) -> dict[tuple[Any, Any], str]:
    """The edges of ``graph`` whose source is on a cycle, by role: ``"on"`` (taking it goes
    round the loop) or ``"exit"`` (it leaves the loop: not taken on a visit that goes round,
    it waits for the node's next visit).

    An edge out of the source's strongly connected component exits. So does an edge that
    stays in the component but leaves a loop nested in it: each loop is the natural loop
    of a header (the target of back edges: the header, and the nodes that reach a back
    edge's tail without passing the header), and an edge from inside one to outside it
    exits that inner loop (so a join after a loop nested in another loop waits for the
    inner loop's last round, as a join after a top-level loop does)."""
    component = {n: i for i, nodes in enumerate(nx.strongly_connected_components(graph)) for n in nodes}
    looped = {u for u, v in graph.edges if component[u] == component[v]}
    loops = list(_natural_loops(graph, component).values())
    roles: dict[tuple[Any, Any], str] = {}
    for u, v in graph.edges:
        if u not in looped:
            continue
        leaves = component[u] != component[v] or any(u in body and v not in body for body in loops)
        roles[(u, v)] = "exit" if leaves else "on"
    return roles


def natural_loops(graph: nx.DiGraph) -> dict[Any, set[Any]]:
    """By loop header (a back edge's target), its natural loop: the header and the nodes
    that reach the tail of one of its back edges without passing it."""
    component = {n: i for i, nodes in enumerate(nx.strongly_connected_components(graph)) for n in nodes}
    return _natural_loops(graph, component)


def _natural_loops(graph: nx.DiGraph, component: Mapping[Any, int]) -> dict[Any, set[Any]]:
    """The natural loop of each loop header (back edges' targets, their loops merged): the
    header and the nodes that reach the tail of one of its back edges without passing it."""
    tails: dict[Any, list[Any]] = {}
    for tail, header in back_edges(graph):
        tails.setdefault(header, []).append(tail)
    loops: dict[Any, set[Any]] = {}
    for header, ends in tails.items():
        body, todo = {header}, [t for t in ends if t != header]
        while todo:
            n = todo.pop()
            if n not in body and component[n] == component[header]:  # a second entry is not its body
                body.add(n)
                todo.extend(graph.predecessors(n))
        loops[header] = body
    return loops
