"""What a JSON request body may hold beyond being valid JSON.

Python's JSON parser accepts things that cannot be stored and answered back: lone UTF-16
surrogates (``"\\ud800"``) cannot be encoded as UTF-8, so a record holding one fails every
later response that includes it; ``NaN`` and ``Infinity`` are not JSON (RFC 8259), and a
number beyond a float's range (``1e400``) is read as infinity (stored and answered as
``null``: silently another value); very deep nesting exhausts the parser's recursion. :func:`body_problems` finds all of them,
each named by its place in the body (``options.replies[0]``), before any route sees the
body, so such input is refused with a 400 and never stored.

Example:
    >>> body_problems(b'{"title": "\\\\ud800"}')
    [('title', 'contains a lone UTF-16 surrogate (\\\\ud800); send valid Unicode text')]
    >>> body_problems(b'{"title": "ok"}')
    []
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["MAX_DEPTH", "body_problems", "scrub"]

MAX_DEPTH = 64
"""Nesting levels of arrays and objects a body may have."""

_MAX_REPORTED = 20
_SURROGATES = re.compile("[\ud800-\udfff]")


class _NotJson(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON value; send a number or null")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        shown = text if len(text) <= 24 else f"{text[:12]}...{text[-8:]}"
        raise _NotJson(f"{shown} is beyond the range of a number the server can hold (about ±1.8e308); "
                       "send a smaller number, or a string")
    return value


# (json.loads with an argument builds one per call) parse_float is called for literals with a
# fraction or an exponent only: integers, the most of what bodies hold, are read as before.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)


def _surrogate(text: str) -> str | None:
    for ch in text:
        if "\ud800" <= ch <= "\udfff":
            return f"\\u{ord(ch):04x}"
    return None


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    name = key if key.isidentifier() else json.dumps(key)
    return f"{path}.{name}" if path else name


def body_problems(raw: bytes) -> list[tuple[str, str]]:
    """``(field, message)`` for every part of ``raw`` that is JSON but cannot be accepted.

    A body that is not JSON at all gives no problems here: the route's validation answers
    it as malformed.
    """
    try:
        if raw.isascii() and b"\x00" not in raw:  # UTF-8 (what json.loads reads it as), the usual body
            value = _DECODER.decode(raw.decode("ascii"))
            if b"\\" not in raw and raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
                return []  # a lone surrogate needs an escape; nesting deeper needs more brackets
        else:
            value = json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except _NotJson as exc:
        return [("body", str(exc))]
    except RecursionError:
        return [("body", f"nested too deeply; at most {MAX_DEPTH} levels of arrays and objects")]
    except UnicodeDecodeError as exc:  # (the routes' parser would only say "error parsing the body")
        return [("body", f"is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start} cannot be "
                         "decoded); send JSON encoded as UTF-8, as RFC 8259 requires")]
    except ValueError:  # malformed JSON: validation names it
        return []
    problems: list[tuple[str, str]] = []
    todo: list[tuple[str, Any, int]] = [("", value, 0)]
    while todo and len(problems) < _MAX_REPORTED:
        path, item, depth = todo.pop()
        if depth > MAX_DEPTH:
            problems.append(("body", f"nested too deeply; at most {MAX_DEPTH} levels of arrays and objects"))
            continue
        if isinstance(item, str):
            bad = _surrogate(item)
            if bad:
                problems.append((path or "body", f"contains a lone UTF-16 surrogate ({bad}); send valid Unicode text"))
        elif isinstance(item, dict):
            for key, child in item.items():
                bad = _surrogate(key)
                if bad:
                    where = path or "body"
                    problems.append((where, f"has a key with a lone UTF-16 surrogate ({bad}); send valid Unicode text"))
                    continue
                todo.append((_join(path, key), child, depth + 1))
        elif isinstance(item, list):
            todo.extend((_join(path, i), child, depth + 1) for i, child in enumerate(item))
    return sorted(problems)


def scrub(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (and keys) replaced by U+FFFD, so
    text produced at run time (a function's output, an error message) can always be stored
    and answered."""
    if isinstance(value, str):
        return _SURROGATES.sub("\ufffd", value)
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value
