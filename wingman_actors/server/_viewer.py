"""What the run viewer (``/ui/``) shows, as JSON: a formation's graph, and one
run's nodes, visits, agent steps and timeline, read from the run journal.

Both the server (``wingman-actors serve``) and ``wingman-actors ui --store PATH`` answer
the viewer's routes with these documents, so the page is one page for both.

The page lays a graph out itself (with dagre, vendored in ``server/ui/vendor/``): a
formation's graph is sent as its nodes and edges only.

Example:
    >>> import networkx as nx
    >>> from wingman_actors.store import FormationShape
    >>> g = nx.DiGraph([("a", "b"), ("b", "a")])
    >>> nx.set_node_attributes(g, "function", "kind")
    >>> graph_document(FormationShape.of(g))["edges"][1]
    {'source': 'b', 'target': 'a', 'back': True, 'conditional': False}
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import networkx as nx  # type: ignore[import-untyped]

from ..store import FormationShape

if TYPE_CHECKING:
    from ..store import RunJournal, RunStore

__all__ = [
    "NODE_STATUSES", "RESUMABLE", "graph_document", "node_status", "run_view", "shape_of_declaration",
]

NODE_STATUSES = ("pending", "running", "succeeded", "failed", "skipped", "cancelled", "suspended")
"""The states a drawn node shows (its ``data-status``)."""

RESUMABLE = ("suspended", "failed", "cancelled", "interrupted")
"""Run statuses a run can be resumed from."""


def graph_document(shape: FormationShape) -> dict[str, Any]:
    """The formation's graph as the page draws it (the page lays it out).

    Returns:
        ``{"nodes": [{"name", "kind"}], "edges": [{"source", "target", "back", "conditional"}]}``.
    """
    return {"nodes": [{"name": name, "kind": kind} for name, kind in shape.nodes],
            "edges": [{"source": e.source, "target": e.target, "back": e.back, "conditional": e.conditional}
                      for e in shape.edges]}


def shape_of_declaration(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> FormationShape:
    """The shape of a server formation's stored declaration (``FormationOut.nodes``/``edges``)."""
    graph = nx.DiGraph()
    for node in nodes:
        graph.add_node(str(node["name"]), kind=node.get("kind", "function"))
    for edge in edges:
        conditional = any(edge.get(k) for k in ("condition", "on_error", "otherwise"))
        graph.add_edge(str(edge["from"]), str(edge["to"]), when=True if conditional else None)
    return FormationShape.of(graph)


def node_status(trace: dict[str, Any], run_status: str, interrupt_node: str | None, name: str) -> str:
    """What a node shows, from its trace and the run's status: a node that started and did
    not finish is ``running`` while the run runs, and ``cancelled`` once it was cancelled
    or cut short."""
    status = str(trace.get("status") or "pending")
    if name == interrupt_node and run_status == "suspended":
        return "suspended"
    if status == "pending" and trace.get("started_at"):
        if run_status == "running":
            return "running"
        if run_status in ("cancelled", "interrupted", "failed"):
            return "cancelled"
    return status if status in NODE_STATUSES else "pending"


def run_view(store: RunStore, run_id: str, traces: dict[str, dict[str, Any]] | None = None,
             status: str | None = None) -> dict[str, Any]:
    """One run as the viewer shows it, from the journal (and, on the server, the run
    record's node ``traces`` and ``status``, which know more than a quick run journals).

    Raises:
        wingman_actors.store.UnknownRunError: the store has no such run.
    """
    from .._launcher.run_show import run_document

    journal = store.load(run_id)
    doc = run_document(store, run_id)
    status = status or doc["status"]
    interrupt = doc["interrupt"]
    pending = interrupt["node"] if interrupt else None
    for name, node in doc["nodes"].items():
        trace = dict(node)
        if traces and name in traces:
            trace.update({k: v for k, v in traces[name].items() if v is not None})
            node.update({k: trace[k] for k in ("attempts", "visits", "duration_s", "started_at", "finished_at",
                                               "usage", "error") if k in trace})
        node["status"] = node_status(trace, status, pending, name)
    doc["status"] = status
    doc["graph"] = graph_document(journal.shape)
    if status == "succeeded":  # the run's output, as FormationResult has it: by sink, and the single sink's
        senders = {e["source"] for e in doc["graph"]["edges"] if not e["back"]}
        sinks = [n["name"] for n in doc["graph"]["nodes"] if n["name"] not in senders]
        outputs = {s: doc["nodes"][s].get("output") for s in sinks
                   if s in doc["nodes"] and doc["nodes"][s].get("status") == "succeeded"}
        doc.setdefault("outputs", outputs)
        doc.setdefault("output", outputs.get(sinks[0]) if len(sinks) == 1 else None)
    doc["visits"] = _visits(journal, doc)
    doc["steps"] = _steps(journal)
    doc["resumable"] = status in RESUMABLE
    return doc


def _visits(journal: RunJournal, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every journalled visit, in the order the journal wrote them: node, visit number,
    input (the run's input for a source; the outputs of its predecessors' same visits
    otherwise, when they are journalled), output or skip reason."""
    preds: dict[str, list[str]] = {}
    for e in journal.shape.edges:
        if not e.back:
            preds.setdefault(e.target, []).append(e.source)
    out = []
    for entry in journal.entries:
        if entry.kind not in ("visit", "skip"):
            continue
        sources = preds.get(entry.node, [])
        if not sources:
            given: Any = doc["input"]
        else:
            found = {p: journal.visits.get(p, {}).get(entry.visit) for p in sources}
            given = found[sources[0]] if len(sources) == 1 else found
        out.append({"node": entry.node, "visit": entry.visit, "status": "succeeded" if entry.kind == "visit" else
                    "skipped", "input": _jsonable(given), "output": _jsonable(entry.value) if entry.kind == "visit"
                    else None, "error": str(entry.value) if entry.kind == "skip" else None})
    return out


def _steps(journal: RunJournal) -> dict[str, list[Any]]:
    """An agent node's journalled steps (its model responses, in order), by node."""
    steps: dict[str, list[Any]] = {}
    kinds = dict(journal.shape.nodes)
    for (node, _visit, _item), values in journal.progress.items():
        if kinds.get(node) in ("agent", "fleet"):
            steps.setdefault(node, []).extend(_jsonable(v) for v in values)
    return steps


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=str)

