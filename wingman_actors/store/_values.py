"""Small values both stores share: the URL schemes of PostgreSQL (and the messages that
show a URL: never its password), durations given as timedeltas or seconds, and
generated run ids."""

from __future__ import annotations

import datetime
import itertools
import math
import re
import time
import uuid
from typing import Any

__all__ = ["POSTGRES_SCHEMES", "duration", "masked", "new_run_id", "other_scheme", "without_password"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
"""The URL schemes ``RunStore`` opens on PostgreSQL."""

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_PASSWORD = re.compile(r"(://[^:/@]*:)([^@]*)@")
# "postgresql:/host/db", "postgres:user@host": a PostgreSQL URL short of its "//", which
# would otherwise be taken for a file's path (and its folder, password and all, for one to create)
_SLASHLESS = re.compile(r"(postgres(?:ql)?):(?!//)", re.IGNORECASE)
_SLASHLESS_PASSWORD = re.compile(r":[^:/@]*@")


def masked(url: str) -> str:
    """The URL with its password hidden (as messages and ``repr`` show it)."""
    return _PASSWORD.sub(r"\1***@", url)


def without_password(text: str, url: str) -> str:
    """``text`` (a driver's message about ``url``, which may quote it) with ``url``'s
    password hidden wherever it appears."""
    found = _PASSWORD.search(url)
    password = found.group(2) if found else ""
    return text.replace(password, "***") if password else text


def other_scheme(location: str) -> str | None:
    """Why ``location`` cannot be a store when it is a URL of a scheme no store opens
    (``mysql://...``, ``sqlite:///runs.sqlite``) or a PostgreSQL URL short of its ``//``
    (``postgresql:/host/db``), or such a URL with white space around it, else None."""
    stripped = location.strip()
    if stripped != location and (_SCHEME.match(stripped) or _SLASHLESS.match(stripped)):
        shown = masked(stripped) if _SCHEME.match(stripped) else _SLASHLESS_PASSWORD.sub(":***@", stripped)
        return (f"RunStore location {shown!r} has white space around it (taken as part of a file's path); "
                "remove it")
    slashless = _SLASHLESS.match(location)
    if slashless is not None:
        rest = _SLASHLESS_PASSWORD.sub(":***@", location[slashless.end():])
        return (f"RunStore location {slashless.group(0) + rest!r} looks like a PostgreSQL URL without the '//' after its "
                "scheme; write it as postgresql://user:password@host:5432/db")
    found = _SCHEME.match(location)
    if found is None or location.startswith(POSTGRES_SCHEMES):
        return None
    scheme = found.group(1)
    hint = (f"for a SQLite store give the file's path itself (e.g. {location[found.end():]!r})"
            if scheme.lower() == "sqlite" else "e.g. 'runs.sqlite' or 'postgresql://user:password@host:5432/db'")
    return (f"RunStore takes a SQLite file's path or a postgresql:// URL, got a {scheme}:// URL "
            f"({masked(location)}); {hint}")


def duration(value: Any, name: str, *, allow_none: bool) -> float | None:
    """``value`` (a timedelta or a number of seconds >= 0, or None if allowed) in seconds.

    Raises:
        ValueError: naming ``name`` and what it takes.
    """
    if value is None and allow_none:
        return None
    given = value
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"RunStore: {name} must be a datetime.timedelta or a number of seconds >= 0"
                         f"{' or None' if allow_none else ''}, got {given!r}")
    return float(value)


_RUN_PREFIX = uuid.uuid4().hex[:8]
_RUN_COUNTER = itertools.count()


def new_run_id() -> str:
    """32 hex digits: the time in microseconds, a per-process random prefix and a counter.
    Ids made later sort later, so new rows are appended to the tables' B-trees instead of
    landing on random pages (fewer pages written per commit)."""
    return f"{time.time_ns() // 1000:014x}{_RUN_PREFIX}{next(_RUN_COUNTER) % 16**10:010x}"
