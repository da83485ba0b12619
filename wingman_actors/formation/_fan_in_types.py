"""Type checks of a fan-in node that takes its predecessors' outputs as one dict
(``{predecessor: output}``): each predecessor's output against the dict's value type
(``dict[str, int]``), or against its own key of a TypedDict named after the predecessors.

Example:
    >>> fan_in_type_problems("join", "parts", dict[str, int], {"a": int, "b": str})[0][:60]
    "edge 'b' → 'join': 'b' outputs str but parameter 'parts' of "
"""

from __future__ import annotations

import collections.abc as cabc
from collections.abc import Mapping
from typing import Any, get_args, get_origin

import typing_extensions

from ._failure import NodeFailure
from ._typecheck import _keys, _strip, compatible, type_name

__all__ = ["fan_in_type_problems"]

_FIX = "make them agree (change the return type of {u!r} or the annotation) or put a converting function node between them"


def fan_in_type_problems(
    node: str, param: str | None, dst: Any, given: Mapping[str, Any], target: str | None = None
) -> list[str]:
    """The problems of fan-in node ``node`` whose parameter ``param`` of type ``dst`` receives
    the dict of its predecessors' outputs (``given``: predecessor → its output type);
    ``target`` names what receives the dict when it is not a parameter of ``node`` (the
    source of a nested formation)."""
    dst = _strip(dst)
    target = target or f"parameter {param!r} of {node!r}"
    given = {u: src for u, src in given.items() if src is not NodeFailure}  # error edges: checked elsewhere
    if typing_extensions.is_typeddict(dst):
        return _typeddict_problems(node, target, dst, given)
    origin, args = get_origin(dst), get_args(dst)
    if not (isinstance(origin, type) and issubclass(origin, cabc.Mapping) and len(args) == 2):
        return []
    return [
        f"edge {u!r} → {node!r}: {u!r} outputs {type_name(src)} but {target} expects {type_name(dst)}, "
        f"whose values are {type_name(args[1])}; {_FIX.format(u=u)}"
        for u, src in given.items() if not compatible(src, args[1])
    ]


def _typeddict_problems(node: str, target: str, dst: Any, given: Mapping[str, Any]) -> list[str]:
    keys = _keys(dst)
    if keys is None:
        return []
    types, required = keys
    out = []
    for u, src in given.items():
        if u not in types:
            out.append(
                f"edge {u!r} → {node!r}: {node!r} receives a dict {{predecessor: output}}, but {target} expects "
                f"{type_name(dst)}, which has no key {u!r}, so the output of {u!r} would be dropped; add the key "
                f"{u!r} to {type_name(dst)}, or annotate it as dict[str, Any]")
        elif not compatible(src, types[u]):
            out.append(
                f"edge {u!r} → {node!r}: {u!r} outputs {type_name(src)} but key {u!r} of {target} expects "
                f"{type_name(types[u])}; {_FIX.format(u=u)}")
    out += [
        f"node {node!r}: {target} ({type_name(dst)}) requires key {key!r}, but no predecessor of {node!r} is "
        f"named so; connect a node named {key!r} to {node!r}, or mark the key NotRequired"
        for key in sorted(required - set(given))
    ]
    return out
