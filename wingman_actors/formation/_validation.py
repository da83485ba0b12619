"""The formation contract and the problem finders: what a node or an edge may carry, and
everything :meth:`Formation.validate` reports that is not about types.

The declaration (:mod:`.graph`), the compiler (:mod:`.plan`) and the renderers
(:mod:`.render`) all import from here, and this module imports none of them, so the
declaration layer has no import cycle.

The node attributes: ``kind="function", fn=<callable>`` | ``kind="agent", agent=<Agent>``
| ``kind="fleet", agent=<Agent>, max_workers=<int>`` | ``kind="formation",
formation=<Formation>`` (a nested formation run as one node) | ``kind="map", fn=<callable>
or formation=<Formation>, max_workers=<int>`` (a function, or a formation, applied to
every item of a list), plus the policies ``retries``, ``backoff``, ``retry_on``,
``max_backoff``, ``jitter``, ``timeout``, ``on_error``, ``concurrency``, ``max_visits``,
``join`` (``"all"`` or ``"any"``, for fan-in) and, for agent and fleet nodes, ``prompt``.
An edge may carry ``when=<predicate on the upstream output, a type or a tuple of
types>``, ``otherwise=True``, or ``on_error=True`` (an error edge: taken only when its
source fails, carrying a :class:`~.failure.NodeFailure`).

The rules for error edges: ``on_error`` on an edge is a bool (True or False); an error
edge carries no ``when=`` (nor ``otherwise=``); a node with error edges has no
``on_error="skip"`` policy (its failures go to the edges); the handler's input must take a
``NodeFailure`` (checked in :mod:`.plan` against its annotation, when it has one). A node
may have several error edges (each handler gets the failure); an error edge may be a back
edge (even to its own source: the node's next visit gets its own failure); and it counts
as conditional, so a cycle through one is legal, bounded by ``max_visits``.

Example:
    >>> policy_problems("fetch", {"retries": -1})
    ["node 'fetch': retries must be an int >= 0 (restarts after a failure), got -1"]
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import re
import string
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal, get_args, get_origin

import networkx as nx  # type: ignore[import-untyped]
import typing_extensions

from .. import _timeouts as timeouts
from .._graphs import back_edges, natural_loops
from ._typecheck import inspect_callable, when_types

__all__ = [
    "EDGE_ATTRS",
    "KINDS",
    "close_name",
    "NODE_ATTRS",
    "OWNERS",
    "POLICY_DEFAULTS",
    "back_edges",
    "cycle_problems",
    "edge_label",
    "edge_problems",
    "error_edge_problems",
    "is_agent",
    "is_error_edge",
    "is_formation",
    "loop_join_problems",
    "node_problems",
    "otherwise_problems",
    "policy_problems",
    "prompt_problems",
    "quote",
    "reach_problems",
]

KINDS = ("function", "agent", "fleet", "formation", "map")
"""The node kinds."""

POLICY_DEFAULTS: Mapping[str, Any] = MappingProxyType({
    "retries": 0, "backoff": 0.1, "retry_on": None, "max_backoff": 30.0, "jitter": True, "timeout": None,
    "on_error": "fail", "concurrency": 1, "max_visits": 10, "join": "all",
})
"""Policy attributes any node may carry, with the defaults the plan applies."""

_KIND_ATTRS = {"function": {"fn"}, "agent": {"agent", "prompt"}, "fleet": {"agent", "max_workers", "prompt"},
               "formation": {"formation"}, "map": {"fn", "formation", "max_workers"}}
NODE_ATTRS = frozenset({"kind", "fn", "agent", "max_workers", "prompt", "formation", *POLICY_DEFAULTS})
_ALIASES = {"retry": "retries", "func": "fn", "callable": "fn", "workers": "max_workers", "condition": "when", "predicate": "when"}
_DECLARE = "declare it with add_function/add_agent/add_fleet/add_map/add_formation"
OWNERS = {"prompt": "agent and fleet nodes (add_agent, add_fleet)",
          "max_workers": "fleet and map nodes (add_fleet, add_map)"}


def edge_label(when: Any) -> str:
    """The label of an edge carrying ``when``: the predicate's or the type's name (``int |
    str`` for a tuple of types or a union), or ``"when"``."""
    if when is None:
        return ""
    if not isinstance(when, type) and (classes := when_types(when)) is not None:
        return " | ".join(getattr(t, "__name__", "?") for t in classes)
    name = getattr(when, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else "when"


def quote(names: Any) -> str:
    """``'a', 'b'``: names quoted for messages."""
    return ", ".join(repr(n) for n in names)


def close_name(key: str, known: Any, cutoff: float = 0.75) -> str | None:
    """The name in ``known`` that ``key`` most likely misspells (a known alias first), or None."""
    alias = _ALIASES.get(key)
    if alias is not None and alias in known:
        return alias
    return next(iter(difflib.get_close_matches(key, sorted(known), n=1, cutoff=cutoff)), None)


def _unknown_attr(where: str, key: Any, known: frozenset[str]) -> list[str]:
    if not isinstance(key, str) or key in known:
        return []
    guess = close_name(key, known)
    if guess is None:
        return []  # a user's own attribute (a label, a colour): allowed
    return [f"{where} has attribute {key!r}: did you mean {guess!r}? (rename it; unknown attributes are ignored)"]


def _is_int(v: Any, low: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= low


def _is_error_class(v: Any) -> bool:
    return isinstance(v, type) and issubclass(v, BaseException)


def _is_retry_on(v: Any) -> bool:
    if isinstance(v, tuple | list):
        return all(_is_error_class(t) for t in v)
    return v is None or _is_error_class(v)


def _is_seconds(v: Any, positive: bool) -> bool:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return False
    return v > 0 if positive else v >= 0


_RULES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "retries": (lambda v: _is_int(v, 0), "an int >= 0 (restarts after a failure)"),
    "backoff": (lambda v: _is_seconds(v, False), "a number of seconds >= 0 (base of the exponential backoff)"),
    "retry_on": (_is_retry_on, "an exception class or a tuple of them (e.g. retry_on=(ConnectionError, "
                 "TimeoutError)), or None for every error but PayloadError"),
    "max_backoff": (lambda v: _is_seconds(v, False), "a number of seconds >= 0 (the longest wait between retries)"),
    "jitter": (lambda v: isinstance(v, bool), "True (spread the waits between retries at random) or False"),
    "timeout": (timeouts.fits, timeouts.FITS),
    "on_error": (lambda v: isinstance(v, str) and v in ("fail", "skip"), "'fail' or 'skip'"),
    "concurrency": (lambda v: _is_int(v, 1), "an int >= 1"),
    "max_visits": (lambda v: _is_int(v, 1), "an int >= 1 (visits per run, bounds cycles)"),
    "max_workers": (lambda v: _is_int(v, 0), "an int >= 0 (0: one worker per item, up to 100)"),
    "prompt": (lambda v: v is None or isinstance(v, str), "a str template using {input}, or None"),
    "join": (lambda v: isinstance(v, str) and v in ("all", "any"),
             "'all' (wait for every predecessor) or 'any' (fire with the first value)"),
}


def policy_problems(node: Any, attrs: Mapping[str, Any]) -> list[str]:
    """Problems with the policy values (and ``max_workers``, ``prompt``) in ``attrs``."""
    out = []
    for key, (ok, expected) in _RULES.items():
        if key in attrs and not ok(attrs[key]):
            out.append(f"node {node!r}: {key} must be {expected}, got {attrs[key]!r}")
    return out


def node_problems(node: Any, attrs: Mapping[str, Any]) -> tuple[list[str], bool]:
    """Problems with one node's attributes, and whether its kind, ``fn`` and ``agent`` are
    usable for the checks that follow (signatures, types)."""
    if not isinstance(node, str):
        return [f"node {node!r} has a name of type {type(node).__name__}; name every node with a str"], False
    if not node.strip():  # what the builder refuses (a blank name cannot be told apart in events, paths, drawings)
        return [f"node {node!r} has a blank name; name every node with a non-empty str"], False
    kind = attrs.get("kind")
    if kind is None:
        if attrs:  # declared by hand, its kind forgotten (an edge to an undeclared node has no attributes)
            guess = "'formation'" if "formation" in attrs else "'agent'" if "agent" in attrs else "'function'"
            return [f"node {node!r} has no kind (it has {', '.join(f'{k}=' for k in attrs)}); set kind= to one of "
                    f"{quote(KINDS)}, e.g. kind={guess}, or {_DECLARE}"], False
        return [
            f"node {node!r} has no kind: it was probably created by an edge to an undeclared node; "
            f"{_DECLARE} or fix the edge's name"
        ], False
    if not isinstance(kind, str) or kind not in KINDS:
        return [f"node {node!r} has unknown kind {kind!r}; use one of {quote(KINDS)}"], False
    out = [p for key in attrs for p in _unknown_attr(f"node {node!r}", key, NODE_ATTRS)]
    for key in sorted(set(attrs) & (NODE_ATTRS - {"kind", *POLICY_DEFAULTS}) - _KIND_ATTRS[kind]):
        owners = " and ".join(k for k in KINDS if key in _KIND_ATTRS[k])
        out.append(f"{kind} node {node!r} has {key}=, which only applies to {owners} nodes; remove it")
    usable = True
    if kind == "map" and ("fn" in attrs) == ("formation" in attrs):
        has = "both fn= and formation=" if "fn" in attrs else "neither fn= nor formation="
        out.append(f"map node {node!r} has {has}; give it one: fn=<a callable taking one item> "
                   "(add_map(name, fn)) or formation=<a Formation run per item> (add_map(name, formation=sub))")
        usable = False
    elif (kind == "function" or (kind == "map" and "fn" in attrs)) and not callable(attrs.get("fn")):
        got = "no fn" if "fn" not in attrs else f"fn={type(attrs['fn']).__name__}, not callable"
        takes = "the node's input" if kind == "function" else "one item of the node's list input"
        out.append(f"{kind} node {node!r} has {got}; set fn=<a callable taking {takes}>")
        usable = False
    elif (kind == "function" or (kind == "map" and "fn" in attrs)) and (gen := _yields(attrs["fn"])):
        out.append(f"{kind} node {node!r} is {gen} function: a node outputs one value, and a generator handed on "
                   "is used up by the first node that reads it; return the collected values instead, e.g. "
                   "`return list(...)` (or a map node over the items)")
        usable = False
    elif kind in ("formation", "map") and "fn" not in attrs and not is_formation(attrs.get("formation")):
        got = "nothing" if "formation" not in attrs else type(attrs["formation"]).__name__
        what = "the formation it runs" if kind == "formation" else "the formation it runs per item"
        out.append(f"{kind} node {node!r} needs formation=<a Formation> ({what}), got {got}")
        usable = False
    elif kind in ("agent", "fleet") and not is_agent(attrs.get("agent")):
        got = "nothing" if "agent" not in attrs else type(attrs["agent"]).__name__
        out.append(f"{kind} node {node!r} needs agent=<an Agent>, got {got}")
        usable = False
    return out + policy_problems(node, attrs), usable


def is_agent(value: Any) -> bool:
    """Whether ``value`` is an :class:`~wingman_actors.Agent`. The agent layer is imported
    here, at the first agent or fleet node checked, not with this module: a formation of
    functions never loads it (an Agent passed in has loaded it already)."""
    from ..agents._agent import Agent

    return isinstance(value, Agent)


def is_formation(value: Any) -> bool:
    """Whether ``value`` is a formation: a ``name`` and a ``networkx.DiGraph`` ``graph``
    (a :class:`~wingman_actors.formation.Formation`, which this module cannot import)."""
    return isinstance(getattr(value, "name", None), str) and isinstance(getattr(value, "graph", None), nx.DiGraph)


EDGE_ATTRS = frozenset({"when", "otherwise", "on_error"})


def edge_problems(u: Any, v: Any, attrs: Mapping[str, Any]) -> list[str]:
    """Problems with one edge's attributes (``when``, ``otherwise``, ``on_error`` and close typos of them)."""
    where = f"edge {u!r} → {v!r}"
    out = [p for key in attrs for p in _unknown_attr(where, key, EDGE_ATTRS)]
    out += _error_edge_attr_problems(where, u, attrs)
    when = attrs.get("when")
    otherwise = attrs.get("otherwise", False)
    if not isinstance(otherwise, bool):
        out.append(f"{where}: otherwise must be True or False, got {otherwise!r}")
    elif otherwise and when is not None:
        out.append(f"{where} has both when= and otherwise=True; an otherwise edge is taken when none of "
                   f"{u!r}'s conditions fire, so it takes no condition of its own: drop one of them")
    if when is None:
        return out
    if isinstance(when, tuple):
        if not when or not all(_checkable(t) for t in when):
            out.append(f"{where}: when=(...) must be a tuple of types (isinstance checks), got {when!r}")
    elif _checkable(when):
        pass  # when=int: isinstance(output, int)
    elif not isinstance(when, type) and (classes := when_types(when)) is not None:  # when=int | str
        if not all(_checkable(t) for t in classes):
            out.append(f"{where}: when={when!r} must be a union of classes (isinstance checks: int | str, not "
                       "list[int]); use a predicate for a check of what a container holds")
    elif when is Any or isinstance(when, type) or get_origin(when) is not None:  # list[int], Literal['a'], Any
        shown = when.__name__ if isinstance(when, type) else repr(when)
        out.append(f"{where}: when={shown} cannot be checked with isinstance (routing calls isinstance(output, "
                   f"<when>) for a type); {_typing_form_fix(when)}")
    elif not callable(when):
        label = f"; to route on a label, compare it: when=lambda output: output == {when!r}" if isinstance(when, str) else ""
        out.append(f"{where}: when must be a predicate on the output of {u!r}, a type, a tuple or a union of types, "
                   f"got {type(when).__name__}{label}")
    elif _is_async(when):
        out.append(f"{where}: when={edge_label(when)} is an async function; routing calls a condition and does "
                   "not await it (its coroutine would count as True), so make it a plain def returning a bool")
    elif not inspect_callable(when).accepts_one():
        out.append(f"{where}: when={edge_label(when)} must take one argument (the output of {u!r})")
    return out


def _checkable(t: Any) -> bool:
    """Whether ``isinstance(x, t)`` works: a plain class (not ``typing.Any``, ``list[int]``
    or another parameterised or special form, a TypedDict or a protocol that is not
    ``@runtime_checkable``, which refuse the check)."""
    if not isinstance(t, type) or t is Any or get_origin(t) is not None:
        return False
    try:
        isinstance(None, t)
    except TypeError:
        return False
    return True


def _typing_form_fix(when: Any) -> str:
    """How to write the condition a ``when=`` typing form meant."""
    origin = get_origin(when)
    if origin is Literal:
        return f"use a predicate, e.g. when=lambda x: x in {get_args(when)!r}"
    if isinstance(origin, type):
        return (f"use the class, when={origin.__name__}, or a predicate for what it holds, e.g. "
                f"when=lambda x: isinstance(x, {origin.__name__}) and ...")
    if when is Any:
        return "Any lets every output through: drop when= (or use when=object), or use a predicate"
    if typing_extensions.is_typeddict(when):
        return "a TypedDict is a dict at run time: use when=dict, or a predicate on its keys"
    if getattr(when, "_is_protocol", False):
        return "decorate the protocol with @typing.runtime_checkable, or use a predicate"
    return "use a class, a tuple or a union of classes, or a predicate"


def _yields(fn: Any) -> str | None:
    """``"a generator"`` or ``"an async generator"`` when calling ``fn`` gives one, else None."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if not (inspect.isroutine(fn) or isinstance(fn, type)):
        fn = getattr(type(fn), "__call__", None)  # noqa: B004  (a callable object's own __call__)
    return "a generator" if inspect.isgeneratorfunction(fn) else (
        "an async generator" if inspect.isasyncgenfunction(fn) else None)


def _is_async(fn: Any) -> bool:
    """Whether calling ``fn`` gives a coroutine or an async generator instead of a value."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return True
    if inspect.isroutine(fn) or isinstance(fn, type):
        return False
    return inspect.iscoroutinefunction(getattr(type(fn), "__call__", None))  # noqa: B004  (its own async __call__)


def otherwise_problems(graph: nx.DiGraph) -> list[str]:
    """Nodes with more than one ``otherwise`` edge."""
    out = []
    by_source: dict[Any, list[Any]] = {}
    for u, v, o in graph.edges(data="otherwise"):  # one pass, in graph order
        if o is True:
            by_source.setdefault(u, []).append(v)
    for u, targets in by_source.items():
        if len(targets) > 1:
            out.append(f"node {u!r} has {len(targets)} otherwise edges (to {quote(targets)}); a node may have "
                       "one: keep one and give the others when= conditions")
    return out


def _error_edge_attr_problems(where: str, u: Any, attrs: Mapping[str, Any]) -> list[str]:
    flag = attrs.get("on_error", False)
    if not isinstance(flag, bool):
        return [f"{where}: on_error must be True (an error edge, taken when {u!r} fails) or False, got {flag!r}; "
                f"to skip {u!r} when it fails, set the node policy instead: add_function({u!r}, ..., on_error='skip')"]
    conditions = [k for k in ("when", "otherwise") if flag and attrs.get(k) not in (None, False)]
    if conditions:
        return [f"{where}: an error edge (on_error=True) is taken exactly when {u!r} fails, so it cannot also "
                f"carry {' or '.join(f'{k}=' for k in conditions)}; drop one of them (route the handler's output "
                "with conditional edges out of the handler instead)"]
    return []


def is_error_edge(attrs: Mapping[str, Any]) -> bool:
    """Whether an edge with these attributes is an error edge (``on_error=True``)."""
    return attrs.get("on_error") is True


def error_edge_problems(graph: nx.DiGraph) -> list[str]:
    """Problems of nodes with error edges: an ``on_error="skip"`` policy the error edges
    would silently override."""
    out = []
    for u in dict.fromkeys(u for u, _, a in graph.edges(data=True) if is_error_edge(a)):
        if graph.nodes[u].get("on_error") == "skip":
            handlers = quote(v for _, v, a in graph.out_edges(u, data=True) if is_error_edge(a))
            out.append(f"node {u!r} has on_error='skip' and error edge(s) to {handlers}; a failure goes to the "
                       "error edges, so the policy would never apply: remove on_error='skip' or the error edges")
    return out


def cycle_problems(graph: nx.DiGraph) -> list[str]:
    """Cycles that nothing can end."""
    out = []
    # otherwise and error edges are conditional too: each may stay shut
    plain = nx.DiGraph([(u, v) for u, v, a in graph.edges(data=True)
                        if a.get("when") is None and not a.get("otherwise") and not is_error_edge(a)])
    for scc in nx.strongly_connected_components(plain):
        if len(scc) > 1 or any(plain.has_edge(n, n) for n in scc):
            start = next(n for n in graph if n in scc)
            cycle = [u for u, _ in nx.find_cycle(plain.subgraph(scc), source=start)]
            path = " → ".join(str(n) for n in [*cycle, cycle[0]])
            out.append(f"cycle {path} has no conditional edge; add when= to one of its edges so it can end")
    return out


def loop_join_problems(graph: nx.DiGraph, back: set[tuple[Any, Any]]) -> list[str]:
    """Joins inside a loop fed both from inside it and from outside it. What is outside
    delivers once (per visit of it), so the join's visit in the loop's next round waits
    for it forever (with ``join="any"``, the round after that): the run would end with
    values held in the join. ``back``: the graph's back edges."""
    out, named = [], set()
    for header, body in natural_loops(graph).items():
        for node in graph:  # graph order
            if node == header or node not in body or node in named:
                continue
            preds = [u for u in graph.predecessors(node) if (u, node) not in back]
            outside = [u for u in preds if u not in body]
            if not outside or len(outside) == len(preds):
                continue
            named.add(node)
            loop, _ = _loop(graph, header, body)
            inside = [u for u in preds if u in body]
            out.append(
                f"node {node!r} joins {quote(inside)}, inside the loop ({loop}), and {quote(outside)}, outside "
                f"it: what is outside delivers once, so the visit of {node!r} in the loop's next round would wait "
                "for it forever (join='any' only delays that by a round) and the run would end without the "
                f"loop's values; feed {quote(outside)} to the loop's entry {header!r} only, and let the loop "
                f"carry what {node!r} needs"
            )
    return out


def _shortest_cycle(graph: nx.DiGraph, start: Any, members: set[Any]) -> list[Any]:
    """A shortest cycle through ``start`` within ``members`` (strongly connected, more than
    a self-loop when it has several nodes), found breadth first in the graph's own order."""
    parents: dict[Any, Any] = {start: None}
    queue = [start]
    for node in queue:
        for child in graph.successors(node):
            if child == start and (node != start or len(members) == 1):
                cycle = [node]
                while parents[cycle[-1]] is not None:
                    cycle.append(parents[cycle[-1]])
                return cycle[::-1]  # from start
            if child in members and child not in parents:
                parents[child] = node
                queue.append(child)
    raise ValueError(f"{start!r} is on no cycle within {members!r}")  # not reached: members is strongly connected


def _loop(graph: nx.DiGraph, first: Any, members: set[Any]) -> tuple[str, str]:
    """``cycle a → b → a`` (or, for a component of several cycles, its nodes and one of
    them), and the pronoun for it."""
    cycle = _shortest_cycle(graph, first, members)
    path = " → ".join(str(n) for n in [*cycle, first])
    if len(cycle) == len(members):
        return f"cycle {path}", "it"
    return f"the cycles among {quote(n for n in graph if n in members)} (one is {path})", "them"


def reach_problems(graph: nx.DiGraph) -> list[str]:
    """Nodes the run's input never reaches, one problem per cycle nothing enters.

    The sources are the nodes with no incoming edge but their own self-loop (a self-loop
    closes a cycle whatever the search; the search for back edges starts from these). Every
    other node needs a path from a source: a node entered only from a cycle that nothing
    enters would never run, and nor would anything downstream of it. Such a node is not taken
    for a source: none of its incoming edges closes a cycle on a path from a source.
    """
    sources = [n for n in graph if all(u == n for u in graph.predecessors(n))]
    reached, stack = set(sources), list(sources)
    while stack:
        for child in graph.successors(stack.pop()):
            if child not in reached:
                reached.add(child)
                stack.append(child)
    if len(reached) == graph.number_of_nodes():
        return []
    rest = graph.subgraph([n for n in graph if n not in reached])
    # Each strongly connected component of the rest with no edge in from the rest is a cycle
    # (a lone node there would have no incoming edge, so it would be a source).
    condensed = nx.condensation(rest)
    order = {n: i for i, n in enumerate(graph)}
    entries = sorted((condensed.nodes[c]["members"] for c in condensed if condensed.in_degree(c) == 0),
                     key=lambda members: min(order[n] for n in members))
    out, named = [], set()
    for members in entries:
        first = min(members, key=order.__getitem__)
        downstream = nx.descendants(rest, first) | {first}
        group = [n for n in graph if n in downstream and n not in named]
        named.update(group)
        loop, pronoun = _loop(graph, first, members)
        if sources:
            out.append(f"node(s) {quote(group)} cannot be reached from the source(s) {quote(sources)}: their only "
                       f"way in is {loop}, which no source reaches; connect {first!r} from a node a source "
                       "reaches, or remove them")
        else:
            out.append(f"node(s) {quote(group)} get no input: no node is a source (a node with no incoming edge "
                       f"but its own self-loop), and nothing outside {loop} enters {pronoun}; add an entry node "
                       f"feeding {first!r}, e.g. add_function('start', fn).connect('start', {first!r})")
    return out


_CONVERSIONS = ("s", "r", "a")
_SAMPLES: dict[Any, Any] = {str: "", int: 0, float: 0.0, bool: False}  # a value to try a format spec on
_ACCESS = re.compile(r"\.([^.\[]*)|\[([^\]]*)\]")


def _fields(template: str, depth: int = 0, top: str = "") -> list[tuple[str, str, str | None, int, str]]:
    """Every replacement field of ``template`` as (field name, format spec, conversion,
    depth, the top-level field shown as written), those nested in format specs included.
    Raises ValueError when the template is malformed."""
    out = []
    for _, field, spec, conversion in string.Formatter().parse(template):
        if field is not None:
            shown = top or _show(field, spec or "", conversion)
            out.append((field, spec or "", conversion, depth, shown))
            if spec and "{" in spec:
                out += _fields(spec, depth + 1, shown)
    return out


def _show(field: str, spec: str, conversion: str | None) -> str:
    return "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"


def prompt_problems(node: str, prompt: str, fields: Mapping[str, Any] | None) -> list[str]:
    """Problems that would make ``prompt`` fail to render for every input, all of them:
    malformed braces, positional fields, keys the input does not have, conversions other
    than ``!s``/``!r``/``!a``, format specs the field's value cannot take, attributes the
    input's text lacks, and fields nested too deep in format specs.

    Args:
        node: the node (for messages).
        prompt: the template.
        fields: the keys a dict or model input has, with their types (None when unknown);
            ``{}`` for an input without keys; None when the keys are unknown (no key check).
    """
    try:
        found = _fields(prompt)
    except ValueError as exc:
        return [f"node {node!r}: prompt is not a valid template ({exc}); write {{input}} for the input "
                "and double literal braces: {{ and }}"]
    out: list[str] = []
    seen_keys: set[str] = set()
    for field, spec, conversion, depth, top in found:
        shown = _show(field, spec, conversion)
        key = re.split(r"[.\[]", field, maxsplit=1)[0]
        if key not in seen_keys:
            seen_keys.add(key)
            out += _key_problems(node, key, fields)
        if conversion is not None and conversion not in _CONVERSIONS:
            out.append(f"node {node!r}: prompt field {shown} has conversion !{conversion}; use !s, !r or !a, or none")
        if depth > 1:
            out.append(f"node {node!r}: prompt field {top} nests fields "
                       "two levels deep in its format spec, which Python cannot format; nest at most one level")
            continue
        if key == "input":  # the attribute is read before any conversion
            out += _attribute_problems(node, field)
        if conversion is not None or field == key:  # past an attribute or index the type is unknown
            out += _spec_problems(node, shown, key, spec, conversion, fields)
    return out


def _key_problems(node: str, key: str, fields: Mapping[str, Any] | None) -> list[str]:
    # a digit field is a key when the input has it (predecessors named "1", "2"): the
    # renderer looks it up as one; otherwise str.format would take it as positional
    if key == "" or (key.isdigit() and (fields is None or key not in fields)):
        return [f"node {node!r}: prompt has a positional field {{{key}}}; name it: {{input}} "
                "for the whole input, or a key of a dict or model input"]
    if key != "input" and fields is not None and key not in fields:
        why = f"has no such key (keys: {', '.join(sorted(fields))})" if fields else "is not a dict or a model"
        return [f"node {node!r}: prompt uses {{{key}}} but the input {why}; use {{input}} or a key of the input"]
    return []


def _attribute_problems(node: str, field: str) -> list[str]:
    # {input} is the input as text: reading an attribute a str lacks fails every run.
    first = _ACCESS.match(field, len("input"))
    attr = first.group(1) if first is not None else None
    if attr is not None and not hasattr(str, attr):
        return [f"node {node!r}: prompt field {{{field}}} reads attribute {attr!r} of the input's text (a str), "
                "which has none; use {input}, or a key of a dict or model input"]
    return []  # past the first access the value's type is unknown


def _spec_problems(
    node: str, shown: str, key: str, spec: str, conversion: str | None, fields: Mapping[str, Any] | None
) -> list[str]:
    if not spec or "{" in spec:
        return []  # no spec, or one filled in per input
    tp: Any = str
    what = "the input's text"
    if conversion is None and key != "input":
        tp = (fields or {}).get(key)
        what = f"the field {key!r}"
    if not isinstance(tp, type) or tp not in _SAMPLES:
        return []  # a type the check does not know: pydantic-dumped values vary
    try:
        format(_SAMPLES[tp], spec)
    except ValueError as exc:
        return [f"node {node!r}: prompt field {shown} has format spec {spec!r}, which {what} "
                f"(a {tp.__name__}) does not take ({exc}); fix the spec or drop it"]
    return []
