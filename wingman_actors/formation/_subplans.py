"""Compiling nested formations: a formation node's (or formation map's) inner formation,
its output type, and the type checks across its boundary. Used by :mod:`.plan`, which
passes its own compiler in (this module imports no other declaration module at run time).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import FormationSetupError
from ._fan_in_types import fan_in_type_problems
from ._typecheck import compatible, is_sequence, item_type, type_name
from ._validation import is_formation, quote

if TYPE_CHECKING:  # only a type: the plan module imports this one
    from ._plan import Plan

__all__ = ["boundary_problems", "nested_type", "source_accepts", "subplan"]


MAX_NESTING = 64
"""How deep formations may nest. A nested run completes its outer node from the thread that
finishes it, one call deeper per level, so much deeper nesting would exhaust Python's
recursion limit and leave the outer run waiting."""


def nesting_problems(formation: Any) -> list[str]:
    """A problem when ``formation`` nests formations deeper than :data:`MAX_NESTING`,
    naming the deepest path (formations nested in themselves are left to :func:`subplan`);
    else one for each node, at any depth, named like the path of a nested node."""
    deepest: list[str] = []
    clashes: dict[str, None] = {}
    stack: list[tuple[Any, list[str], tuple[int, ...]]] = [(formation, [], (id(formation),))]
    while stack:
        current, path, seen = stack.pop()
        clashes.update(dict.fromkeys(_path_like(current)))
        if len(path) > len(deepest):
            deepest = path
            if len(deepest) > MAX_NESTING:
                break
        for node, attrs in current.graph.nodes(data=True):
            inner = attrs.get("formation")
            if attrs.get("kind") in ("formation", "map") and is_formation(inner) and id(inner) not in seen:
                stack.append((inner, [*path, str(node)], (*seen, id(inner))))
    if len(deepest) <= MAX_NESTING:
        return list(clashes)
    shown = "/".join(deepest[:3]) + "/.../" + "/".join(deepest[-2:])
    return [f"formations nest more than {MAX_NESTING} levels deep (along {shown}); at most {MAX_NESTING} are "
            "supported: flatten some of them (declare their nodes in the formation that nests them)"]


def _path_like(formation: Any) -> list[str]:
    """A problem for each node named like the path of a node inside one of the formation's
    formation nodes (``"review/check"`` beside formation node ``"review"``): inner nodes go by
    their path in events and ``result.nodes``, so the two would be one name."""
    graph = formation.graph
    nesting = [str(n) for n, a in graph.nodes(data=True) if a.get("kind") in ("formation", "map")
               and is_formation(a.get("formation"))]
    return [f"node {name!r} of formation {formation.name!r} is named like a node inside formation node {n!r} "
            f"(whose nodes go by the path '{n}/<node>' in events and result.nodes); rename it, e.g. "
            f"{name.replace('/', '_')!r}"
            for name in map(str, graph) for n in nesting if name.startswith(f"{n}/")]


def subplan(
    node: str, inner: Any, within: tuple[tuple[int, str], ...], compile: Callable[[Any, tuple[tuple[int, str], ...]], Plan]
) -> tuple[Plan | None, list[str]]:
    """The compiled formation of formation node ``node``, or the problems that stop it:
    its own (each named after the node), or its nesting itself."""
    ids = [i for i, _ in within]
    if id(inner) in ids:
        path = " → ".join(repr(n) for _, n in [*within[ids.index(id(inner)):], (0, inner.name)])
        return None, [f"formation node {node!r} nests formation {inner.name!r} inside itself ({path}); a formation "
                      "cannot contain itself, directly or through another nested formation: nest a different one"]
    try:
        return compile(inner, within), []
    except FormationSetupError as exc:
        return None, [f"formation node {node!r} (formation {inner.name!r}): {p}" for p in exc.problems]


def nested_type(kind: str, sub: Plan) -> Any:
    """A formation node's output type (its formation's), or a formation map's (a list of them)."""
    one = sub.output_type
    return list[one] if kind == "map" and one is not None else one  # type: ignore[valid-type]


def source_accepts(node: str, kind: str, sub: Plan | None, param_type: Any) -> list[tuple[str, Any]]:
    """What source ``node`` of a formation takes, as :attr:`Plan.accepts` lists it: a
    nested formation's sources (by path), a list for a map (of what its function, or
    its formation's sources, take each item) or a fleet, a function's parameter type;
    None for any input (an agent)."""
    if sub is not None and kind == "map":
        takes = [list[Any] if tp is None else list[tp] for _, tp in sub.accepts]  # type: ignore[valid-type]
        return [(node, tp) for tp in takes or [list[Any]]]
    if sub is not None:
        return [(f"{node}/{path}", tp) for path, tp in sub.accepts]
    if kind == "fleet":
        return [(node, list[Any])]
    if kind == "map":
        return [(node, list[Any] if param_type is None else list[param_type])]  # type: ignore[valid-type]
    return [(node, param_type if kind == "function" else None)]


def boundary_problems(
    node: str, attrs: Mapping[str, Any], sub: Plan, mode: str, fwd: list[str], back: list[str],
    types: Mapping[str, Any],
) -> list[str]:
    """Type problems across a formation node's boundary: what reaches it (each item of
    it, for a formation map) against what the inner formation's sources accept."""
    inner, kind = attrs["formation"].name, attrs["kind"]
    if kind == "map":
        if len(fwd) > 1:
            return [f"map node {node!r} has several forward predecessors ({quote(fwd)}), so it would receive a "
                    "dict, but a map needs a list (one run per item); merge them into a list in a function node first"]
        bad = [u for u in fwd + back if not is_sequence(types.get(u))]
        if bad:
            return [f"edge {u!r} → {node!r}: map node {node!r} needs a list (one run of formation {inner!r} per "
                    f"item) but {u!r} outputs {type_name(types.get(u))}; make {u!r} output a list or put a "
                    "function node between them that splits its output into a list" for u in bad]
        given = {u: item_type(types.get(u)) for u in fwd + back}
        what = "items of type"
    else:
        given = {u: types.get(u) for u in fwd + back} if mode == "single" else {quote(fwd): dict[str, Any]}
        what = "" if mode == "single" else "a dict"
    out = []
    if what == "a dict":  # each predecessor against the dict type the inner sources take
        for path, dst in sub.accepts:
            out += fan_in_type_problems(node, None, dst, {u: types.get(u) for u in fwd},
                                        target=f"formation {inner!r}'s source {path!r}")
    for u, src in given.items():
        for path, dst in sub.accepts:
            if compatible(src, dst):
                continue
            if what == "a dict":
                out.append(f"formation node {node!r} receives a dict {{predecessor: output}} from {u} but formation "
                           f"{inner!r}'s source {path!r} expects {type_name(dst)}; make that source take a "
                           "dict[str, Any], or merge the predecessors in a function node first")
            else:
                out.append(f"edge {u!r} → {node!r}: {u!r} outputs {what + ' ' if what else ''}{type_name(src)} but "
                           f"{kind} node {node!r} runs formation {inner!r}, whose source {path!r} expects "
                           f"{type_name(dst)}; make them agree or put a converting function node between them")
    return out
