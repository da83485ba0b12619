"""Drawing a formation as text: Mermaid flowcharts and Graphviz DOT, offline.

Both work on a :class:`~wingman_actors.formation.Formation` (even one that does not
validate: nodes without a known kind are drawn as ``?``), on a compiled
:class:`~wingman_actors.formation._plan.Plan`, or on a bare ``networkx.DiGraph``.

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

from ._plan import Plan
from ._typecheck import when_types
from ._validation import back_edges, edge_label, is_error_edge, is_formation

__all__ = ["to_dot", "to_mermaid"]

_MERMAID_RESERVED = {"end", "graph", "subgraph", "flowchart", "style", "class", "classdef", "click", "linkstyle"}
_DOT_SHAPES = {"function": "box", "agent": "ellipse", "fleet": "box3d", "formation": "box", "map": "parallelogram"}
_ON_ERROR = "on error"
_ERROR_COLOUR = "#d62728"


@dataclass(frozen=True)
class _Node:
    name: str
    kind: str | None
    max_workers: Any
    inner: Any = None  # a formation node's inner formation (or plan), drawn nested


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
        nodes = [_Node(n.name, n.kind, n.max_workers, n.subplan) for n in source.nodes.values()]
        edges = [_Edge(e.source, e.target, e.label, e.back, e.on_error) for e in source.edges]
        return nodes, edges, source.name
    graph = source if isinstance(source, nx.DiGraph) else getattr(source, "graph", None)
    if not isinstance(graph, nx.DiGraph):
        raise TypeError(f"cannot draw a {type(source).__name__}; pass a Formation, a Plan or a networkx.DiGraph")
    back = back_edges(graph)
    nodes = [
        _Node(str(n), _kind(a.get("kind")), a.get("max_workers"),
              a.get("formation") if a.get("kind") in ("formation", "map") and is_formation(a.get("formation")) else None)
        for n, a in graph.nodes(data=True)
    ]
    edges = [_Edge(str(u), str(v), _graph_label(a), (u, v) in back, is_error_edge(a)) for u, v, a in graph.edges(data=True)]
    return nodes, edges, source.name if isinstance(getattr(source, "name", None), str) else "formation"


def _graph_label(attrs: Any) -> str:
    if attrs.get("otherwise") is True:
        return "otherwise"
    when = attrs.get("when")
    return edge_label(when) if callable(when) or when_types(when) is not None else ""


def _key(source: Any) -> int:
    """What identifies a drawn formation, to stop at one nested inside itself."""
    graph = source if isinstance(source, nx.DiGraph) else getattr(source, "graph", source)
    return id(graph)


def _nested(node: _Node, drawing: tuple[int, ...]) -> tuple[list[_Node], list[_Edge]] | None:
    """The inner nodes and edges of a formation node to draw nested, or None (not a
    formation node, an empty one, or one nested inside itself: drawn as a plain node)."""
    if node.inner is None or _key(node.inner) in drawing:
        return None
    nodes, edges, _ = _view(node.inner)
    return (nodes, edges) if nodes else None


def _kind(kind: Any) -> str | None:
    return kind if isinstance(kind, str) and kind in _DOT_SHAPES else None


def _label(node: _Node) -> str:
    if node.kind == "agent":
        return f"agent: {node.name}"
    if node.kind in ("fleet", "map"):
        n = node.max_workers
        workers = n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else "n"
        return f"{node.kind}: {node.name} \u00d7{workers}"  # multiplication sign
    if node.kind == "formation":
        return f"formation: {node.name}"
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


def _mermaid_ids(names: list[str], taken: set[str] | None = None) -> Iterator[tuple[str, str]]:
    taken = set() if taken is None else taken
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
    predicate, back edges dotted; error edges dotted, red and labelled ``on error``; a
    formation node (or a map over a formation) is a subgraph holding its formation.

    Args:
        source: a ``Formation``, a ``Plan`` or a ``networkx.DiGraph``.

    Returns:
        The ``flowchart TD`` text.
    """
    nodes, edges, _ = _view(source)
    lines = ["flowchart TD"]
    links: list[bool] = []
    _mermaid_body(nodes, edges, "", set(), (_key(source),), lines, "    ", links)
    errors = [str(i) for i, on_error in enumerate(links) if on_error]
    if errors:  # links are numbered in the order they are drawn
        lines.append(f"    linkStyle {','.join(errors)} stroke:{_ERROR_COLOUR}")
    return "\n".join(lines)


def _mermaid_body(
    nodes: list[_Node], edges: list[_Edge], prefix: str, taken: set[str], drawing: tuple[int, ...],
    lines: list[str], indent: str, links: list[bool],
) -> None:
    """Draw nodes and edges (those of a nested formation with ids under ``prefix``); a
    formation node is a subgraph holding its formation, and its edges attach to it.
    ``links`` gets, per link drawn, whether it is an error edge."""
    ids = dict(_mermaid_ids([prefix + n.name for n in nodes], taken))
    for node in nodes:
        text = _mermaid_text(_label(node))
        ident = ids[prefix + node.name]
        inner = _nested(node, drawing)
        if inner is not None:
            lines.append(f'{indent}subgraph {ident} ["{text}"]')
            _mermaid_body(*inner, f"{ident}/", taken, (*drawing, _key(node.inner)), lines, indent + "    ", links)
            lines.append(f"{indent}end")
            continue
        shape = {"agent": '("{}")', "fleet": '[["{}"]]', "map": '[/"{}"/]'}.get(node.kind or "", '["{}"]')
        lines.append(f"{indent}{ident}{shape.format(text)}")
    for edge in edges:
        arrow = "-.->" if edge.back or edge.on_error else "-->"
        text = _edge_text(edge)
        label = f"|{_mermaid_text(text)}|" if text else ""
        lines.append(f"{indent}{ids[prefix + edge.source]} {arrow}{label} {ids[prefix + edge.target]}")
        links.append(edge.on_error)


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(source: Any) -> str:
    """A Graphviz DOT digraph of a formation, a plan or a graph.

    Function nodes are boxes, agent nodes ellipses, fleet nodes 3-D boxes, map nodes
    parallelograms; conditional edges are labelled with their predicate, back edges
    dashed; error edges dashed, red and labelled ``on error``; a formation node (or a map
    over a formation) is a cluster holding its formation.

    Args:
        source: a ``Formation``, a ``Plan`` or a ``networkx.DiGraph``.

    Returns:
        The ``digraph`` text.
    """
    nodes, edges, title = _view(source)
    lines = [f"digraph {_dot_quote(title)} {{", "    rankdir=TB;"]
    if any(_nested(n, (_key(source),)) is not None for n in nodes):
        lines.append("    compound=true;")  # edges may end at a nested formation's cluster
    _dot_body(nodes, edges, "", (_key(source),), lines, "    ")
    lines.append("}")
    return "\n".join(lines)


def _dot_body(
    nodes: list[_Node], edges: list[_Edge], prefix: str, drawing: tuple[int, ...], lines: list[str], indent: str
) -> None:
    """Draw nodes and edges (those of a nested formation named by path under ``prefix``);
    a formation node is a cluster holding its formation, and its edges attach to the
    cluster (drawn to its first source, from its first sink)."""
    ends: dict[str, tuple[str, str]] = {}  # formation node -> (entry, exit) drawn inside its cluster
    for node in nodes:
        path = prefix + node.name
        inner = _nested(node, drawing)
        if inner is None:
            shape = _DOT_SHAPES.get(node.kind or "", "box")
            style = "" if node.kind else ", style=dotted"
            lines.append(f"{indent}{_dot_quote(path)} [shape={shape}, label={_dot_quote(_label(node))}{style}];")
            continue
        lines.append(f"{indent}subgraph {_dot_quote('cluster_' + path)} {{")
        lines.append(f"{indent}    label={_dot_quote(_label(node))};")
        inner_nodes, inner_edges = inner
        _dot_body(inner_nodes, inner_edges, path + "/", (*drawing, _key(node.inner)), lines, indent + "    ")
        lines.append(f"{indent}}}")
        ends[path] = (_end(inner_nodes, inner_edges, path, entry=True), _end(inner_nodes, inner_edges, path, entry=False))
    for edge in edges:
        source, target = prefix + edge.source, prefix + edge.target
        attrs = [f"label={_dot_quote(_edge_text(edge))}"] if edge.label or edge.on_error else []
        attrs += ["style=dashed"] if edge.back or edge.on_error else []
        attrs += [f'color="{_ERROR_COLOUR}"', f'fontcolor="{_ERROR_COLOUR}"'] if edge.on_error else []
        if source in ends:
            attrs.append(f"ltail={_dot_quote('cluster_' + source)}")
            source = ends[source][1]
        if target in ends:
            attrs.append(f"lhead={_dot_quote('cluster_' + target)}")
            target = ends[target][0]
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f"{indent}{_dot_quote(source)} -> {_dot_quote(target)}{suffix};")


def _end(nodes: list[_Node], edges: list[_Edge], path: str, *, entry: bool) -> str:
    """The drawn node an edge into (``entry``) or out of a nested formation attaches to:
    its first source, or its first sink."""
    forward = [e for e in edges if not e.back]
    linked = {e.target if entry else e.source for e in forward}
    name = next((n.name for n in nodes if n.name not in linked), nodes[0].name)
    return f"{path}/{name}"
