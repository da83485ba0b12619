"""``runs show RUN_ID [--store PATH] [--json]``: one journalled run, node by node.

Read from the run store (``RunStore.load``): every node's status, visits, attempts,
durations, tokens, error and outputs, and the run's pending interrupt. Outputs come from
the journal's visits (every visit's, in order); attempts, durations and tokens from the
node traces a run journals when it ends (a run whose process died while it ran has
none, and those columns are then empty). A quick clean success journals none either
(see formation/_trace_journal.py): its nodes show one attempt, no tokens, and the times
of their journalled visits. A visit a resume took from the journal keeps the
attempts and time of the run that made it. The table cuts long values to one line; the
JSON has them whole.
"""

from __future__ import annotations

import argparse
import json
import shlex
from typing import TYPE_CHECKING, Any

from .._graphs import downstream
from .errors import UsageError, unknown_run

if TYPE_CHECKING:
    from ..store import JournalStore, RunJournal, RunStore

__all__ = ["add_show_parser", "load_journal", "not_reached", "run_document", "show_command", "waiting_at"]

_CUT = 48  # characters of an output or error in the table


def add_show_parser(sub: Any) -> None:
    """Register ``runs show RUN_ID [--store PATH] [--json]`` under ``runs``."""
    p = sub.add_parser("show", help="show one run: every node's status, visits, attempts, durations, tokens, "
                                    "errors and outputs, and its pending interrupt",
                       description="Show one journalled run, node by node (long values cut in the table, whole "
                                   "with --json).")
    p.add_argument("run_id", metavar="RUN_ID", help="the run (see `wingman-actors runs`)")
    p.add_argument("--store", metavar="PATH", default=argparse.SUPPRESS,
                   help="the run store's SQLite file or postgresql:// URL (default: the default store in your "
                        "data directory)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON document")
    p.set_defaults(func=show_command)


def show_command(args: argparse.Namespace) -> int:
    """Print the run. A missing store or an unknown run is a usage error (exit 2)."""
    from ..store import RunStore, StoreError, UnknownRunError
    from .stores import StoreChoice

    choice = StoreChoice.of(getattr(args, "store", None))
    if not choice.exists():
        raise UsageError(choice.missing())
    try:
        with RunStore(choice.target) as store:
            document = run_document(store, args.run_id)
    except UnknownRunError as exc:
        raise unknown_run(exc, choice.flag) from exc
    except StoreError as exc:
        raise choice.unusable(exc, "read") from exc
    if getattr(args, "json", False):
        print(json.dumps(document, indent=2))
    else:
        _print_table(document, choice.flag)
    return 0


def run_document(store: RunStore, run_id: str) -> dict[str, Any]:
    """The run as one JSON-friendly dict (what ``--json`` prints)."""
    from ..formation._result import jsonable
    from ..formation._trace_journal import journalled_traces

    journal = load_journal(store, run_id)
    record = journal.run
    pending = journal.pending_interrupt
    traces = journalled_traces(journal)
    names = list(traces) or graph_order(journal)
    waiting, ahead = waiting_at(store, journal)
    quick = not traces and record.status == "succeeded"  # a quick clean success: no traces journalled
    timed = _visit_times(store, run_id) if quick else {}
    nodes: dict[str, dict[str, Any]] = {}
    items: dict[str, RunJournal | None] = {}  # a map's item runs, loaded once for all its inner nodes
    for name in names:
        outputs = _outputs(store, journal, name, items)
        t = traces.get(name, {})
        if not t.get("visits") and not t.get("attempts"):  # never ran: nothing to time
            t = {"status": t.get("status")}
        if quick and outputs:  # one attempt each, timed by its visits, no tokens (or it would have traces)
            t = {"attempts": 1, "input_tokens": 0, "output_tokens": 0, **timed.get(name, {})}
        # a quick clean success's node without a visit was skipped (or never reached), as its result says
        status = t.get("status") or ("succeeded" if outputs else "skipped" if quick else "pending")
        if name in waiting:
            status = "suspended"
        elif name not in traces and any(n == name for n, _ in journal.skipped):
            status = "skipped"
        elif status == "skipped" and name in ahead and not outputs:  # not skipped: waiting for the answer
            status = "pending"
        nodes[name] = {
            "status": status, "visits": max(t.get("visits") or 0, len(outputs)), "attempts": t.get("attempts"),
            "duration_s": t.get("duration_s"), "started_at": t.get("started_at"), "finished_at": t.get("finished_at"),
            "usage": {"input_tokens": t.get("input_tokens"), "output_tokens": t.get("output_tokens")},
            "error": t.get("error") or _skip_reason(journal, name),
            "output": outputs[-1] if outputs else None, "outputs": outputs,
        }
    interrupt = None if pending is None else {"node": waiting[-1], "visit": pending.visit, "item": pending.item,
                                              "payload": pending.payload}
    document: dict[str, Any] = jsonable({
        "run_id": record.id, "formation": record.formation, "status": record.status,
        "created": record.created.isoformat(timespec="seconds"), "updated": record.updated.isoformat(timespec="seconds"),
        "source": record.source, "input": record.input, "error": record.error, "interrupt": interrupt, "nodes": nodes,
    })
    return document


def load_journal(store: RunStore, run_id: str) -> RunJournal:
    """``store.load(run_id)``; a run whose values are of classes its formation file defines
    (a pydantic model of the file) is loaded after the file the run records, so that those
    classes import, as ``resume`` loads it.

    Raises:
        SerializationError: a class that cannot be imported even so (a run started from
            Python records no file).
    """
    from ..store import SERVER_SOURCE, SerializationError

    try:
        return store.load(run_id)
    except SerializationError as exc:
        record = store.get(run_id)
        while record.parent is not None:  # an inner run: its outer run records the file
            record = store.get(record.parent)
        if not record.source or record.source.startswith(SERVER_SOURCE) or ":" not in (exc.type_name or ""):
            raise
        from .loading import load_module

        try:
            load_module(record.source)  # registers its module under the name its classes were journalled by
        except UsageError:
            raise exc from None
        return store.load(run_id)


def graph_order(journal: RunJournal) -> list[str]:
    """The run's nodes sources first, along forward edges (ties by name), as the traces of
    a run list them; for a run that journalled none (a quick clean success, or one whose
    process died), whose shape lists its nodes by name."""
    import networkx as nx  # type: ignore[import-untyped]

    graph = nx.DiGraph()
    graph.add_nodes_from(name for name, _ in journal.shape.nodes)
    graph.add_edges_from((e.source, e.target) for e in journal.shape.edges if not e.back)
    try:
        return list(nx.lexicographical_topological_sort(graph))
    except nx.NetworkXUnfeasible:  # (back edges are marked; a shape recorded otherwise keeps its order)
        return [name for name, _ in journal.shape.nodes]


def waiting_at(store: JournalStore, journal: RunJournal) -> tuple[list[str], set[str]]:
    """Where a suspended run waits: the nodes, outermost first (a formation node, then the
    node inside it that called ``interrupt()``, by path, as ``FormationResult.interrupt``
    names it: ``"sub/ask"``, or ``"fm/0/ask"`` inside item 0 of a map over a formation),
    and the nodes after them it has not reached yet (:func:`not_reached`)."""
    from ..formation._nesting import inner_run_id
    from ..store import UnknownRunError

    waiting: list[str] = []
    ahead: set[str] = set()
    prefix = ""
    while (pending := journal.pending_interrupt) is not None:
        waiting.append(prefix + pending.node)
        ahead |= {prefix + name for name in not_reached(journal, pending.node)}
        kind = dict(journal.shape.nodes).get(pending.node)
        inner = inner_run_id(journal.run.id, pending.node, pending.visit)
        step = f"{pending.node}/"
        if kind == "map" and pending.item is not None:  # a map over a formation: one inner run per item
            inner, step = f"{inner}/{pending.item}", f"{pending.node}/{pending.item}/"
        elif kind != "formation":
            break
        try:  # the interrupt came from inside the node: its inner run says where
            journal = store.load(inner)
        except UnknownRunError:
            break
        prefix += step
    return waiting, ahead


def not_reached(journal: RunJournal, node: str) -> set[str]:
    """The nodes downstream of ``node`` along forward edges: those a run suspended at
    ``node`` has not reached yet (its traces call them skipped; they run on ``resume``)."""
    return downstream(((e.source, e.target) for e in journal.shape.edges if not e.back), node)


def _visit_times(store: RunStore, run_id: str) -> dict[str, dict[str, float]]:
    """Each node's time from its journalled visits: the first one's start, the last one's
    end, and the visits' durations summed (for a run that journalled no node traces)."""
    times: dict[str, dict[str, float]] = {}
    for visit in store.history(run_id):
        if visit.started is None or visit.finished is None:
            continue
        t = times.setdefault(visit.node, {"started_at": visit.started.timestamp(), "duration_s": 0.0})
        t["finished_at"] = visit.finished.timestamp()
        t["duration_s"] += (visit.finished - visit.started).total_seconds()
    return times


def _outputs(store: RunStore, journal: RunJournal, name: str, items: dict[str, RunJournal | None]) -> list[Any]:
    """Every visit's output of node ``name`` (a path ``"outer/inner"`` reads the inner
    run of the outer node's visit in flight or suspended, else of its last visit; for a
    map over a formation, the inner runs of its items: :func:`_item_outputs`)."""
    visits = journal.visits.get(name)
    if visits:
        return list(visits.values())
    outer, _, inner = name.partition("/")
    if not inner:
        return []
    last = max(journal.visits.get(outer, {}) or {0: None})
    from ..store import UnknownRunError

    if dict(journal.shape.nodes).get(outer) == "map":
        return _item_outputs(store, journal, outer, inner, last, items)
    for visit in (last + 1, last):  # the visit in flight (or suspended), else the last journalled one
        if visit:
            try:
                return _outputs(store, store.load(f"{journal.run.id}/{outer}/{visit}"), inner, items)
            except UnknownRunError:  # not begun; or a map's items, which run apart (their ids number each item)
                continue
    return []


def _item_outputs(
    store: RunStore, journal: RunJournal, node: str, inner: str, last: int, items: dict[str, RunJournal | None]
) -> list[Any]:
    """The outputs of inner node ``inner`` in the items of map node ``node`` (a map over a
    formation; each item an inner run, ``"<run>/<node>/<visit>/<item>"``), in visit then
    item order, as ``FormationResult.nodes`` merges them: the journalled visits' items,
    then those of the visit in flight or suspended. A finished visit's output says how many
    items it had; an unfinished one's items are read up to the first not begun (items
    start in item order). One journal load per item (kept in ``items`` for the map's other
    inner nodes), on this read path only."""
    from ..formation._nesting import inner_run_id
    from ..store import UnknownRunError

    outputs: list[Any] = []
    done = journal.visits.get(node, {})
    for visit in [*sorted(done), last + 1]:
        output = done.get(visit)
        count = len(output) if isinstance(output, list) else None
        item = 0
        while count is None or item < count:
            item_id = f"{inner_run_id(journal.run.id, node, visit)}/{item}"
            if item_id not in items:
                try:
                    items[item_id] = store.load(item_id)
                except UnknownRunError:
                    items[item_id] = None
            item_journal = items[item_id]
            if item_journal is None:
                if count is None:
                    break  # the items after it have not begun either
                item += 1  # a finished visit's item that journalled no run (kept from an earlier one)
                continue
            outputs += _outputs(store, item_journal, inner, items)
            item += 1
    return outputs


def _skip_reason(journal: RunJournal, name: str) -> str | None:
    reasons = [str(reason) for (node, _), reason in journal.skipped.items() if node == name]
    return reasons[-1] if reasons else None


def _cut(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    if not text.isascii():  # a lone surrogate (a surrogateescape'd file name) cannot be printed: escape it
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= _CUT else text[:_CUT - 1] + "…"


def _print_table(document: dict[str, Any], flag: list[str]) -> None:
    print(f"run {document['run_id']}  formation {document['formation']}  status {document['status']}  "
          f"updated {document['updated']}")
    if document["error"]:
        print(f"error: {document['error']}")
    rows = []
    for name, n in document["nodes"].items():
        tokens = n["usage"]["input_tokens"], n["usage"]["output_tokens"]
        rows.append({
            "node": name, "status": n["status"], "visits": str(n["visits"]),
            "attempts": "" if n["attempts"] is None else str(n["attempts"]),
            "duration": "" if n["duration_s"] is None else f"{n['duration_s']:.3f}s",
            "tokens": "" if tokens[0] is None else f"{tokens[0]}/{tokens[1]}",
            "error": _cut(n["error"]), "output": _cut(n["output"]),
        })
    columns = ("node", "status", "visits", "attempts", "duration", "tokens", "error", "output")
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) if rows else len(c) for c in columns}
    print("  ".join(c.upper().ljust(widths[c]) for c in columns).rstrip())
    for r in rows:
        print("  ".join(r[c].ljust(widths[c]) for c in columns).rstrip())
    interrupt = document["interrupt"]
    if interrupt is not None and document["status"] == "expired":  # its answer is no longer taken
        print(f"expired at node {interrupt['node']!r}: {_cut(interrupt['payload'])}")
        print("it waited longer than its store's suspend_ttl and cannot be resumed: start a new run")
    elif interrupt is not None:
        formation = [] if document["source"] else ["--formation", "FILE"]  # a run started from Python
        command = shlex.join(["wingman-actors", "resume", document["run_id"], *flag, *formation])
        from ..formation._breakpoints import is_breakpoint

        print(f"waiting at node {interrupt['node']!r}: {_cut(interrupt['payload'])}")
        print(f"continue it with: {command}{'' if is_breakpoint(interrupt['payload']) else ' [--answer JSON]'}")
