"""A formation's shape (nodes, kinds, edges), its fingerprint, and what differs between two.

A run is recorded with the shape of the formation that started it; a resume checks that
the formation it is given has the same shape, so journalled outputs are fed to the same
nodes. The shape ignores what may change between processes without changing the data flow
(functions, agents, prompts, policies): it holds each node's name and kind, and each edge's
source, target, whether it is a back edge (closes a cycle) and whether it is conditional.

Example:
    >>> import networkx as nx
    >>> g = nx.DiGraph()
    >>> g.add_node("a", kind="function", fn=abs)
    >>> g.add_node("b", kind="function", fn=abs)
    >>> g.add_edge("a", "b")
    >>> shape = FormationShape.of(g)
    >>> len(shape.fingerprint)
    32
    >>> g.nodes["b"]["kind"] = "agent"
    >>> shape.diff(FormationShape.of(g))
    ["node 'b': kind was 'function', is now 'agent'"]
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

import networkx as nx  # type: ignore[import-untyped]

from .._graphs import back_edges

__all__ = ["EdgeShape", "FormationShape", "back_edges", "fingerprint"]


@dataclass(frozen=True, order=True)
class EdgeShape:
    """One edge of a shape.

    Attributes:
        source: the upstream node.
        target: the downstream node.
        back: the edge closes a cycle (found by depth-first search from the sources).
        conditional: the edge carries a ``when`` predicate, or is an error edge (``on_error=True``).
    """

    source: str
    target: str
    back: bool = False
    conditional: bool = False

    def describe(self) -> str:
        flags = [f for f, on in (("back", self.back), ("conditional", self.conditional)) if on]
        return f"{'/'.join(flags) + ' ' if flags else ''}edge {self.source!r} → {self.target!r}"


@dataclass(frozen=True)
class FormationShape:
    """The nodes (name → kind) and edges of a formation, in a canonical order, and the
    shapes of the formations its nodes run (``nested``: node name → shape; empty for a
    formation without nested ones, whose JSON and fingerprint are then as before).

    Build it with :meth:`of` from ``Formation.graph``; store it with :meth:`to_json`.
    """

    nodes: tuple[tuple[str, str], ...]
    edges: tuple[EdgeShape, ...]
    nested: tuple[tuple[str, FormationShape], ...] = ()
    fingerprint: str = field(init=False, compare=False)
    json: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        text = self.to_json()
        object.__setattr__(self, "json", text)
        object.__setattr__(self, "fingerprint", hashlib.blake2b(text.encode(), digest_size=16).hexdigest())

    @classmethod
    def of(cls, graph: nx.DiGraph) -> FormationShape:
        """The shape of a formation's graph (``Formation.graph``). A node running a
        formation (``kind="formation"``, or a map over one) brings the inner formation's
        shape in :attr:`nested`: a resume then finds a changed inner formation before
        anything runs."""
        return cls._of(graph, frozenset())

    @classmethod
    def _of(cls, graph: nx.DiGraph, within: frozenset[int]) -> FormationShape:
        back = back_edges(graph)
        nodes = tuple(sorted((str(n), str(a.get("kind"))) for n, a in graph.nodes(data=True)))
        edges = tuple(sorted(
            EdgeShape(str(u), str(v), (u, v) in back,
                      a.get("when") is not None or a.get("otherwise") is True or a.get("on_error") is True)
            for u, v, a in graph.edges(data=True)
        ))
        nested = []
        here = within | {id(graph)}  # the formations this one sits in, and itself
        for n, a in graph.nodes(data=True):
            inner = getattr(a.get("formation"), "graph", None)  # a formation node, or a map over a formation
            if isinstance(inner, nx.DiGraph) and id(inner) not in here:  # (validation refuses a formation in itself)
                nested.append((str(n), cls._of(inner, here)))
        return cls(nodes, edges, tuple(sorted(nested, key=lambda pair: pair[0])))

    def to_json(self) -> str:
        """Canonical JSON: ``{"nodes": [[name, kind]...], "edges": [[source, target, back, conditional]...]}``,
        and ``"nested": {node: {...}}`` when a node runs a formation."""
        return json.dumps(self._doc(), separators=(",", ":"), ensure_ascii=False)

    def _doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"nodes": [list(n) for n in self.nodes],
                               "edges": [[e.source, e.target, e.back, e.conditional] for e in self.edges]}
        if self.nested:
            doc["nested"] = {name: inner._doc() for name, inner in self.nested}
        return doc

    @classmethod
    def from_json(cls, text: str) -> FormationShape:
        """The shape written by :meth:`to_json`."""
        return cls._from_doc(json.loads(text))

    @classmethod
    def _from_doc(cls, doc: dict[str, Any]) -> FormationShape:
        return cls(tuple((str(n), str(k)) for n, k in doc["nodes"]),
                   tuple(EdgeShape(str(s), str(t), bool(b), bool(c)) for s, t, b, c in doc["edges"]),
                   tuple((str(name), cls._from_doc(inner)) for name, inner in sorted(doc.get("nested", {}).items())))

    def diff(self, current: FormationShape) -> list[str]:
        """What differs from this (recorded) shape to ``current``, one readable line each;
        empty when they are the same."""
        return self._diff(current, "")

    def _diff(self, current: FormationShape, prefix: str) -> list[str]:
        out = []
        old_nodes = {f"{prefix}{n}": k for n, k in self.nodes}
        new_nodes = {f"{prefix}{n}": k for n, k in current.nodes}
        for name in sorted(old_nodes.keys() - new_nodes.keys()):
            out.append(f"node {name!r} ({old_nodes[name]}) is missing")
        for name in sorted(new_nodes.keys() - old_nodes.keys()):
            out.append(f"node {name!r} ({new_nodes[name]}) is new")
        for name in sorted(old_nodes.keys() & new_nodes.keys()):
            if old_nodes[name] != new_nodes[name]:
                out.append(f"node {name!r}: kind was {old_nodes[name]!r}, is now {new_nodes[name]!r}")
        old_edges = {(f"{prefix}{e.source}", f"{prefix}{e.target}"): replace(e, source=f"{prefix}{e.source}",
                     target=f"{prefix}{e.target}") for e in self.edges}
        new_edges = {(f"{prefix}{e.source}", f"{prefix}{e.target}"): replace(e, source=f"{prefix}{e.source}",
                     target=f"{prefix}{e.target}") for e in current.edges}
        for key in sorted(old_edges.keys() - new_edges.keys()):
            out.append(f"{old_edges[key].describe()} is missing")
        for key in sorted(new_edges.keys() - old_edges.keys()):
            out.append(f"{new_edges[key].describe()} is new")
        for key in sorted(old_edges.keys() & new_edges.keys()):
            old, new = old_edges[key], new_edges[key]
            if old.back != new.back:
                out.append(f"edge {key[0]!r} → {key[1]!r} was {'a back' if old.back else 'a forward'} edge, "
                           f"is now {'a back' if new.back else 'a forward'} edge")
            if old.conditional != new.conditional:
                out.append(f"edge {key[0]!r} → {key[1]!r} was {'' if old.conditional else 'un'}conditional, "
                           f"is now {'' if new.conditional else 'un'}conditional")
        old_nested, new_nested = dict(self.nested), dict(current.nested)
        for name in sorted(old_nested.keys() & new_nested.keys()):  # a node's own change is told above
            out.extend(old_nested[name]._diff(new_nested[name], f"{prefix}{name}/"))
        for name in sorted(old_nested.keys() ^ new_nested.keys()):
            if name in old_nodes.keys() & new_nodes.keys():  # the same node, now running a formation or no longer
                was = "ran a formation" if name in old_nested else "ran no formation"
                out.append(f"node {prefix}{name!r}: {was}, now {'does not' if name in old_nested else 'does'}")
        return out


def fingerprint(graph: nx.DiGraph) -> str:
    """The fingerprint of a formation's graph: 32 hex digits, equal in any process for
    graphs with the same node names and kinds and the same edges (source, target, back,
    conditional), whatever order the nodes and edges were added in (except that which edge
    of a cycle is its back edge follows the runtime's rule, which depends on that order)."""
    return FormationShape.of(graph).fingerprint
