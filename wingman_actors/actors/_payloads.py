"""Payload isolation: a value delivered to several receivers, or kept in a run's result,
is never changed by one receiver's in-place mutation.

Function and map node actors call :func:`isolate` on their payload just before they hand
it to user code, not when it is routed: every receiver still gets a copy of its own, and
the copies live only while the node works on them (a queue of pending inputs holds the
one shared original, not a copy per receiver waiting in memory).

:func:`isolate` returns the value itself when it is immutable (str, numbers, bytes,
None, enums, frozen pydantic models, and tuples and frozensets of immutables) and a
copy otherwise. Plain dicts and lists of immutables are copied by a fast walk (a dict
payload of a few keys costs well under a microsecond); anything else, and structures
nested deeper than the walk goes or that contain themselves, by :func:`copy.deepcopy`.

The fast walk copies a value shared by two places inside one payload twice (deepcopy
would keep them one object); equality is kept, identity inside a payload is not. A
dataclass is rebuilt with copies of its fields (``dataclasses.replace``). Exceptions pass
as they are (many cannot be rebuilt from their arguments), and so does a value that
``deepcopy`` refuses (a lock, a live client): isolation is best effort for those.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import types
from typing import Any

from pydantic import BaseModel

__all__ = ["is_immutable", "isolate"]

_SCALARS: frozenset[type] = frozenset({
    str, int, float, bool, complex, bytes, type(None), range, types.EllipsisType, types.NotImplementedType,
})
_DEPTH = 16  # deeper than this, the fast walk hands the whole value to deepcopy


class _TooDeep(Exception):
    pass


def is_immutable(value: Any) -> bool:
    """Whether ``value`` can be shared between receivers as it is."""
    t = type(value)
    if t in _SCALARS:
        return True
    if t is tuple or t is frozenset:
        return all(is_immutable(v) for v in value)
    if isinstance(value, enum.Enum | type | BaseException):
        return True
    return isinstance(value, BaseModel) and bool(value.model_config.get("frozen"))


def isolate(value: Any) -> Any:
    """``value`` when it is immutable, else a copy no receiver shares with another.

    Example:
        >>> payload = {"tags": ["a"]}
        >>> copied = isolate(payload)
        >>> copied == payload and copied is not payload and copied["tags"] is not payload["tags"]
        True
        >>> isolate("text") is isolate("text")
        True
    """
    t = type(value)
    try:
        if t is dict:  # the common payload: _dict's first level, inline (a call less per payload)
            scalars = _SCALARS
            out = value.copy()
            for k, v in value.items():
                if type(v) not in scalars:  # a scalar stays as the C copy left it
                    if type(v) is list:  # a list of scalars (tags, ids) is copied without a call
                        for x in v:
                            if type(x) not in scalars:
                                out[k] = _list(v, 1)
                                break
                        else:
                            out[k] = v.copy()
                    else:
                        out[k] = _dict(v, 1) if type(v) is dict else _walk(v, 1)
            return out
        if t in _SCALARS:
            return value
        if t is list:
            return _list(value, 0)
        return _walk(value, 0)
    except _TooDeep:
        try:
            return copy.deepcopy(value)
        except Exception:  # cannot be copied: passed as it is
            return value


def _dict(value: dict[Any, Any], depth: int) -> dict[Any, Any]:
    # one C copy, then only the members that are not scalars are replaced
    if depth > _DEPTH:
        raise _TooDeep
    out = value.copy()
    for k, v in value.items():
        tv = type(v)
        if tv in _SCALARS:
            continue
        if tv is list:  # a list of scalars (tags, ids) is copied without a call per list
            for x in v:
                if type(x) not in _SCALARS:
                    out[k] = _list(v, depth + 1)
                    break
            else:
                out[k] = v.copy()
            continue
        out[k] = _dict(v, depth + 1) if tv is dict else _walk(v, depth + 1)
    return out


def _list(value: list[Any], depth: int) -> list[Any]:
    if depth > _DEPTH:
        raise _TooDeep
    out = value.copy()
    for i, v in enumerate(value):
        tv = type(v)
        if tv in _SCALARS:
            continue
        out[i] = _list(v, depth + 1) if tv is list else _dict(v, depth + 1) if tv is dict else _walk(v, depth + 1)
    return out


def _walk(value: Any, depth: int) -> Any:
    t = type(value)
    if t in _SCALARS:
        return value
    if depth > _DEPTH:
        raise _TooDeep
    if t is dict:
        return _dict(value, depth)
    if t is list:
        return _list(value, depth)
    if t is tuple:
        items = tuple(_walk(v, depth + 1) for v in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if is_immutable(value):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {}
        for f in dataclasses.fields(value):
            member = getattr(value, f.name)
            twin = _walk(member, depth + 1)
            if twin is not member:
                changed[f.name] = twin
        try:  # a new instance even when no field changed: a receiver may set a field in place
            return dataclasses.replace(value, **changed)
        except (TypeError, ValueError):  # a field that __init__ does not take
            pass
    try:
        return copy.deepcopy(value)
    except Exception:  # cannot be copied: passed as it is
        return value
