"""Drawing a formation as text: Mermaid flowcharts and Graphviz DOT, offline.

Both work on a :class:`~wingman_actors.formation.Formation` (even one that does not
validate: nodes without a known kind are drawn as ``?``), on a compiled
:class:`~wingman_actors.formation.plan.Plan`, or on a bare ``networkx.DiGraph``.

Example:
    >>> from wingman_actors.formation import Formation
    >>> f = Formation("demo").add_function("a", str).add_function("b", str).connect("a", "b")
    >>> print(to_mermaid(f))
    flowchart TD
        a["a"]
        b["b"]
        a --> b
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import networkx as nx  # type: ignore[import-untyped]

from .plan import Plan
from .validation import back_edges, edge_label, is_error_edge

__all__ = ["to_dot", "to_mermaid"]

_MERMAID_RESERVED = {"end", "graph", "subgraph", "flowchart", "style", "class", "classdef", "click", "linkstyle"}
_DOT_SHAPES = {"function": "box", "agent": "ellipse", "fleet": "box3d", "map": "parallelogram"}
_ON_ERROR = "on error"
_ERROR_COLOUR = "#d62728"


@dataclass(frozen=True)
class _Node:
    name: str
    kind: str | None
    max_workers: Any


@dataclass(frozen=True)
class _Edge:
    source: str
    target: str
    label: str
    back: bool
    on_error: bool = False


def _view(source: Any) -> tuple[list[_Node], list[_Edge], str]:
    """Nodes, edges and a title from a plan, a formation or a bare graph."""
    if isinstance(source, Plan):
        nodes = [_Node(n.name, n.kind, n.max_workers) for n in source.nodes.values()]
        edges = [_Edge(e.source, e.target, e.label, e.back, e.on_error) for e in source.edges]
        return nodes, edges, source.name
    graph = source if isinstance(source, nx.DiGraph) else getattr(source, "graph", None)
    if not isinstance(graph, nx.DiGraph):
        raise TypeError(f"cannot draw a {type(source).__name__}; pass a Formation, a Plan or a networkx.DiGraph")
    back = back_edges(graph)
    nodes = [_Node(str(n), _kind(a.get("kind")), a.get("max_workers")) for n, a in graph.nodes(data=True)]
    edges = [_Edge(str(u), str(v), _graph_label(a), (u, v) in back, is_error_edge(a)) for u, v, a in graph.edges(data=True)]
    return nodes, edges, source.name if isinstance(getattr(source, "name", None), str) else "formation"


def _graph_label(attrs: Any) -> str:
    if attrs.get("otherwise") is True:
        return "otherwise"
    when = attrs.get("when")
    return edge_label(when) if callable(when) or isinstance(when, tuple) else ""


def _kind(kind: Any) -> str | None:
    return kind if isinstance(kind, str) and kind in _DOT_SHAPES else None


def _label(node: _Node) -> str:
    if node.kind == "agent":
        return f"agent: {node.name}"
    if node.kind in ("fleet", "map"):
        n = node.max_workers
        workers = n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else "n"
        return f"{node.kind}: {node.name} \u00d7{workers}"  # multiplication sign
    if node.kind is None:
        return f"? {node.name}"
    return node.name


def _edge_text(edge: _Edge) -> str:
    if edge.on_error:
        return _ON_ERROR
    if not edge.label:
        return ""
    if edge.label in ("when", "otherwise"):
        return edge.label
    return f"when: {edge.label}"


def _mermaid_ids(names: list[str]) -> Iterator[tuple[str, str]]:
    taken: set[str] = set()
    for name in names:
        base = re.sub(r"\W", "_", name, flags=re.ASCII) or "node"
        if base[0].isdigit() or base.lower() in _MERMAID_RESERVED:
            base = f"n_{base}"
        ident, i = base, 2
        while ident in taken:
            ident, i = f"{base}_{i}", i + 1
        taken.add(ident)
        yield name, ident


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;").replace("|", "#124;")


def to_mermaid(source: Any) -> str:
    """A Mermaid flowchart of a formation, a plan or a graph.

    Function nodes are rectangles, agent nodes rounded (``agent: name``), fleet nodes
    subroutines (``fleet: name`` and the worker count), map nodes parallelograms
    (``map: name`` and the worker count); conditional edges are labelled with their
    predicate, back edges dotted; error edges dotted, red and labelled ``on error``.

    Args:
        source: a ``Formation``, a ``Plan`` or a ``networkx.DiGraph``.

    Returns:
        The ``flowchart TD`` text.
    """
    nodes, edges, _ = _view(source)
    ids = dict(_mermaid_ids([n.name for n in nodes]))
    lines = ["flowchart TD"]
    for node in nodes:
        text = _mermaid_text(_label(node))
        shape = {"agent": '("{}")', "fleet": '[["{}"]]', "map": '[/"{}"/]'}.get(node.kind or "", '["{}"]')
        lines.append(f"    {ids[node.name]}{shape.format(text)}")
    for edge in edges:
        arrow = "-.->" if edge.back or edge.on_error else "-->"
        text = _edge_text(edge)
        label = f"|{_mermaid_text(text)}|" if text else ""
        lines.append(f"    {ids[edge.source]} {arrow}{label} {ids[edge.target]}")
    errors = [str(i) for i, edge in enumerate(edges) if edge.on_error]
    if errors:  # links are numbered in the order they are drawn
        lines.append(f"    linkStyle {','.join(errors)} stroke:{_ERROR_COLOUR}")
    return "\n".join(lines)


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(source: Any) -> str:
    """A Graphviz DOT digraph of a formation, a plan or a graph.

    Function nodes are boxes, agent nodes ellipses, fleet nodes 3-D boxes, map nodes
    parallelograms; conditional edges are labelled with their predicate, back edges
    dashed; error edges dashed, red and labelled ``on error``.

    Args:
        source: a ``Formation``, a ``Plan`` or a ``networkx.DiGraph``.

    Returns:
        The ``digraph`` text.
    """
    nodes, edges, title = _view(source)
    lines = [f"digraph {_dot_quote(title)} {{", "    rankdir=TB;"]
    for node in nodes:
        shape = _DOT_SHAPES.get(node.kind or "", "box")
        style = "" if node.kind else ", style=dotted"
        lines.append(f"    {_dot_quote(node.name)} [shape={shape}, label={_dot_quote(_label(node))}{style}];")
    for edge in edges:
        attrs = [f"label={_dot_quote(_edge_text(edge))}"] if edge.label or edge.on_error else []
        attrs += ["style=dashed"] if edge.back or edge.on_error else []
        attrs += [f'color="{_ERROR_COLOUR}"', f'fontcolor="{_ERROR_COLOUR}"'] if edge.on_error else []
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f"    {_dot_quote(edge.source)} -> {_dot_quote(edge.target)}{suffix};")
    lines.append("}")
    return "\n".join(lines)
