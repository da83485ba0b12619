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

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import networkx as nx  # type: ignore[import-untyped]

from ..store import FormationShape
from ._ids import rfc3339

if TYPE_CHECKING:
    from ..formation import Formation
    from ..store import RunJournal, RunStore

__all__ = [
    "NODE_STATUSES", "RESUMABLE", "Declaration", "declaration_graph", "formation_graph", "graph_document",
    "journal_graph", "node_status", "run_view", "shape_of_declaration",
]

NODE_STATUSES = ("pending", "running", "succeeded", "failed", "skipped", "cancelled", "suspended")
"""The states a drawn node shows (its ``data-status``)."""

RESUMABLE = ("suspended", "failed", "cancelled", "interrupted")
"""Run statuses a run can be resumed from."""

_MAX_DEPTH = 8  # formation nodes inside formation nodes drawn at most this deep


def graph_document(shape: FormationShape, inner: Mapping[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The formation's graph as the page draws it (the page lays it out).

    Args:
        shape: the formation's nodes and edges.
        inner: the graphs of its formation nodes (``add_formation``), by node, where known:
            the page draws each as a cluster holding the inner nodes, named by their path
            (``"outer/inner"``, as the run's events name them).

    Returns:
        ``{"nodes": [{"name", "kind", "graph"?}], "edges": [{"source", "target", "back", "conditional"}]}``.
    """
    inner = inner or {}
    return {"nodes": [{"name": name, "kind": kind, **({"graph": inner[name]} if name in inner else {})}
                      for name, kind in shape.nodes],
            "edges": [{"source": e.source, "target": e.target, "back": e.back, "conditional": e.conditional}
                      for e in shape.edges]}


def formation_graph(formation: Formation) -> dict[str, Any]:
    """A built formation's graph document, its formation nodes' inner graphs included."""
    inner = {str(name): formation_graph(attrs["formation"]) for name, attrs in formation.graph.nodes(data=True)
             if attrs.get("kind") == "formation" and attrs.get("formation") is not None}
    return graph_document(FormationShape.of(formation.graph), inner)


def journal_graph(store: RunStore, journal: RunJournal, depth: int = 0) -> dict[str, Any]:
    """A journalled run's graph document, with the inner graph of each formation node whose
    inner run has begun (read from that inner run's journal: the visit in flight, else the
    last journalled one)."""
    from ..formation._nesting import inner_run_id
    from ..store import UnknownRunError

    inner: dict[str, dict[str, Any]] = {}
    for name, kind in journal.shape.nodes:
        if kind != "formation" or depth >= _MAX_DEPTH:
            continue
        last = max(journal.visits.get(name) or {0: None})
        for visit in dict.fromkeys((last + 1, max(last, 1))):
            try:
                found = store.load(inner_run_id(journal.run.id, name, visit))
            except UnknownRunError:
                continue
            inner[name] = journal_graph(store, found, depth + 1)
            break
    return graph_document(journal.shape, inner)


def shape_of_declaration(nodes: list[dict[str, Any]], edges: list[dict[str, Any]]) -> FormationShape:
    """The shape of a server formation's stored declaration (``FormationOut.nodes``/``edges``)."""
    graph = nx.DiGraph()
    for node in nodes:
        graph.add_node(str(node["name"]), kind=node.get("kind", "function"))
    for edge in edges:
        conditional = any(edge.get(k) for k in ("condition", "on_error", "otherwise"))
        graph.add_edge(str(edge["from"]), str(edge["to"]), when=True if conditional else None)
    return FormationShape.of(graph)


Declaration = tuple[list[dict[str, Any]], list[dict[str, Any]]]
"""A server formation's stored nodes and edges."""


def declaration_graph(nodes: list[dict[str, Any]], edges: list[dict[str, Any]],
                      nested: Mapping[str, Declaration] | None = None, depth: int = 0) -> dict[str, Any]:
    """A server formation's graph document, with the inner graph of each formation node
    whose stored formation (``formation_id``) is in ``nested`` (by id)."""
    inner = {}
    for node in nodes:
        fid = str(node.get("formation_id"))
        if node.get("kind") == "formation" and nested and fid in nested and depth < _MAX_DEPTH:
            inner[str(node["name"])] = declaration_graph(*nested[fid], nested, depth + 1)
    return graph_document(shape_of_declaration(nodes, edges), inner)


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
    from .._launcher.run_show import load_journal, run_document, waiting_at

    journal = load_journal(store, run_id)
    doc = run_document(store, run_id)
    status = status or doc["status"]
    interrupt = doc["interrupt"]
    pending = interrupt["node"] if interrupt else None
    waiting, ahead = waiting_at(store, journal) if pending is not None and status == "suspended" else ([], set())
    for name in traces or ():  # nodes inside formation nodes that the journal does not trace yet
        doc["nodes"].setdefault(name, {"status": "pending", "visits": 0, "attempts": None, "duration_s": None,
                                       "started_at": None, "finished_at": None, "usage": None, "error": None,
                                       "output": None, "outputs": []})
    for name, node in doc["nodes"].items():
        for key in ("started_at", "finished_at"):  # one format for the page: RFC 3339, as the server's traces
            if isinstance(node.get(key), int | float):
                node[key] = rfc3339(node[key])
        trace = dict(node)
        if traces and name in traces:
            trace.update({k: v for k, v in traces[name].items() if v is not None})
            node.update({k: trace[k] for k in ("attempts", "visits", "duration_s", "started_at", "finished_at",
                                               "usage", "error") if k in trace})
        node["status"] = "suspended" if name in waiting else node_status(trace, status, pending, name)
        if node["status"] == "skipped" and name in ahead and not node.get("outputs"):
            node["status"] = "pending"  # after the node the run waits at: it runs on resume
        if node["status"] in ("skipped", "pending") and status != "running" and node.get("outputs") and (
                len(node["outputs"]) >= (node.get("visits") or 0)):
            # every visit journalled an output: it succeeded, whatever an older trace says (a run
            # resumed from an interrupt that then ends quickly journals no new traces)
            node["status"] = "succeeded"
    if status == "running":
        _at_work(doc["nodes"], journal)
    doc["status"] = status
    doc["graph"] = journal_graph(store, journal)
    if status == "succeeded":  # the run's output, as FormationResult has it: by sink, and the single sink's
        senders = {e["source"] for e in doc["graph"]["edges"] if not e["back"]}
        sinks = [n["name"] for n in doc["graph"]["nodes"] if n["name"] not in senders]
        outputs = {s: doc["nodes"][s].get("output") for s in sinks
                   if s in doc["nodes"] and doc["nodes"][s].get("status") == "succeeded"}
        doc.setdefault("outputs", outputs)
        doc.setdefault("output", outputs.get(sinks[0]) if len(sinks) == 1 else None)
    failed = {name: node for name, node in doc["nodes"].items() if node["status"] == "failed" and "/" not in name}
    doc["visits"] = _visits(journal, doc["input"], failed) + _inner_visits(store, journal, 0)
    doc["steps"] = _steps(journal)
    doc["resumable"] = status in RESUMABLE
    return doc


def _at_work(nodes: dict[str, dict[str, Any]], journal: RunJournal) -> None:
    """Mark ``running`` the nodes of a running run that are at work as far as its journal
    tells (a run going on in another process sends the viewer no events): a pending node
    whose predecessors have each journalled a visit more than it has, along unconditional
    forward edges (a source: from the start). A node behind a conditional or back edge stays
    pending: whether that edge fired is not journalled."""
    incoming: dict[str, list[Any]] = {}
    for edge in journal.shape.edges:
        incoming.setdefault(edge.target, []).append(edge)
    done = {name: len(visits) for name, visits in journal.visits.items()}
    for name, _kind in journal.shape.nodes:
        node = nodes.get(name)
        edges = incoming.get(name, [])
        if node is None or node["status"] != "pending" or any(e.back or e.conditional for e in edges):
            continue
        if all(done.get(e.source, 0) > done.get(name, 0) for e in edges):
            node["status"] = "running"


def _inner_visits(store: RunStore, journal: RunJournal, depth: int) -> list[dict[str, Any]]:
    """The journalled visits inside the run's formation nodes, named by path (``"outer/inner"``)."""
    from ..formation._nesting import inner_run_id
    from ..store import UnknownRunError

    out: list[dict[str, Any]] = []
    for name, kind in journal.shape.nodes:
        if kind != "formation" or depth >= _MAX_DEPTH:
            continue
        for visit in range(1, max(journal.visits.get(name) or {0: None}) + 2):  # the one in flight too
            try:
                inner = store.load(inner_run_id(journal.run.id, name, visit))
            except UnknownRunError:
                continue
            for v in _visits(inner, _jsonable(inner.run.input)) + _inner_visits(store, inner, depth + 1):
                out.append({**v, "node": f"{name}/{v['node']}"})
    return out


_ENDED = ("visit", "skip", "withdrawn")  # journal entries that end a visit ("withdrawn": its question, skipped)


def _visits(journal: RunJournal, given_input: Any, failed: Mapping[str, dict[str, Any]] | None = None,
            ) -> list[dict[str, Any]]:
    """Every journalled visit, in the order the journal wrote them: node, visit number,
    status, input (see :mod:`._viewer_inputs`; left out where the journal cannot tell it),
    output (a visit that succeeded), error (one skipped, or failed into its error edges),
    and times (RFC 3339, as ``RunStore.history`` tells them: when its input was ready, when
    it was journalled; None where unknown). Then the visit each ``failed`` node (its
    document, by name) failed in, which the journal does not record, as its trace has it."""
    from ..store._history import history
    from ._viewer_inputs import visit_inputs

    recorded = {(e.node, e.visit) for e in journal.entries if e.kind in _ENDED}
    last = [(name, max(node.get("visits") or 1, 1)) for name, node in (failed or {}).items()]
    last = [key for key in last if key not in recorded]
    inputs = visit_inputs(journal, given_input, last)
    times = {(v.node, v.visit): (v.started, v.finished) for v in history(journal) if v.status != "suspended"}
    out = []
    for entry in journal.entries:
        if entry.kind not in _ENDED:
            continue
        key = (entry.node, entry.visit)
        started, finished = times.get(key, (None, None))
        visit: dict[str, Any] = {"node": entry.node, "visit": entry.visit, "status": "succeeded"}
        if key in inputs:
            visit["input"] = _jsonable(inputs[key])
        if entry.kind == "visit":
            visit.update(output=_jsonable(entry.value), error=None)
        else:
            failure = _failure(journal, key)
            visit.update(status="skipped" if failure is None else "failed", error=str(entry.value))
            if failure is not None:
                visit["attempts"] = failure.get("attempts")
        visit["started"] = None if started is None else rfc3339(started.timestamp())
        visit["finished"] = None if finished is None else rfc3339(finished.timestamp())
        out.append(visit)
    for name, number in last:
        node = (failed or {})[name]
        out.append({"node": name, "visit": number, "status": "failed",
                    **({"input": _jsonable(inputs[(name, number)])} if (name, number) in inputs else {}),
                    "error": node.get("error"), "attempts": node.get("attempts"),
                    "started": node.get("started_at"), "finished": node.get("finished_at")})
    return out


def _failure(journal: RunJournal, key: tuple[str, int]) -> Mapping[str, Any] | None:
    """The record of a visit that failed into its error edges (a progress value holding
    ``"node_failure"``: formation/_durable.py's ``Journal.record_failure``), else None."""
    for value in reversed(journal.progress.get((*key, None), ())):
        if isinstance(value, dict) and "node_failure" in value:
            return value
    return None


def _steps(journal: RunJournal) -> dict[str, list[Any]]:
    """An agent node's journalled steps (its model responses, in order), by node; not the
    records of its failures (``"node_failure"``: see :func:`_failure`), which are no steps."""
    steps: dict[str, list[Any]] = {}
    kinds = dict(journal.shape.nodes)
    for (node, _visit, _item), values in journal.progress.items():
        if kinds.get(node) in ("agent", "fleet"):
            steps.setdefault(node, []).extend(_jsonable(v) for v in values
                                              if not (isinstance(v, dict) and "node_failure" in v))
    return steps


def _jsonable(value: Any) -> Any:
    from ..formation._result import jsonable

    return jsonable(value)

