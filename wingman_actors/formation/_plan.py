"""Validation of a formation's graph, and the compiled :class:`Plan` the runtime executes.

:func:`compile_plan` checks everything it can before any actor starts and raises one
:class:`~wingman_actors.errors.FormationSetupError` listing every problem, each naming
the node or edge and the fix. A valid graph becomes a :class:`Plan`: frozen node and edge
specs with defaults applied, edges classified as forward or back, fan-in modes decided
and input validators built, so the runtime does no graph work on its hot path.
"""

from __future__ import annotations

import collections.abc
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

import networkx as nx  # type: ignore[import-untyped]
from pydantic import TypeAdapter

from .. import _timeouts as timeouts
from .._graphs import loop_roles, topological_order
from ..errors import FormationSetupError, NodeTimeoutError
from ._board_param import BoardNeed, board_param
from ._failure import NodeFailure
from ._fan_in_types import fan_in_type_problems
from ._sinks import one_output, output_union
from ._subplans import boundary_problems, nested_type, nesting_problems, source_accepts, subplan
from ._typecheck import (
    CallableInfo,
    compatible,
    disjoint,
    edge_type_problem,
    exclude,
    guard_type,
    inspect_callable,
    is_sequence,
    item_type,
    narrow,
    prompt_fields,
    shared_adapters,
    type_name,
    warn_unresolved,
    when_types,
)
from ._validation import (
    POLICY_DEFAULTS,
    back_edges,
    cycle_problems,
    edge_label,
    edge_problems,
    error_edge_problems,
    is_error_edge,
    loop_join_problems,
    node_problems,
    otherwise_problems,
    prompt_problems,
    quote,
    reach_problems,
)

if TYPE_CHECKING:
    from ..agents._agent import Agent  # only a type: agent nodes load the agent layer (_validation.is_agent)
    from ._graph import Formation  # only a type: the formation module imports this one

__all__ = ["ConditionRaised", "EdgeSpec", "NodeSpec", "Plan", "compile_plan"]

_P = inspect.Parameter
_POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD, _P.VAR_POSITIONAL)
_VARIADIC = (_P.VAR_POSITIONAL, _P.VAR_KEYWORD)


@dataclass(frozen=True, slots=True)
class EdgeSpec:
    """One edge of the plan.

    Attributes:
        source: the upstream node.
        target: the downstream node.
        when: the routing predicate on the upstream output (``when=int`` becomes
            ``isinstance(output, int)``), None for an unconditional or ``otherwise`` edge.
        back: True when the edge closes a cycle (found by depth-first search from the sources).
        label: the predicate's ``__name__`` (``"when"`` for lambdas), the type's name,
            ``"otherwise"``, or ``""`` when unconditional.
        otherwise: taken when none of the source's conditional edges fire.
        on_error: an error edge (``connect(a, b, on_error=True)``): taken only when the
            source fails after its retries, carrying a :class:`~.failure.NodeFailure`.
        loop: for a source on a cycle, ``"on"`` (the edge goes round it) or ``"exit"`` (it
            leaves it: not taken on a visit that goes round, it waits for the next visit).
    """

    source: str
    target: str
    when: Callable[[Any], bool] | None
    back: bool
    label: str
    otherwise: bool = False
    on_error: bool = False
    loop: str = ""

    @property
    def conditional(self) -> bool:
        """Whether the edge may stay shut (a ``when=``, ``otherwise`` or error edge)."""
        return self.when is not None or self.otherwise or self.on_error


class ConditionRaised(Exception):
    """The ``when=`` condition of ``edge`` raised (the cause, chained): routing fails the run naming the edge."""

    def __init__(self, edge: EdgeSpec) -> None:
        super().__init__(f"{edge.source} -> {edge.target}")
        self.edge = edge


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node of the plan, with every policy default applied.

    Attributes:
        input_mode: ``single`` (one forward predecessor, or a source: gets the value),
            ``dict`` (several forward predecessors: gets ``{pred: value}``) or ``kwargs``
            (a function whose parameters are named after its predecessors: call
            ``fn(**{pred: value})`` with exactly the keys of ``kwarg_adapters``).
        input_adapter: for function nodes in ``single`` or ``dict`` mode, validates the
            payload against the first parameter's annotation; for map nodes, each item;
            None when unannotated/Any.
        kwarg_adapters: ``kwargs`` mode: predecessor (= keyword) → adapter or None.
        output_type: the declared output type, None when unknown.
        out_edges: the outgoing edges (forward and back) but error edges, in graph order.
        is_sink: no outgoing edges but error edges: the output is a run output (a node
            whose outgoing edges are all back edges is not a sink).
        join: ``all`` (a fan-in visit waits for every forward predecessor) or ``any``
            (it fires with the first value of the visit; later ones are dropped).
        needs_route: every outgoing edge is conditional and none is ``otherwise``: an
            output none of them takes fails the run with ``NoRouteError``.
        race: ``join="any"``: by predecessor, the nodes of the other branches that feed
            only this node, cancelled for the visit when that predecessor's value fires it.
        blackboard: whether the function takes the run's blackboard (its ``blackboard``
            parameter): ``none``, ``required`` or ``optional`` (has a default); a
            formation node's is ``required`` when one of its inner nodes' is.
        retry_on: the exception classes a failed attempt is retried for; None: every
            error but those that say they are not retryable (``PayloadError``). A class
            that covers ``TimeoutError`` covers :class:`NodeTimeoutError` too.
        max_backoff: the longest wait between two attempts, in seconds.
        jitter: draw each wait at random from the upper half of the backoff.
        error_edges: the outgoing error edges (``on_error=True``), in graph order.
        formation: a formation (or formation map) node's inner formation (the
            declaration), else None.
        subplan: that formation, compiled, else None.
    """

    name: str
    kind: Literal["function", "agent", "fleet", "formation", "map"]
    fn: Callable[..., Any] | None
    agent: Agent | None
    max_workers: int
    retries: int
    backoff: float
    timeout: float | None
    on_error: Literal["fail", "skip"]
    concurrency: int
    prompt: str | None
    max_visits: int
    input_mode: Literal["single", "dict", "kwargs"]
    input_adapter: TypeAdapter[Any] | None
    kwarg_adapters: Mapping[str, TypeAdapter[Any] | None]
    output_type: Any
    forward_preds: tuple[str, ...]
    back_preds: tuple[str, ...]
    out_edges: tuple[EdgeSpec, ...]
    is_source: bool
    is_sink: bool
    blackboard: BoardNeed = "none"
    join: Literal["all", "any"] = "all"
    needs_route: bool = False
    race: Mapping[str, frozenset[str]] = field(default_factory=dict)
    retry_on: tuple[type[BaseException], ...] | None = None
    max_backoff: float = 30.0
    jitter: bool = True
    error_edges: tuple[EdgeSpec, ...] = ()
    formation: Any = None
    subplan: Plan | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """A validated formation, ready to run.

    Attributes:
        name: the formation's name.
        nodes: node specs by name, in graph order.
        sources: nodes without forward predecessors (a node entered only through back
            edges, e.g. its own self-loop, included); they receive the run's input.
        sinks: nodes without outgoing forward edges; their outputs are the run's outputs.
        one_output: one sink, or sinks that exclude one another (formation/_sinks.py):
            the run has one ``output``, whichever sink produced it.
        order: a topological order of the forward edges (earlier-declared nodes first).
        edges: every edge, in graph order.
        accepts: what the run's input must fit: ``(source, type)`` per source (a nested
            formation's sources named by path, ``"node/inner"``; a map over a formation
            takes a list of what its formation's sources take), None for any input.
    """

    name: str
    nodes: Mapping[str, NodeSpec]
    sources: tuple[str, ...]
    sinks: tuple[str, ...]
    order: tuple[str, ...]
    edges: tuple[EdgeSpec, ...]
    accepts: tuple[tuple[str, Any], ...] = ()
    one_output: bool = False

    @property
    def output_type(self) -> Any:
        """The run's output type: its one sink's (a union of sinks that exclude one another), else a dict."""
        if self.one_output:
            return output_union([self.nodes[s].output_type for s in self.sinks])
        return dict[str, Any]


_LAZY = (collections.abc.Iterable, collections.abc.Iterator, collections.abc.Generator)


def _output_type(attrs: Mapping[str, Any], info: CallableInfo | None) -> Any:
    if info is not None:
        if attrs["kind"] == "map":  # an async def's annotation is what it returns once awaited
            return None if info.returns is None else list[info.returns]  # type: ignore[name-defined]
        return info.returns
    schema = attrs["agent"].output_schema
    one: Any = str if schema is None else schema
    if isinstance(schema, dict):  # a JSON Schema: the Python type it validates to
        kinds = {"object": dict[str, Any], "array": list[Any], "string": str, "integer": int, "number": float}
        one = {**kinds, "boolean": bool}.get(schema.get("type") or "object")
    elif get_origin(schema) in _LAZY:  # Iterable[X] and kin: the session gives a list
        args = get_args(schema)
        one = list[args[0] if args else Any]  # type: ignore[misc]
    return list[one] if attrs["kind"] == "fleet" and one is not None else one  # type: ignore[valid-type]


@dataclass
class _Inputs:
    mode: Literal["single", "dict", "kwargs"]
    param: str | None = None  # single/dict: the parameter receiving the input
    param_type: Any = None
    kwarg_types: dict[str, Any] | None = None


def _wants_kwargs(info: CallableInfo, named: list[inspect.Parameter], preds: list[str]) -> bool:
    if len(named) >= 2 or info.params(_P.VAR_KEYWORD):
        return any(p.name in preds for p in named) or not info.accepts_one()
    return False  # one parameter: it receives the dict


def _function_inputs(
    node: str, fn: Any, info: CallableInfo, preds: list[str], back: list[str], is_source: bool
) -> tuple[_Inputs, list[str]]:
    """The input mode of a function node, its parameter types, and problems calling it."""
    named = info.params(_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY)
    if len(preds) > 1 and _wants_kwargs(info, named, preds):
        by_name = {p.name: p for p in named}
        var_kw = next(iter(info.params(_P.VAR_KEYWORD)), None)
        required = [p for p in info.params() if p.default is p.empty and p.kind not in _VARIADIC]
        bad_params = [p.name for p in required if p.name not in by_name or p.name not in preds]
        bad_preds = [] if var_kw is not None else [p for p in preds if p not in by_name]
        what = [f"parameter(s) {quote(bad_params)} match no predecessor"] if bad_params else []
        what += [f"predecessor(s) {quote(bad_preds)} match no parameter"] if bad_preds else []
        problems = [
            f"function node {node!r} has several forward predecessors ({quote(preds)}) and "
            f"{info.describe(fn)} takes them as keyword arguments, but {' and '.join(what)}; name each "
            "parameter after a predecessor (or add **kwargs), or take one parameter to receive a dict "
            "{predecessor: output}"
        ] if what else []
        if back:  # a back edge's visit brings one value, which no keyword carries
            edges = ", ".join(f"{u!r} → {node!r}" for u in back)
            problems.append(
                f"function node {node!r} takes its forward predecessors ({quote(preds)}) as keyword arguments, but "
                f"the back edge{'s' if len(back) > 1 else ''} {edges} start{'' if len(back) > 1 else 's'} a visit of "
                "its own with one value, which no keyword carries; take one parameter instead (a forward visit "
                "gives it the dict {predecessor: output}, a back edge's visit that value), or send the loop back "
                "to a node before the join")
        kinds = {p: info.annotation(by_name.get(p, var_kw)) for p in preds}
        return _Inputs("kwargs", kwarg_types=kinds), problems
    first = next(iter(info.params(*_POSITIONAL)), None)
    problems = []
    if not info.accepts_one():
        if is_source:
            why = f"source function node {node!r} must accept exactly one positional argument (the run input)"
        elif len(preds) > 1:
            why = f"function node {node!r} receives one dict {{predecessor: output}} from {quote(preds)}"
        else:
            why = f"function node {node!r} receives one value (the output of {quote(preds or back)})"
        fix = ("give the other parameters defaults" if first is not None else  # nothing takes the value
               "add a positional parameter for it (an unused one will do: `def step(_): ...`, `lambda _: ...`)")
        problems.append(f"{why}, but {info.describe(fn)} cannot be called with one argument; {fix}")
    mode: Literal["single", "dict"] = "dict" if len(preds) > 1 else "single"
    return _Inputs(mode, first.name if first else None, info.annotation(first)), problems


def _map_inputs(node: str, fn: Any, info: CallableInfo) -> tuple[_Inputs, list[str]]:
    """A map node's item parameter and its type, and problems calling its function."""
    first = next(iter(info.params(*_POSITIONAL)), None)
    problems = []
    if not info.accepts_one():
        problems.append(
            f"map node {node!r} calls its function with one item at a time, but {info.describe(fn)} cannot be "
            "called with one argument; take the item as the first parameter and give the others defaults"
        )
    return _Inputs("single", first.name if first else None, info.annotation(first)), problems


def _type_problems(node: str, kind: str, ins: _Inputs, fwd: list[str], back: list[str], types: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    each = {"fleet": "one session per item", "map": "one call per item"}.get(kind, "")
    if each and len(fwd) > 1:
        out.append(
            f"{kind} node {node!r} has several forward predecessors ({quote(fwd)}), so it would receive a "
            f"dict, but a {kind} needs a list ({each}); merge them into a list in a function node first"
        )
    elif each:
        for u in fwd + back:
            if not is_sequence(types.get(u)):
                out.append(
                    f"edge {u!r} → {node!r}: {kind} node {node!r} needs a list ({each}) but {u!r} "
                    f"outputs {type_name(types.get(u))}; make {u!r} output a list (e.g. output_schema=list[str]) "
                    "or put a function node between them that splits its output into a list"
                )
            elif kind == "map" and not compatible(item_type(types.get(u)), ins.param_type):
                out.append(
                    f"{'back edge' if u in back else 'edge'} {u!r} → {node!r}: {u!r} outputs "
                    f"{type_name(types.get(u))}, whose items are {type_name(item_type(types.get(u)))}, but "
                    f"parameter {ins.param!r} of map node {node!r} expects {type_name(ins.param_type)}; make the "
                    "item type and the parameter's annotation agree, or convert the items in a function node first"
                )
    elif kind == "function" and ins.mode == "kwargs":
        for u in fwd:
            out += edge_type_problem(u, node, False, types.get(u), u, (ins.kwarg_types or {}).get(u))
    elif kind == "function" and ins.mode == "dict":
        if not compatible(dict[str, Any], ins.param_type):
            out.append(
                f"function node {node!r} receives a dict {{predecessor: output}} from {quote(fwd)} but its "
                f"parameter {ins.param!r} expects {type_name(ins.param_type)}; annotate it as dict[str, Any], "
                "or name parameters after the predecessors to receive keyword arguments"
            )
        out += fan_in_type_problems(node, ins.param, ins.param_type, {u: types.get(u) for u in fwd})
        for u in back:  # a back edge's visit brings its value alone, not a dict
            out += edge_type_problem(u, node, True, types.get(u), ins.param, ins.param_type)
    elif kind == "function":
        for u in fwd + back:
            out += edge_type_problem(u, node, u in back, types.get(u), ins.param, ins.param_type)
    return out


def _edge_types(graph: nx.DiGraph, types: Mapping[str, Any]) -> tuple[dict[tuple[Any, Any], Any], list[str]]:
    """The type of what each edge carries: its source's output type, narrowed by a
    ``when=`` type (or ``TypeGuard``/``TypeIs`` predicate), and for an ``otherwise`` edge
    beside type conditions, what none of them lets through; and the type conditions that
    can never hold."""
    along: dict[tuple[Any, Any], Any] = {}
    problems: list[str] = []
    for u in graph:
        src = types.get(u)
        guards: list[Any] = []
        otherwise = None
        for _, v, attrs in graph.out_edges(u, data=True):
            if is_error_edge(attrs):
                along[(u, v)] = NodeFailure  # what an error edge carries
                continue
            if attrs.get("otherwise"):
                otherwise = v
                continue
            when = attrs.get("when")
            guard = None if when is None else guard_type(when)
            if when is not None:
                guards.append(guard)
            along[(u, v)] = src if guard is None else narrow(src, guard)
            if when_types(when) is not None and guard is not None and disjoint(src, guard):
                problems.append(
                    f"edge {u!r} → {v!r}: when={edge_label(when)} means isinstance(output, {edge_label(when)}), "
                    f"but {u!r} outputs {type_name(src)}, so the edge never fires; use a type {u!r} can "
                    "output, or a predicate (e.g. when=lambda x: bool(x) for truthiness)")
        if otherwise is not None:
            typed = guards and all(g is not None for g in guards)
            along[(u, otherwise)] = exclude(src, guards) if typed else src
    return along, problems


def _any_kwargs_problems(node: str, fn: Any, info: CallableInfo, preds: list[str]) -> list[str]:
    bare = [p.name for p in info.params(_P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY)
            if p.name in preds and p.default is p.empty]
    if not bare:
        return []
    return [f"function node {node!r} has join='any', so each visit passes only the keyword argument of the "
            f"predecessor that delivered first, but {info.describe(fn)} requires {quote(bare)}; give those "
            "parameters defaults (e.g. = None)"]


def compile_plan(formation: Formation) -> Plan:
    """Validate ``formation`` and compile it into a :class:`Plan`.

    Args:
        formation: the formation (anything with ``name`` and a ``networkx.DiGraph`` ``graph``).

    Returns:
        The plan, with policy defaults applied and everything the runtime needs precomputed.

    Raises:
        FormationSetupError: listing every problem found, each naming the node or edge
            and how to fix it.
    """
    too_deep = nesting_problems(formation)
    if too_deep:
        raise FormationSetupError(formation.name, too_deep)
    return _compile(formation, ())


def _compile(formation: Formation, within: tuple[tuple[int, str], ...]) -> Plan:
    """:func:`compile_plan` of a formation nested in those of ``within`` ((id, name) each,
    outermost first), which it must not contain."""
    name, graph = formation.name, formation.graph
    if graph.number_of_nodes() == 0:
        raise FormationSetupError(name, ["the graph has no nodes; declare at least one with "
                                         "add_function, add_agent, add_fleet, add_map or add_formation"])
    problems: list[str] = []
    usable: dict[str, Mapping[str, Any]] = {}
    for node, attrs in graph.nodes(data=True):
        found, ok = node_problems(node, attrs)
        problems += found
        if ok:
            usable[node] = attrs
    for u, v, attrs in graph.edges(data=True):
        problems += edge_problems(u, v, attrs)
    problems += error_edge_problems(graph)
    back = back_edges(graph)
    fwd = {n: [u for u in graph.predecessors(n) if (u, n) not in back] for n in graph}
    bwd = {n: [u for u in graph.predecessors(n) if (u, n) in back] for n in graph}
    # A source has no forward predecessor: a node entered only through its own self-loop
    # receives the run's input too (reach_problems refuses nodes no source reaches).
    sources = [n for n in graph if not fwd[n]]
    # a depth-first search finds a back edge on every cycle: without one, there is none
    problems += (cycle_problems(graph) + loop_join_problems(graph, back) if back else []) + reach_problems(graph)
    infos = {n: inspect_callable(a["fn"]) for n, a in usable.items() if a["kind"] in ("function", "map") and "fn" in a}
    warn_unresolved(name, {n: (usable[n]["fn"], info) for n, info in infos.items()})
    boards: dict[str, BoardNeed] = {}
    for n in infos:
        # the blackboard parameter is not an input: match inputs without it (a map's items neither)
        kind = usable[n]["kind"]
        infos[n], boards[n], found = board_param(n, usable[n]["fn"], infos[n], fwd[n] if kind == "function" else [], kind)
        problems += found
    problems += otherwise_problems(graph)
    subplans: dict[str, Plan] = {}
    for n, a in list(usable.items()):
        if a["kind"] == "formation" or (a["kind"] == "map" and "formation" in a):
            inner, found = subplan(n, a["formation"], (*within, (id(formation), name)), _compile)
            problems += found
            if inner is None:
                del usable[n]
            else:
                subplans[n] = inner
                boards[n] = "required" if any(s.blackboard == "required" for s in inner.nodes.values()) else "none"
    types = {n: nested_type(usable[n]["kind"], subplans[n]) if n in subplans else _output_type(a, infos.get(n))
             for n, a in usable.items()}
    along, found = _edge_types(graph, types)
    problems += found
    inputs: dict[str, _Inputs] = {}
    for n, attrs in usable.items():
        is_source = n in sources
        if attrs["kind"] == "map" and n in infos:
            inputs[n], found = _map_inputs(n, attrs["fn"], infos[n])
            problems += found
        elif n in infos:
            inputs[n], found = _function_inputs(n, attrs["fn"], infos[n], fwd[n], bwd[n], is_source)
            problems += found
            if attrs.get("join") == "any" and inputs[n].mode == "kwargs":
                problems += _any_kwargs_problems(n, attrs["fn"], infos[n], fwd[n])
        else:
            inputs[n] = _Inputs("dict" if len(fwd[n]) > 1 else "single")
        in_types = {u: along.get((u, n)) for u in fwd[n] + bwd[n]}
        # a formation node's (and a formation map's) types are checked across its boundary
        problems += _type_problems(n, "formation" if n in subplans else attrs["kind"], inputs[n], fwd[n], bwd[n], in_types)
        if n in subplans:
            problems += boundary_problems(n, attrs, subplans[n], inputs[n].mode, fwd[n], bwd[n], in_types)
        if isinstance(attrs.get("prompt"), str):
            fields = {u: in_types.get(u) for u in fwd[n]} if len(fwd[n]) > 1 else None
            if len(fwd[n]) == 1:
                upstream = in_types.get(fwd[n][0])
                fields = prompt_fields(item_type(upstream) if attrs["kind"] == "fleet" else upstream)
            problems += prompt_problems(n, attrs["prompt"], fields)
    if problems:
        raise FormationSetupError(name, problems)
    return _build(name, graph, sources, back, fwd, bwd, types, inputs, boards, subplans)


def _race(forward: nx.DiGraph, node: str, preds: list[str]) -> Mapping[str, frozenset[str]]:
    """For a ``join="any"`` node: by predecessor, the nodes to cancel when that
    predecessor's value fires the visit — the nodes of the other branches whose every
    forward path leads into ``node`` (so nothing else wants their work)."""
    above = nx.ancestors(forward, node)
    below = nx.descendants(forward, node) | {node}
    only_here = {x for x in above if nx.descendants(forward, x) - below <= above}
    return MappingProxyType({
        p: frozenset(only_here - nx.ancestors(forward, p) - {p}) for p in preds
    })


def _is_instance(classes: tuple[type, ...]) -> Callable[[Any], bool]:
    def when(output: Any) -> bool:
        return isinstance(output, classes)
    return when


def _edge_spec(u: str, v: str, attrs: Mapping[str, Any], back: bool, loop: str) -> EdgeSpec:
    when = attrs.get("when")
    if attrs.get("otherwise"):
        return EdgeSpec(u, v, None, back, "otherwise", True, loop=loop)
    classes = when_types(when)  # when=int, (int, str), int | str: an isinstance check
    predicate = when if classes is None else _is_instance(classes)
    return EdgeSpec(u, v, predicate, back, edge_label(when), on_error=is_error_edge(attrs), loop=loop)


def _retry_on(value: Any) -> tuple[type[BaseException], ...] | None:
    """``retry_on`` as a tuple; a class covering ``TimeoutError`` covers node timeouts too."""
    if value is None:
        return None
    classes = tuple(value) if isinstance(value, tuple | list) else (value,)
    if any(issubclass(TimeoutError, c) for c in classes) and not any(issubclass(NodeTimeoutError, c) for c in classes):
        classes += (NodeTimeoutError,)
    return classes


def _build(
    name: str,
    graph: nx.DiGraph,
    sources: list[str],
    back: set[tuple[Any, Any]],
    fwd: Mapping[str, list[str]],
    bwd: Mapping[str, list[str]],
    types: Mapping[str, Any],
    inputs: Mapping[str, _Inputs],
    boards: Mapping[str, BoardNeed],
    subplans: Mapping[str, Plan],
) -> Plan:
    roles = loop_roles(graph) if back else {}
    edges = tuple(_edge_spec(u, v, a, (u, v) in back, roles.get((u, v), "")) for u, v, a in graph.edges(data=True))
    out_edges: dict[str, list[EdgeSpec]] = {n: [] for n in graph}
    error_edges: dict[str, list[EdgeSpec]] = {n: [] for n in graph}
    for e in edges:
        (error_edges if e.on_error else out_edges)[e.source].append(e)
    successors: dict[str, list[str]] = {n: [] for n in graph}
    for e in edges:
        if not e.back:
            successors[e.source].append(e.target)
    order = topological_order(list(graph), successors)
    racing = [n for n, a in graph.nodes(data=True) if a.get("join") == "any" and len(fwd[n]) > 1]
    forward = nx.DiGraph([(u, v) for u, vs in successors.items() for v in vs]) if racing else None
    races = {n: _race(forward, n, fwd[n]) for n in racing}
    adapter = shared_adapters()
    nodes: dict[str, NodeSpec] = {}
    for n, attrs in graph.nodes(data=True):
        a = {**POLICY_DEFAULTS, **attrs}
        ins = inputs[n]
        is_fn = a["kind"] in ("function", "map")
        kwargs = {k: adapter(t) for k, t in (ins.kwarg_types or {}).items()}
        nodes[n] = NodeSpec(
            name=n,
            kind=a["kind"],
            fn=a.get("fn"),
            agent=a.get("agent"),
            max_workers=a.get("max_workers", 0),
            retries=a["retries"],
            backoff=float(a["backoff"]),
            timeout=timeouts.limit("timeout", a["timeout"]),  # (validated: math.inf is None, no limit)
            on_error=a["on_error"],
            concurrency=a["concurrency"],
            prompt=a.get("prompt"),
            max_visits=a["max_visits"],
            input_mode=ins.mode,
            input_adapter=adapter(ins.param_type) if is_fn and ins.mode != "kwargs" else None,
            kwarg_adapters=MappingProxyType(kwargs),
            output_type=types.get(n),
            forward_preds=tuple(fwd[n]),
            back_preds=tuple(bwd[n]),
            out_edges=tuple(out_edges[n]),
            is_source=n in sources,
            is_sink=not out_edges[n],
            blackboard=boards.get(n, "none"),
            join=a.get("join", "all"),
            needs_route=bool(out_edges[n]) and all(e.when is not None for e in out_edges[n]),
            race=races.get(n, MappingProxyType({})),
            retry_on=_retry_on(a["retry_on"]),
            max_backoff=float(a["max_backoff"]),
            jitter=a["jitter"],
            error_edges=tuple(error_edges[n]),
            formation=a.get("formation") if n in subplans else None,
            subplan=subplans.get(n),
        )
    sinks = tuple(n for n in graph if nodes[n].is_sink)
    accepts = [a for n in sources for a in source_accepts(n, nodes[n].kind, subplans.get(n), inputs[n].param_type)]
    return Plan(name, MappingProxyType(nodes), tuple(sources), sinks, order, edges, tuple(accepts),
                one_output(sources, sinks, edges))
